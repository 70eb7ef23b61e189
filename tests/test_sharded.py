"""Sharded counting gives rank_relevant's RankTable exactly: every field, every shard count, every
way of knowing the relevant scores; dense document shards (numpy and torch), top-k, and every
measure on real XQuAD with BM25."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from clirbench.collection import Pool, Text
from clirbench.measures import PEER, RANK_MEASURES, compute, parse
from clirbench.rank.counting import rank_relevant_sharded
from clirbench.rank.pairs import judged_pairs
from clirbench.rank.rows import rank_relevant
from clirbench.rank.sharded import rank_pool_sharded
from clirbench.rank.shards import AUTO_SHARD_DOCS, grouped_shards, shard_plan, shard_slices
from clirbench.rank.topk import topk_sharded

from conftest import BagOfCharsEncoder, assert_same_table, torch_devices
from xquad_files import XQUAD  # noqa: E402





def tie_pool(seed=0, nq=23, nd=41, values=(0.3, 0.30000000000000004, 0.1, -np.inf)):
    """Scores from a few values (0.3 and 0.30000000000000004 tie only after float32 rounding),
    -inf (not returned), multi-grade qrels incl. grade 0, exclusions, two doc languages, ids whose
    byte order differs from their positions."""
    rng = np.random.default_rng(seed)
    M = rng.choice(np.array(values), size=(nq, nd))
    docs = [f"d{i:03d}{'é' if i % 5 == 0 else ''}" for i in rng.permutation(nd)]
    queries = [f"q{i}" for i in range(nq)]
    qrels = {}
    for q in queries[:-3]:  # the last three are not evaluated
        picked = rng.choice(nd, size=min(nd, int(rng.integers(1, 5))), replace=False)
        qrels[q] = {docs[j]: int(rng.integers(0, 4)) for j in picked}
    exclusions = {}
    for q in queries[::4]:
        judged = set(qrels.get(q, {}))
        exclusions[q] = frozenset(d for d in rng.choice(docs, size=min(3, nd), replace=False) if d not in judged)
    langs = [("en", "zh")[i % 2] for i in range(nd)]
    return M, docs, queries, qrels, exclusions, langs


def column_scorer(M, block=7):
    def score_shard(cols):
        for start in range(0, len(M), block):
            yield start, M[start:start + block][:, cols]
    return score_shard


def reference(M, docs, queries, qrels, exclusions, langs):
    return rank_relevant([(0, M)], docs, queries, qrels, exclusions, langs, "en")


def _modes(M, docs, queries, qrels, exclusions):
    p = judged_pairs(docs, queries, qrels, exclusions)
    s32 = M.astype(np.float32)[p.rel_row, p.rel_col]
    return {
        "two passes": {},
        "relevant scores": {"relevant_scores": M[p.rel_row, p.rel_col]},
        # a wide interval: most columns fall in the band, held until the exact score is seen
        "bounds": {"bounds": lambda r, c: (np.where(np.isinf(s32), s32, s32 - 0.25),
                                           np.where(np.isinf(s32), s32, s32 + 0.25))},
    }


@pytest.mark.parametrize("shards", [1, 2, 7, 1000])
@pytest.mark.parametrize("mode", ["two passes", "relevant scores", "bounds"])
def test_every_field_equals_rank_relevant_with_heavy_ties(shards, mode):
    M, docs, queries, qrels, excl, langs = tie_pool()
    want = reference(M, docs, queries, qrels, excl, langs)
    assert (want.rank > 1).any() and np.isin(M, [0.3]).sum() > 100
    got = rank_relevant_sharded(column_scorer(M), shards, docs, queries, qrels, excl, langs, "en",
                                **_modes(M, docs, queries, qrels, excl)[mode])
    assert_same_table(got, want)


def test_shards_given_as_index_arrays_and_rows_in_any_block_order():
    M, docs, queries, qrels, excl, langs = tie_pool(seed=3)
    perm = np.random.default_rng(1).permutation(len(docs))
    parts = [np.sort(perm[i::5]) for i in range(5)]

    def scorer(cols):  # blocks in reverse row order
        return [(s, M[s:s + 4][:, cols]) for s in reversed(range(0, len(M), 4))]

    got = rank_relevant_sharded(scorer, parts, docs, queries, qrels, excl, langs, "en")
    assert_same_table(got, reference(M, docs, queries, qrels, excl, langs))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), nq=st.integers(1, 12), nd=st.integers(1, 30), shards=st.integers(1, 35),
       mode=st.sampled_from(["two passes", "relevant scores", "bounds"]))
def test_property_random_pools_and_shard_counts(seed, nq, nd, shards, mode):
    M, docs, queries, qrels, excl, langs = tie_pool(seed, nq + 3, nd, values=(1.0, 2.0, 2.0000000001, -np.inf))
    want = reference(M, docs, queries, qrels, excl, langs)
    got = rank_relevant_sharded(column_scorer(M, block=int(seed % 5) + 1), shards, docs, queries, qrels, excl,
                                langs, "en", **_modes(M, docs, queries, qrels, excl)[mode])
    assert_same_table(got, want)


def test_errors_nan_missing_columns_and_a_violated_bound():
    M, docs, queries, qrels, excl, langs = tie_pool()
    bad = M.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN score"):
        rank_relevant_sharded(column_scorer(bad), 3, docs, queries, qrels, excl, langs, "en")
    with pytest.raises(ValueError, match="every document exactly once"):
        rank_relevant_sharded(column_scorer(M), [slice(0, 10)], docs, queries, qrels, excl, langs, "en")
    p = judged_pairs(docs, queries, qrels, excl)
    s = M.astype(np.float32)[p.rel_row, p.rel_col]
    with pytest.raises(ValueError, match="differs from the one given"):
        rank_relevant_sharded(column_scorer(M), 3, docs, queries, qrels, excl, langs, "en",
                              relevant_scores=np.where(np.isinf(s), s, s + 1))
    with pytest.raises(RuntimeError, match="outside its error bound"):
        rank_relevant_sharded(column_scorer(M), 3, docs, queries, qrels, excl, langs, "en",
                              bounds=lambda r, c: (s + 1, s + 2))


# ----------------------------------------------------------------------------- pools and retrievers


def text_pool(texts_d, texts_q, qrels, exclusions=None, langs=None):
    docs = tuple(Text(f"doc-{i:02d}", t, (langs or ["en"] * len(texts_d))[i]) for i, t in enumerate(texts_d))
    queries = tuple(Text(f"q{i}", t, "en") for i, t in enumerate(texts_q))
    return Pool("t", "multi", "unique", ("en", "zh"), "en", docs, queries, qrels, exclusions or {})


def _dense_pool():
    words = ["river bank", "bank loan", "loan shark", "shark river", "the bank", "banks", "a b", "river"]
    texts = [words[i % len(words)] for i in range(37)]  # copies of one text, across shard boundaries
    qtexts = ["bank", "river", "shark loan", "the", "zz", "river bank"]
    qrels = {f"q{i}": {f"doc-{(3 * i + j) % 37:02d}": j + 1 for j in range(3)} for i in range(5)}
    qrels["q0"]["doc-30"] = 0
    excl = {"q1": frozenset({"doc-00", "doc-08"}), "q2": frozenset({"doc-20"})}
    langs = [("en", "zh")[i % 3 == 0] for i in range(37)]
    return text_pool(texts, qtexts, qrels, excl, langs)


def _full(retriever, pool):
    return rank_relevant(retriever.score(pool.queries, pool.docs), [d.id for d in pool.docs],
                         [q.id for q in pool.queries], pool.qrels, pool.exclusions,
                         [d.lang for d in pool.docs], pool.query_lang)


@pytest.mark.parametrize("device", torch_devices())
@pytest.mark.parametrize("shards", [1, 2, 7, 100])
def test_dense_document_shards_equal_the_full_rows(tmp_path, shards, device):
    from clirbench.retrievers import DenseRetriever, EmbeddingCache

    pool = _dense_pool()
    retriever = DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(tmp_path / "c"), spec="test:bag")
    want = _full(retriever, pool)
    assert len(set(want.rank.tolist())) > 5
    got = rank_pool_sharded(retriever, pool, pool, shards, device=device)
    assert got.path == "dense document shards" and got.exact
    assert_same_table(got.table, want)
    for name, values in compute(RANK_MEASURES + (PEER @ 10,), want).items():
        assert np.array_equal(compute([parse(name)], got.table)[name], values, equal_nan=True)


def test_half_precision_is_exact_for_its_own_scores_and_says_approximate(tmp_path):
    import torch

    from clirbench.retrievers import DenseRetriever, EmbeddingCache
    from clirbench.rank.dense_shards import dense_shard_scorer

    pool = _dense_pool()
    retriever = DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(tmp_path / "c"), spec="test:bag")
    got = rank_pool_sharded(retriever, pool, pool, 3, device="cpu", precision="bfloat16")
    assert not got.exact and got.precision == "bfloat16"
    dense = dense_shard_scorer(retriever, pool.queries, pool.docs, 4, device="cpu", precision="bfloat16")
    M = np.zeros((len(pool.queries), len(pool.docs)), dtype=np.float32)
    for cols in grouped_shards(dense.rows, 3):
        for start, S in dense.scorer()(cols):
            assert isinstance(S, torch.Tensor)
            M[start:start + S.shape[0], cols] = S.numpy()
    want = rank_relevant([(0, M)], [d.id for d in pool.docs], [q.id for q in pool.queries], pool.qrels,
                         pool.exclusions, [d.lang for d in pool.docs], pool.query_lang)
    assert_same_table(got.table, want)
    with pytest.raises(ValueError, match="half precision needs a torch device"):
        rank_pool_sharded(retriever, pool, pool, 3, precision="float16")


def test_topk_of_dense_document_shards_equals_full_rows(tmp_path):
    from clirbench.retrievers import DenseRetriever, EmbeddingCache
    from clirbench.rank.dense_shards import dense_shard_scorer

    pool = _dense_pool()
    retriever = DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(tmp_path / "c"), spec="test:bag")
    M = np.concatenate([S for _, S in retriever.score(pool.queries, pool.docs)])
    ids = [d.id for d in pool.docs]
    dense = dense_shard_scorer(retriever, pool.queries, pool.docs, 4)
    for k in (1, 5, 37):
        got = topk_sharded(dense.scorer(), grouped_shards(dense.rows, 4), ids, len(M), k)
        want = naive_topk(M, ids, k, {})
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_a_small_budget_gives_small_query_blocks_with_the_same_ranks(tmp_path, monkeypatch):
    from clirbench.rank import sharded
    from clirbench.retrievers import DenseRetriever, EmbeddingCache

    pool = _dense_pool()
    retriever = DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(tmp_path / "c"), spec="test:bag")
    seen = []
    real = sharded.dense_shard_scorer
    monkeypatch.setattr(sharded, "dense_shard_scorer", lambda *a, **k: seen.append(a[3]) or real(*a, **k))
    got = rank_pool_sharded(retriever, pool, pool, 1, budget_bytes=8 * 37 * 2)
    assert seen == [2]  # 2 query rows x 37 docs x 4 bytes x 2 blocks
    assert_same_table(got.table, _full(retriever, pool))


def test_copies_of_one_text_stay_in_one_shard():
    rows = np.array([0, 1, 0, 2, 1, 3, 0, 4, 5, 5])
    for n in range(1, 12):
        parts = grouped_shards(rows, n)
        assert sorted(np.concatenate([np.arange(10)[p] for p in parts]).tolist()) == list(range(10))
        owner = {}
        for k, p in enumerate(parts):
            for d in np.arange(10)[p]:
                assert owner.setdefault(int(rows[d]), k) == k


def test_dense_float_embeddings_within_the_error_bound(tmp_path):
    """Real-valued unit vectors: bounded single pass equals the full rows (BLAS-order independent here)."""
    from clirbench.retrievers import DenseRetriever

    rng = np.random.default_rng(5)

    class Unit:
        model_id, revision = "test/unit", "0"

        def prompt(self, role):
            return ""

        def encode(self, texts, role):
            x = np.stack([np.random.default_rng(abs(hash((role, t))) % 2**32).standard_normal(24) for t in texts])
            return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    nd, nq = 300, 40
    texts = [f"t{int(i)}" for i in rng.integers(0, 250, nd)]
    qrels = {f"q{i}": {f"doc-{int(j):02d}": 1 for j in rng.choice(nd, 2, replace=False)} for i in range(nq)}
    pool = text_pool(texts, [f"query {i}" for i in range(nq)], qrels)
    retriever = DenseRetriever(Unit())
    want = _full(retriever, pool)
    for shards in (1, 3, 16):
        assert_same_table(rank_pool_sharded(retriever, pool, pool, shards).table, want)


def test_other_retrievers_split_their_full_rows(tmp_path):
    from clirbench.retrievers.bm25 import BM25Retriever

    pool = _dense_pool()
    want = _full(BM25Retriever(), pool)
    got = rank_pool_sharded(BM25Retriever(), pool, pool, 7)
    assert got.path == "column split of full rows" and got.shards == 7
    assert_same_table(got.table, want)


# ----------------------------------------------------------------------------- top-k


def naive_topk(M, docs, k, exclusions):
    out_d = np.full((len(M), k), -1)
    out_s = np.full((len(M), k), -np.inf, dtype=np.float32)
    for r, row in enumerate(M.astype(np.float32)):
        cand = [j for j in range(len(docs)) if row[j] > -np.inf and j not in exclusions.get(r, ())]
        cand.sort(key=lambda j: (-float(row[j]), [-b for b in docs[j].encode()] + [1]))
        for i, j in enumerate(cand[:k]):
            out_d[r, i], out_s[r, i] = j, row[j]
    return out_d, out_s


@pytest.mark.parametrize("k", [1, 3, 10, 50])
@pytest.mark.parametrize("shards", [1, 2, 7])
def test_topk_merged_across_shards_equals_sorting_full_rows(k, shards):
    M, docs, *_ = tie_pool(seed=k)
    exclusions = {0: {1, 2, 3}, 5: set(range(20))}
    got = topk_sharded(column_scorer(M), shards, docs, len(M), k, exclusions)
    want = naive_topk(M, docs, k, exclusions)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert (got[0][:, 0] >= 0).all()


# ----------------------------------------------------------------------------- plan


def test_shard_plan_and_slices():
    assert AUTO_SHARD_DOCS >= 100_000
    shards, rows = shard_plan(1_000_000, 10_000, budget_bytes=256 << 20)
    assert rows == 4096 and 2 * 4 * rows * -(-1_000_000 // shards) <= (256 << 20) * 1.01
    assert shard_plan(10, 3) == (1, 3)
    s = shard_slices(10, 3)
    assert [(x.start, x.stop) for x in s] == [(0, 3), (3, 7), (7, 10)]
    assert len(shard_slices(3, 10)) == 3
    with pytest.raises(ValueError):
        shard_slices(5, 0)


# ----------------------------------------------------------------------------- real data


def test_every_measure_on_real_xquad_with_bm25():
    from clirbench.retrievers.bm25 import BM25Retriever
    from clirbench.scenarios import build_pools
    from clirbench.tasks import get_task

    collection = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    pools = build_pools(collection, [("en", "zh")])
    measures = RANK_MEASURES + (PEER @ 10, parse("P@5"), parse("Success@3"))
    checked = 0
    for pool in pools:
        if pool.scenario not in ("multi", "multi-1"):
            continue
        want = _full(BM25Retriever(), pool)
        got = rank_pool_sharded(BM25Retriever(), pool, pool, 7).table
        assert_same_table(got, want)
        a, b = compute(measures, want), compute(measures, got)
        for name in a:
            assert np.array_equal(a[name], b[name], equal_nan=True), (pool.name, name)
        checked += 1
    assert checked == 4
