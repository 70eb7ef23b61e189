"""The head's tail (rank/head.py): per query, the documents outside its top-K tied with its K-th score,
by language, against a brute-force count over the full score matrix, from every way blocks arrive."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from clirbench.measures import parse
from clirbench.rank import head as head_module
from clirbench.rank.choose import choose_ranker
from clirbench.rank.exact import ExactRanker
from clirbench.rank.head import Head, HeadBuilder, head_of_run
from clirbench.rank.products import BoundedBlock, BoundedScores, product_error
from clirbench.rank.sharded import ShardedRanker, rank_pool_sharded
from clirbench.rank.table import tie_keys
from clirbench.retrievers import DenseRetriever
from clirbench.retrievers.bm25 import BM25Retriever
from clirbench.run_config import RankingOptions

from conftest import torch_devices
from test_bounded_ranks import Enc as Fixed, _adversarial
from test_head import Rows, full_rows, fsum_scores, near_tie_pool, sorted_head, tie_matrix, xquad_pools  # noqa: F401

LANGS = ("ar", "en", "zh")


def brute_tail(M, doc_ids, doc_langs, k, excluded=None):
    """Per row: the valid (finite, not excluded) documents scoring exactly the K-th valid score, less
    those the reference sort puts in the head, by language (columns: sorted languages, or "" alone);
    zeros for a row with fewer than K valid documents."""
    M = np.asarray(M).astype(np.float32)
    langs = ("",) if doc_langs is None else tuple(sorted(set(doc_langs)))
    lang_of = [""] * len(doc_ids) if doc_langs is None else list(doc_langs)
    docs, _ = sorted_head(M, doc_ids, k, {r: [doc_ids[c] for c in cs] for r, cs in (excluded or {}).items()},
                          list(range(len(M))))
    out = np.zeros((len(M), len(langs)), dtype=np.int64)
    for r, row in enumerate(M):
        skip = set(int(c) for c in (excluded or {}).get(r, ()))
        valid = [c for c in range(len(doc_ids)) if np.isfinite(row[c]) and c not in skip]
        if len(valid) < k or k == 0:
            continue
        kth = sorted((row[c] for c in valid), reverse=True)[k - 1]
        in_head = set(int(d) for d in docs[r])
        for c in valid:
            if row[c] == kth and c not in in_head:
                out[r, langs.index(lang_of[c])] += 1
    return out


def case(seed, nq, nd, with_langs=True, values=(3, 2, 1, 0, -1, -np.inf)):
    """Integer-valued scores (ties everywhere), -inf, ids whose byte order is not their position,
    three languages, a few exclusions per row."""
    rng = np.random.default_rng(seed)
    M = rng.choice(np.array(values, dtype=np.float32), size=(nq, nd))
    ids = [f"d{i}" for i in rng.permutation(nd)]
    langs = [LANGS[int(i)] for i in rng.integers(0, 3, nd)] if with_langs else None
    excluded = {r: np.unique(rng.choice(nd, int(rng.integers(1, 4)))) for r in range(nq) if rng.random() < 0.4}
    return rng, M, ids, langs, excluded


def assert_builder(builder, M, ids, langs, excluded):
    want_docs, want_scores = sorted_head(M, ids, builder.k, {r: [ids[c] for c in cs] for r, cs in excluded.items()},
                                         list(range(len(M))))
    assert np.array_equal(builder.docs, want_docs) and np.array_equal(builder.scores, want_scores)
    assert builder.tail_exact
    assert np.array_equal(builder.tail, brute_tail(M, ids, langs, builder.k, excluded))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.integers(1, 30), st.integers(1, 40), st.integers(1, 4), st.integers(1, 6),
       st.booleans(), st.booleans(), st.integers(0, 2 ** 31))
def test_tail_equals_a_brute_force_count_for_any_blocks_and_shards(nq, nd, depth, n_shards, block, with_langs,
                                                                   small_chunks, seed):
    """Shards in any order, as index arrays or slices, rows in blocks of any size, one shard fed again
    in other row blocks (counted once), truncation of rows with many ties in chunks of one row."""
    rng, M, ids, langs, excluded = case(seed, nq, nd, with_langs)
    builder = HeadBuilder(nq, tie_keys(ids), depth, excluded, langs)
    if rng.random() < 0.5:
        shards = np.array_split(rng.permutation(nd), n_shards)
    else:
        shards = [slice(int(a[0]), int(a[-1]) + 1) for a in np.array_split(np.arange(nd), n_shards) if len(a)]
    with pytest.MonkeyPatch.context() as mp:
        if small_chunks:
            mp.setattr(head_module, "_CHUNK", 1)
        for cols in shards:
            for start in rng.permutation(np.arange(0, nq, block)):
                builder.add(int(start), M[start:start + block][:, cols], cols)
        again = shards[int(rng.integers(len(shards)))]
        for start in range(0, nq, 2):  # fed again: the same documents, other row blocks
            builder.add(start, M[start:start + 2][:, again], again)
    assert builder.langs == (tuple(sorted(set(langs))) if langs else ("",))
    assert_builder(builder, M, ids, langs, excluded)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 25), st.integers(1, 30), st.integers(1, 3), st.booleans(),
       st.integers(0, 2 ** 31))
def test_tail_of_bounded_blocks(nq, nd, depth, n_shards, exact_whole, seed):
    """Integer embeddings (float32 products exact, many ties) as ``BoundedScores`` (scored exactly
    whole, or the bounded path's candidates) and ``BoundedBlock`` parts computed in any order."""
    rng = np.random.default_rng(seed)
    Q = rng.integers(-1, 2, size=(nq, 3)).astype(np.float32)
    D = rng.integers(-1, 2, size=(nd, 3)).astype(np.float32)
    M = (Q.astype(np.float64) @ D.T.astype(np.float64)).astype(np.float32)
    ids = [f"d{i}" for i in rng.permutation(nd)]
    langs = [LANGS[int(i)] for i in rng.integers(0, 3, nd)]
    excluded = {r: np.unique(rng.choice(nd, 2)) for r in range(nq) if rng.random() < 0.3}
    builder = HeadBuilder(nq, tie_keys(ids), depth, excluded, langs)
    empty = np.zeros(0, np.int64)
    with pytest.MonkeyPatch.context() as mp:
        if not exact_whole:
            mp.setattr(head_module, "_EXACT_ROWS", 0)
        for cols in np.array_split(rng.permutation(nd), n_shards):
            Dc = D[cols]
            d_norm = float(np.linalg.norm(Dc, axis=1).max()) if len(cols) else 0.0
            if rng.random() < 0.5:
                for start in range(0, nq, 2):
                    Qb = Q[start:start + 2]
                    builder.add(start, BoundedScores(Qb, Dc, Qb @ Dc.T, product_error(Qb, d_norm)), cols)
            else:
                block = builder.watch(0, BoundedBlock(Q, np.arange(nq), Dc, d_norm, empty, empty), cols)
                for a in rng.permutation(nq):
                    block.part(int(a), int(a) + 1)
    assert_builder(builder, M, ids, langs, excluded)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(1, 30), st.integers(1, 40), st.integers(0, 2 ** 31))
def test_head_of_run_agrees_with_the_builder(nq, nd, depth, seed):
    """A run missing documents (-inf: not returned) and with exclusions: the same docs, scores and tail."""
    rng, M, ids, langs, excluded = case(seed, nq, nd)
    qids = [f"q{i}" for i in range(nq)]
    run = {q: {d: float(s) for d, s in zip(ids, M[i]) if np.isfinite(s)} for i, q in enumerate(qids)}
    exclusions = {qids[r]: {ids[c] for c in cs} for r, cs in excluded.items()}
    got = head_of_run(run, qids, ids, langs, exclusions, depth)
    builder = HeadBuilder(nq, tie_keys(ids), depth, excluded, langs)
    builder.add(0, M)
    assert np.array_equal(got.docs, builder.docs) and np.array_equal(got.scores, builder.scores)
    assert got.langs == builder.langs and np.array_equal(got.tail, builder.tail)
    assert np.array_equal(got.tail, brute_tail(M, ids, langs, got.depth, excluded))
    assert np.array_equal(head_of_run(run, qids, ids, None, exclusions, depth).tail, got.tail.sum(1, keepdims=True))


def test_a_tie_far_past_k_and_k_larger_than_the_pool():
    """One row of 500 equal scores (truncated to the best K in the block, the rest counted), K = 1;
    K above the pool: a list that is never full has a zero tail."""
    M = np.zeros((2, 500), dtype=np.float32)
    M[1, 7] = 1
    ids = [f"d{i:03d}" for i in range(500)]
    langs = [LANGS[i % 3] for i in range(500)]
    for k in (1, 3):
        builder = HeadBuilder(2, tie_keys(ids), k, None, langs)
        for cols in (slice(0, 250), slice(250, 500)):
            builder.add(0, M[:, cols], cols)
        assert builder.tail[0].sum() == 500 - k and builder.tail[1].sum() == (0 if k == 1 else 499 - (k - 1))
        assert np.array_equal(builder.tail, brute_tail(M, ids, langs, k))
    builder = HeadBuilder(2, tie_keys(ids), 10 ** 6, {0: np.array([3])}, langs)
    builder.add(0, M)
    assert builder.k == 500 and not builder.tail.any()
    assert (builder.docs[0] >= 0).sum() == 499 and (builder.docs[1] >= 0).sum() == 500


def test_rising_kth_score_resets_the_count():
    """Ties at 0 counted, then a block lifts the K-th score to 1: only its ties at 1 remain."""
    ids = [f"d{i}" for i in range(8)]
    builder = HeadBuilder(1, tie_keys(ids), 2, None, None)
    builder.add(0, np.zeros((1, 4), np.float32), np.arange(4))
    assert builder.tail.tolist() == [[2]]
    builder.add(0, np.array([[1, 1, 1, 0]], np.float32), np.arange(4, 8))
    assert builder.scores.tolist() == [[1, 1]] and builder.tail.tolist() == [[1]]


def test_the_same_documents_fed_in_another_form_count_once_and_overlapping_shards_leave_it_unknown():
    ids = [f"d{i}" for i in range(6)]
    M = np.zeros((3, 6), dtype=np.float32)
    builder = HeadBuilder(3, tie_keys(ids), 2)
    builder.add(0, M)
    builder.add(0, M[:, 0:6], slice(0, 6))
    builder.add(1, M[1:, :], np.arange(6))
    assert builder.tail_exact and builder.tail.tolist() == [[4]] * 3
    builder.add(0, M[:, 2:4], np.array([2, 3]))  # part of a set fed before
    assert not builder.tail_exact
    builder.ids = (("a", "b", "c"), tuple(ids), None)
    assert builder.finish().tail is None


@pytest.mark.parametrize("device", [d for d in torch_devices() if d is not None])
def test_tail_of_torch_blocks(device):
    import torch  # lazy: optional

    _, M, ids, langs, excluded = case(5, 9, 60, values=(1, 0, -np.inf))
    for depth in (1, 4, 25, 100):
        builder = HeadBuilder(9, tie_keys(ids), depth, excluded, langs)
        for cols in np.array_split(np.arange(60), 3):
            for start in range(0, 9, 4):
                builder.add(start, torch.from_numpy(M[start:start + 4][:, cols]).to(device, torch.bfloat16), cols)
        assert_builder(builder, M, ids, langs, excluded)


# ----------------------------------------------------------------------------- Head


def test_head_langs_select_and_checks():
    M, pool = tie_matrix()
    head = ExactRanker(3).rank(Rows(M), pool, pool).head
    assert head.langs == ("en", "zh") and head.tail.shape == (len(pool.queries), 2) and head.tail.dtype == np.int64
    some = head.select(["q5", "q0", "q5"])
    assert some.query_ids == ("q5", "q0", "q5")
    for i, q in enumerate(some.query_ids):
        j = head.query_ids.index(q)
        assert np.array_equal(some.docs[i], head.docs[j]) and np.array_equal(some.tail[i], head.tail[j])
        assert np.array_equal(some.scores[i], head.scores[j])
    with pytest.raises(KeyError):
        head.select(["q0", "nope"])
    with pytest.raises(ValueError, match="tail"):
        Head(head.query_ids, head.doc_ids, head.doc_langs, head.docs, head.scores, head.tail[:, :1])
    bare = Head(head.query_ids, head.doc_ids, None, head.docs, head.scores)
    assert bare.tail is None and bare.langs == ("",) and bare.select(["q1"]).tail is None


# ----------------------------------------------------------------------------- rankers


def pool_arrays(pool):
    ids = [d.id for d in pool.docs]
    col = {d: i for i, d in enumerate(ids)}
    excluded = {r: [col[d] for d in pool.exclusions.get(q.id, ())] for r, q in enumerate(pool.queries)}
    return ids, [d.lang for d in pool.docs], excluded


@pytest.mark.parametrize("depth", [1, 4, 17, 100])
def test_rankers_tail_on_adversarial_ties(depth):
    M, pool = tie_matrix(seed=1)
    ids, langs, excluded = pool_arrays(pool)
    for ranker in (ExactRanker(depth), ShardedRanker(1, depth=depth), ShardedRanker(5, depth=depth)):
        head = ranker.rank(Rows(M), pool, pool).head
        assert np.array_equal(head.tail, brute_tail(M, ids, langs, head.depth, excluded))


@pytest.mark.parametrize("device", torch_devices())
def test_rankers_tail_on_near_ties_of_bounded_products(device):
    """Copies of documents (identical embeddings: exact ties) and one-ulp moves, bounded products."""
    Q, D, pool = near_tie_pool(2)
    ids, langs, excluded = pool_arrays(pool)
    S = fsum_scores(Q, D)
    retriever = DenseRetriever(Fixed(Q, _adversarial(2)[1]), device=device)
    for depth in (1, 2, 5):
        want = brute_tail(S, ids, langs, min(depth, len(ids)), excluded)
        assert want.any()
        if device is None:
            assert np.array_equal(ExactRanker(depth).rank(retriever, pool, pool).head.tail, want)
        for shards in (1, 4):
            assert np.array_equal(ShardedRanker(shards, device, depth).rank(retriever, pool, pool).head.tail, want)


@pytest.mark.parametrize("device", [d for d in torch_devices() if d is not None])
def test_half_precision_counting_in_two_passes_counts_each_document_once(device):
    """bfloat16 products: the shards holding relevant documents are scored (and fed) twice."""
    from clirbench.rank.dense_shards import dense_shard_scorer
    from clirbench.rank.shards import grouped_shards

    Q, D, pool = near_tie_pool(0)
    retriever = DenseRetriever(Fixed(Q, _adversarial(0)[1]))
    dense = dense_shard_scorer(retriever, pool.queries, pool.docs, 4, device=device, precision="bfloat16")
    M = np.zeros((len(pool.queries), len(pool.docs)), dtype=np.float32)
    for cols in grouped_shards(dense.rows, 3):
        for start, S in dense.scorer()(cols):
            M[start:start + S.shape[0], cols] = S.cpu().numpy()
    ids, langs, excluded = pool_arrays(pool)
    for depth in (1, 9):
        got = rank_pool_sharded(retriever, pool, pool, 3, device=device, precision="bfloat16", depth=depth)
        want = brute_tail(M, ids, langs, depth, excluded)
        assert want.sum() > len(pool.queries)  # bfloat16: ties everywhere
        assert np.array_equal(got.head.tail, want)


@pytest.mark.parametrize("depth", [10, 100])
def test_bm25_tail_on_xquad_equals_the_full_score_matrix(xquad_pools, depth):  # noqa: F811
    """bm25 on XQuAD en,zh: zero scores far past K for queries of one language against the other."""
    nDCG10 = [parse("nDCG@10")]
    seen_ties = 0
    for pool in xquad_pools:
        M = full_rows(BM25Retriever(), pool)
        ids, langs, excluded = pool_arrays(pool)
        want = brute_tail(M, ids, langs, min(depth, len(ids)), excluded)
        seen_ties += int(want.sum())
        for options in (None, RankingOptions(shards=3)):
            head = choose_ranker(options, measures=nDCG10, depth=depth).rank(BM25Retriever(), pool, pool).head
            assert head.langs == ("en", "zh") and np.array_equal(head.tail, want)
        run = {q.id: {d: float(s) for d, s in zip(ids, M[i])} for i, q in enumerate(pool.queries)}
        from_run = head_of_run(run, [q.id for q in pool.queries], ids, langs, pool.exclusions, depth)
        assert np.array_equal(from_run.tail, want)
    assert seen_ties > 0


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 8), st.integers(1, 30), st.integers(1, 40), st.integers(1, 40), st.booleans(),
       st.integers(0, 2 ** 31))
def test_top_k_of_a_deeper_head_is_the_head_of_depth_k(nq, nd, depth, k, with_langs, seed):
    """Head.top(k) (the runner cuts the exposure measures' head to --depth for --save-run): the same
    documents, scores and tail as a head built k deep, the tail equal to the brute-force count."""
    _, M, ids, langs, excluded = case(seed, nq, nd, with_langs)
    deep = HeadBuilder(nq, tie_keys(ids), max(depth, k), excluded, langs)
    deep.add(0, M)
    cut = Head(tuple(map(str, range(nq))), tuple(ids), None if langs is None else tuple(langs), deep.docs,
               deep.scores, deep.tail).top(k)
    direct = HeadBuilder(nq, tie_keys(ids), k, excluded, langs)
    direct.add(0, M)
    assert np.array_equal(cut.docs, direct.docs) and np.array_equal(cut.scores, direct.scores)
    assert np.array_equal(cut.tail, direct.tail)
    assert np.array_equal(cut.tail, brute_tail(M, ids, langs, cut.depth, excluded))
