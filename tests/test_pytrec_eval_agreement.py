"""Every trec_eval measure of clirbench equals pytrec_eval, on runs with heavy score ties."""
from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from clirbench.measures import AP, RR, MRR, P, R, Success, compute, nDCG, parse
from clirbench.rank.rows import rank_relevant
from clirbench.rank.runs import rank_run, rank_run_arrays
from trec_keys import pytrec_key

MEASURES = [nDCG, nDCG @ 1, nDCG @ 3, nDCG @ 5, nDCG @ 10, RR, AP, AP @ 1, AP @ 3, AP @ 10, AP @ 1000,
            R @ 1, R @ 3, R @ 10, P @ 1, P @ 3, P @ 10, Success @ 1, Success @ 3, Success @ 10]
PYTREC = {"ndcg", "ndcg_cut.1,3,5,10", "recip_rank", "map", "map_cut.1,3,10,1000", "recall.1,3,10",
          "P.1,3,10", "success.1,3,10"}
ALPHABET = ["d", "D", "1", "0", "2", "é", "e", "日", "ß", "😀", "z", "_"]
SCORE_SETS = [(0.0, 0.5, 1.0), (-1.5, 0.0, 0.25, 3.0), (1.0,), (0.1, 0.2, 0.30000000000000004, 0.3)]


def pytrec(qrels, run) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, PYTREC).evaluate(run)


def assert_agree(table, qrels, run, measures=MEASURES) -> None:
    ref = pytrec(qrels, run)
    assert set(table.query_ids) == set(ref)
    ours = compute(measures, table)
    for m in measures:
        want = np.array([ref[q][pytrec_key(m)] for q in table.query_ids])
        np.testing.assert_allclose(ours[str(m)], want, rtol=0, atol=1e-9, err_msg=str(m))


def random_ids(rng: np.random.Generator, n: int) -> list[str]:
    ids: set[str] = set()
    while len(ids) < n:
        ids.add("".join(rng.choice(ALPHABET, size=rng.integers(1, 5))))
    out = sorted(ids)  # a set's order depends on PYTHONHASHSEED: sort, then shuffle with rng
    return [out[i] for i in rng.permutation(n)]


def random_case(seed: int):
    """Random run + qrels: tied scores, graded qrels, unjudged, unretrieved, no-relevant queries."""
    rng = np.random.default_rng(seed)
    n_docs, n_q = int(rng.integers(1, 30)), int(rng.integers(1, 8))
    docs = random_ids(rng, n_docs)
    values = SCORE_SETS[seed % len(SCORE_SETS)]
    qrels, run = {}, {}
    for j in range(n_q):
        q = f"q{j}"
        judged = rng.choice(n_docs, size=rng.integers(0, n_docs + 1), replace=False)
        kind = rng.integers(0, 6)
        if kind == 0:
            pass  # not in qrels: pytrec_eval skips it
        elif kind == 1:
            qrels[q] = {docs[i]: 0 for i in judged} or {docs[0]: 0}  # judged, nothing relevant
        else:
            qrels[q] = {docs[i]: int(rng.integers(0, 4)) for i in judged}
            if rng.random() < 0.3:
                qrels[q]["never-retrieved"] = int(rng.integers(1, 4))
        if rng.random() < 0.9:
            got = rng.choice(n_docs, size=rng.integers(0, n_docs + 1), replace=False)
            run[q] = {docs[i]: float(rng.choice(values)) for i in got}
    return docs, qrels, run


@pytest.mark.parametrize("seed", range(300))
def test_run_path_matches_pytrec_eval(seed):
    docs, qrels, run = random_case(seed)
    assert_agree(rank_run(run, qrels), qrels, run)


@pytest.mark.parametrize("seed", range(100))
def test_run_arrays_equal_run_dict(seed):
    docs, qrels, run = random_case(seed)
    rng = np.random.default_rng(seed + 1000)
    qids = list(run)
    triples = [(qi, docs.index(d), s) for qi, q in enumerate(qids) for d, s in run[q].items()]
    rng.shuffle(triples)  # entry order must not matter
    arr = np.array(triples, dtype=float).reshape(-1, 3)
    a = rank_run_arrays(arr[:, 0].astype(np.int32), arr[:, 1].astype(np.int32), arr[:, 2], qids, docs, qrels)
    b = rank_run(run, qrels)
    assert a.query_ids == b.query_ids
    for f in ("qidx", "rank", "grade"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def pool_case(seed: int):
    rng = np.random.default_rng(seed)
    n_docs, n_q = int(rng.integers(1, 40)), int(rng.integers(1, 12))
    docs = random_ids(rng, n_docs)
    values = np.array(SCORE_SETS[seed % len(SCORE_SETS)])
    scores = rng.choice(values, size=(n_q, n_docs))
    if seed % 3 == 0:
        scores = scores.astype(np.float32)
    qids = [f"q{j}" for j in range(n_q)]
    qrels = {}
    for q in qids:
        if rng.random() < 0.85:
            judged = rng.choice(n_docs, size=rng.integers(1, min(n_docs, 6) + 1), replace=False)
            qrels[q] = {docs[i]: int(rng.integers(0, 4)) for i in judged}
    return docs, qids, scores, qrels


def blocks_of(scores, rng):
    cuts = sorted(set(rng.integers(0, len(scores) + 1, size=3).tolist()) | {0, len(scores)})
    return [(a, scores[a:b]) for a, b in zip(cuts, cuts[1:])]


@pytest.mark.parametrize("seed", range(200))
def test_pool_path_matches_pytrec_eval_on_full_run(seed):
    docs, qids, scores, qrels = pool_case(seed)
    table = rank_relevant(blocks_of(scores, np.random.default_rng(seed)), docs, qids, qrels)
    run = {q: {d: float(s) for d, s in zip(docs, row)} for q, row in zip(qids, scores)}
    assert_agree(table, qrels, run)
    # the pool path and the run path give the same ranks on a full run
    other = rank_run(run, qrels)
    np.testing.assert_array_equal(table.rank, other.rank)
    assert table.query_ids == other.query_ids


@pytest.mark.parametrize("seed", range(100))
def test_sparse_rows_with_minus_inf_match_pytrec_eval(seed):
    """-inf marks docs a top-k retriever did not return; pytrec_eval sees them at -inf too."""
    docs, qids, scores, qrels = pool_case(seed)
    rng = np.random.default_rng(seed + 7)
    sparse = np.where(rng.random(scores.shape) < 0.5, -np.inf, scores).astype(scores.dtype)
    table = rank_relevant([(0, sparse)], docs, qids, qrels)
    assert np.isfinite(table.rank).all()
    full = {q: {d: float(s) for d, s in zip(docs, row)} for q, row in zip(qids, sparse)}
    assert_agree(table, qrels, full)
    # against the truncated run (only returned docs), cutoffs within the shortest list agree
    top = {q: {d: float(s) for d, s in zip(docs, row) if s > -np.inf} for q, row in zip(qids, sparse)}
    depth = min(len(v) for v in top.values())
    cut = [m for m in MEASURES if m.cutoff is not None and m.cutoff <= depth]
    assert_agree(table, qrels, top, cut)


def test_constant_scorer_gets_trec_eval_value_not_perfect():
    docs = [f"d{i}" for i in range(1, 11)]  # byte order: d1 < d10 < d2 < ... < d9
    qrels = {"q": {"d1": 1}}
    table = rank_relevant([(0, np.zeros((1, 10)))], docs, ["q"], qrels)
    assert table.rank.tolist() == [10.0]  # d1 sorts last among equal scores
    run = {"q": {d: 0.0 for d in docs}}
    assert_agree(table, qrels, run)
    got = compute([nDCG @ 1, RR], table)
    assert got["nDCG@1"][0] == 0.0 and got["RR"][0] == pytest.approx(0.1)
    table2 = rank_relevant([(0, np.zeros((1, 10)))], docs, ["q"], {"q": {"d9": 1}})
    assert table2.rank.tolist() == [1.0]


def test_rr_at_k_equals_recip_rank_of_truncated_run():
    for seed in range(50):
        docs, qrels, run = random_case(seed)
        table = rank_run(run, qrels)
        ours = parse("MRR@3").per_query(table)
        order = lambda kv: (np.float32(kv[1]), kv[0])  # trec_eval's order: float32 score, then id
        cut = {q: dict(sorted(v.items(), key=order, reverse=True)[:3]) for q, v in run.items()}
        ref = pytrec(qrels, cut)
        np.testing.assert_allclose(ours, [ref[q]["recip_rank"] for q in table.query_ids], atol=1e-12)
    assert MRR == RR


ids = st.text(alphabet=st.sampled_from(ALPHABET + ["a", "é", "\u00ff", "\u0100"]), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    docs=st.lists(ids, min_size=1, max_size=15, unique=True),
    data=st.data(),
)
def test_hypothesis_runs_match_pytrec_eval(docs, data):
    values = data.draw(st.sampled_from(SCORE_SETS))
    n_q = data.draw(st.integers(1, 4))
    run, qrels = {}, {}
    for j in range(n_q):
        q = f"q{j}"
        ret = data.draw(st.lists(st.sampled_from(docs), unique=True, max_size=len(docs)))
        run[q] = {d: data.draw(st.sampled_from(values)) for d in ret}
        judged = data.draw(st.dictionaries(st.sampled_from(docs + ["unretrieved"]), st.integers(0, 3), max_size=6))
        if judged:
            qrels[q] = judged
    assert_agree(rank_run(run, qrels), qrels, run)


def test_scores_tie_as_trec_eval_float32():
    """trec_eval keeps scores as C float: 0.3 and 0.30000000000000004 are a tie, ordered by id."""
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 0.30000000000000004, "b": 0.3}}
    table = rank_run(run, qrels)
    assert table.rank.tolist() == [2.0]  # b > a byte-wise, and the scores tie in float32
    assert_agree(table, qrels, run)
    pool = rank_relevant([(0, np.array([[0.30000000000000004, 0.3]]))], ["a", "b"], ["q"], qrels)
    assert pool.rank.tolist() == [2.0]
    run2 = {"q": {"a": 1.0000001, "b": 1.0}}  # distinct in float32
    assert rank_run(run2, qrels).rank.tolist() == [1.0]
    assert_agree(rank_run(run2, qrels), qrels, run2)
