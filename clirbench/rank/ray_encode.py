"""Encoding on Ray (docs/large-pools.md): the distinct texts of each role, split into disjoint chunks,
encoded by Ray actors (one per GPU when the cluster has GPUs, else one per worker CPU), each building
the retriever from its *recipe* and writing into the SHARED embedding cache folder. The cache is
content addressed, with sealed shards and a writer lock per embedding space: a rerun encodes
nothing, and the driver then finds every embedding cached. Actors encode outside that lock (their
chunks are disjoint) and hold it only to write. Every node must see the cache folder at the same
path; the workers check that the retriever they build encodes into the driver's embedding spaces.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..cache.store import distinct_rows
from ..collection import texts_of
from ..util.errors import ClirbenchError
from .ray_cluster import MAX_RETRIES, QUIET, forwarded_env, ray_get, ray_session, worker_id

__all__ = ["EncodeReport", "encode_on_ray", "encode_texts", "build_retriever", "spaces", "check_same"]


def build_retriever(recipe, cache_dir, options: Mapping | None = None):
    """``recipe(cache_dir, **options)``: the retriever rebuilt over ``cache_dir`` (a Ray worker's)."""
    if not callable(recipe):
        raise ClirbenchError(f"a retriever's recipe for Ray is a picklable callable(cache_dir) -> retriever "
                             f"(e.g. retrievers.spec.Recipe(spec)), not {type(recipe).__name__}")
    return recipe(cache_dir, **dict(options or {}))


def spaces(retriever) -> list:
    """The embedding spaces a retriever writes (``capabilities.EmbedsIntoCache``): what workers and
    driver must agree on."""
    enc = retriever.encoder
    return [str(enc.model_id), str(enc.revision)] + [str(enc.prompt(r)) for r in ("query", "document")] \
        + [np.dtype(retriever.score_dtype).name]


def check_same(retriever, expected: list | None) -> None:
    """A one-line ClirbenchError when ``retriever`` (built on a worker) writes other spaces than the driver's."""
    if expected is not None and spaces(retriever) != expected:
        raise ClirbenchError(f"the retriever built on a Ray worker ({spaces(retriever)}) is not the driver's "
                             f"({expected}): pass the options it was built with")


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
        self.retriever = build_retriever(recipe, cache_dir, options)
        check_same(self.retriever, expected)

    def encode(self, role: str, texts: list[str]) -> tuple[int, str]:
        r = self.retriever
        whole = max(1, len(texts))
        try:
            r.cache.embed_rows(_Probe(r.encoder), texts, role, whole)
            return 0, worker_id()  # all cached
        except _Missing as missing:
            todo = missing.texts
        vecs = np.asarray(r.encoder.encode(todo, role), dtype=np.float32)
        done = _Precomputed(r.encoder, todo, vecs)
        r.cache.embed_rows(done, texts, role, whole)  # what another writer added meanwhile is not written twice
        return done.served, worker_id()


def _chunks(texts_by_role: Mapping[str, Sequence], chunk_size: int | None, workers: int) -> tuple[dict, list]:
    counts, chunks = {}, []
    for role, texts in texts_by_role.items():
        distinct, _ = distinct_rows(texts_of(texts))
        counts[role] = len(distinct)
        size = int(chunk_size or max(64, -(-len(distinct) // (4 * workers))))
        chunks += [(role, distinct[a:a + size]) for a in range(0, len(distinct), size)]
    return counts, chunks


def encode_texts(ray, recipe, texts_by_role, cache_dir, workers, chunk_size, options, expected) -> EncodeReport:
    """``encode_on_ray``'s work on a connected ``ray``."""
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
                                              **opts, **forwarded_env())
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
            done, who = ray_get(ray, ready[0])
            encoded += done
            seen.add(who)
            if todo:
                role, texts = todo.pop()
                pending[actor.encode.remote(role, texts)] = actor
    finally:
        for actor in actors:
            ray.kill(actor)
    return EncodeReport(counts, encoded, len(chunks), tuple(sorted(seen)), bool(gpus))


def encode_on_ray(recipe, texts_by_role: Mapping[str, Sequence], cache_dir, workers: int | None = None, *,
                  address: str | None = None, chunk_size: int | None = None,
                  options: Mapping | None = None, expected: list | None = None) -> EncodeReport:
    """Encode ``texts_by_role`` (``{"document": [...], "query": [...]}``, strings or Texts) into the
    embedding cache at ``cache_dir`` with ``workers`` Ray actors (default: one per GPU, else one per
    cluster CPU). ``recipe`` is a picklable ``callable(cache_dir, **options)`` returning the retriever
    (``capabilities.EmbedsIntoCache``), e.g. ``retrievers.spec.Recipe(spec)``."""
    if cache_dir is None:
        raise ClirbenchError("encoding on Ray needs an on-disk embedding cache that every node sees (--cache-dir)")
    cache_dir = str(Path(cache_dir).resolve())
    with ray_session(address, workers, init_kwargs=QUIET) as ray:
        return encode_texts(ray, recipe, texts_by_role, cache_dir, workers, chunk_size, options, expected)
