"""The language exposure measures as ``clirbench run`` computes them: the runner keeps each
pool's head as deep as the measures read, judges it, prints the exposure and consistency blocks and
writes the consistency matrix beside the results. Every value is checked against an independent
route through the saved run of the whole pool (``--save-run --depth 1000``: |D| = 720, so the file
holds every document's score): ``clirbench evaluate --doc-langs`` for the exposure families, the
consistency matrix over heads read back from the files, and a plain loop for MLRS."""
from __future__ import annotations

import gzip
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from clirbench.cli import main
from clirbench.measures import EXPOSURE_MEASURES
from clirbench.rank.head import head_of_run
from clirbench.results.files import read_result
from clirbench.stats.consistency import consistency_matrix
from clirbench.tasks import get_task

from xquad_files import XQUAD

LANGS = "en,zh,ar"
EXPOSURE = ",".join(map(str, EXPOSURE_MEASURES))


def _pool_docs():
    """doc id -> (language, item) of the XQuAD en,zh,ar multi pool."""
    (pool,) = [p for p in get_task("xquad").pools(LANGS.split(","), ["multi"], data_dir=XQUAD)
               if p.query_lang == "en"]
    return {d.id: (d.lang, d.item) for d in pool.docs}


def _saved_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in gzip.decompress(path.read_bytes()).decode().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    return run


def _run(tmp_path: Path, model: str, measures: str, *extra: str) -> Path:
    out = tmp_path / model
    assert main(["run", "--model", model, "--task", "xquad", "--langs", LANGS, "--scenario", "multi",
                 "--data-dir", str(XQUAD), "--save-run", "--depth", "1000", "--output", str(out),
                 "--measures", measures, "--resamples", "50", "--no-progress", *extra]) == 0
    return out / model / "xquad" / "multi" / "unique"


@pytest.fixture(scope="module")
def bm25_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exposure")
    folder = _run(tmp, "bm25", f"nDCG@10,{EXPOSURE},MLRS@10")
    return tmp, folder


def test_run_prints_the_exposure_and_consistency_blocks(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", LANGS, "--scenario", "multi",
                 "--data-dir", str(XQUAD), "--output", str(out), "--resamples", "50", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "== language exposure xquad/multi/en-zh-ar" in text and "top10 zh" in text
    assert "== consistency across query languages xquad/multi/en-zh-ar" in text
    assert [line.split()[0] for line in text.splitlines() if line.startswith(("en-", "zh-"))] == \
        ["en-zh", "en-ar", "zh-ar"]
    record = read_result(out / "bm25" / "xquad" / "multi" / "unique" / "en-zh-ar.q-zh.json")
    assert {str(m) for m in EXPOSURE_MEASURES} <= set(record.measures)  # the default set holds them
    shares = record.preference["top10_share"]
    assert abs(sum(shares[lang].value for lang in ("en", "zh", "ar")) - 100.0) < 1e-9
    assert abs(shares["zh"].value - record.measures["Share@10"].value) < 1e-9


def test_exposure_values_equal_evaluate_on_the_saved_run(bm25_run, capsys):
    """The ranker's head (HeadBuilder, with its tail) and ``evaluate --doc-langs`` on the saved whole
    ranking (head_of_run) give the same values for every exposure family of every pool."""
    tmp, folder = bm25_run
    docs = _pool_docs()
    langs = tmp / "doc_langs.tsv"
    langs.write_text("".join(f"{d}\t{lang}\n" for d, (lang, _) in docs.items()))
    (pool,) = [p for p in get_task("xquad").pools(LANGS.split(","), ["multi"], data_dir=XQUAD) if p.query_lang == "en"]
    capsys.readouterr()
    for q in LANGS.split(","):
        record = read_result(folder / f"en-zh-ar.q-{q}.json")
        pools = [p for p in get_task("xquad").pools(LANGS.split(","), ["multi"], data_dir=XQUAD) if p.query_lang == q]
        qrels = tmp / f"q-{q}.qrels"
        qrels.write_text("".join(f"{qid} 0 {d} {g}\n" for qid, judged in pools[0].qrels.items()
                                 for d, g in judged.items()))
        assert main(["evaluate", "--qrels", str(qrels), "--run", str(folder / record.run.file), "--json",
                     "--resamples", "10", "--doc-langs", str(langs), "--query-lang", q, "--measures", EXPOSURE]) == 0
        got = json.loads(capsys.readouterr().out)["measures"]
        for name in EXPOSURE.split(","):
            assert got[name]["value"] == pytest.approx(record.measures[name].value, abs=1e-9), (q, name)
    assert pool.num_docs == 720


def test_consistency_file_equals_the_matrix_of_the_saved_runs(bm25_run):
    _, folder = bm25_run
    saved = json.loads((folder / "en-zh-ar.consistency.json").read_text())
    docs = _pool_docs()
    heads = {}
    for q in LANGS.split(","):
        run = _saved_run(folder / f"en-zh-ar.q-{q}.run.gz")
        ids = sorted(docs)
        heads[q] = head_of_run(run, list(run), ids, [docs[d][0] for d in ids], depth=10)
    matrix = consistency_matrix(heads, 10, 0.9, resamples=50, seed=42).to_dict()
    assert [c["langs"] for c in saved["pairs"]] == [["en", "zh"], ["en", "ar"], ["zh", "ar"]]
    for mine, theirs in zip(saved["pairs"], matrix["pairs"]):
        assert mine["per_query"] == theirs["per_query"]
        assert mine["measures"] == theirs["measures"]


def _tied_rank(value: float, others: list[float]) -> Fraction:
    return 1 + sum(1 for o in others if o > value) + Fraction(sum(1 for o in others if o == value), 2)


def test_mlrs_equals_a_loop_over_the_saved_whole_ranking(bm25_run):
    """MLRS@10 toward the query's language: every passage of the top 10 in another language replaced
    by its version in the query's language, scored as the pool scores it (the saved run holds every
    document's score), its tie-aware rank among the other nine before and after."""
    _, folder = bm25_run
    docs = _pool_docs()
    version = {(item, lang): d for d, (lang, item) in docs.items()}
    for q in LANGS.split(","):
        record = read_result(folder / f"en-zh-ar.q-{q}.json")
        run = _saved_run(folder / f"en-zh-ar.q-{q}.run.gz")
        values = []
        for hits in run.values():
            top = list(hits.items())[:10]  # the file's order is the tie rule's
            rises = room = Fraction(0)
            n = 0
            for p, (d, s) in enumerate(top):
                lang, item = docs[d]
                twin = version.get((item, q))
                if lang == q or twin is None:
                    continue
                others = [t for j, (_, t) in enumerate(top) if j != p]
                r0, r1 = _tied_rank(s, others), _tied_rank(hits[twin], others)
                rises += max(r0 - r1, 0)
                room += r0 - 1
                n += 1
            values.append(np.nan if not n else 0.0 if room == 0 else float(100 * rises / room))
        assert record.measures["MLRS@10"].value == pytest.approx(float(np.nanmean(values)), abs=1e-9), q


def test_mlrs_toward_every_language_is_in_the_preference_row(bm25_run):
    """The row's ``mlrs`` part holds MLRS@10 toward each document language; toward the query's own it
    is the family's value."""
    _, folder = bm25_run
    for q in LANGS.split(","):
        record = read_result(folder / f"en-zh-ar.q-{q}.json")
        row = record.preference["mlrs"]
        assert set(row) == set(LANGS.split(","))
        assert row[q].value == pytest.approx(record.measures["MLRS@10"].value, abs=1e-12)


def test_a_saved_run_shallower_than_the_measures_head(tmp_path):
    """--depth 5 with the default measures (their head is 20 deep): the file keeps 5 per query, the
    records still have Share@10."""
    out = tmp_path / "r"
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "multi",
                 "--data-dir", str(XQUAD), "--save-run", "--depth", "5", "--output", str(out), "--resamples", "20",
                 "--no-progress"]) == 0
    folder = out / "bm25" / "xquad" / "multi" / "unique"
    run = _saved_run(folder / "en-zh.q-en.run.gz")
    assert {len(hits) for hits in run.values()} == {5}
    assert "Share@10" in read_result(folder / "en-zh.q-en.json").measures


def test_a_resumed_run_reads_the_reused_pools_heads_from_their_saved_runs(tmp_path):
    """q-en ranked and saved, then a run that adds q-zh: the consistency file holds the pair, equal to
    the one a single run of both writes."""
    common = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "multi",
              "--data-dir", str(XQUAD), "--save-run", "--resamples", "20", "--no-progress"]
    assert main([*common, "--query-lang", "en", "--output", str(tmp_path / "a")]) == 0
    folder = tmp_path / "a" / "bm25" / "xquad" / "multi" / "unique"
    assert not (folder / "en-zh.consistency.json").exists()  # one query language: nothing to compare
    assert main([*common, "--output", str(tmp_path / "a")]) == 0  # q-en reused, q-zh ranked
    assert main([*common, "--output", str(tmp_path / "b")]) == 0
    resumed = json.loads((folder / "en-zh.consistency.json").read_text())
    whole = json.loads((tmp_path / "b" / "bm25" / "xquad" / "multi" / "unique" / "en-zh.consistency.json").read_text())
    assert resumed == whole and resumed["pairs"][0]["measures"]["MRC@10"]["n"] == 1190


def test_alpha_ndcg_does_not_depend_on_the_head_depth(tmp_path):
    """bm25 on XQuAD en,zh multi, where ties cross the 20th place: the default head (20 deep) and
    ``--save-run --depth 1000`` give the same alpha_nDCG@20 (the top 20 under the tie rule)."""
    records = {}
    for name, extra in (("default", []), ("deep", ["--save-run", "--depth", "1000"])):
        out = tmp_path / name
        assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "multi",
                     "--data-dir", str(XQUAD), "--output", str(out), "--resamples", "20", "--no-progress",
                     *extra]) == 0
        records[name] = out / "bm25" / "xquad" / "multi" / "unique"
    crossing = 0
    for q in ("en", "zh"):
        default, deep = (read_result(records[n] / f"en-zh.q-{q}.json").measures["alpha_nDCG@20"] for n in records)
        assert default.value == deep.value, q
        for hits in _saved_run(records["deep"] / f"en-zh.q-{q}.run.gz").values():
            ranked = sorted(np.float32(s) for s in hits.values())[::-1]
            crossing += len(ranked) > 20 and ranked[19] == ranked[20]
    assert crossing > 0  # a tie group crosses the cutoff: the head's depth would matter
