"""The evaluation kernel: every route (retriever, ready run, ranker strategy, TREC run) agrees."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from clirbench.collection import Pool, Text
from clirbench.evaluation import PoolEvaluation, evaluate_pool, evaluate_scores, evaluate_table
from clirbench.rank.ranked import Ranked, Ranker
from clirbench.rank.rows import rank_blocks
from clirbench.rank.exact import ExactRanker
from clirbench.measures import parse
from clirbench.rank.runs import rank_run

MEASURES = tuple(parse(m) for m in ("nDCG@10", "RR", "R@100", "MaxR", "MaxR_norm", "MaxR_norm_of_mean",
                                    "SameLangFirst"))


def _pool(n_docs: int = 12, n_queries: int = 5, seed: int = 0) -> Pool:
    rng = np.random.default_rng(seed)
    docs = tuple(Text(f"d{i}", f"doc {i}", "en" if i % 2 else "zh") for i in range(n_docs))
    queries = tuple(Text(f"q{j}", f"query {j}", "en") for j in range(n_queries))
    qrels = {q.id: {f"d{k}": 1 for k in rng.choice(n_docs, size=2, replace=False)} for q in queries}
    qrels["q0"]["d11"] = 2
    return Pool(task="toy", scenario="multi", pool_mode="unique", doc_langs=("en", "zh"), query_lang="en",
                docs=docs, queries=queries, qrels=qrels, exclusions={"q1": frozenset({"d0"})})


class MatrixRetriever:
    """Scores from a fixed matrix (small integers: many exact ties), in blocks of two queries."""

    spec = "test:matrix"

    def __init__(self, scores: np.ndarray):
        self.scores = scores
        self.calls = 0

    def score(self, queries, docs):
        self.calls += 1
        for start in range(0, len(queries), 2):
            yield start, self.scores[start:start + 2]


@pytest.fixture
def case():
    pool = _pool()
    scores = np.random.default_rng(1).integers(0, 4, size=(len(pool.queries), len(pool.docs))).astype(np.float32)
    return pool, scores


def test_retriever_run_and_blocks_routes_agree(case):
    pool, scores = case
    by_retriever = evaluate_pool(MatrixRetriever(scores), pool, MEASURES, resamples=200, seed=3)
    run = {q.id: {d.id: float(scores[i, j]) for j, d in enumerate(pool.docs) if d.id not in pool.exclusions.get(q.id, ())}
           for i, q in enumerate(pool.queries)}
    by_run = evaluate_scores(run, pool, MEASURES, resamples=200, seed=3)
    by_blocks = evaluate_table(rank_blocks([(0, scores)], pool), MEASURES, resamples=200, seed=3)
    for other in (by_run, by_blocks):
        assert other.query_ids == by_retriever.query_ids
        assert other.summary == by_retriever.summary
        for name, vec in by_retriever.per_query.items():
            np.testing.assert_array_equal(other.per_query[name], vec)
    assert list(by_retriever.summary) == [str(m) for m in MEASURES]


def test_of_mean_measure_is_the_function_of_the_mean(case):
    pool, scores = case
    ev = evaluate_pool(MatrixRetriever(scores), pool, MEASURES, resamples=100)
    maxr_norm = parse("MaxR_norm_of_mean")
    expected = maxr_norm.from_mean(float(np.nanmean(ev.per_query["MaxR"])), ev.table)
    assert ev.summary["MaxR_norm_of_mean"].value == pytest.approx(expected)
    lo, hi = ev.summary["MaxR_norm_of_mean"].ci_low, ev.summary["MaxR_norm_of_mean"].ci_high
    assert lo <= ev.summary["MaxR_norm_of_mean"].value <= hi
    # the per-query table of a result holds the measures reported as means, not the of_mean ones
    assert set(ev.columns()) == {str(m) for m in MEASURES} - {"MaxR_norm_of_mean"}


def test_values_only_when_no_resamples(case):
    pool, scores = case
    ev = evaluate_pool(MatrixRetriever(scores), pool, MEASURES, resamples=0)
    full = evaluate_pool(MatrixRetriever(scores), pool, MEASURES, resamples=50)
    for name, mv in ev.summary.items():
        assert mv.value == full.summary[name].value and np.isnan(mv.ci_low) and np.isnan(mv.ci_high)


def test_ranker_is_a_strategy_that_sees_the_translated_pool(case):
    pool, scores = case
    seen = dataclasses.replace(pool, queries=tuple(Text(q.id, "translated " + q.text, q.lang) for q in pool.queries))
    calls = []

    class Recording:
        """A user's ranker: the protocol's two methods, reporting how it ranked."""

        def supports(self, measures):
            pass

        def rank(self, retriever, seen_pool, real_pool):
            calls.append((seen_pool, real_pool))
            return Ranked(ExactRanker().rank(retriever, seen_pool, real_pool).table, {"path": "recording"})

    assert isinstance(Recording(), Ranker) and isinstance(ExactRanker(), Ranker)
    retriever = MatrixRetriever(scores)
    ev = evaluate_pool(retriever, pool, MEASURES, resamples=50, seen=seen, ranker=Recording())
    assert calls == [(seen, pool)] and retriever.calls == 1 and ev.ranking == {"path": "recording"}
    plain = evaluate_pool(MatrixRetriever(scores), pool, MEASURES, resamples=50)
    assert ev.summary == plain.summary and plain.ranking is None and set(plain.seconds) == {"search", "measure"}


def test_measures_needing_the_full_ranking_are_left_out_of_the_summary():
    qrels = {"q": {"a": 1, "z": 1}}
    ev = evaluate_table(rank_run({"q": {"a": 2.0, "b": 1.0}}, qrels), [parse("MaxR"), parse("RR")], resamples=20)
    assert isinstance(ev, PoolEvaluation)
    assert ev.unsummarised == ("MaxR",) and np.isinf(ev.per_query["MaxR"]).all()
    assert ev.summary["RR"].value == 1.0


def test_breakdown_over_the_stored_columns(case):
    pool, scores = case
    ev = evaluate_pool(MatrixRetriever(scores), pool, [parse("RR"), parse("MaxR_norm_of_mean")], resamples=20)
    assert ev.breakdown({}) is None
    rr = dict(zip(ev.query_ids, ev.per_query["RR"]))
    table = ev.breakdown({"topic": {"q0": ["a"], "q2": ["a", "b"]}})
    assert table == {"topic": {"a": {"n": 2, "RR": pytest.approx((rr["q0"] + rr["q2"]) / 2)},
                               "b": {"n": 1, "RR": rr["q2"]}}}


def test_evaluate_keeps_its_report_and_exposes_per_query_values(tmp_path):
    from clirbench.trec_files import evaluate_files
    from clirbench.evaluation import evaluate_run

    qrels = {"q1": {"a": 1, "c": 2}, "q2": {"b": 1, "d": 1}, "q3": {"z": 1}}
    run = {"q1": {"a": 0.5, "b": 0.5, "c": 0.1}, "q2": {"a": 1.0, "b": 0.2}, "q4": {"a": 1.0}}
    ev = evaluate_run(qrels, run, ["RR", "MaxR", "R@100"], resamples=100, seed=5)
    report = ev.to_dict()
    assert ev.per_query.query_ids == ("q1", "q2") and report["num_queries"] == 2
    assert report["queries_in_run_without_judgements"] == 1 and report["queries_judged_not_in_run"] == 1
    assert report["measures"]["RR"] == ev.measures["RR"].to_dict()
    assert report["measures"]["RR"]["value"] == pytest.approx(np.mean(ev.per_query.values["RR"]))
    assert report["measures"]["MaxR"]["value"] is None and "full ranking" in report["measures"]["MaxR"]["note"]
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, j in qrels.items() for d, g in j.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} 0 {s} x\n" for q, h in run.items() for d, s in h.items()))
    from_files = evaluate_files(tmp_path / "qrels", tmp_path / "run", ["RR", "MaxR", "R@100"], resamples=100,
                                seed=5, per_query_path=tmp_path / "pq.tsv")
    assert from_files.to_dict() == report
    rows = (tmp_path / "pq.tsv").read_text().splitlines()
    assert f"q2\tRR\t{float(ev.per_query.values['RR'][1])!r}" in rows and "q2\tMaxR\tnull" in rows
