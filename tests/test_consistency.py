"""Consistency across query languages (measures/consistency.py, stats/consistency.py): MRC@k equal to
scipy's spearmanr on the rank vectors, RBO equal to PyPI rbo's rbo_ext, the matrix's intervals equal
to a plain bootstrap loop, and bm25 on XQuAD en,zh equal to a direct loop over its two saved runs."""
from __future__ import annotations

import gzip
import json
import math
import warnings

import numpy as np
import pytest
import rbo
from hypothesis import given, settings, strategies as st
from scipy.stats import rankdata, spearmanr

from clirbench.measures.consistency import (
    TwinValues,
    average_ranks,
    consistency_values,
    mrc,
    rbo_ext,
    twin_rows,
)
from clirbench.rank.choose import choose_ranker
from clirbench.rank.head import Head, head_of_run
from clirbench.results.saved_run import run_bytes
from clirbench.retrievers.bm25 import BM25Retriever
from clirbench.scenarios import build_pools
from clirbench.stats.consistency import consistency_matrix
from clirbench.tasks import get_task

from xquad_files import XQUAD  # noqa: E402

DOCS = [f"d{i}" for i in range(12)]


def oracle_mrc(a, sa, b, sb, k):
    """Rank vectors on the union (average ranks of -score in each list, k + 1 when missing), then 1 when
    equal, else scipy's spearmanr (NaN for a constant vector); NaN for an empty union."""
    a, b, sa, sb = list(a)[:k], list(b)[:k], np.float32(sa)[:k], np.float32(sb)[:k]
    union = list(dict.fromkeys(a + b))
    if not union:
        return math.nan
    ra_in, rb_in = dict(zip(a, rankdata(-sa.astype(float)))), dict(zip(b, rankdata(-sb.astype(float))))
    ra = np.array([ra_in.get(d, k + 1.0) for d in union])
    rb = np.array([rb_in.get(d, k + 1.0) for d in union])
    if np.array_equal(ra, rb):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(ra, rb).statistic)


def same(x, y, tol=1e-12):
    return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=0, abs_tol=tol)


@st.composite
def ranked_list(draw, max_len=8):
    """Distinct documents in rank order with non-increasing scores drawn from few values (ties)."""
    docs = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=max_len))
    scores = sorted(draw(st.lists(st.integers(0, 3), min_size=len(docs), max_size=len(docs))), reverse=True)
    return docs, [float(s) / 2 for s in scores]


# -- MRC@k ---------------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(ranked_list(), ranked_list(), st.integers(1, 8))
def test_mrc_equals_spearmanr_on_the_rank_vectors(la, lb, k):
    (a, sa), (b, sb) = la, lb
    got = mrc(a, sa, b, sb, k)
    assert same(got, oracle_mrc(a, sa, b, sb, k)), (a, sa, b, sb, k, got)
    assert same(got, mrc(b, sb, a, sa, k))  # symmetric


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 3), max_size=20))
def test_average_ranks_equal_scipy_rankdata(values):
    assert np.array_equal(average_ranks(values), rankdata(values) if values else np.zeros(0))


def test_mrc_hand_cases():
    a = ["x", "y", "z"]
    assert mrc(a, [3, 2, 1], a, [3, 2, 1], 3) == 1.0  # identical
    assert mrc(a, [3, 2, 1], a[::-1], [3, 2, 1], 3) == -1.0  # reversed
    assert mrc(["x"], [1], ["x"], [5], 1) == 1.0  # one document in both lists: identical
    assert mrc(["x"], [1], ["y"], [1], 1) == -1.0  # disjoint: each first in its own list, k + 1 in the other
    assert math.isnan(mrc([], [], [], [], 3))  # nothing to correlate
    assert math.isnan(mrc(["x"], [1], [], [], 3))  # one rank vector constant (k + 1 everywhere)
    # ties: y and z share a score in both lists, so their order (the tie rule's) does not matter
    assert mrc(["x", "y", "z"], [3, 2, 2], ["x", "z", "y"], [3, 2, 2], 3) == 1.0
    assert mrc(["x", "y", "z"], [3, 2, 1], ["x", "z", "y"], [3, 2, 1], 3) == pytest.approx(0.5)
    assert math.isnan(mrc(a, [1, 1, 1], a, [3, 2, 1], 3))  # all tied in a: a constant vector
    # only the first k of each list count
    assert mrc(["x", "y", "q"], [3, 2, 1], ["x", "y", "r"], [3, 2, 1], 2) == 1.0


def test_mrc_refuses_bad_lists():
    with pytest.raises(ValueError, match="non-increasing"):
        mrc(["x", "y"], [1, 2], ["x"], [1], 2)
    with pytest.raises(ValueError, match="twice"):
        mrc(["x", "x"], [2, 1], ["x"], [1], 2)
    with pytest.raises(ValueError, match="scores"):
        mrc(["x", "y"], [2], ["x"], [1], 2)


# -- RBO -----------------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(DOCS), unique=True, max_size=10),
       st.lists(st.sampled_from(DOCS), unique=True, max_size=10), st.sampled_from([0.5, 0.9, 0.98]))
def test_rbo_ext_equals_the_rbo_package(S, T, p):
    want = float(rbo.RankingSimilarity(list(S), list(T)).rbo_ext(p=p))
    assert rbo_ext(S, T, p) == pytest.approx(want, abs=1e-12)
    assert rbo_ext(T, S, p) == pytest.approx(want, abs=1e-12)


def test_rbo_hand_cases():
    assert rbo_ext(["a", "b"], ["b", "a"]) == pytest.approx(0.09 + 0.81)  # (1-p)(0 + p·1) + p²·1
    assert rbo_ext(list("abc"), list("abc")) == pytest.approx(1.0)
    assert rbo_ext(list("abc"), list("xyz")) == 0.0
    assert rbo_ext([], []) == 1.0 and rbo_ext(["a"], []) == 0.0
    with pytest.raises(ValueError, match="p must"):
        rbo_ext(["a"], ["a"], p=1.0)


# -- twins and heads -----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abcdefgh"), unique=True), st.lists(st.sampled_from("abcdefgh"), unique=True))
def test_twin_rows_pair_shared_ids_in_a_order(qa, qb):
    want = [(i, qb.index(q)) for i, q in enumerate(qa) if q in qb]
    if not want:
        with pytest.raises(ValueError, match="no query pairs by a shared question id"):
            twin_rows(qa, qb)
        return
    ia, ib = twin_rows(qa, qb)
    assert list(zip(ia.tolist(), ib.tolist())) == want


def test_twin_rows_through_a_mapping_and_its_errors():
    ia, ib = twin_rows(["en1", "en2", "en3"], ["zh2", "zh1"], {"en1": "zh1", "en2": "zh2", "en3": "zh9"})
    assert ia.tolist() == [0, 1] and ib.tolist() == [1, 0]
    with pytest.raises(ValueError, match="through the twins given"):
        twin_rows(["a"], ["b"], {"a": "c"})
    with pytest.raises(ValueError, match="more than one"):
        twin_rows(["a", "b"], ["c"], {"a": "c", "b": "c"})


def random_head(rng, query_ids, doc_ids, depth, levels=4):
    """A head from a random run with many ties (scores from few values), some queries ranking few."""
    run = {}
    for q in query_ids:
        chosen = rng.choice(len(doc_ids), size=rng.integers(0, len(doc_ids) + 1), replace=False)
        run[q] = {doc_ids[i]: float(rng.integers(0, levels)) for i in chosen}
    return head_of_run(run, query_ids, doc_ids, depth=depth)


def head_lists(head: Head, row: int, k: int):
    docs = [head.doc_ids[d] for d in head.docs[row, :k].tolist() if d >= 0]
    return docs, head.scores[row, :len(docs)]


@pytest.mark.parametrize("seed", range(5))
def test_consistency_values_equal_a_loop_over_the_lists(seed):
    rng = np.random.default_rng(seed)
    docs = [f"doc{i:02d}" for i in range(15)]
    shuffled = [docs[i] for i in rng.permutation(len(docs))]  # b's heads index the documents differently
    qa, qb = ["q1", "q2", "q3", "q4", "q5"], ["q4", "q9", "q2", "q1", "q5"]
    a, b = random_head(rng, qa, docs, 8), random_head(rng, qb, shuffled, 8)
    values = consistency_values(a, b, k=6, p=0.9)
    assert values.query_ids_a == values.query_ids_b == ("q1", "q2", "q4", "q5")
    assert values.names == ("MRC@6", "RBO@6")
    for n, q in enumerate(values.query_ids_a):
        la, sa = head_lists(a, qa.index(q), 6)
        lb, sb = head_lists(b, qb.index(q), 6)
        assert same(values.mrc[n], oracle_mrc(la, sa, lb, sb, 6))
        assert values.rbo[n] == pytest.approx(rbo.RankingSimilarity(la, lb).rbo_ext(p=0.9), abs=1e-12)


def test_consistency_values_refuse_a_shallow_head_and_other_documents():
    rng = np.random.default_rng(0)
    docs = [f"doc{i}" for i in range(10)]
    a = random_head(rng, ["q"], docs, 5)
    with pytest.raises(ValueError, match="top 10: the head holds 5"):
        consistency_values(a, a, k=10)
    full = random_head(rng, ["q"], docs, 100)  # every document: k past it reads them all
    assert consistency_values(full, full, k=50).mrc.shape == (1,)
    other = random_head(rng, ["q"], docs[:9] + ["other"], 5)
    with pytest.raises(ValueError, match="different documents"):
        consistency_values(a, other, k=5)
    with pytest.raises(ValueError, match="no query pairs"):
        consistency_values(a, random_head(rng, ["r"], docs, 5), k=5)


# -- all questions at once equal the one-question functions, bit for bit ---------------------------


def per_question(head_a: Head, head_b: Head, k: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """``mrc`` and ``rbo_ext`` question by question (twins by shared id, a's order) on the lists by name."""
    depth = min(k, head_a.depth, head_b.depth)
    at_b = {q: j for j, q in enumerate(head_b.query_ids)}
    mrcs, rbos = [], []
    for i, q in enumerate(head_a.query_ids):
        if q not in at_b:
            continue
        la, sa = head_lists(head_a, i, depth)
        lb, sb = head_lists(head_b, at_b[q], depth)
        mrcs.append(mrc(la, sa, lb, sb, k))
        rbos.append(rbo_ext(la, lb, p))
    return np.array(mrcs), np.array(rbos)


def head_of_lists(query_ids, doc_ids, lists, depth) -> Head:
    """A head from rows of (document indices, scores) in rank order, -1 / -inf past each row's end."""
    docs = np.full((len(lists), depth), -1, dtype=np.int64)
    scores = np.full((len(lists), depth), -np.inf, dtype=np.float32)
    for r, (row, row_scores) in enumerate(lists):
        docs[r, :len(row)], scores[r, :len(row)] = row, row_scores
    return Head(tuple(query_ids), tuple(doc_ids), None, docs, scores)


@st.composite
def twin_heads(draw):
    """Heads a and b over the same documents (b indexing them in another order, its rows in another
    order, one question only in a): rows of 0..depth documents with scores from few values (ties),
    b's list of a question identical to a's, a's reversed, disjoint from it, overlapping or drawn
    alone; k up to the depth, past it when the heads hold every document."""
    n_docs = draw(st.integers(1, 24))
    depth = draw(st.integers(1, 20))
    k = draw(st.integers(1, depth + (3 if depth >= n_docs else 0)))
    n = draw(st.integers(1, 6))
    perm = draw(st.permutations(range(n_docs)))  # b's document index j is a's perm[j]
    b_index = {d: j for j, d in enumerate(perm)}
    levels = draw(st.integers(1, 4))

    def scored(row):
        values = draw(st.lists(st.integers(0, levels - 1), min_size=len(row), max_size=len(row)))
        return row, np.array(sorted(values, reverse=True), dtype=np.float32) / np.float32(3)

    lists_a, lists_b = [], []
    for _ in range(n):
        a = draw(st.lists(st.integers(0, n_docs - 1), unique=True, max_size=min(depth, n_docs)))
        mode = draw(st.sampled_from(["same", "reversed", "disjoint", "overlap", "any"]))
        rest = [d for d in range(n_docs) if d not in a]
        b = {"same": a, "reversed": a[::-1],
             "disjoint": draw(st.permutations(rest)) if rest else [],
             "overlap": a[:len(a) // 2] + rest[:max(0, depth - len(a) // 2)],
             "any": draw(st.lists(st.integers(0, n_docs - 1), unique=True, max_size=min(depth, n_docs)))}[mode]
        lists_a.append(scored(a))
        row_b, scores_b = scored(b[:depth])
        lists_b.append(([b_index[d] for d in row_b], lists_a[-1][1] if mode == "same" else scores_b))
    docs = [f"d{i:02d}" for i in range(n_docs)]
    qids = [f"q{i}" for i in range(n)]
    head_a = head_of_lists(qids + ["only_a"], docs, lists_a + [lists_a[0]], depth)
    head_b = head_of_lists(qids[::-1], [docs[d] for d in perm], lists_b[::-1], depth)
    return head_a, head_b, k


@settings(max_examples=300, deadline=None)
@given(twin_heads(), st.sampled_from([0.5, 0.9, 0.98]))
def test_consistency_values_equal_the_one_question_functions_bit_for_bit(heads, p):
    head_a, head_b, k = heads
    values = consistency_values(head_a, head_b, k=k, p=p)
    want_mrc, want_rbo = per_question(head_a, head_b, k, p)
    assert np.array_equal(values.mrc, want_mrc, equal_nan=True), (values.mrc, want_mrc)
    assert np.array_equal(values.rbo, want_rbo), (values.rbo, want_rbo)


@pytest.mark.parametrize("k", [10, 16, 40, 130])
def test_consistency_values_equal_the_one_question_functions_on_deep_lists(k):
    """Unions past 16 and sums past 8 and 128 terms (BLAS's and numpy's blocked sums) stay bit for bit."""
    rng = np.random.default_rng(k)
    docs = [f"doc{i:03d}" for i in range(300)]
    qids = [f"q{i}" for i in range(60)]
    a = random_head(rng, qids, docs, 150, levels=6)
    b = random_head(rng, qids[::-1], [docs[i] for i in rng.permutation(len(docs))], 150, levels=40)
    values = consistency_values(a, b, k=k, p=0.9)
    want_mrc, want_rbo = per_question(a, b, k, 0.9)
    assert np.array_equal(values.mrc, want_mrc, equal_nan=True)
    assert np.array_equal(values.rbo, want_rbo)
    unions = [len(set(head_lists(a, i, k)[0]) | set(head_lists(b, len(qids) - 1 - i, k)[0])) for i in range(len(qids))]
    assert max(unions) > 16 and min(unions) < max(unions) and np.isfinite(values.mrc).sum() > 40


def test_consistency_values_refuse_a_document_listed_twice_and_rising_scores():
    docs = ["x", "y", "z"]
    ok = head_of_lists(["q"], docs, [([0, 1], [2.0, 1.0])], 2)
    twice = head_of_lists(["q"], docs, [([2, 2], [2.0, 1.0])], 2)
    rising = head_of_lists(["q"], docs, [([0, 1], [1.0, 2.0])], 2)
    for bad in (twice, rising):
        for a, b in ((ok, bad), (bad, ok)):
            with pytest.raises(ValueError, match="twice|non-increasing"):
                consistency_values(a, b, k=2)
    with pytest.raises(ValueError, match="p must"):
        consistency_values(ok, ok, k=2, p=1.0)


# -- the matrix ----------------------------------------------------------------------------------


def loop_ci(column, resamples, seed, confidence=0.95):
    """A plain bootstrap loop: resample b draws rng.integers(0, n, n), its mean over the defined values."""
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        drawn = column[rng.integers(0, len(column), size=len(column))]
        drawn = drawn[~np.isnan(drawn)]
        means.append(drawn.mean() if len(drawn) else np.nan)
    alpha = (1 - confidence) / 2
    return np.nanquantile(means, [alpha, 1 - alpha])


def test_matrix_cells_are_the_pairs_values_with_bootstrap_intervals():
    rng = np.random.default_rng(7)
    docs = [f"doc{i:02d}" for i in range(20)]
    qids = [f"q{i}" for i in range(30)]
    heads = {lang: random_head(rng, qids, docs, 10) for lang in ("en", "zh", "ar")}
    matrix = consistency_matrix(heads, k=5, resamples=200, seed=3)
    assert [c.langs for c in matrix.pairs] == [("en", "zh"), ("en", "ar"), ("zh", "ar")]
    assert matrix.pair("ar", "en") is matrix.pair("en", "ar")
    with pytest.raises(KeyError):
        matrix.pair("en", "en")
    for cell in matrix.pairs:
        direct = consistency_values(heads[cell.langs[0]], heads[cell.langs[1]], k=5)
        for name, column in direct.columns().items():
            assert np.array_equal(cell.values.columns()[name], column, equal_nan=True)
            got = cell.summary[name]
            assert got.value == pytest.approx(np.nanmean(column), abs=1e-12)
            assert got.n == int((~np.isnan(column)).sum())
            assert [got.ci_low, got.ci_high] == pytest.approx(loop_ci(column, 200, 3), abs=1e-12)
    table = matrix.table("RBO@5")
    assert table[0][0] is None and table[0][2] is table[2][0] is matrix.pair("en", "ar").summary["RBO@5"]
    record = json.loads(json.dumps(matrix.to_dict(), allow_nan=False))
    assert record["k"] == 5 and record["p"] == 0.9 and len(record["pairs"]) == 3
    first = record["pairs"][0]
    assert first["query_ids"]["a"] == qids and len(first["per_query"]["MRC@5"]) == 30
    with pytest.raises(ValueError, match="two query languages"):
        consistency_matrix({"en": heads["en"]})


# -- bm25 on XQuAD en,zh: the real rankers' heads against their saved runs ----------------------------


def read_run(data: bytes) -> dict[str, list[tuple[str, float]]]:
    """A saved run's lists in file order (rank order): qid -> [(doc, float32 score)]."""
    out: dict[str, list[tuple[str, float]]] = {}
    for line in gzip.decompress(data).decode().splitlines():
        qid, _, doc, rank, score, _ = line.split()
        out.setdefault(qid, []).append((doc, float(np.float32(float(score)))))
        assert int(rank) == len(out[qid])
    return out


@pytest.fixture(scope="module")
def bm25_heads():
    collection = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    pools = {p.query_lang: p for p in build_pools(collection, [("en", "zh")], scenarios=("multi",))}
    assert sorted(pools) == ["en", "zh"] and pools["en"].docs == pools["zh"].docs
    ranker = choose_ranker(depth=20)
    return {lang: ranker.rank(BM25Retriever(), pool, pool).head for lang, pool in pools.items()}


def test_bm25_xquad_values_equal_a_loop_over_the_saved_runs(bm25_heads):
    k = 10
    runs = {lang: read_run(run_bytes(head, "bm25")) for lang, head in bm25_heads.items()}
    values = consistency_values(bm25_heads["en"], bm25_heads["zh"], k=k)
    assert len(values.query_ids_a) == 1190 and values.query_ids_a == values.query_ids_b
    tied = 0
    for n, q in enumerate(values.query_ids_a):
        (a, sa), (b, sb) = (zip(*runs[lang][q][:k]) for lang in ("en", "zh"))
        tied += len(set(sa)) < len(sa) or len(set(sb)) < len(sb)
        assert same(values.mrc[n], oracle_mrc(a, sa, b, sb, k)), q
        assert values.rbo[n] == pytest.approx(rbo.RankingSimilarity(list(a), list(b)).rbo_ext(p=0.9), abs=1e-12), q
    assert tied > 0  # some lists hold ties: the average ranks are exercised
    assert 0 < np.nanmean(values.rbo) < 1 and -1 < np.nanmean(values.mrc) < 1
    matrix = consistency_matrix(bm25_heads, k=k, resamples=100, seed=1)
    cell = matrix.pair("zh", "en")
    assert isinstance(cell.values, TwinValues)
    assert cell.summary["MRC@10"].value == pytest.approx(np.nanmean(values.mrc), abs=1e-12)
    assert cell.summary["RBO@10"].ci_low <= cell.summary["RBO@10"].value <= cell.summary["RBO@10"].ci_high
