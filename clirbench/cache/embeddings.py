"""On-disk embedding cache keyed by model id + revision + prompt + role + sha256 of the text.

Layout: ``root/<sha256(json([model_id, revision, prompt, role]))[:16]>/`` holds ``meta.json`` and
append-only shards ``<name>.vecs.npy`` (float32, n x d) + ``<name>.hashes.npy`` (uint8, n x 32,
the texts' sha256 digests) + ``<name>.shard.json`` (sizes and checksums, written last: marks the
shard complete; see ``clirbench.cache.shards``), so a killed run leaves only whole shards and the next
run resumes from them. A shard that fails its check is quarantined and its texts encoded again.
Each chunk is encoded holding the folder's writer lock, so concurrent runs share the work.
Shards are read through memory maps, only the rows asked for.
Every vector served or encoded is also kept in memory, so one process encodes or reads each
distinct text once, however many pools it appears in.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..atomic import remove_stale_temps, write_bytes_atomic
from .shards import Shard, find_shards, new_name, quarantine, set_aside, write_shard, writer_lock
from ..collection import check_role

__all__ = ["EmbeddingCache", "space_key"]

_FORMAT = 1
_MARKER = ".hashes.npy"  # completes a shard written before manifests (see clirbench.cache.shards)


def space_key(model_id: str, revision: str, prompt: str, role: str) -> str:
    """Folder name of one embedding space."""
    return hashlib.sha256(json.dumps([model_id, revision, prompt, role]).encode()).hexdigest()[:16]


def distinct_rows(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct texts in first-seen order, and for each input text its row among them."""
    position: dict[str, int] = {}
    distinct: list[str] = []
    rows = np.empty(len(texts), dtype=np.int64)
    for i, t in enumerate(texts):
        j = position.get(t)
        if j is None:
            j = position[t] = len(distinct)
            distinct.append(t)
        rows[i] = j
    return distinct, rows


def find_missing(counters, space, keys: Sequence[bytes]) -> list[int]:
    """Indices of ``keys`` that ``space`` holds neither in memory nor on disk.

    ``space`` has ``memo``, ``refresh()`` and ``read(keys) -> found keys``; ``counters`` (the cache)
    gets ``loaded``, ``hits`` and ``misses`` updated, counted over the distinct ``keys``.
    """
    todo = [i for i, k in enumerate(keys) if k not in space.memo]
    if todo:
        space.refresh()
        found = set(space.read([keys[i] for i in todo]))
        counters.loaded += len(found)
        todo = [i for i in todo if keys[i] not in found]
    counters.hits += len(keys) - len(todo)
    counters.misses += len(todo)
    return todo


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def npy_bytes(array: np.ndarray) -> bytes:
    """``array`` in ``.npy`` format."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def read_hashes(shard, *data_suffixes: str) -> tuple[np.ndarray | None, str | None]:
    """The ``(n, 32)`` uint8 text digests of a shard, read against its manifest, after a size check of
    its data files (their digests are checked on first use); ``(None, reason)`` when it fails."""
    data, reason = shard.read(".hashes.npy")
    for suffix in data_suffixes:
        reason = reason or shard.check(suffix, digest=False)
    if reason:
        return None, reason
    try:
        hashes = np.load(io.BytesIO(data))
    except (OSError, ValueError, EOFError) as e:
        return None, f"unreadable hashes: {type(e).__name__}"
    if hashes.ndim != 2 or hashes.shape[1] != 32 or hashes.dtype != np.uint8:
        return None, f"hashes of shape {hashes.shape}"
    return hashes, None


class _Bad(Exception):
    """A shard that fails its check; the message says why."""


def claim(counters, space, keys: Sequence[bytes], part: list[int]) -> list[int]:
    """Of ``part`` (indices of ``keys``), those still missing once shards written meanwhile are read.

    Call with the space's writer lock held: what another process wrote while this one waited is
    read, not encoded again. Counters move from ``misses`` to ``hits`` / ``loaded`` accordingly.
    """
    space.refresh()
    found = set(space.read([keys[i] for i in part]))
    if found:
        counters.loaded += len(found)
        counters.hits += len(found)
        counters.misses -= len(found)
    return [i for i in part if keys[i] not in found]


class _Space:
    """Vectors of one (model, revision, prompt, role): an in-memory memo backed by a shard folder."""

    def __init__(self, meta: dict, folder: Path | None) -> None:
        self.meta = meta
        self.folder = folder
        self.dim: int | None = None
        self.vecs = np.zeros((0, 0), dtype=np.float32)
        self.n = 0
        self.memo: dict[bytes, int] = {}  # digest -> row of self.vecs
        self.disk: dict[bytes, tuple[int, int]] = {}  # digest -> (shard number, row)
        self.shards: list[Shard] = []  # by shard number
        self.seen: set[str] = set()  # shard names already indexed (or set aside)
        self._maps: dict[int, np.ndarray] = {}
        self._verified: set[int] = set()  # shard numbers whose vectors passed their checksum
        self._swept = False  # stale temp files removed

    # -- disk ----------------------------------------------------------------------------------
    def _read_meta(self) -> None:
        meta_path = self.folder / "meta.json"
        if not meta_path.is_file():
            return
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            dim = int(meta["dim"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            quarantine(self.folder.parent, [meta_path], f"unreadable: {type(e).__name__}", str(meta_path))
            return  # rewritten with the next shard; the shards' own shapes give the dimension
        for k in ("model_id", "revision", "prompt", "role"):
            if meta.get(k) != self.meta[k]:
                raise ValueError(f"embedding cache {meta_path} holds {meta.get(k)!r} for {k}, expected {self.meta[k]!r}")
        self.dim = dim

    def _open(self, shard: Shard) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, memory-mapped vectors) of a shard; raises ``_Bad`` with the reason."""
        hashes, reason = read_hashes(shard, ".vecs.npy")
        if reason:
            raise _Bad(reason)
        try:
            vecs = np.load(shard.path(".vecs.npy"), mmap_mode="r")
        except (OSError, ValueError, EOFError) as e:
            raise _Bad(f"unreadable: {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}") from None
        if vecs.ndim != 2 or len(vecs) != len(hashes) or vecs.dtype != np.float32 \
                or (self.dim is not None and vecs.shape[1] != self.dim):
            raise _Bad(f"inconsistent shapes {hashes.shape} and {vecs.shape}")
        if shard.legacy and not np.isfinite(vecs).all():  # written before checksums: re-read, unverified
            raise _Bad("non-finite vectors")
        return hashes, vecs

    def refresh(self) -> None:
        """Index shards written since the last look (by this or another process)."""
        if self.folder is None or not self.folder.is_dir():
            return
        if not self._swept:
            remove_stale_temps(self.folder)
            self._swept = True
        if self.dim is None:
            self._read_meta()
        for shard in find_shards(self.folder, _MARKER, self.seen):
            self.seen.add(shard.name)
            try:
                hashes, vecs = self._open(shard)
            except _Bad as e:
                set_aside(self.folder.parent, shard, str(e))
                continue
            self.dim = vecs.shape[1] if self.dim is None else self.dim
            number = len(self.shards)
            self.shards.append(shard)
            self._maps[number] = vecs
            keys = np.ascontiguousarray(hashes).view(np.dtype("V32")).ravel().tolist()
            for row, key in enumerate(keys):
                self.disk.setdefault(key, (number, row))

    def _verify(self, number: int) -> bool:
        """Check shard ``number``'s vectors against its checksum (once); set it aside if bad."""
        if number in self._verified:
            return True
        shard = self.shards[number]
        reason = shard.check(".vecs.npy")
        if reason is None:
            self._verified.add(number)
            return True
        set_aside(self.folder.parent, shard, reason)
        self._maps.pop(number, None)
        self.disk = {k: v for k, v in self.disk.items() if v[0] != number}
        return False

    def read(self, keys: list[bytes]) -> list[bytes]:
        """Move ``keys`` found on disk (in shards that pass their check) into the memo; returns those found."""
        found = [k for k in keys if k in self.disk]
        if not all([self._verify(n) for n in {self.disk[k][0] for k in found}]):
            found = [k for k in found if k in self.disk]
        if not found:
            return found
        where = np.array([self.disk[k] for k in found], dtype=np.int64)
        out = np.empty((len(found), self.dim), dtype=np.float32)
        for number in np.unique(where[:, 0]):
            sel = np.flatnonzero(where[:, 0] == number)
            rows = where[sel, 1]
            order = np.argsort(rows)
            out[sel[order]] = self._maps[int(number)][rows[order]]
        self.add(found, out)
        return found

    def write(self, keys: list[bytes], vecs: np.ndarray) -> None:
        """Write one shard (call with the writer lock held)."""
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        meta_path = self.folder / "meta.json"
        if not meta_path.is_file():
            write_bytes_atomic(meta_path, json.dumps({**self.meta, "dim": int(vecs.shape[1]), "format": _FORMAT}, indent=1).encode())
        name = new_name()
        hashes = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)
        write_shard(self.folder, name, {".vecs.npy": npy_bytes(np.ascontiguousarray(vecs, dtype=np.float32)),
                                        ".hashes.npy": npy_bytes(hashes)})
        self.seen.add(name)

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

    def add(self, keys: list[bytes], vecs: np.ndarray) -> None:
        if self.dim is None:
            self.dim = vecs.shape[1]
        if vecs.shape != (len(keys), self.dim):
            raise ValueError(f"expected vectors of shape ({len(keys)}, {self.dim}), got {vecs.shape}")
        self.reserve(len(keys), self.dim)
        self.vecs[self.n: self.n + len(keys)] = vecs
        for i, k in enumerate(keys):
            self.memo[k] = self.n + i
        self.n += len(keys)

    def view(self) -> np.ndarray:
        v = self.vecs[: self.n]
        v.flags.writeable = False
        return v


def _encode_chunk(encoder, texts: list[str], role: str, bar) -> np.ndarray:
    """``encoder.encode(texts, role)``; batch by batch (the bar advancing after each) for a BatchEncoder."""
    batches = getattr(encoder, "encode_batches", None)
    if batches is None:
        vecs = np.asarray(encoder.encode(texts, role))
        if bar is not None:
            bar.update(len(texts))
        return vecs
    parts = []
    for vecs in batches(texts, role):
        parts.append(np.asarray(vecs))
        if bar is not None:
            bar.update(len(parts[-1]))
    return np.concatenate(parts) if parts else np.asarray(encoder.encode(texts, role))


class EmbeddingCache:
    """Embeddings by (model id, revision, prompt, role, text); ``root=None`` keeps them in memory only.

    Counters, over distinct texts per ``embed`` call: ``hits`` (served from memory or disk),
    ``misses`` (had to be encoded), ``encoded`` (texts actually sent to the encoder; fewer than
    ``misses`` after an interrupted encode), ``loaded`` (vectors read from disk).
    """

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else None
        self.hits = self.misses = self.encoded = self.loaded = 0
        self._spaces: dict[str, _Space] = {}

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "encoded": self.encoded, "loaded": self.loaded}

    def _space(self, encoder, role: str) -> _Space:
        meta = {"model_id": str(encoder.model_id), "revision": str(encoder.revision),
                "prompt": str(encoder.prompt(role)), "role": role}
        key = space_key(meta["model_id"], meta["revision"], meta["prompt"], role)
        if key not in self._spaces:
            self._spaces[key] = _Space(meta, None if self.root is None else self.root / key)
        return self._spaces[key]

    def embed_rows(self, encoder, texts: Sequence[str], role: str, batch_size: int | None = None,
                   progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, rows)``: text i's embedding is ``vectors[rows[i]]`` (a shared, read-only array).

        Equal texts get the same row, hence bit-identical vectors. Missing texts are encoded in
        chunks of ``batch_size`` (default 8 x the encoder's batch size), longest first, each
        chunk written to disk before the next starts.
        """
        space = self._space(encoder, check_role(role))
        distinct, rows_of_text = distinct_rows(texts)
        keys = [_digest(t) for t in distinct]
        todo = find_missing(self, space, keys)

        if todo:
            chunk = int(batch_size or 8 * (getattr(encoder, "batch_size", None) or 32))
            todo.sort(key=lambda i: -len(distinct[i]))
            bar = None
            if progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(todo), desc=f"encode {'queries' if role == 'query' else 'documents'} ({space.meta['model_id']})",
                           unit="text")
            try:
                for a in range(0, len(todo), chunk):
                    with writer_lock(space.folder, _MARKER):
                        part = claim(self, space, keys, todo[a: a + chunk])
                        if part:
                            self._encode(encoder, space, role, [distinct[i] for i in part], [keys[i] for i in part], bar)
                    claimed = len(todo[a: a + chunk]) - len(part)  # texts another process encoded meanwhile
                    if bar is not None and claimed:
                        bar.update(claimed)
            finally:
                if bar is not None:
                    bar.close()

        memo = space.memo
        rows = np.fromiter((memo[k] for k in keys), dtype=np.int64, count=len(keys))[rows_of_text]
        return space.view(), rows

    def _encode(self, encoder, space: _Space, role: str, texts: list[str], keys: list[bytes], bar=None) -> None:
        vecs = _encode_chunk(encoder, texts, role, bar)
        self.encoded += len(texts)
        if vecs.ndim != 2 or len(vecs) != len(texts):
            raise ValueError(f"encoder returned shape {vecs.shape} for {len(texts)} texts")
        if not np.isfinite(vecs).all():
            raise ValueError("encoder returned non-finite values")
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        space.write(keys, vecs)
        space.add(keys, vecs)

    def embed(self, encoder, texts: Sequence[str], role: str, batch_size: int | None = None,
              progress: bool = False) -> np.ndarray:
        """float32 (len(texts), d): the embeddings of ``texts`` for ``role``, encoding only what is missing."""
        vecs, rows = self.embed_rows(encoder, texts, role, batch_size, progress)
        if len(rows) == 0:
            return np.zeros((0, vecs.shape[1] if vecs.ndim == 2 else 0), dtype=np.float32)
        return vecs[rows]
