"""Encoding and exact ranking on a Ray cluster (docs/large-pools.md).

- ``encode_on_ray``: the distinct texts of each role, split into disjoint chunks, encoded by Ray
  actors (one per GPU when the cluster has GPUs, else one per worker CPU), each building the
  retriever from its recipe and writing into the SHARED embedding cache folder. The cache is
  content addressed, with sealed shards and a writer lock per embedding space: a rerun encodes
  nothing, and the driver then finds every embedding cached. Actors encode outside that lock
  (their chunks are disjoint) and hold it only to write.
- ``rank_pool_ray``: ``sharded.rank_pool_sharded``'s ranks (identical), the document shards
  counted by Ray tasks (``sharded.count_shard``, bounds mode: each task reads its shard's and the
  queries' embeddings from the cache, never through the driver) and added up on the driver
  (``sharded.ranks_from_counts``), with optional top-k lists merged there. A task whose worker
  dies is retried by Ray (``max_retries``): a lost worker costs its shard only. Each shard's
  counts are written under the cache (keyed by pool, retriever, shard plan and shard), so a rerun
  reuses every finished shard.

Every node must see the cache folder at the same path (a shared file system). A retriever is
rebuilt on the workers from a *recipe*: its spec string (``make_retriever(spec, cache_dir=...,
**options)``) or a picklable ``callable(cache_dir) -> retriever``; the workers check that it
encodes into the same embedding spaces as the driver's.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..util.errors import ClirbenchError
from .sharded import SHARD_BYTES, ShardedRanks

__all__ = ["ray_session", "encode_on_ray", "rank_pool_ray", "EncodeReport", "RayRanks", "COUNTS_DIR", "RayRanker"]

COUNTS_DIR = "sharded-counts"  # under the cache folder: one .npz per finished shard
CONNECT_TIMEOUT_S = 5.0
MAX_RETRIES = 3  # per shard task / encoder actor
_QUIET = {"log_to_driver": False}  # workers' own output (encoder progress bars) stays in Ray's logs

# ----------------------------------------------------------------------------- connection


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` to probe for ``HOST:PORT`` or ``ray://HOST[:PORT]``; None for ``auto``."""
    if address in ("auto", "local"):
        return None
    rest, default = (address[len("ray://"):], 10001) if address.startswith("ray://") else (address, 6379)
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, str(default)
    host = host.strip("[]")
    if not host or not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        raise ClirbenchError(f"Ray address {address[:80]!r} is not HOST:PORT, ray://HOST:PORT or auto")
    return host, int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """A one-line error, within ``timeout`` seconds, when nothing listens at ``address``."""
    target = _host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, socket.timeout) else (exc.strerror or type(exc).__name__)
        raise ClirbenchError(f"cannot connect to Ray at {address}: {reason}") from None


@contextmanager
def ray_session(address: str | None = None, workers: int | None = None, *, purpose: str = "--executor ray",
                init_kwargs: dict | None = None) -> Iterator[object]:
    """The ``ray`` module, connected: to the Ray this process already has, else to ``address``,
    else to a local Ray started with ``workers`` CPUs (no dashboard) and shut down at the end."""
    from ..util.optional import require

    ray = require("ray", purpose=purpose)  # one line naming the extra when missing
    if address:
        check_reachable(address)
    if ray.is_initialized():
        yield ray
        return
    kwargs = dict(init_kwargs or {})
    if address:
        kwargs["address"] = address
    else:
        kwargs.setdefault("include_dashboard", False)
        if workers:
            kwargs.setdefault("num_cpus", int(workers))
    try:
        ray.init(**kwargs)
    except ConnectionError as exc:
        raise ClirbenchError(f"cannot connect to Ray at {address}: {str(exc).splitlines()[0]}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _forwarded_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k.startswith(("CLIRBENCH_", "HF_", "TRANSFORMERS_"))}
    return {"runtime_env": {"env_vars": env}} if env else {}


# ----------------------------------------------------------------------------- retriever recipes


def _build(recipe, cache_dir, options: Mapping | None):
    if isinstance(recipe, str):
        from ..retrievers import make_retriever

        return make_retriever(recipe, cache_dir=cache_dir, **dict(options or {}))
    return recipe(cache_dir)


def _spaces(retriever) -> list:
    """The embedding spaces a dense retriever writes: what workers and driver must agree on."""
    enc = retriever.encoder
    return [str(enc.model_id), str(enc.revision)] + [str(enc.prompt(r)) for r in ("query", "document")] \
        + [np.dtype(retriever.score_dtype).name]


def _check_same(retriever, expected: list | None) -> None:
    if expected is not None and _spaces(retriever) != expected:
        raise ClirbenchError(f"the retriever built on a Ray worker ({_spaces(retriever)}) is not the driver's "
                             f"({expected}): pass the options it was built with")


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# ----------------------------------------------------------------------------- encoding


@dataclass(frozen=True)
class EncodeReport:
    """What ``encode_on_ray`` did: distinct texts per role, texts actually encoded (0 on a rerun),
    chunks, and the workers (host:pid) that ran them."""

    texts: dict
    encoded: int
    chunks: int
    workers: tuple[str, ...]
    gpus: bool


class _Missing(Exception):
    def __init__(self, texts: list[str]) -> None:
        self.texts = texts


class _Probe:
    """An encoder that encodes nothing: the cache's request for texts (all in one chunk) comes back
    as ``_Missing``, so that they are encoded outside the space's writer lock."""

    def __init__(self, encoder) -> None:
        self.model_id, self.revision, self.prompt = encoder.model_id, encoder.revision, encoder.prompt

    def encode(self, texts, role):
        raise _Missing(list(texts))


class _Precomputed(_Probe):
    """Serves vectors encoded beforehand (written by the cache under its lock, as any encoder's)."""

    def __init__(self, encoder, texts: list[str], vecs: np.ndarray) -> None:
        super().__init__(encoder)
        self.rows = {t: i for i, t in enumerate(texts)}
        self.vecs, self.served = vecs, 0

    def encode(self, texts, role):
        self.served += len(texts)
        return self.vecs[[self.rows[t] for t in texts]]


class _EncoderActor:
    """Builds the retriever once; encodes chunks into the shared cache.

    The cache encodes holding the embedding space's writer lock, which would make the actors take
    turns; chunks are disjoint (the driver splits distinct texts), so each actor encodes its
    missing texts outside the lock and only writes them under it."""

    def __init__(self, recipe, cache_dir, options, expected) -> None:
        self.retriever = _build(recipe, cache_dir, options)
        _check_same(self.retriever, expected)

    def encode(self, role: str, texts: list[str]) -> tuple[int, str]:
        r = self.retriever
        whole = max(1, len(texts))
        try:
            r.cache.embed_rows(_Probe(r.encoder), texts, role, whole)
            return 0, _worker_id()  # all cached
        except _Missing as missing:
            todo = missing.texts
        vecs = np.asarray(r.encoder.encode(todo, role), dtype=np.float32)
        done = _Precomputed(r.encoder, todo, vecs)
        r.cache.embed_rows(done, texts, role, whole)  # what another writer added meanwhile is not written twice
        return done.served, _worker_id()


def _chunks(texts_by_role: Mapping[str, Sequence], chunk_size: int | None, workers: int) -> tuple[dict, list]:
    from ..cache.embeddings import distinct_rows
    from ..collection import texts_of

    counts, chunks = {}, []
    for role, texts in texts_by_role.items():
        distinct, _ = distinct_rows(texts_of(texts))
        counts[role] = len(distinct)
        size = int(chunk_size or max(64, -(-len(distinct) // (4 * workers))))
        chunks += [(role, distinct[a:a + size]) for a in range(0, len(distinct), size)]
    return counts, chunks


def _encode(ray, recipe, texts_by_role, cache_dir, workers, chunk_size, options, expected) -> EncodeReport:
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    n = int(workers or gpus or max(1, int(resources.get("CPU", 1))))
    if gpus:
        n = min(n, gpus)
    counts, chunks = _chunks(texts_by_role, chunk_size, n)
    if not chunks:
        return EncodeReport(counts, 0, 0, (), bool(gpus))
    n = min(n, len(chunks))
    opts = {"num_gpus": 1, "num_cpus": 0} if gpus else {"num_cpus": 1}
    Actor = ray.remote(_EncoderActor).options(max_restarts=MAX_RETRIES, max_task_retries=MAX_RETRIES,
                                              **opts, **_forwarded_env())
    actors = [Actor.remote(recipe, cache_dir, options, expected) for _ in range(n)]
    todo = list(reversed(chunks))
    pending, encoded, seen = {}, 0, set()
    try:
        for actor in actors:
            if todo:
                role, texts = todo.pop()
                pending[actor.encode.remote(role, texts)] = actor
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            actor = pending.pop(ready[0])
            done, who = _get(ray, ready[0])
            encoded += done
            seen.add(who)
            if todo:
                role, texts = todo.pop()
                pending[actor.encode.remote(role, texts)] = actor
    finally:
        for actor in actors:
            ray.kill(actor)
    return EncodeReport(counts, encoded, len(chunks), tuple(sorted(seen)), bool(gpus))


def _get(ray, ref):
    """``ray.get``, a ClirbenchError raised on a worker coming back as itself (one line)."""
    try:
        return ray.get(ref)
    except ClirbenchError:
        raise
    except Exception as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, ClirbenchError):
            raise ClirbenchError(str(cause)) from None
        raise


def encode_on_ray(recipe, texts_by_role: Mapping[str, Sequence], cache_dir, workers: int | None = None, *,
                  address: str | None = None, chunk_size: int | None = None,
                  options: Mapping | None = None, expected: list | None = None) -> EncodeReport:
    """Encode ``texts_by_role`` (``{"document": [...], "query": [...]}``, strings or Texts) into the
    embedding cache at ``cache_dir`` with ``workers`` Ray actors (default: one per GPU, else one per
    cluster CPU). ``recipe`` is a retriever spec string (built with ``make_retriever(recipe,
    cache_dir=cache_dir, **options)``) or a picklable ``callable(cache_dir)``."""
    if cache_dir is None:
        raise ClirbenchError("encoding on Ray needs an on-disk embedding cache that every node sees (--cache-dir)")
    cache_dir = str(Path(cache_dir).resolve())
    with ray_session(address, workers, init_kwargs=_QUIET) as ray:
        return _encode(ray, recipe, texts_by_role, cache_dir, workers, chunk_size, options, expected)


# ----------------------------------------------------------------------------- ranking


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
    from ..util.atomic import write_bytes_atomic

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    write_bytes_atomic(path, buf.getvalue())


def _load(path: Path, want: int | None):
    """A finished shard's (ShardCounts, topk or None), or None when absent or unreadable."""
    from .sharded import ShardCounts

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
    """One Ray task: score one document shard against every query, count, and save the counts.
    The large arrays come as separate arguments: Ray resolves them from its object store."""
    from .sharded import DenseShards, count_shard, dense_shard_scorer, topk_sharded

    recipe, cache_dir, expected, n_docs, block, device, k = (job.recipe, job.cache_dir, job.expected, job.n_docs,
                                                             job.block, job.device, job.k)
    retriever = _build(recipe, cache_dir, None)
    _check_same(retriever, expected)
    dense: DenseShards = dense_shard_scorer(retriever, query_texts, doc_texts, block, device)
    xp = np
    if dense.device is not None:
        import torch as xp
    local = slice(0, len(doc_texts))
    part = count_shard(dense.scorer(dense.counts_bounded()), cols, pairs, keys, n_docs, lo, hi, local=local, xp=xp, check_nan=False)
    arrays = part.arrays()
    top = None
    if k:
        cidx = np.arange(n_docs)[cols] if isinstance(cols, slice) else np.asarray(cols)
        doc, score = topk_sharded(dense.scorer(), [local], shard_ids, len(dense.Q), k, exclusions or None)
        top = (np.where(doc >= 0, cidx[np.maximum(doc, 0)], -1), score)
        arrays.update(top_doc=top[0], top_score=top[1])
    if out is not None:
        _save(Path(out), arrays)
    return part, top


def rank_pool_ray(retriever, seen_pool, pool, shards: int | None = None, *, address: str | None = None,
                  workers: int | None = None, recipe=None, topk: int | None = None,
                  device: str | None = None, budget_bytes: int = SHARD_BYTES, encode: bool = True,
                  chunk_size: int | None = None) -> RayRanks:
    """``rank_pool_sharded(retriever, seen_pool, pool, shards)``'s ranks, counted by Ray tasks.

    ``retriever`` is the driver's DenseRetriever (its cache folder is shared with the workers);
    workers rebuild it from ``recipe`` (default: the retriever's own ``recipe``, else its spec). ``encode`` first runs ``encode_on_ray`` on the pool's texts (nothing to do
    when cached). ``workers`` starts a local Ray with that many CPUs (no ``address``) and caps the
    shard tasks in flight. ``topk`` also returns each query's ``topk`` best documents (pool indices).
    ``device`` scores on the workers' torch device (e.g. ``cuda``); None: numpy.
    Any other retriever is ranked on the driver by ``rank_pool_sharded`` (it only yields full rows).
    """
    from .ties import judged_pairs, tie_keys
    from ..collection import texts_of
    from ..retrievers.dense import DenseRetriever
    from ..cache.embeddings import distinct_rows
    from .sharded import (grouped_shards, round32, dense_bounds, merge_topk, rank_pool_sharded, ranks_from_counts,
                          shard_counts)

    if not isinstance(retriever, DenseRetriever):
        if topk:
            raise ClirbenchError("top-k lists on Ray need a dense retriever")
        done = rank_pool_sharded(retriever, seen_pool, pool, shards, budget_bytes=budget_bytes)
        return RayRanks(done.table, done.shards, done.path + " (on the driver)", done.exact, done.precision)
    root = retriever.cache.root
    if root is None:
        raise ClirbenchError("ranking on Ray needs an on-disk embedding cache that every node sees (--cache-dir)")
    cache_dir = str(Path(root).resolve())
    recipe = recipe if recipe is not None else getattr(retriever, "recipe", None) or retriever.spec
    expected = _spaces(retriever)
    _check_same(_build(recipe, cache_dir, None), expected)  # here, before any worker starts (models load lazily)
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

    with ray_session(address, workers, init_kwargs=_QUIET) as ray:
        report = None
        if encode:
            report = _encode(ray, recipe, {"document": doc_texts, "query": query_texts}, cache_dir, workers,
                             chunk_size, None, expected)
        # bounds of the relevant pairs' scores, from their embeddings only (read from the cache)
        dt = retriever.score_dtype
        q = retriever.embed([query_texts[r] for r in pairs.rel_row], "query").astype(dt)
        d = retriever.embed([doc_texts[c] for c in pairs.rel_col], "document").astype(dt)
        # the workers count exact ranks on a torch device too (bounded blocks), unless its torch allows
        # TF32: then a relevant score falls outside these bounds and the worker says so
        lo, hi = dense_bounds(q, d, exact=True) if len(q) else (np.zeros(0), np.zeros(0))
        lo, hi = round32(lo, up=False), round32(hi, up=True)
        pool_key = _digest("rank_pool_ray/1", retriever.describe(), expected, doc_ids, query_ids,
                           [_digest(doc_texts), _digest(query_texts)], pairs.rel_row, pairs.rel_col,
                           pairs.ex_row, pairs.ex_col, lo, hi, n, int(topk or 0), device or "numpy")
        folder = Path(cache_dir) / COUNTS_DIR / pool_key[:32]
        dindex = {d: i for i, d in enumerate(doc_ids)}
        qindex = {q: i for i, q in enumerate(query_ids)}
        excl_cols = {}
        for qid, ex in pool.exclusions.items():
            if qid in qindex and ex:
                excl_cols[qindex[qid]] = np.fromiter((dindex[x] for x in ex if x in dindex), np.int64)

        results, todo = {}, []
        for i, cols in enumerate(parts):
            path = folder / f"shard-{i:05d}-of-{len(parts):05d}.npz"
            old = _load(path, topk)
            if old is not None:
                results[i] = old
            else:
                todo.append((i, cols, path))
        reused = len(results)
        if todo:
            folder.mkdir(parents=True, exist_ok=True)
            pairs_ref, keys_ref = ray.put(pairs), ray.put(keys)
            queries_ref = ray.put(query_texts)
            lo_ref, hi_ref = ray.put(lo), ray.put(hi)
            opts = {"max_retries": MAX_RETRIES, "retry_exceptions": False, "num_cpus": 1}
            if device and device.startswith("cuda"):
                opts.update(num_gpus=1, num_cpus=0)
            task = ray.remote(_rank_shard).options(**opts, **_forwarded_env())
            job = ShardTask(recipe, cache_dir, expected, len(doc_ids), block, device, int(topk or 0))

            def submit(i, cols, path):
                idx = np.arange(len(doc_ids))[cols]
                local_excl = None
                if topk and excl_cols:
                    where = np.full(len(doc_ids), -1, dtype=np.int64)
                    where[idx] = np.arange(len(idx))
                    local_excl = {r: set(where[c][where[c] >= 0].tolist()) for r, c in excl_cols.items()}
                return task.remote(job, pairs_ref, keys_ref, lo_ref, hi_ref, queries_ref, [doc_texts[j] for j in idx],
                                   cols, [doc_ids[j] for j in idx], local_excl, str(path))

            waiting, refs = list(reversed(todo)), {}
            limit = int(workers) if workers else len(todo)  # shard tasks in flight
            while waiting or refs:
                while waiting and len(refs) < limit:
                    i, cols, path = waiting.pop()
                    refs[submit(i, cols, path)] = i
                ready, _ = ray.wait(list(refs), num_returns=1)
                results[refs.pop(ready[0])] = _get(ray, ready[0])
    ranks = ranks_from_counts((results[i][0] for i in sorted(results)), pairs, keys, len(doc_ids), lo, hi,
                              query_ids)
    table = pairs.finish(ranks, langs, pool.query_lang)
    top = None
    if topk:
        top = merge_topk((results[i][1] for i in sorted(results)), keys, len(query_ids), topk)
    return RayRanks(table, len(parts), "dense document shards on Ray", True, "float32", len(todo), reused, top,
                    report)


class RayRanker:
    """``sharded.ShardedRanker`` on a Ray cluster (``rank_pool_ray``): documents encoded by Ray
    actors into the shared embedding cache, shards counted by Ray tasks (retried when a worker is
    lost; finished shards' counts kept for a rerun), counts added on the driver. Same ranks. The
    workers rebuild the retriever from its own ``recipe`` (``retrievers.spec.Recipe``). An
    ``address`` is checked for a listener when the ranker is made: one line, before any work."""

    def __init__(self, shards: int | None = None, address: str | None = None, workers: int | None = None,
                 device: str | None = None) -> None:
        if address:
            check_reachable(address)
        self.shards, self.address, self.workers, self.device = shards, address, workers, device

    def supports(self, measures) -> None:
        """Every measure: the ranks are exact."""

    def rank(self, retriever, seen, pool):
        from .ties import Ranked
        from ..util.redact import redact

        done = rank_pool_ray(retriever, seen, pool, self.shards, address=self.address, workers=self.workers,
                             recipe=getattr(retriever, "recipe", None), device=self.device)
        return Ranked(done.table, {
            "path": "sharded counting on Ray", "shards": done.shards, "scoring": done.path, "exact": done.exact,
            "precision": done.precision, "shards_computed": done.computed, "shards_reused": done.reused,
            "address": redact(self.address) if self.address else "local"})
