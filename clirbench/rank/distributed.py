"""Exact ranking on a Ray cluster (docs/large-pools.md): ``rank_pool_ray`` gives
``sharded.rank_pool_sharded``'s ranks (identical), the document shards counted by Ray tasks
(``counting.count_shard``, bounds mode: each task reads its shard's and the queries' embeddings
from the shared cache, never through the driver) and added up on the driver
(``counting.ranks_from_counts``), with optional top-k lists merged there. The pool's texts are
first encoded by Ray actors (``ray_encode.py``). A task whose worker dies is retried by Ray
(``max_retries``): a lost worker costs its shard only. Each shard's counts are written under the
cache (keyed by pool, retriever, shard plan and shard), so a rerun reuses every finished shard.

The workers rebuild the retriever from its *recipe* (``capabilities.Rebuildable``: a picklable
``callable(cache_dir)``, e.g. ``retrievers.spec.Recipe``) and check that it encodes into the same
embedding spaces as the driver's.
"""
from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..cache.store import distinct_rows
from ..collection import texts_of
from ..util.atomic import write_bytes_atomic
from ..util.errors import ClirbenchError
from ..util.redact import redact
from .bands import round32
from .capabilities import EmbedsIntoCache, Rebuildable, name_of
from .counting import ShardCounts, count_shard, ranks_from_counts
from .dense_shards import DenseShards, dense_bounds, dense_shard_scorer
from .head import Head, HeadBuilder
from .pairs import judged_pairs
from .ranked import Ranked, RankingInfo
from .ray_cluster import MAX_RETRIES, QUIET, check_reachable, forwarded_env, ray_get, ray_session
from .ray_encode import EncodeReport, build_retriever, check_same, encode_texts, spaces
from .sharded import ShardedRanks, check_shardable, rank_pool_sharded
from .shards import SHARD_BYTES, grouped_shards, shard_counts
from .table import tie_keys
from .topk import merge_topk

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["rank_pool_ray", "RayRanks", "COUNTS_DIR", "RayRanker", "ray_session"]

COUNTS_DIR = "sharded-counts"  # under the cache folder: one .npz per finished shard


@dataclass(frozen=True)
class RayRanks(ShardedRanks):
    """``ShardedRanks`` plus how the shards ran: ``computed`` now, ``reused`` from an earlier run,
    the top-k lists (``(doc index, score)``, (queries x k); None without ``topk``) and the
    encoding report."""

    computed: int = 0
    reused: int = 0
    topk: tuple | None = None
    encode: EncodeReport | None = None


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            h.update(str((p.dtype.str, p.shape)).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(json.dumps(p, sort_keys=True, default=str, ensure_ascii=False).encode())
        h.update(b"\0")
    return h.hexdigest()


def _save(path: Path, arrays: dict) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    write_bytes_atomic(path, buf.getvalue())


def _load(path: Path, want: int | None):
    """A finished shard's (ShardCounts, topk or None), or None when absent or unreadable."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError):
        return None
    fields = list(ShardCounts.__dataclass_fields__)
    if not all(f in arrays for f in fields) or (want and "top_doc" not in arrays):
        return None
    top = (arrays["top_doc"], arrays["top_score"]) if want else None
    return ShardCounts(**{f: arrays[f] for f in fields}), top


@dataclass(frozen=True)
class ShardTask:
    """What every shard task of one pool shares (small, pickled with each task): how to rebuild the
    retriever, the pool's size, the scoring block and device, the top-k depth (0: none)."""

    recipe: object
    cache_dir: str
    expected: list
    n_docs: int
    block: int
    device: str | None
    k: int


def _rank_shard(job: ShardTask, pairs, keys, lo, hi, query_texts, doc_texts, cols, shard_ids, exclusions, out):
    """One Ray task: score one document shard against every query, count, and save the counts; with
    ``job.k``, the shard's top-k of each query kept from the same blocks (``head.HeadBuilder``).
    The large arrays come as separate arguments: Ray resolves them from its object store."""
    n_docs, k = job.n_docs, job.k
    retriever = build_retriever(job.recipe, job.cache_dir)
    check_same(retriever, job.expected)
    dense: DenseShards = dense_shard_scorer(retriever, query_texts, doc_texts, job.block, job.device)
    xp = np
    if dense.device is not None:
        import torch as xp  # lazy: optional, counting on the device
    local = slice(0, len(doc_texts))
    scorer = dense.scorer(dense.counts_bounded())
    head = None
    if k:  # shard-local tie keys order the shard's documents as the pool's do
        excluded = {r: np.fromiter(sorted(c), np.int64) for r, c in (exclusions or {}).items()}
        head = HeadBuilder(len(dense.Q), tie_keys(shard_ids), k, excluded)
        scorer = head.scorer(scorer)
    part = count_shard(scorer, cols, pairs, keys, n_docs, lo, hi, local=local, xp=xp, check_nan=False)
    arrays = part.arrays()
    top = None
    if head is not None:
        cidx = np.arange(n_docs)[cols] if isinstance(cols, slice) else np.asarray(cols)
        top = (np.where(head.docs >= 0, cidx[np.maximum(head.docs, 0)], -1), head.scores)
        arrays.update(top_doc=top[0], top_score=top[1])
    if out is not None:
        _save(Path(out), arrays)
    return part, top


def _recipe_and_cache(retriever, recipe) -> tuple[object, str]:
    """The recipe the workers rebuild ``retriever`` from (``recipe``, else its own) and its shared
    cache folder; a one-line ClirbenchError when either is missing."""
    if recipe is None and isinstance(retriever, Rebuildable) and retriever.recipe is not None:
        recipe = retriever.recipe
    if recipe is None:
        raise ClirbenchError(f"ranking on Ray builds {name_of(retriever)} again on every worker from its recipe, "
                             f"and it has none: make it with make_retriever, or pass recipe=")
    root = retriever.cache.root
    if root is None:
        raise ClirbenchError("ranking on Ray needs an on-disk embedding cache that every node sees (--cache-dir)")
    return recipe, str(Path(root).resolve())


def _on_the_driver(retriever, seen_pool: "Pool", pool: "Pool", shards, topk, budget_bytes: int) -> RayRanks:
    """A retriever that does not embed through a shared cache: ``rank_pool_sharded`` here (its head
    the top-k lists)."""
    check_shardable(retriever, "--executor ray")
    done = rank_pool_sharded(retriever, seen_pool, pool, shards, budget_bytes=budget_bytes, depth=topk or None)
    top = None
    if topk:
        top = merge_topk([(done.head.docs, done.head.scores)], tie_keys(done.head.doc_ids), len(done.head.query_ids),
                         topk)
    return RayRanks(done.table, done.shards, done.path + " (on the driver)", done.exact, done.precision,
                    topk=top)


def _relevant_bounds(retriever, pairs, query_texts, doc_texts) -> tuple[np.ndarray, np.ndarray]:
    """float32 bounds of the relevant pairs' scores, from their embeddings only (read from the cache).
    The workers count exact ranks on a torch device too (bounded blocks), unless its torch allows
    TF32: then a relevant score falls outside these bounds and the worker says so."""
    dt = retriever.score_dtype
    q = retriever.embed([query_texts[r] for r in pairs.rel_row], "query").astype(dt)
    d = retriever.embed([doc_texts[c] for c in pairs.rel_col], "document").astype(dt)
    lo, hi = dense_bounds(q, d, exact=True) if len(q) else (np.zeros(0), np.zeros(0))
    return round32(lo, up=False), round32(hi, up=True)


def _excluded_columns(pool: "Pool", doc_ids, query_ids) -> dict:
    """Query row -> pool columns of its excluded documents (for the top-k lists)."""
    dindex = {d: i for i, d in enumerate(doc_ids)}
    qindex = {q: i for i, q in enumerate(query_ids)}
    return {qindex[qid]: np.fromiter((dindex[x] for x in ex if x in dindex), np.int64)
            for qid, ex in pool.exclusions.items() if qid in qindex and ex}


class TopFold:
    """The shards' top-k lists merged as they come (``topk.merge_topk``): one (queries x k) list held,
    not one per shard."""

    def __init__(self, keys: np.ndarray, n_queries: int, k: int) -> None:
        self.keys, self.n_queries, self.k = keys, n_queries, k
        self.top: tuple | None = None

    def __call__(self, result: tuple) -> tuple:
        """``(counts, top)`` of a shard -> ``(counts, None)``, its top merged in."""
        counts, top = result
        if top is not None and self.k:
            self.top = merge_topk([t for t in (self.top, top) if t is not None], self.keys, self.n_queries, self.k)
        return counts, None

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        return merge_topk([self.top] if self.top is not None else [], self.keys, self.n_queries, self.k)


def _finished(folder: Path, parts: list, topk, fold: TopFold) -> tuple[dict, list]:
    """The shards whose counts an earlier run left (index -> (counts, None), their tops into
    ``fold``), and the others' (index, cols, path)."""
    results, todo = {}, []
    for i, cols in enumerate(parts):
        path = folder / f"shard-{i:05d}-of-{len(parts):05d}.npz"
        old = _load(path, topk)
        if old is not None:
            results[i] = fold(old)
        else:
            todo.append((i, cols, path))
    return results, todo


def _count_on_ray(ray, job: ShardTask, todo: list, shared: tuple, doc_ids, doc_texts, excl_cols: dict,
                  workers: int | None, fold: TopFold) -> dict:
    """Run the shard tasks ``todo`` (at most ``workers`` in flight); index -> (counts, None), the
    tops merged into ``fold`` as they come.
    ``shared`` is (pairs, keys, lo, hi, query texts), put once into Ray's object store."""
    pairs_ref, keys_ref, lo_ref, hi_ref, queries_ref = (ray.put(x) for x in shared)
    opts = {"max_retries": MAX_RETRIES, "retry_exceptions": False, "num_cpus": 1}
    if job.device and job.device.startswith("cuda"):
        opts.update(num_gpus=1, num_cpus=0)
    task = ray.remote(_rank_shard).options(**opts, **forwarded_env())

    def submit(cols, path):
        idx = np.arange(len(doc_ids))[cols]
        local_excl = None
        if job.k and excl_cols:
            where = np.full(len(doc_ids), -1, dtype=np.int64)
            where[idx] = np.arange(len(idx))
            local_excl = {r: set(where[c][where[c] >= 0].tolist()) for r, c in excl_cols.items()}
        return task.remote(job, pairs_ref, keys_ref, lo_ref, hi_ref, queries_ref, [doc_texts[j] for j in idx],
                           cols, [doc_ids[j] for j in idx], local_excl, str(path))

    results, waiting, refs = {}, list(reversed(todo)), {}
    limit = int(workers) if workers else len(todo)  # shard tasks in flight
    while waiting or refs:
        while waiting and len(refs) < limit:
            i, cols, path = waiting.pop()
            refs[submit(cols, path)] = i
        ready, _ = ray.wait(list(refs), num_returns=1)
        results[refs.pop(ready[0])] = fold(ray_get(ray, ready[0]))
    return results


def rank_pool_ray(retriever, seen_pool: "Pool", pool: "Pool", shards: int | None = None, *,
                  address: str | None = None, workers: int | None = None, recipe=None, topk: int | None = None,
                  device: str | None = None, budget_bytes: int = SHARD_BYTES, encode: bool = True,
                  chunk_size: int | None = None) -> RayRanks:
    """``rank_pool_sharded(retriever, seen_pool, pool, shards)``'s ranks, counted by Ray tasks.

    ``retriever`` embeds through an embedding cache whose folder is shared with the workers
    (``capabilities.EmbedsIntoCache``); workers rebuild it from ``recipe`` (default: the retriever's
    own ``recipe``). ``encode`` first runs ``ray_encode.encode_on_ray`` on the pool's texts (nothing
    to do when cached). ``workers`` starts a local Ray with that many CPUs (no ``address``) and caps
    the shard tasks in flight. ``topk`` also returns each query's ``topk`` best documents (pool
    indices). ``device`` scores on the workers' torch device (e.g. ``cuda``); None: numpy.
    Any other retriever is ranked on the driver by ``rank_pool_sharded``.
    """
    if not isinstance(retriever, EmbedsIntoCache):
        return _on_the_driver(retriever, seen_pool, pool, shards, topk, budget_bytes)
    recipe, cache_dir = _recipe_and_cache(retriever, recipe)
    expected = spaces(retriever)
    check_same(build_retriever(recipe, cache_dir), expected)  # here, before any worker starts (models load lazily)
    doc_ids = [d.id for d in pool.docs]
    query_ids = [q.id for q in pool.queries]
    langs = [d.lang for d in pool.docs]
    doc_texts, query_texts = texts_of(seen_pool.docs), texts_of(seen_pool.queries)
    if len(doc_texts) != len(doc_ids) or len(query_texts) != len(query_ids):
        raise ValueError("seen_pool and pool differ in size")
    n, block = shard_counts(len(doc_ids), len(query_ids), shards, budget_bytes)
    pairs = judged_pairs(doc_ids, query_ids, pool.qrels, pool.exclusions, langs)  # checks ids first
    keys = tie_keys(doc_ids)
    _, text_rows = distinct_rows(doc_texts)
    parts = grouped_shards(np.asarray(text_rows, dtype=np.int64), n) if doc_ids else []

    with ray_session(address, workers, init_kwargs=QUIET) as ray:
        report = None
        if encode:
            report = encode_texts(ray, recipe, {"document": doc_texts, "query": query_texts}, cache_dir, workers,
                                  chunk_size, None, expected)
        lo, hi = _relevant_bounds(retriever, pairs, query_texts, doc_texts)
        pool_key = _digest("rank_pool_ray/1", retriever.describe(), expected, doc_ids, query_ids,
                           [_digest(doc_texts), _digest(query_texts)], pairs.rel_row, pairs.rel_col,
                           pairs.ex_row, pairs.ex_col, lo, hi, n, int(topk or 0), device or "numpy")
        folder = Path(cache_dir) / COUNTS_DIR / pool_key[:32]
        fold = TopFold(keys, len(query_ids), int(topk or 0))
        results, todo = _finished(folder, parts, topk, fold)
        reused = len(results)
        if todo:
            folder.mkdir(parents=True, exist_ok=True)
            job = ShardTask(recipe, cache_dir, expected, len(doc_ids), block, device, int(topk or 0))
            excl_cols = _excluded_columns(pool, doc_ids, query_ids)
            results.update(_count_on_ray(ray, job, todo, (pairs, keys, lo, hi, query_texts), doc_ids, doc_texts,
                                         excl_cols, workers, fold))
    ranks = ranks_from_counts((results[i][0] for i in sorted(results)), pairs, keys, len(doc_ids), lo, hi,
                              query_ids)
    table = pairs.finish(ranks, langs, pool.query_lang)
    top = None
    if topk:
        top = fold.merged()
    return RayRanks(table, len(parts), "dense document shards on Ray", True, "float32", computed=len(todo),
                    reused=reused, topk=top, encode=report)


class RayRanker:
    """``sharded.ShardedRanker`` on a Ray cluster (``rank_pool_ray``): documents encoded by Ray
    actors into the shared embedding cache, shards counted by Ray tasks (retried when a worker is
    lost; finished shards' counts kept for a rerun), counts added on the driver. Same ranks. The
    workers rebuild the retriever from its own ``recipe`` (``retrievers.spec.Recipe``). An
    ``address`` is checked for a listener when the ranker is made: one line, before any work. The
    head (each query's top ``depth`` documents) is merged on the driver from the shards' top lists."""

    def __init__(self, shards: int | None = None, address: str | None = None, workers: int | None = None,
                 device: str | None = None, depth: int | None = None) -> None:
        if address:
            check_reachable(address)
        self.shards, self.address, self.workers, self.device = shards, address, workers, device
        self.depth = depth

    def supports(self, measures) -> None:
        """Every measure: the ranks are exact."""

    def accepts(self, retriever) -> None:
        """A one-line ClirbenchError for a retriever Ray cannot rank: one that neither embeds nor gives
        score rows, or one that embeds through a cache but has no recipe or no on-disk cache."""
        if isinstance(retriever, EmbedsIntoCache):
            _recipe_and_cache(retriever, None)
        else:
            check_shardable(retriever, "--executor ray")

    def rank(self, retriever, seen: "Pool", pool: "Pool") -> Ranked:
        k = min(self.depth or 0, len(pool.docs))
        done = rank_pool_ray(retriever, seen, pool, self.shards, address=self.address, workers=self.workers,
                             device=self.device, topk=k or None)
        head = None
        if self.depth:
            empty = np.zeros((len(pool.queries), 0))
            docs, scores = done.topk if k else (empty.astype(np.int64), empty.astype(np.float32))
            head = Head(tuple(q.id for q in pool.queries), tuple(d.id for d in pool.docs),
                        tuple(d.lang for d in pool.docs), docs, scores)
        return Ranked(done.table, head=head, info=RankingInfo(
            "sharded counting on Ray", shards=done.shards, scoring=done.path, exact=done.exact,
            precision=done.precision, shards_computed=done.computed, shards_reused=done.reused,
            address=redact(self.address) if self.address else "local"))
