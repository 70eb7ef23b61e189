"""The head of a ranking (rank/head.py): each query's top-K documents under the tie rule, equal to an
independent sort of the full score rows, from every ranking path."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from clirbench.collection import Pool, Text
from clirbench.evaluation import evaluate_pool, evaluate_scores
from clirbench.measures import compute, parse
from clirbench.rank.ann import AnnRanker
from clirbench.rank.distributed import RayRanker
from clirbench.rank import head as head_module
from clirbench.rank.exact import ExactRanker
from clirbench.rank.head import DEFAULT_DEPTH, Head, HeadBuilder, head_of_run
from clirbench.rank.runs import rank_run
from clirbench.rank.sharded import ShardedRanker
from clirbench.rank.table import tie_keys
from clirbench.retrievers import DenseRetriever, EmbeddingCache
from clirbench.retrievers.bm25 import BM25Retriever
from clirbench.retrievers.run_adapter import RunRetriever
from clirbench.scenarios import build_pools
from clirbench.tasks import get_task

from conftest import BagOfCharsEncoder, torch_devices
from test_bounded_ranks import Enc as Fixed, _adversarial, _pool
from test_distributed import bag_recipe, local_ray, near_tie_recipe, tie_pool as ray_tie_pool  # noqa: F401
from xquad_files import XQUAD  # noqa: E402


def sorted_head(M, doc_ids, k, exclusions=None, query_ids=None):
    """The reference: per row a numpy lexsort on (-float32 score, doc id descending), excluded and -inf
    documents dropped, the first k kept (padded with -1 / -inf)."""
    M = np.asarray(M).astype(np.float32)
    keys = np.argsort(np.argsort(np.array(doc_ids, dtype=object), kind="stable"), kind="stable")
    docs = np.full((len(M), k), -1, dtype=np.int64)
    scores = np.full((len(M), k), -np.inf, dtype=np.float32)
    col = {d: i for i, d in enumerate(doc_ids)}
    for r, row in enumerate(M):
        row = row.copy()
        if exclusions and query_ids is not None:
            for d in exclusions.get(query_ids[r], ()):
                row[col[d]] = -np.inf
        order = np.lexsort((-keys, -row.astype(np.float64)))
        order = order[row[order] > -np.inf][:k]
        docs[r, :len(order)], scores[r, :len(order)] = order, row[order]
    return docs, scores


def full_rows(retriever, pool):
    return np.concatenate([np.asarray(S) for _, S in retriever.score(pool.queries, pool.docs)])


@pytest.fixture(scope="module")
def xquad_pools():
    collection = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    return [p for p in build_pools(collection, [("en", "zh")]) if p.scenario in ("multi", "multi-1")]


def bag(tmp_path):
    return DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(tmp_path / "cache"), spec="test:bag")


def assert_head(head: Head, want_docs, want_scores):
    assert np.array_equal(head.docs, want_docs)
    assert np.array_equal(head.scores, want_scores)


@pytest.mark.parametrize("depth", [1, 10, DEFAULT_DEPTH])
def test_full_rows_head_equals_an_independent_sort_on_xquad(tmp_path, xquad_pools, depth):
    retriever = bag(tmp_path)
    for pool in xquad_pools:
        M = full_rows(retriever, pool)
        ids = [d.id for d in pool.docs]
        head = ExactRanker(depth).rank(retriever, pool, pool).head
        k = min(depth, len(ids))
        assert head.depth == k and head.query_ids == tuple(q.id for q in pool.queries)
        assert_head(head, *sorted_head(M, ids, k, pool.exclusions, [q.id for q in pool.queries]))


# ----------------------------------------------------------------------------- adversarial ties


class Rows:
    """A retriever that only scores rows: a fixed matrix, in blocks."""

    def __init__(self, M, block=5):
        self.M, self.block = M, block

    def score(self, queries, docs):
        for start in range(0, len(self.M), self.block):
            yield start, self.M[start:start + self.block]


def tie_matrix(seed=0, nq=23, nd=41, values=(0.3, 0.30000000000000004, 0.1, 0.0, -np.inf)):
    """Scores from a few values (0.3 and 0.30000000000000004 tie only in float32), -inf (not
    returned), exclusions, ids whose byte order is not their position, two languages."""
    rng = np.random.default_rng(seed)
    M = rng.choice(np.array(values), size=(nq, nd))
    ids = [f"d{i:03d}{'é' if i % 5 == 0 else ''}" for i in rng.permutation(nd)]
    docs = tuple(Text(d, d, ("en", "zh")[i % 2]) for i, d in enumerate(ids))
    queries = tuple(Text(f"q{i}", f"q{i}", "en") for i in range(nq))
    qrels = {q.id: {ids[int(j)]: 1 for j in rng.choice(nd, 2, replace=False)} for q in queries[:-2]}
    excl = {q.id: frozenset(ids[int(j)] for j in rng.choice(nd, 3, replace=False)) - set(qrels.get(q.id, ()))
            for q in queries[::3]}
    return M, Pool("t", "multi", "unique", ("en", "zh"), "en", docs, queries, qrels, excl)


@pytest.mark.parametrize("depth", [1, 4, 17, 41, 100])
def test_full_rows_head_on_adversarial_ties(depth):
    M, pool = tie_matrix()
    ids, qids = [d.id for d in pool.docs], [q.id for q in pool.queries]
    head = ExactRanker(depth).rank(Rows(M), pool, pool).head
    M32 = M.astype(np.float32)
    assert (M32[:, :, None] == M32[:, None, :]).sum() > 10000  # ties everywhere, 0.3 and 0.30000000000000004 too
    assert head.depth == min(depth, len(ids))
    assert_head(head, *sorted_head(M, ids, head.depth, pool.exclusions, qids))


def test_excluded_and_unreturned_documents_never_appear():
    M, pool = tie_matrix(seed=3)
    head = ExactRanker(1000).rank(Rows(M), pool, pool).head
    for i, q in enumerate(head.query_ids):
        listed = [head.doc_ids[d] for d in head.docs[i] if d >= 0]
        assert not set(listed) & set(pool.exclusions.get(q, ()))
        excluded = set(pool.exclusions.get(q, ()))
        returned = sum(1 for d, s in zip(head.doc_ids, M[i]) if np.isfinite(s) and d not in excluded)
        assert len(listed) == returned and np.all(head.docs[i, len(listed):] == -1)
        assert np.all(np.isneginf(head.scores[i, len(listed):]))


def test_depth_larger_than_the_pool_is_capped():
    M, pool = tie_matrix()
    head = ExactRanker(10 ** 6).rank(Rows(M), pool, pool).head
    assert head.docs.shape == (len(pool.queries), len(pool.docs))


# ----------------------------------------------------------------------------- sharded, torch, Ray, ANN


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_sharded_head_equals_full_rows_on_xquad(tmp_path, xquad_pools, shards):
    retriever = bag(tmp_path)
    for pool in xquad_pools:
        want = ExactRanker(DEFAULT_DEPTH).rank(retriever, pool, pool).head
        got = ShardedRanker(shards, depth=DEFAULT_DEPTH).rank(retriever, pool, pool).head
        assert_head(got, want.docs, want.scores)
        got = ShardedRanker(shards, depth=DEFAULT_DEPTH).rank(BM25Retriever(), pool, pool).head  # column split of full rows
        assert_head(got, *sorted_head(full_rows(BM25Retriever(), pool), [d.id for d in pool.docs], got.depth,
                                      pool.exclusions, [q.id for q in pool.queries]))


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_sharded_head_on_adversarial_ties(shards):
    M, pool = tie_matrix(seed=1)
    want = ExactRanker(9).rank(Rows(M), pool, pool).head
    assert_head(ShardedRanker(shards, depth=9).rank(Rows(M), pool, pool).head, want.docs, want.scores)


def near_tie_pool(seed):
    Q, D = _adversarial(seed)
    perm = np.random.default_rng(seed + 10).permutation(len(D))
    return Q, D[perm], _pool(Q, D, perm, seed)


def fsum_scores(Q, D):
    """Each score fl32(fl64(q . d)), by math.fsum over the exact float64 products."""
    return np.array([[np.float32(math.fsum((q.astype(np.float64) * d.astype(np.float64)).tolist())) for d in D]
                     for q in Q], dtype=np.float32)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("device", torch_devices())
@pytest.mark.parametrize("narrow_blocks_exact", [True, False])
def test_near_ties_of_bounded_products_against_an_fsum_sort(seed, device, narrow_blocks_exact, monkeypatch):
    """Nearly parallel embeddings (float32 products off by many ulps, copies, one-ulp moves): the head
    of bounded products is that of the exact scores, on full rows and on document shards; narrow
    blocks scored exactly whole, or (as wide ones) only their near-ties."""
    if not narrow_blocks_exact:
        monkeypatch.setattr(head_module, "_EXACT_ROWS", 0)
    Q, D, pool = near_tie_pool(seed)
    ids, qids = [d.id for d in pool.docs], [q.id for q in pool.queries]
    S = fsum_scores(Q, D)
    retriever = DenseRetriever(Fixed(Q, _adversarial(seed)[1]), device=device)
    for depth in (1, 3, 5, 1000):
        k = min(depth, len(ids))
        want = sorted_head(S, ids, k, pool.exclusions, qids)
        if device is None:
            assert_head(ExactRanker(depth).rank(retriever, pool, pool).head, *want)
        for shards in (1, 2, 5):
            assert_head(ShardedRanker(shards, device, depth).rank(retriever, pool, pool).head, *want)


@pytest.mark.parametrize("device", [d for d in torch_devices() if d is not None])
def test_half_precision_head_is_that_of_the_devices_own_scores(device):
    """bfloat16 products on a torch device, counted in two passes (each shard holding relevant
    documents scored twice: seen once by the head): the head of exactly those scores."""
    from clirbench.rank.dense_shards import dense_shard_scorer
    from clirbench.rank.sharded import rank_pool_sharded
    from clirbench.rank.shards import grouped_shards

    Q, D, pool = near_tie_pool(0)
    retriever = DenseRetriever(Fixed(Q, _adversarial(0)[1]))
    got = rank_pool_sharded(retriever, pool, pool, 3, device=device, precision="bfloat16", depth=9)
    dense = dense_shard_scorer(retriever, pool.queries, pool.docs, 4, device=device, precision="bfloat16")
    M = np.zeros((len(pool.queries), len(pool.docs)), dtype=np.float32)
    for cols in grouped_shards(dense.rows, 3):
        for start, S in dense.scorer()(cols):
            M[start:start + S.shape[0], cols] = S.cpu().numpy()
    assert not got.exact and len(np.unique(M)) < M.size / 4  # bfloat16: ties everywhere
    assert_head(got.head, *sorted_head(M, [d.id for d in pool.docs], 9, pool.exclusions,
                                       [q.id for q in pool.queries]))


def test_ann_head_with_a_flat_index_equals_the_exact_head():
    """Integer embeddings: float32 products are exact (the index's rescoring and the exact path agree
    bit for bit) and ties at the k-th score rare, so a Flat index's top-k is the exact one."""
    rng = np.random.default_rng(7)
    Q, D = (rng.integers(-50, 51, size=(n, 32)).astype(np.float32) for n in (60, 400))
    ids = [f"doc{j:03d}" for j in rng.permutation(len(D))]
    docs = tuple(Text(ids[j], f"d{j}", ("en", "zh")[j % 2]) for j in range(len(D)))
    queries = tuple(Text(f"q{i}", f"q{i}", "en") for i in range(len(Q)))
    qrels = {q.id: {ids[i]: 1} for i, q in enumerate(queries)}
    excl = {q.id: frozenset({ids[100 + i]}) for i, q in enumerate(queries) if i % 2}
    pool = Pool("t", "multi", "unique", ("en", "zh"), "en", docs, queries, qrels, excl)
    retriever = DenseRetriever(Fixed(Q, D))
    want = ExactRanker(DEFAULT_DEPTH).rank(retriever, pool, pool).head
    for k in (1, 10, 50):
        got = AnnRanker("faiss:Flat", k, depth=DEFAULT_DEPTH).rank(retriever, pool, pool)
        assert got.info.boundary_ties_unresolved == 0 and got.head.depth == k
        assert_head(got.head, want.docs[:, :k], want.scores[:, :k])
    assert AnnRanker("faiss:Flat", 50, depth=20).rank(retriever, pool, pool).head.depth == 20


def with_recipe(recipe, cache_dir):
    retriever = recipe(cache_dir)
    retriever.recipe = recipe  # what RayRanker's workers rebuild it from
    return retriever


def test_ray_head_equals_full_rows(tmp_path, local_ray):
    pool = ray_tie_pool()
    want = ExactRanker(DEFAULT_DEPTH).rank(bag_recipe(None), pool, pool).head
    for shards, depth in ((1, 1000), (3, 1000), (3, 4)):
        retriever = with_recipe(bag_recipe, tmp_path / f"c{shards}-{depth}")
        got = RayRanker(shards, workers=2, depth=depth).rank(retriever, pool, pool)
        assert got.head.depth == min(depth, len(pool.docs))
        assert_head(got.head, want.docs[:, :got.head.depth], want.scores[:, :got.head.depth])


def test_ray_head_of_near_ties_on_a_torch_device(tmp_path, local_ray):
    Q, D, pool = near_tie_pool(1)
    want = sorted_head(fsum_scores(Q, D), [d.id for d in pool.docs], 6, pool.exclusions, [q.id for q in pool.queries])
    for device in [d for d in torch_devices() if d != "cuda"]:
        retriever = with_recipe(near_tie_recipe, tmp_path / str(device))
        got = RayRanker(3, workers=2, device=device, depth=6).rank(retriever, pool, pool)
        assert_head(got.head, *want)


def test_ray_on_the_driver_gives_the_head_of_its_rows(local_ray):
    M, pool = tie_matrix(seed=2)
    want = ExactRanker(7).rank(Rows(M), pool, pool).head
    assert_head(RayRanker(3, workers=2, depth=7).rank(Rows(M), pool, pool).head, want.docs, want.scores)


# ----------------------------------------------------------------------------- what the head gives


def test_cutoff_measures_of_the_head_equal_the_record(tmp_path, xquad_pools):
    retriever = bag(tmp_path)
    measures = [parse(m) for m in ("nDCG@10", "P@10", "Success@10", "R@100", "nDCG@100")]
    for pool in xquad_pools:
        done = evaluate_pool(retriever, pool, measures, resamples=0, ranker=ExactRanker(DEFAULT_DEPTH))
        assert done.head is not None and done.head.depth == min(1000, len(pool.docs)) > 100
        again = compute(measures, rank_run(done.head.to_run(), pool.qrels))
        assert again and all(np.array_equal(again[str(m)], done.per_query[str(m)]) for m in measures)


def test_rows_run_and_languages():
    M, pool = tie_matrix()
    head = ExactRanker(3).rank(Rows(M), pool, pool).head
    rows = list(head.rows())
    assert [r[1] for r in rows if r[0] == "q0"] == [1, 2, 3]
    run = head.to_run()
    assert set(run) == set(head.query_ids)
    assert [(q, d, s) for q, _, d, s in rows] == [(q, d, s) for q in run for d, s in run[q].items()]
    langs = head.lang_of(head.docs)
    assert langs.shape == head.docs.shape and set(langs.ravel()) <= {"en", "zh", ""}
    assert head.lang_of(0) == pool.docs[0].lang
    assert [s for *_, s in rows] == [float(np.float32(s)) for *_, s in rows]


def test_head_of_a_run_is_the_run_retrievers(tmp_path):
    M, pool = tie_matrix(seed=4)
    ids, qids = [d.id for d in pool.docs], [q.id for q in pool.queries]
    run = {q: {d: float(s) for d, s in zip(ids, M[i]) if np.isfinite(s)} for i, q in enumerate(qids)}
    want = ExactRanker(8).rank(RunRetriever(run), pool, pool).head
    got = head_of_run(run, qids, ids, [d.lang for d in pool.docs], pool.exclusions, 8)
    assert_head(got, want.docs, want.scores)
    assert evaluate_scores(run, pool, [parse("nDCG@10")], resamples=0, depth=DEFAULT_DEPTH).head.to_run() == \
        head_of_run(run, qids, ids, None, pool.exclusions).to_run()


def test_no_head_when_asked_for_none():
    M, pool = tie_matrix()
    assert ExactRanker(None).rank(Rows(M), pool, pool).head is None
    assert ShardedRanker(2, depth=None).rank(Rows(M), pool, pool).head is None


# ----------------------------------------------------------------------------- property


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 9), st.integers(1, 30), st.integers(1, 40), st.integers(1, 4), st.integers(1, 6),
       st.integers(0, 2 ** 31))
def test_head_builder_equals_a_sort_for_any_blocks_and_shards(nq, nd, depth, n_shards, block, seed):
    """Few distinct values (ties everywhere), -inf, exclusions, documents in shards of any order, rows
    in blocks of any size, one shard given twice: the head equals the sort of the whole rows."""
    rng = np.random.default_rng(seed)
    M = rng.choice(np.array([0.5, 0.25, 0.0, -1.0, -np.inf], dtype=np.float32), size=(nq, nd))
    ids = [f"d{i}" for i in rng.permutation(nd)]
    excluded = {r: np.unique(rng.choice(nd, int(rng.integers(1, 4)))) for r in range(nq) if rng.random() < 0.4}
    builder = HeadBuilder(nq, tie_keys(ids), depth, excluded)
    shards = np.array_split(rng.permutation(nd), n_shards)
    for cols in shards + shards[:1]:
        for start in rng.permutation(np.arange(0, nq, block)):
            builder.add(int(start), M[start:start + block][:, cols], cols)
    qids = [f"q{i}" for i in range(nq)]
    excl = {qids[r]: {ids[c] for c in cs} for r, cs in excluded.items()}
    want = sorted_head(M, ids, min(depth, nd), excl, qids)
    assert np.array_equal(builder.docs, want[0]) and np.array_equal(builder.scores, want[1])


def test_choose_ranker_gives_every_ranker_the_depth():
    from clirbench.rank.choose import choose_ranker
    from clirbench.run_config import RankingOptions

    nDCG10 = [parse("nDCG@10")]
    for options in (None, RankingOptions(shards=2), RankingOptions(index="faiss:Flat")):
        assert choose_ranker(options, measures=nDCG10, depth=7).depth == 7
        assert choose_ranker(options, measures=nDCG10, depth=None).depth is None
    assert choose_ranker(measures=nDCG10).depth is None  # the default: the ranks only, no head
