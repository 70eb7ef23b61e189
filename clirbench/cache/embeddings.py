"""On-disk embedding cache keyed by model id + revision + prompt + role + sha256 of the text.

Layout: ``root/<sha256(json([model_id, revision, prompt, role]))[:16]>/`` holds ``meta.json`` and
append-only shards ``<name>.vecs.npy`` (float32, n x d) + ``<name>.hashes.npy`` (uint8, n x 32,
the texts' sha256 digests) + ``<name>.shard.json`` (sizes and checksums, written last: marks the
shard complete; see ``clirbench.cache.shards``), so a killed run leaves only whole shards and the next
run resumes from them (the shard store of ``clirbench.cache.store``, ``DenseCodec``). A shard that fails
its check is quarantined and its texts encoded again.
Each chunk is encoded holding the folder's writer lock, so concurrent runs share the work; each model
batch of it is sealed as a shard at once and the chunk's batches merged into one shard at its end,
so Ctrl-C or a kill loses at most the batch in flight. Model calls run in a worker thread
(``clirbench.util.interruptible``): Ctrl-C stops a run at once, not at the end of a batch.
Shards are read through memory maps, only the rows asked for.
Every vector served or encoded is also kept in memory, so one process encodes or reads each
distinct text once, however many pools it appears in.
Each shard's manifest also keeps the model seconds that encoded it and the CPU (``encode``), so
that ``EmbeddingCache.cost`` reports the encoding's cold cost even for texts read from the cache.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..collection import check_role
from ..util.interruptible import call, each
from .codecs import DENSE
from .cost import EncodeCost, combine_cpus, cpu_name
from .store import ShardStore, SpaceCache, distinct_rows, fill, text_digest

__all__ = ["EmbeddingCache", "space_key"]


def space_key(model_id: str, revision: str, prompt: str, role: str) -> str:
    """Folder name of one embedding space."""
    return hashlib.sha256(json.dumps([model_id, revision, prompt, role]).encode()).hexdigest()[:16]


class _Space:
    """Vectors of one (model, revision, prompt, role): an in-memory memo backed by a shard store."""

    def __init__(self, meta: dict, folder: Path | None) -> None:
        self.meta = meta
        self.store = ShardStore(folder, DENSE, meta, check_meta=True)
        self.vecs = np.zeros((0, 0), dtype=np.float32)
        self.n = 0
        self.memo: dict[bytes, int] = {}  # digest -> row of self.vecs
        self.secs = np.zeros(0)  # per row: model seconds that encoded it (NaN: not recorded)
        self.fresh = np.zeros(0, dtype=bool)  # per row: encoded by this process
        self.cpu = np.zeros(0, dtype=np.int32)  # per row: index into self.cpus (-1: unknown)
        self.cpus: list[str] = []

    @property
    def dim(self) -> int | None:
        return self.store.dim

    def refresh(self) -> None:
        """Index shards written since the last look (by this or another process)."""
        self.store.refresh()

    def read(self, keys: list[bytes]) -> list[bytes]:
        """Move ``keys`` found on disk (in shards that pass their check) into the memo; returns those found."""
        found, groups = self.store.read(keys)
        if not found:
            return found
        out = np.empty((len(found), self.dim), dtype=np.float32)
        secs = np.full(len(found), np.nan)
        cpus = np.full(len(found), -1, dtype=np.int32)
        for name, vecs, pos, rows in groups:
            order = np.argsort(rows)
            out[pos[order]] = vecs[rows[order]]
            secs[pos], cpu = self.store.encode_cost(name)
            cpus[pos] = self.cpu_index(cpu)
        self.add(found, out, secs, cpus)
        return found

    def cpu_index(self, cpu: str | None) -> int:
        if cpu is None:
            return -1
        if cpu not in self.cpus:
            self.cpus.append(cpu)
        return self.cpus.index(cpu)

    # -- memory --------------------------------------------------------------------------------
    def reserve(self, extra: int, dim: int) -> None:
        if self.vecs.shape[1] not in (0, dim) and self.n:
            raise ValueError(f"encoder returned {dim}-d vectors, the cache holds {self.vecs.shape[1]}-d")
        need = self.n + extra
        if need > len(self.vecs) or self.vecs.shape[1] != dim:
            cap = max(need, int(len(self.vecs) * 1.5))
            grown = np.empty((cap, dim), dtype=np.float32)
            if self.n:
                grown[: self.n] = self.vecs[: self.n]
            self.vecs = grown
            for name in ("secs", "fresh", "cpu"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)

    def add(self, keys: list[bytes], vecs: np.ndarray, secs=np.nan, cpus=-1, fresh: bool = False) -> None:
        """Keep ``vecs`` for ``keys`` in memory, with their encode seconds per text (``secs``), CPU
        indices (``cpus``) and whether this process encoded them (``fresh``)."""
        if self.store.dim is None:
            self.store.dim = vecs.shape[1]
        if vecs.shape != (len(keys), self.dim):
            raise ValueError(f"expected vectors of shape ({len(keys)}, {self.dim}), got {vecs.shape}")
        self.reserve(len(keys), self.dim)
        self.vecs[self.n: self.n + len(keys)] = vecs
        self.secs[self.n: self.n + len(keys)] = secs
        self.cpu[self.n: self.n + len(keys)] = cpus
        self.fresh[self.n: self.n + len(keys)] = fresh
        for i, k in enumerate(keys):
            self.memo[k] = self.n + i
        self.n += len(keys)

    def view(self) -> np.ndarray:
        v = self.vecs[: self.n]
        v.flags.writeable = False
        return v


def _batches(encoder, texts: list[str], role: str) -> Iterator[np.ndarray]:
    """The encoder's output for ``texts``, one model batch at a time for a BatchEncoder (else all at
    once), each computed in the Ctrl-C-friendly worker thread (``clirbench.util.interruptible``)."""

    batches = getattr(encoder, "encode_batches", None)
    if batches is None:
        vecs = np.asarray(call(encoder.encode, texts, role))
        if vecs.ndim != 2 or len(vecs) != len(texts):
            raise ValueError(f"encoder returned shape {vecs.shape} for {len(texts)} texts")
        yield vecs
        return
    yield from (np.asarray(vecs) for vecs in each(batches(texts, role)))


def _stage_line(todo: list[int], what: str, space: _Space, rows_of_text: np.ndarray,
                langs: Sequence[str] | None) -> str:
    """``encoding 480 documents (de 240, en 240) with <model>; cache: <folder>``."""
    counts = ""
    if langs is not None and len(langs) == len(rows_of_text):
        first = np.unique(rows_of_text, return_index=True)[1]  # each distinct text's first occurrence
        tally = Counter(langs[first[i]] or "?" for i in todo)
        counts = " (" + ", ".join(f"{lang} {n}" for lang, n in sorted(tally.items())) + ")"
    where = space.store.folder if space.store.folder is not None else "memory only"
    return f"encoding {len(todo)} {what}{counts} with {space.meta['model_id']}; cache: {where}"


def _model_calls(encoder, n: int, chunk: int) -> int:
    """How many model batches encode ``n`` texts in chunks of ``chunk`` (one call per chunk for an
    encoder without ``encode_batches``)."""
    size = getattr(encoder, "batch_size", None) if hasattr(encoder, "encode_batches") else None
    if not size:
        return -(-n // chunk)
    return sum(-(-min(chunk, n - a) // int(size)) for a in range(0, n, chunk))


class EmbeddingCache(SpaceCache):
    """Embeddings by (model id, revision, prompt, role, text); ``root=None`` keeps them in memory only.

    Counters, over distinct texts per ``embed`` call: ``hits`` (served from memory or disk),
    ``misses`` (had to be encoded), ``encoded`` (texts actually sent to the encoder; fewer than
    ``misses`` after an interrupted encode), ``loaded`` (vectors read from disk).
    """

    def _space(self, encoder, role: str) -> _Space:
        meta = {"model_id": str(encoder.model_id), "revision": str(encoder.revision),
                "prompt": str(encoder.prompt(role)), "role": role}
        key = space_key(meta["model_id"], meta["revision"], meta["prompt"], role)
        return self.space_for(key, lambda folder: _Space(meta, folder))

    def embed_rows(self, encoder, texts: Sequence[str], role: str, batch_size: int | None = None,
                   progress: bool = False, langs: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, rows)``: text i's embedding is ``vectors[rows[i]]`` (a shared, read-only array).

        Equal texts get the same row, hence bit-identical vectors. Missing texts are encoded in
        chunks of ``batch_size`` (default 8 x the encoder's batch size), longest first (in the encoder's
        tokens when it has ``token_lengths(texts)``, else characters), each
        chunk written to disk before the next starts. With ``progress``, a line on stderr names
        what is encoded (how many texts, of which languages: ``langs``, one per text) and where it
        is cached, then a bar follows the encoding: it names the model batch in flight
        (``batch 1/15``) and its elapsed time moves every second (``clirbench.util.progress``).
        """
        space = self._space(encoder, check_role(role))
        distinct, rows_of_text = distinct_rows(texts)
        keys = [text_digest(t) for t in distinct]
        chunk = int(batch_size or 8 * (getattr(encoder, "batch_size", None) or 32))

        def bar(todo: list[int]):
            from tqdm.auto import tqdm

            from ..util.progress import bar  # lazy: a local name

            what = "queries" if role == "query" else "documents"
            tqdm.write(_stage_line(todo, what, space, rows_of_text, langs), file=sys.stderr)
            return bar(total=len(todo), desc=f"encode {what}", unit="text", steps=_model_calls(encoder, len(todo), chunk))

        fill(self, space, keys, distinct, chunk,
             lambda part, b: self._encode(encoder, space, role, [distinct[i] for i in part], [keys[i] for i in part], b),
             bar if progress else None, length=getattr(encoder, "token_lengths", None))
        memo = space.memo
        rows = np.fromiter((memo[k] for k in keys), dtype=np.int64, count=len(keys))[rows_of_text]
        return space.view(), rows

    def _encode(self, encoder, space: _Space, role: str, texts: list[str], keys: list[bytes], bar=None) -> None:
        """Encode one chunk: each model batch sealed as a shard as soon as it is there (a kill loses at
        most the batch in flight), then the chunk's batches merged into one shard."""
        parts, names, seconds, done = [], [], [], 0
        cpu = cpu_name()
        cpu_id = space.cpu_index(cpu)
        t0 = time.perf_counter()
        for vecs in _batches(encoder, texts, role):
            spent = time.perf_counter() - t0  # the model's time for this batch (not the cache's writes)
            if vecs.ndim != 2 or not 0 < len(vecs) <= len(texts) - done:
                space.store.remove(names)
                raise ValueError(f"encoder returned shape {vecs.shape} for {len(texts)} texts")
            if not np.isfinite(vecs).all():
                raise ValueError("encoder returned non-finite values")
            vecs = np.ascontiguousarray(vecs, dtype=np.float32)
            batch_keys = keys[done: done + len(vecs)]
            first = space.n
            space.add(batch_keys, vecs, spent / len(vecs), cpu_id, fresh=True)  # checks the width first
            names.append(space.store.write(batch_keys, vecs, encode={"seconds": spent, "cpu": cpu}))
            parts.append(vecs)
            seconds.append((first, len(vecs), spent))
            done += len(vecs)
            self.encoded += len(vecs)
            if bar is not None:
                bar.step()
                bar.update(len(vecs))
            t0 = time.perf_counter()
        if done != len(texts):
            space.store.remove(names)
            raise ValueError(f"encoder returned shape ({done}, {parts[0].shape[1]}) for {len(texts)} texts")
        if len(parts) > 1:
            total = sum(s for _, _, s in seconds)
            space.store.write(keys, np.concatenate(parts), replaces=[n for n in names if n],
                              encode={"seconds": total, "cpu": cpu})
            for first, n, _ in seconds:  # the merged shard's per-text seconds: what a later read gives
                space.secs[first: first + n] = total / len(keys)

    def dim(self, encoder, role: str) -> int | None:
        """The width of ``encoder``'s ``role`` vectors this cache holds (None before any is known)."""
        return self._space(encoder, check_role(role)).dim

    def cost(self, encoder, texts: Sequence[str], role: str) -> EncodeCost | None:
        """The encoding cost of ``texts`` (already embedded): how many distinct texts, the model seconds
        that encoded them (recorded when encoded, by this process or the one that wrote the cache;
        None if unknown for any), whether this process encoded them all, and on which CPU(s).
        None when some text was never embedded here (texts on disk but not yet in memory are read first)."""
        space = self._space(encoder, check_role(role))
        keys = list(dict.fromkeys(text_digest(t) for t in texts))
        memo = space.memo
        absent = [k for k in keys if k not in memo]
        if absent:
            space.refresh()
            self.loaded += len(space.read(absent))
        if not all(k in memo for k in keys):
            return None
        rows = np.fromiter((memo[k] for k in keys), dtype=np.int64, count=len(keys))
        secs = space.secs[rows]
        seconds = None if np.isnan(secs).any() else float(secs.sum())
        cpus = [space.cpus[i] if i >= 0 else None for i in np.unique(space.cpu[rows]).tolist()]
        return EncodeCost(len(keys), seconds, bool(space.fresh[rows].all()), combine_cpus(cpus))

    def embed(self, encoder, texts: Sequence[str], role: str, batch_size: int | None = None,
              progress: bool = False) -> np.ndarray:
        """float32 (len(texts), d): the embeddings of ``texts`` for ``role``, encoding only what is missing."""
        vecs, rows = self.embed_rows(encoder, texts, role, batch_size, progress)
        if len(rows) == 0:
            return np.zeros((0, vecs.shape[1] if vecs.ndim == 2 else 0), dtype=np.float32)
        return vecs[rows]
