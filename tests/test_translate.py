"""Translation (QT / DT): cache, pools, gold on real XQuAD, file:, runner interplay, result record, CLI."""
from __future__ import annotations

import argparse
import json

import pytest

from clirbench.collection import Pool, Text
from clirbench.util.errors import ClirbenchError, UnknownNameError
from clirbench.results import read_result
from clirbench.runner import run
from clirbench.translate import (TranslationCache, TranslationOptions, make_translator, translate_pool, translate_texts,
                                 translation_quality)
from clirbench.translate.base import join_sentences, nllb_code, split_sentences

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


class Upper:
    """A fake translator: upper-cases, counts what it was asked, can fail on a given call."""

    spec = "test:upper"

    def __init__(self, fail_on_call: int | None = None):
        self.calls: list[list[str]] = []
        self.fail_on_call = fail_on_call

    def describe(self):
        return {"spec": self.spec}

    def translate(self, texts, src, tgt):
        self.calls.append(list(texts))
        if self.fail_on_call == len(self.calls):
            raise KeyboardInterrupt
        return [f"{t.upper()}<{src}>{tgt}>" for t in texts]


def test_cache_counts_hits_and_resumes_after_an_interruption(tmp_path):
    texts = [f"text {i}" for i in range(10)] + ["text 0"]
    cache = TranslationCache(tmp_path / "tc")
    with pytest.raises(KeyboardInterrupt):  # the second chunk is interrupted
        translate_texts(Upper(fail_on_call=2), texts, "fr", "en", cache, chunk=4)
    resumed = TranslationCache(tmp_path / "tc")  # a new process: only what was flushed
    fresh = Upper()
    out, hits = translate_texts(fresh, texts, "fr", "en", resumed, chunk=4)
    assert out == [f"TEXT {i}<fr>en>" for i in range(10)] + ["TEXT 0<fr>en>"]
    assert fresh.calls == [[f"text {i}" for i in range(4, 8)], ["text 8", "text 9"]]
    assert hits == 5  # text 0..3, and text 0 again
    again, hits = translate_texts(Upper(), texts, "fr", "en", TranslationCache(tmp_path / "tc"))
    assert again == out and hits == len(texts)
    # keyed by spec and direction: another direction is a miss
    other = Upper()
    translate_texts(other, texts[:2], "de", "en", TranslationCache(tmp_path / "tc"))
    assert other.calls == [texts[:2]]


def test_cache_sets_a_torn_shard_aside(tmp_path, capsys):
    cache = TranslationCache(tmp_path)
    cache.put("s", "fr", "en", [("a", "A"), ("b", "B")])
    [path] = list(tmp_path.rglob("*.jsonl"))
    path.write_bytes(path.read_bytes()[:-5])  # torn: fails its size check
    reopened = TranslationCache(tmp_path)
    assert reopened.get("s", "fr", "en", ["a", "b"]) == [None, None]  # translated again, never half-used
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "manifest says" in err[0] and "quarantine" in err[0]
    assert [p.name for p in (tmp_path / "quarantine").rglob("*.jsonl")] == [path.name]
    reopened.put("s", "fr", "en", [("a", "A"), ("b", "B2")])
    assert TranslationCache(tmp_path).get("s", "fr", "en", ["a", "b"]) == ["A", "B2"]


def test_cache_reads_the_older_appended_file_and_ignores_its_torn_last_line(tmp_path):
    import hashlib
    folder = tmp_path / hashlib.sha256(b"s").hexdigest()[:16]
    folder.mkdir()
    h = {t: hashlib.sha256(t.encode()).hexdigest() for t in "ab"}
    (folder / "fr-en.jsonl").write_text(f'{{"h": "{h["a"]}", "t": "A"}}\n{{"h": "{h["b"]}", "t": "B', encoding="utf-8")
    assert TranslationCache(tmp_path).get("s", "fr", "en", ["a", "b"]) == ["A", None]


def _pool() -> Pool:
    docs = (Text("en/1", "one", "en", "1"), Text("fr/1", "un", "fr", "1"), Text("fr/2", "deux", "fr", "2"))
    queries = (Text("q1", "what one", "en", "1"),)
    return Pool("t", "multi", "unique", ("en", "fr"), "en", docs, queries, {"q1": {"en/1": 1, "fr/1": 1}})


def test_translate_pool_dt_and_qt_keep_ids_and_tag_the_target_language():
    pool = _pool()
    dt, stats = translate_pool(pool, Upper(), "docs")
    assert [d.text for d in dt.docs] == ["one", "UN<fr>en>", "DEUX<fr>en>"]
    assert [d.lang for d in dt.docs] == ["en", "en", "en"]
    assert [d.id for d in dt.docs] == [d.id for d in pool.docs] and dt.qrels == pool.qrels
    assert dt.docs[1].meta["source_lang"] == "fr" and dt.doc_langs == ("en", "fr")
    assert stats["translated"] == 2 and stats["target_lang"] == "en"
    assert pool.docs[1].text == "un" and pool.docs[1].lang == "fr"  # input untouched
    qt, stats = translate_pool(pool, Upper(), "query")
    assert qt.queries[0].text == "WHAT ONE<en>fr>" and qt.queries[0].lang == "fr" and qt.docs == pool.docs
    with pytest.raises(UnknownNameError):
        translate_pool(pool, Upper(), "sideways")


def test_sentences_split_and_join():
    assert split_sentences("Un. Deux ! Trois?") == ["Un.", "Deux !", "Trois?"]
    assert split_sentences("第一。第二。") == ["第一。", "第二。"]
    assert join_sentences(["a.", "b."], "en") == "a. b." and join_sentences(["一。", "二。"], "zh") == "一。二。"
    assert nllb_code("fr") == "fra_Latn" and nllb_code("zho_Hans") == "zho_Hans"
    with pytest.raises(UnknownNameError):
        nllb_code("xx")


def test_unknown_specs_fail_in_one_line():
    for spec in ("nope", "hf:", "hf:m#paragraph", "openai:"):
        with pytest.raises((UnknownNameError, ClirbenchError)):
            make_translator(spec)
    assert make_translator("hf:some/model#sentence").spec == "hf:some/model#sentence"
    assert make_translator("hf:some/model").describe  # lazy: nothing loaded yet


# ---------------------------------------------------------------------------------------------
# gold on real XQuAD: perfect translation turns the cross-lingual pool into the monolingual one


def _measures(report):
    return {(o.record.to_dict()["scenario"], tuple(o.record.to_dict()["doc_langs"]), o.record.to_dict()["query_lang"]):
            {k: v["value"] for k, v in o.record.to_dict()["measures"].items()} for o in report.pools}


@pytest.mark.parametrize("direction", ["docs", "query"])
def test_gold_translation_makes_mono_cross_equal_to_mono_same_english(tmp_path, bag_retriever, direction):
    retriever, _ = bag_retriever()
    query_lang = "en" if direction == "docs" else "zh"  # DT: zh docs -> en; QT: zh queries -> en
    base = run(retriever, task="xquad", langs="en,zh", scenarios="mono-same", query_langs=["en"],
               data_dir=XQUAD, output_dir=tmp_path / "out", resamples=50, progress=False)
    tr = run(retriever, task="xquad", langs="en,zh", scenarios="mono-cross", query_langs=[query_lang],
             data_dir=XQUAD, output_dir=tmp_path / "out", resamples=50, progress=False,
             translation={"direction": direction, "translator": "gold", "cache_dir": tmp_path / "tc",
                          "quality": direction == "docs"})
    [want] = _measures(base).values()
    [have] = _measures(tr).values()
    # the language measures read the original languages (zh documents, or zh queries): the top-1 split's
    # query-language parts of mono-same are its other-language parts here; every other value is equal
    swap = {"Top1_rel_qlang": "Top1_rel_other", "Top1_nonrel_qlang": "Top1_nonrel_other"}
    swap.update({v: k for k, v in swap.items()})
    assert {swap.get(k, k): v for k, v in have.items()} == want and have["nDCG@1"] < 1.0
    [o] = tr.pools
    suffix = "+dt-gold" if direction == "docs" else "+qt-gold"
    assert o.path.relative_to(tmp_path / "out").parts[0] == "test__bag-of-chars" + suffix
    rec = read_result(o.path)
    assert rec.translation["direction"] == direction and rec.translation["translator"] == "gold"
    assert rec.translation["translated"] == (240 if direction == "docs" else 1190)
    assert rec.timings_s.translate >= 0.0
    if direction == "docs":
        assert rec.translation["quality"]["bleu"] == pytest.approx(100.0)
        assert rec.translation["quality"]["chrf"] == pytest.approx(100.0)
    # untranslated mono-cross goes to the plain folder and differs; the translated result is reused
    plain = run(retriever, task="xquad", langs="en,zh", scenarios="mono-cross", query_langs=[query_lang],
                data_dir=XQUAD, output_dir=tmp_path / "out", resamples=50, progress=False)
    assert plain.pools[0].path != o.path and _measures(plain) != _measures(tr)
    again = run(retriever, task="xquad", langs="en,zh", scenarios="mono-cross", query_langs=[query_lang],
                data_dir=XQUAD, output_dir=tmp_path / "out", resamples=50, progress=False,
                translation={"direction": direction, "translator": "gold", "cache_dir": tmp_path / "tc"})
    assert again.pools[0].reused


def test_reuse_checks_the_translation_settings(tmp_path, bag_retriever):
    retriever, _ = bag_retriever()
    kw = dict(task="xquad", langs="en,zh", scenarios="mono-cross", query_langs=["en"], data_dir=XQUAD,
              output_dir=tmp_path / "out", resamples=20, progress=False)
    report = run(retriever, **kw, translation={"direction": "docs", "translator": "gold", "cache_dir": tmp_path})
    path = report.pools[0].path
    data = json.loads(path.read_text())
    data["translation"]["translator"] = "file:other.jsonl"
    path.write_text(json.dumps(data))
    with pytest.raises(ClirbenchError, match="translation"):
        run(retriever, **kw, translation={"direction": "docs", "translator": "gold", "cache_dir": tmp_path})


def test_file_translator_by_id_and_language(tmp_path, bag_retriever):
    from clirbench.tasks import get_task

    [pool] = get_task("xquad").pools("en,zh", "mono-cross", ["en"], data_dir=XQUAD)
    collection = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    rows = [{"id": d.id, "language": "en", "text": collection.passages["en"][d.item]} for d in pool.docs]
    path = tmp_path / "tr.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    via_file, _ = translate_pool(pool, make_translator(f"file:{path}"), "docs")
    via_gold, _ = translate_pool(pool, make_translator("gold", task=get_task("xquad"), data_dir=XQUAD), "docs")
    assert via_file == via_gold and [d.text for d in via_file.docs] == [r["text"] for r in rows]
    path.write_text(json.dumps(rows[0]), encoding="utf-8")
    with pytest.raises(ClirbenchError, match="no en translation for 239 of 240"):
        translate_pool(pool, make_translator(f"file:{path}"), "docs")


def test_clirudit_gold_is_the_english_document_side(tmp_path):
    from clirbench.tasks import get_task

    from test_clirudit import write_clirudit

    folder = write_clirudit(tmp_path / "c")
    task = get_task("clirudit")
    with pytest.warns(UserWarning):
        [fr] = task.pools("fr", data_dir=folder)
    with pytest.warns(UserWarning):
        [en] = task.pools("en", data_dir=folder)
    dt, _ = translate_pool(fr, make_translator("gold", task=task, data_dir=folder), "docs")
    assert [(d.id, d.text, d.lang) for d in dt.docs] == [(d.id, d.text, d.lang) for d in en.docs]
    with pytest.raises(ClirbenchError, match="only for documents"):
        translate_pool(fr, make_translator("gold", task=task, data_dir=folder), "query")


def test_translation_quality_matches_sacrebleu_and_is_perfect_for_identity():
    import sacrebleu

    hyp, ref = ["the cat sat on a mat", "hello world"], ["the cat sat on the mat", "hello world"]
    q = translation_quality(hyp, ref)
    assert q["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyp, [ref]).score)
    assert q["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyp, [ref]).score)
    assert 0 < q["bleu"] < 100 and translation_quality(ref, ref)["bleu"] == pytest.approx(100.0)


def test_cli_options_build_run_kwargs():
    from clirbench.cli.translation import add_translation_arguments, translation_options
    from clirbench.translate import TranslationOptions

    parser = add_translation_arguments(argparse.ArgumentParser())
    assert translation_options(parser.parse_args([])) == {}
    got = translation_options(parser.parse_args(["--translate", "docs", "--translator", "gold",
                                                 "--translation-quality", "--translation-batch-size", "4"]))
    assert got == {"translation": TranslationOptions("docs", "gold", None, True, {"batch_size": 4})}
    for argv in (["--translate", "docs"], ["--translator", "gold"], ["--translation-quality"]):
        with pytest.raises(ClirbenchError):
            translation_options(parser.parse_args(argv))
    with pytest.raises(SystemExit):
        parser.parse_args(["--translate", "both"])


def test_former_grid_runs_through_clirbench_sweep(tmp_path, capsys):
    """The CLIRudit paper's grid (models × none/QT/DT on one task), formerly python -m clirbench.grid."""
    from clirbench.cli import main
    from clirbench.cli.sweep import split_translations

    assert split_translations("none,query:gold,docs:file:a,b.jsonl,dt:gold") == \
        ["none", "query:gold", "docs:file:a,b.jsonl", "dt:gold"]
    assert TranslationOptions.parse("none") is None
    assert TranslationOptions.parse("documents:hf:x") == TranslationOptions("docs", "hf:x")
    with pytest.raises(UnknownNameError):
        TranslationOptions.parse("gold")
    argv = ["sweep", "--task", "xquad", "--models", "bm25", "--translations", "none,docs:gold", "--langs", "en,zh",
            "--scenario", "mono-cross", "--query-lang", "en", "--data-dir", str(XQUAD), "--output", str(tmp_path / "r"),
            "--cache-dir", str(tmp_path / "c"), "--translation-cache", str(tmp_path / "tc"), "--translation-quality",
            "--resamples", "20", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    table = out[out.index("model  "):].splitlines()
    assert table[0].split()[:3] == ["model", "translation", "pool"] and table[0].split()[-2:] == ["BLEU", "chrF"]
    rows = [line.split() for line in table[2:]]
    assert [r[:2] for r in rows] == [["bm25", "none"], ["bm25", "docs:gold"]]
    assert rows[0][3] != rows[1][3] and rows[0][-1] == "-" and rows[1][-1] == "100.00"
    assert list((tmp_path / "r").rglob("*+dt-gold*"))
    assert not (tmp_path / "leaderboards").exists()
    assert main(argv) == 0 and "2 cells: 0 run, 2 finished before" in capsys.readouterr().out  # resumable
    with pytest.raises(ImportError):
        import clirbench.grid  # noqa: F401  (folded into clirbench sweep)


def test_translation_options_one_value(tmp_path):
    """run(translation=TranslationOptions(...)) and the old mapping form give the same result."""
    opts = TranslationOptions("dt", "gold", cache_dir=tmp_path / "tc")
    assert opts.direction == "docs" and TranslationOptions.of(opts) is opts and TranslationOptions.of(None) is None
    assert TranslationOptions.of({"direction": "docs", "translator": "gold", "cache_dir": tmp_path / "tc",
                                  "batch_size": 2}) == TranslationOptions("docs", "gold", tmp_path / "tc", False,
                                                                          {"batch_size": 2})
    common = dict(task="xquad", langs="en,zh", scenarios="mono-cross", query_langs=["en"], data_dir=XQUAD,
                  resamples=20, progress=False, cache_dir=tmp_path / "c")
    a = run("bm25", output_dir=tmp_path / "a", translation=opts, **common)
    b = run("bm25", output_dir=tmp_path / "b", translation={"direction": "docs", "translator": "gold",
                                                            "cache_dir": tmp_path / "tc"}, **common)
    ma, mb = (o.record.to_dict()["measures"] for o in (a.pools[0], b.pools[0]))
    assert ma == mb and "+dt-gold" in str(a.pools[0].path)
