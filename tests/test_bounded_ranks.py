"""Ranks from a float32 BLAS product plus exact re-scoring of the near-ties (``BoundedScores``) equal
the ranks of exact ``fl32(fl64(q . d))`` scores bit for bit, on adversarial near-ties: copies of
the relevant embedding under other ids, embeddings one ulp apart, permuted documents, every block
size and shard count. The reference is independent: ``math.fsum`` scores and a Python sort."""
from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import pytest

from clirbench.collection import Pool, Text
from clirbench.rank.bands import count_band
from clirbench.rank.exact import ExactRanker
from clirbench.rank.rows import rank_blocks, rank_relevant
from clirbench.retrievers.dense import BoundedBlock, BoundedScores, DenseRetriever, pair_scores, product_error, products_finite
from clirbench.rank.counting import rank_relevant_sharded
from clirbench.rank.dense_shards import DenseShards
from clirbench.rank.sharded import rank_pool_sharded
from threadpoolctl import threadpool_info, threadpool_limits
from conftest import torch_devices


def blas_threads_by_library():
    return {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


@contextmanager
def blas_limited_to(threads: int):
    """``threadpool_limits(threads)`` for the block, then a check that every BLAS loaded before it has
    its thread count back (the parts' one-thread limit is lifted, also after an error)."""
    before = blas_threads_by_library()
    with threadpool_limits(threads, user_api="blas"):
        yield
    after = blas_threads_by_library()
    assert {lib: after[lib] for lib in before} == before


class Enc:
    model_id, revision, batch_size = "test/matrix", "0", 1024

    def __init__(self, Q, D):
        self.Q, self.D = Q, D

    def prompt(self, role):
        return ""

    def encode(self, texts, role):
        M = self.Q if role == "query" else self.D
        return M[[int(t[1:]) for t in texts]]


def _fsum_scores(Q, D):
    Q64, D64 = Q.astype(np.float64), D.astype(np.float64)
    return np.array([[np.float32(math.fsum((q * d).tolist())) for d in D64] for q in Q64], dtype=np.float32)


def _reference_ranks(Q, D, doc_ids, qrels, exclusions, query_ids):
    """1 + documents sorting before each relevant one: score descending, then id descending (Python sort)."""
    S = _fsum_scores(Q, D)
    out = []
    for i, q in enumerate(query_ids):
        order = sorted((j for j in range(len(doc_ids)) if doc_ids[j] not in exclusions.get(q, ())),
                       key=lambda j: (float(S[i, j]), doc_ids[j]), reverse=True)
        pos = {doc_ids[j]: r + 1 for r, j in enumerate(order)}
        out.extend((i, float(g), float(pos[d])) for d, g in qrels[q].items() if g > 0)
    return sorted(out)


def _triples(table):
    return sorted(zip(table.qidx.tolist(), table.grade.tolist(), table.rank.tolist()))


def _adversarial(seed: int, dim: int = 24):
    """Nearly parallel embeddings (scores near 1: BLAS rounding errors are many ulps), plus, per
    relevant document, copies of it under other ids and copies moved by one ulp in a few coordinates."""
    rng = np.random.default_rng(seed)

    def unit(n):
        x = rng.standard_normal((n, dim)).astype(np.float32) * 0.01 + 1
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    Q, base = unit(40), unit(30)
    extra = []
    for j in range(0, 30, 3):
        extra += [base[j], base[j]]  # identical rows, other ids
        for k in (1, 2, 5):
            v = base[j].copy()
            c = rng.choice(dim, k, replace=False)
            v[c] = np.nextafter(v[c], np.where(rng.random(k) < 0.5, np.float32(2), np.float32(-2)))
            extra.append(v)
    D = np.vstack([base, np.array(extra, dtype=np.float32)])
    Q[5] = D[0]  # a query equal to a document
    Q[6] = np.nextafter(D[3], np.float32(2))
    return Q, D


def _pool(Q, D, perm, seed):
    rng = np.random.default_rng(seed)
    doc_ids = [f"D{j:03d}" for j in range(len(D))]
    docs = tuple(Text(doc_ids[j], f"d{j}", "en") for j in perm)
    queries = tuple(Text(f"Q{i}", f"q{i}", "en") for i in range(len(Q)))
    qrels, excl = {}, {}
    for i, q in enumerate(queries):
        rel = rng.choice(30, 2, replace=False)
        qrels[q.id] = {doc_ids[int(rel[0])]: 1, doc_ids[int(rel[1])]: 2, doc_ids[30 + i]: 0}
        if i % 3 == 0:  # exclude a copy of a relevant doc, or a near one
            excl[q.id] = frozenset({doc_ids[30 + (int(rel[0]) // 3) * 5 + i % 5] if rel[0] < 30 else doc_ids[31]})
            excl[q.id] -= set(k for k, g in qrels[q.id].items() if g > 0)
    return Pool("t", "multi", "unique", ("en",), "en", docs, queries, qrels, excl)


@pytest.mark.parametrize("blas_threads", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounded_ranks_equal_exact_ranks_and_an_independent_sort(seed, blas_threads):
    """On one thread the blocks' parts are computed in turn; on more, on that many threads at once."""
    with blas_limited_to(blas_threads):
        _bounded_ranks_equal_exact_ranks(seed)


def _bounded_ranks_equal_exact_ranks(seed):
    Q, D = _adversarial(seed)
    perm = np.random.default_rng(seed + 10).permutation(len(D)) if seed else np.arange(len(D))
    pool = _pool(Q, D, perm, seed)
    doc_ids = [d.id for d in pool.docs]
    Dp = D[perm]
    want = _reference_ranks(Q, Dp, doc_ids, pool.qrels, pool.exclusions, [q.id for q in pool.queries])
    exact = rank_blocks(DenseRetriever(Enc(Q, D)).score(pool.queries, pool.docs), pool)
    assert _triples(exact) == want
    for rows in (1, 3, 7, 64, None):
        r = DenseRetriever(Enc(Q, D), block_rows=rows)
        blocks = list(r.score_bounded(pool.queries, pool.docs))
        assert all(isinstance(b, BoundedBlock) for _, b in blocks)  # the fast path, not a fallback
        got = rank_blocks(iter(blocks), pool)
        assert _triples(got) == want, rows
        assert np.array_equal(got.qidx, exact.qidx) and np.array_equal(got.grade, exact.grade)
    assert _triples(ExactRanker().rank(DenseRetriever(Enc(Q, D)), pool, pool).table) == want
    for shards in (1, 2, 5, 13):
        for device in torch_devices():  # numpy's product, and torch's (counted as tensors: the GPU path)
            got = rank_pool_sharded(DenseRetriever(Enc(Q, D), block_rows=7), pool, pool, shards, device)
            assert got.exact and _triples(got.table) == want, (shards, device)
        # without bounds: a first pass takes the relevant documents' exact scores from the bounded blocks
        dense = DenseShards(Q, Dp, np.arange(len(Dp)), 7)
        got = rank_relevant_sharded(dense.scorer(True), shards, doc_ids, [q.id for q in pool.queries], pool.qrels,
                                    pool.exclusions)
        assert _triples(got) == want, shards


def test_the_near_ties_reach_the_exact_band_and_the_product_errs():
    """The data above is adversarial: float32 BLAS scores differ from the exact ones, and every
    query's band holds documents that only the exact scores order."""
    Q, D = _adversarial(0)
    S32 = Q @ D.T
    exact = _fsum_scores(Q, D)
    assert (S32 != exact).any()
    err = product_error(Q, float(np.linalg.norm(D.astype(np.float64), axis=1).max()))
    true = Q.astype(np.float64) @ D.T.astype(np.float64)
    assert np.all(np.abs(S32 - true) <= err[:, None])
    rel = np.arange(len(Q)) % 30
    s = exact[np.arange(len(Q)), rel]
    _, i, _, _ = count_band(S32, s - err.astype(np.float32), s + err.astype(np.float32))
    assert len(np.unique(i)) == len(Q)


def test_pair_scores_equal_fsum():
    Q, D = _adversarial(3)
    rng = np.random.default_rng(4)
    r, c = rng.integers(0, len(Q), 500), rng.integers(0, len(D), 500)
    want = _fsum_scores(Q, D)[r, c]
    assert np.array_equal(pair_scores(Q[r], D[c]), want)
    assert pair_scores(Q[:0], D[:0]).shape == (0,)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_torch_product_gives_the_exact_ranks_too(seed):
    """The GPU path's code, on torch's CPU device ("cpu:0": torch's own float32 product, summed in
    another order than numpy's BLAS): its blocks carry the same bound, so the ranks are the exact
    ones. With TF32-like precision allowed the bound would not hold: plain blocks instead, and the
    sharded path's record says its ranks are not exact."""
    import torch

    Q, D = _adversarial(seed)
    perm = np.random.default_rng(seed + 10).permutation(len(D)) if seed else np.arange(len(D))
    pool = _pool(Q, D, perm, seed)
    want = _reference_ranks(Q, D[perm], [d.id for d in pool.docs], pool.qrels, pool.exclusions,
                            [q.id for q in pool.queries])
    r = DenseRetriever(Enc(Q, D), block_rows=7, device="cpu:0")
    blocks = list(r.score_bounded(pool.queries, pool.docs))
    assert all(isinstance(b, BoundedScores) for _, b in blocks)
    exact = _fsum_scores(Q, D[perm])
    assert any((b.approx != exact[s:s + len(b.approx)]).any() for s, b in blocks)  # torch's scores are not exact
    assert _triples(rank_blocks(iter(blocks), pool)) == want
    assert _triples(ExactRanker().rank(r, pool, pool).table) == want
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert all(isinstance(b, np.ndarray) for _, b in r.score_bounded(pool.queries, pool.docs))
        assert not rank_pool_sharded(DenseRetriever(Enc(Q, D)), pool, pool, 3, "cpu").exact  # and says so
    finally:
        torch.set_float32_matmul_precision(before)


def test_bounded_blocks_fall_back_where_the_product_is_not_float32():
    Q, D = _adversarial(0)
    pool = _pool(Q, D, np.arange(len(D)), 0)
    r = DenseRetriever(Enc(Q, D), score_dtype=np.float64)
    blocks = list(r.score_bounded(pool.queries, pool.docs))
    assert all(isinstance(b, np.ndarray) for _, b in blocks)
    want = rank_relevant(DenseRetriever(Enc(Q, D)).score(pool.queries, pool.docs), [d.id for d in pool.docs],
                         [q.id for q in pool.queries], pool.qrels, pool.exclusions)
    assert rank_blocks(iter(blocks), pool).rank.tolist() == want.rank.tolist()


def test_nan_in_a_bounded_block_is_an_error():
    Q, D = _adversarial(0)
    pool = _pool(Q, D, np.arange(len(D)), 0)
    S = Q @ D.T
    S[3, 7] = np.nan
    block = BoundedScores(Q, D, S, product_error(Q, 1.0))
    with pytest.raises(ValueError, match="NaN score in rows 0:40"):
        rank_blocks(iter([(0, block)]), pool)
    assert not products_finite(Q, float("nan")) and not products_finite(Q * np.float32(1e30), 1e30)
    assert products_finite(Q, 1.0)


@pytest.mark.parametrize("blas_threads", [1, 2])
def test_nan_from_a_blocks_part_is_an_error_on_any_thread_count(blas_threads):
    """A NaN in a query's embedding (the embedding cache refuses them; a retriever of one's own may not)
    makes NaN scores in the part that computes it: a ValueError naming the part's rows, raised from
    the thread that found it."""
    Q, D = _adversarial(0)
    Q[33, 2] = np.nan
    pool = _pool(Q, D, np.arange(len(D)), 0)
    dup = np.zeros(0, np.int64)
    blocks = [(a, BoundedBlock(Q, np.arange(a, min(a + 10, len(Q))), D, 1.0, dup, dup)) for a in range(0, len(Q), 10)]
    with blas_limited_to(blas_threads):
        with pytest.raises(ValueError, match="NaN score in rows " + ("30:40" if blas_threads == 1 else "30:35")):
            rank_blocks(iter(blocks), pool)
    Q[33, 2] = 0.5
    assert _triples(rank_blocks(iter(blocks), pool)) == _reference_ranks(
        Q, D, [d.id for d in pool.docs], pool.qrels, pool.exclusions, [q.id for q in pool.queries])


def _coarse(b: BoundedScores) -> BoundedScores:
    b.approx = (b.approx.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    return b


@pytest.mark.parametrize("blas_threads", [1, 2])
def test_a_product_outside_its_bound_is_refused(blas_threads):
    """A product that is not IEEE float32 (here: rounded to bfloat16-like 8 bits) is caught by the
    relevant documents' own scores, on the full-rows and the sharded paths, in the caller's thread
    or in the threads that compute the blocks' parts."""
    with blas_limited_to(blas_threads):
        _product_outside_its_bound_is_refused()


def _product_outside_its_bound_is_refused():
    from clirbench.rank.counting import rank_relevant_sharded
    from clirbench.rank.dense_shards import DenseShards

    Q, D = _adversarial(0)
    pool = _pool(Q, D, np.arange(len(D)), 0)
    coarse = (Q @ D.T).view(np.uint32) & np.uint32(0xFFFF0000)
    block = BoundedScores(Q, D, coarse.view(np.float32), product_error(Q, 1.0), True)
    with pytest.raises(RuntimeError, match="not IEEE float32"):
        rank_blocks(iter([(0, block)]), pool)
    dup = np.zeros(0, np.int64)
    rows = BoundedBlock(Q, np.arange(len(Q)), D, 1.0, dup, dup)
    rows.part = lambda x, y, part=rows.part: _coarse(part(x, y))
    with pytest.raises(RuntimeError, match="not IEEE float32"):
        rank_blocks(iter([(0, rows)]), pool)

    class Coarse(DenseShards):
        def scorer(self, bounded=False):
            inner = DenseShards.scorer(self, bounded)

            def score_shard(cols):
                for start, b in inner(cols):
                    assert isinstance(b, BoundedBlock)  # computed by the counter's threads
                    b.part = lambda x, y, part=b.part: _coarse(part(x, y))
                    yield start, b
            return score_shard

    dense = Coarse(Q, D, np.arange(len(D)), 16)
    doc_ids = [d.id for d in pool.docs]
    with pytest.raises(RuntimeError, match="not IEEE float32"):
        rank_relevant_sharded(dense.scorer(True), 3, doc_ids, [q.id for q in pool.queries], pool.qrels,
                              bounds=dense.bounds)


@pytest.mark.parametrize("seed", range(30))
def test_count_band_equals_a_direct_computation(seed):
    """Per row the count above ``hi`` and the entries in [lo, hi] in row-major order, whichever way a
    chunk is counted: sparse chunks (few entries >= lo, gathered) and dense ones (two comparisons),
    with ties, NaN rows and empty bands (lo > hi)."""
    rng = np.random.default_rng(seed)
    n, w = int(rng.integers(1, 300)), int(rng.integers(1, 700))
    R = rng.integers(0, 400, (n, w)).astype(np.float32) / 4  # values 0, 0.25, ..., 99.75: many ties
    R[rng.random((n, w)) < 0.01] = np.nan
    # odd seeds: bands near the top (sparse chunks, entries >= lo under 1/64), even: anywhere (dense)
    centre = rng.choice([99.25, 99.5, 99.75, 150.0], n) if seed % 2 else rng.integers(0, 440, n) / 4
    lo = centre - rng.integers(0, 3, n) / 4
    hi = centre + rng.integers(-1, 3, n) / 4
    gt, i, c, v = count_band(R, lo, hi)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(gt, (R > hi[:, None]).sum(axis=1))
        wi, wc = np.nonzero((R >= lo[:, None]) & (R <= hi[:, None]))
    assert np.array_equal(i, wi) and np.array_equal(c, wc) and np.array_equal(v, R[wi, wc])
