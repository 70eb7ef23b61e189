"""The content-addressed shard store shared by the dense, sparse and token embedding caches.

One store is one folder (one embedding space): ``meta.json`` and shards of ``<name>.hashes.npy``
(uint8, n x 32: the SHA-256 of each text), the data files a *codec* writes for the batch (the
vectors, sparse rows or token matrices of those n texts), and ``<name>.shard.json`` (sizes and
checksums, written last: see ``clirbench.cache.shards``). The store indexes the shards by text
digest, opens a shard through its codec on first use (digests checked then), sets a shard that
fails aside (quarantine), and writes new shards holding the folder's writer lock. A writer may seal
each model batch as a small shard at once, then merge a chunk's batches into one shard that
``replaces`` them (so a killed run loses at most the batch in flight, and a big cache keeps few shards).

A store may have read-only *layers*: the same space's folders in other caches (``SpaceCache``'s
``read``, ``$CLIRBENCH_CACHE_READ``: a warm user cache, a shared team cache), consulted for texts
its own shards lack. A layer is only read: nothing in it is written, swept, locked or moved; its
shards are checked as the store's own (manifest sizes, then each file's checksum on first use), and
one that fails (or predates checksums, or a layer of another space) is ignored with a warning, so
its texts are encoded and written here.

A codec has ``suffixes`` (its data files), ``dump(batch) -> {suffix: bytes}``,
``meta(batch) -> dict`` (added to ``meta.json``), ``load(shard, rows) -> payload`` (raises
``BadShard``) and ``width(payload) -> int`` (the dimension); codecs are in ``clirbench.cache.codecs``.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..util.atomic import remove_stale_temps, write_bytes_atomic
from ..util.strict import json_kind
from .layout import read_only_dirs
from .shards import (
    HASHES,
    Shard,
    find_shards,
    new_name,
    quarantine,
    remove_free_lock,
    set_aside,
    write_shard,
    writer_lock,
)

__all__ = ["ShardStore", "BadShard", "MARKER", "text_digest", "distinct_rows", "npy_bytes", "read_hashes",
           "find_missing", "claim", "fill", "SpaceCache"]

MARKER = HASHES


class BadShard(Exception):
    """A shard that fails its check; the message says why."""


def text_digest(text: str) -> bytes:
    """The 32-byte SHA-256 of a text: its key in every embedding cache."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def npy_bytes(array: np.ndarray) -> bytes:
    """``array`` in ``.npy`` format."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


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


def read_hashes(shard: Shard, *data_suffixes: str) -> tuple[np.ndarray | None, str | None]:
    """The ``(n, 32)`` uint8 text digests of a shard, read against its manifest, after a size check of
    its data files (their digests are checked on first use); ``(None, reason)`` when it fails."""
    data, reason = shard.read(MARKER)
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


def claim(counters, space, keys: Sequence[bytes], part: list[int]) -> list[int]:
    """Of ``part`` (indices of ``keys``), those still missing once shards written meanwhile are read.

    Call with the space's writer lock held: what another process wrote while this one waited is
    read, not encoded again. Counters move from ``misses`` to ``hits`` / ``loaded`` accordingly.
    """
    space.refresh()
    store = space.store
    if store.redundant:
        store.remove(store.redundant)
        store.redundant = []
    found = set(space.read([keys[i] for i in part]))
    if found:
        counters.loaded += len(found)
        counters.hits += len(found)
        counters.misses -= len(found)
    return [i for i in part if keys[i] not in found]


def fill(counters, space, keys: Sequence[bytes], texts: Sequence[str], chunk: int, encode, progress=None,
         length: Callable[[list[str]], Sequence[int]] | None = None) -> None:
    """Encode the ``keys`` ``space`` lacks, longest text first, ``chunk`` at a time under the writer lock.

    ``encode(part, bar)`` encodes, writes and adds the texts at indices ``part``; ``progress(todo)``,
    when given, makes a bar for the missing texts (indices ``todo``; advanced here for texts another
    process wrote meanwhile, closed at the end). ``length(texts)``: each text's length, in the
    encoder's tokens (its batches are then padded least), ties by characters; characters when None.
    """
    todo = find_missing(counters, space, keys)
    if not todo:
        return
    sizes = length([texts[i] for i in todo]) if length is not None else [len(texts[i]) for i in todo]
    todo = [todo[j] for j in sorted(range(len(todo)), key=lambda j: (-sizes[j], -len(texts[todo[j]])))]
    bar = progress(todo) if progress is not None else None
    try:
        for a in range(0, len(todo), chunk):
            with space.store.lock():
                part = claim(counters, space, keys, todo[a: a + chunk])
                if part:
                    encode(part, bar)
            claimed = len(todo[a: a + chunk]) - len(part)  # texts another process encoded meanwhile
            if bar is not None and claimed:
                bar.update(claimed)
    finally:
        if bar is not None:
            bar.close()


class ShardStore:
    """The shards of one folder, by text digest; ``folder=None`` stores nothing (memory-only caches).

    ``meta``: what identifies the space (model, revision, prompt, role, ...), written to
    ``meta.json`` with the first shard; with ``check_meta``, a ``meta.json`` naming another space
    is an error and an unreadable one is set aside. Bad shards go to ``<folder>/../quarantine/``.
    """

    def __init__(self, folder: Path | None, codec, meta: dict, check_meta: bool = False,
                 readonly: bool = False) -> None:
        self.folder, self.codec, self.meta, self.check_meta = folder, codec, meta, check_meta
        self.readonly = readonly  # a layer: read, never written, swept or quarantined
        self.layers: list[ShardStore] = []  # read-only stores of the same space, consulted after this one
        self.dim: int | None = None
        self.index: dict[bytes, tuple[int, int]] = {}  # digest -> (shard number, row)
        self.shards: list[Shard] = []  # by shard number
        self.sizes: list[int] = []  # rows per shard
        self.seen: set[str] = set()  # shard names already indexed (or set aside)
        self.numbers: dict[str, int] = {}  # shard name -> shard number
        self.redundant: list[str] = []  # shards found merged into another: removed by the next writer
        self.opened: dict[int, Any] = {}  # shard number -> the codec's payload
        self._swept = self._meta_read = False

    def add_layers(self, folders: Sequence[Path]) -> None:
        """Read the same space from ``folders`` too (read-only), after this store's own shards."""
        self.layers += [ShardStore(Path(f), self.codec, self.meta, self.check_meta, readonly=True)
                        for f in folders if Path(f) != self.folder]

    def _bad(self, shard: Shard, reason: str) -> None:
        """Set a shard that fails its check aside; in a layer, only ignore it (and say so)."""
        if not self.readonly:
            set_aside(self.folder.parent, shard, reason)
            return
        print(f"clirbench: warning: damaged shard {self.folder / shard.name} in a read-only cache "
              f"({reason}); ignored, its entries will be computed here", file=sys.stderr, flush=True)

    # -- reading -------------------------------------------------------------------------------
    def _read_meta(self) -> None:
        path = self.folder / "meta.json"
        if not path.is_file():
            return
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(meta, dict):
                raise TypeError(f"not a cache's meta.json: {json_kind(meta)}, expected a JSON object")
            dim = int(meta["dim"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            why = str(e) if str(e).startswith("not a cache") else f"unreadable: {type(e).__name__}"
            if not self.readonly:
                quarantine(self.folder.parent, [path], why, str(path))
            return  # rewritten with the next shard; the shards' own shapes give the dimension
        for k, v in self.meta.items():
            if meta.get(k) != v:
                why = f"embedding cache {path} holds {meta.get(k)!r} for {k}, expected {v!r}"
                if not self.readonly:
                    raise ValueError(why)
                print(f"clirbench: warning: {why}; this read-only cache is ignored", file=sys.stderr, flush=True)
                self.folder = None  # nothing of it is read
                return
        self._meta_read = True
        self.dim = dim

    def refresh(self) -> None:
        """Index shards written since the last look (by this or another process); set bad ones aside."""
        for layer in self.layers:
            layer.refresh()
        if self.folder is None or not self.folder.is_dir():
            return
        if not self._swept and not self.readonly:
            remove_stale_temps(self.folder)
            remove_free_lock(self.folder)  # a killed writer's
            self._swept = True
        if self.check_meta and not self._meta_read and self.dim is None:
            self._read_meta()
            if self.folder is None:  # a layer of another space
                return
        found = find_shards(self.folder, MARKER, self.seen)
        merged = {name for shard in found for name in shard.replaces}
        for shard in found:
            self.seen.add(shard.name)
            if shard.name in merged:  # its merged shard is there too (a writer killed before removing it)
                if not self.readonly:
                    self.redundant.append(shard.name)
                continue
            hashes, reason = read_hashes(shard, *self.codec.suffixes)
            if not reason and self.readonly and shard.legacy:
                reason = "written before checksums"
            if reason:
                self._bad(shard, reason)
                continue
            number = self.numbers[shard.name] = len(self.shards)
            self.shards.append(shard)
            self.sizes.append(len(hashes))
            old = {self.numbers[n] for n in shard.replaces if n in self.numbers}  # parts indexed before
            index = self.index
            for row, key in enumerate(np.ascontiguousarray(hashes).view(np.dtype("V32")).ravel().tolist()):
                if old and index.get(key, (None,))[0] in old:
                    index[key] = (number, row)
                else:
                    index.setdefault(key, (number, row))

    def open(self, number: int) -> Any | None:
        """The payload of shard ``number`` (checked on first use), or None once a bad shard is set aside."""
        if number in self.opened:
            return self.opened[number]
        shard = self.shards[number]
        try:
            payload = self.codec.load(shard, self.sizes[number])
            width = self.codec.width(payload)
            if self.dim is not None and width != self.dim:
                raise BadShard(f"{width}-d vectors in a {self.dim}-d space")
        except BadShard as e:
            self._bad(shard, str(e))
            self.index = {k: v for k, v in self.index.items() if v[0] != number}
            return None
        self.dim = width
        self.opened[number] = payload
        return payload

    def read(self, keys: Sequence[bytes]) -> tuple[list[bytes], list[tuple[str, Any, np.ndarray, np.ndarray]]]:
        """The ``keys`` found in good shards, and per shard ``(name, payload, positions in found, rows)``:
        this store's shards first, then its layers' for the keys still missing."""
        found, groups = self._read_own(keys)
        if not self.layers or len(found) == len(keys):
            return found, groups
        got = set(found)
        rest = [k for k in keys if k not in got]
        for layer in self.layers:
            if not rest:
                break
            more, parts = layer.read(rest)
            if not more:
                continue
            if self.dim is not None and layer.dim != self.dim:
                print(f"clirbench: warning: read-only cache {layer.folder} holds {layer.dim}-d vectors, "
                      f"this space {self.dim}-d; ignored", file=sys.stderr, flush=True)
                layer.folder, layer.index = None, {}
                continue
            self.dim = layer.dim
            groups += [(name, payload, pos + len(found), rows) for name, payload, pos, rows in parts]
            found += more
            got = set(more)
            rest = [k for k in rest if k not in got]
        return found, groups

    def _read_own(self, keys: Sequence[bytes]) -> tuple[list[bytes], list]:
        index = self.index
        found = [k for k in keys if k in index]
        if not found:
            return found, []
        where = np.array([index[k] for k in found], dtype=np.int64).reshape(-1, 2)
        numbers = np.unique(where[:, 0]).tolist()
        payloads = {n: p for n in numbers if (p := self.open(n)) is not None}
        if len(payloads) < len(numbers):
            keep = np.isin(where[:, 0], list(payloads))
            found = [k for k, ok in zip(found, keep.tolist()) if ok]
            where = where[keep]
        groups = []
        for n, payload in payloads.items():
            pos = np.flatnonzero(where[:, 0] == n) if len(payloads) > 1 else np.arange(len(where))
            groups.append((self.shards[n].name, payload, pos, where[pos, 1]))
        return found, groups

    # -- writing -------------------------------------------------------------------------------
    def lock(self) -> AbstractContextManager[bool]:
        """The folder's writer lock (see ``clirbench.cache.shards.writer_lock``)."""
        return writer_lock(self.folder, MARKER)

    def encode_cost(self, name: str) -> tuple[float, str | None]:
        """Model seconds per text and the CPU that encoded the shard ``name`` (NaN, None: not recorded)."""
        number = self.numbers.get(name)
        if number is None:
            for layer in self.layers:
                if name in layer.numbers:
                    return layer.encode_cost(name)
            return float("nan"), None
        seconds, cpu = self.shards[number].encode
        rows = self.sizes[number]
        return (seconds / rows if seconds is not None and rows else float("nan")), cpu

    def write(self, keys: Sequence[bytes], batch, replaces: Sequence[str] = (),
              encode: dict | None = None) -> str | None:
        """Write one shard of ``batch`` for ``keys`` (call holding ``lock()``); returns its name (None
        without a folder). ``replaces``: shards of this process it merges, removed once it is sealed;
        ``encode``: ``{"seconds", "cpu"}`` of the model call(s) that made it, kept in its manifest."""
        if self.folder is None:
            return None
        if self.readonly:
            raise RuntimeError(f"{self.folder} is a read-only cache")
        self.folder.mkdir(parents=True, exist_ok=True)
        meta_path = self.folder / "meta.json"
        if not meta_path.is_file():
            write_bytes_atomic(meta_path, json.dumps({**self.meta, **self.codec.meta(batch)}, indent=1).encode())
        name = new_name()
        hashes = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)
        write_shard(self.folder, name, {**self.codec.dump(batch), MARKER: npy_bytes(hashes)}, list(replaces), encode)
        self.seen.add(name)
        self.remove(replaces)
        return name

    def remove(self, names: Sequence[str]) -> None:
        """Delete shards (call holding ``lock()``): merged into another, or not to be trusted."""
        if self.folder is None or self.readonly:
            return
        for name in names:
            Shard(self.folder, name, None).remove()


class SpaceCache:
    """Base of the embedding caches: spaces by folder key under ``root`` (None: memory only), and the
    counters over distinct texts: ``hits``, ``misses``, ``encoded``, ``loaded``.

    ``read``: folders of caches of the same kind read as read-only layers after ``root`` (never
    written); default, for an on-disk cache: those of ``$CLIRBENCH_CACHE_READ``
    (``clirbench.cache.layout.read_only_dirs``, this class's ``kind``).
    """

    kind: str | None = None  # which sub-folder of a cache root (clirbench.cache.layout): None, SPARSE, MULTIVECTOR

    def __init__(self, root: str | os.PathLike | None = None,
                 read: Sequence[str | os.PathLike] | None = None) -> None:

        self.root = Path(root) if root is not None else None
        if read is None:
            read = read_only_dirs(self.kind) if root is not None else ()
        self.read = [Path(r) for r in read]
        self.hits = self.misses = self.encoded = self.loaded = 0
        self._spaces: dict[str, Any] = {}

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "encoded": self.encoded, "loaded": self.loaded}

    def space_for(self, key: str, make: Callable[[Path | None], Any]) -> Any:
        """The space of folder ``key``, made by ``make(folder or None)`` on first use."""
        if key not in self._spaces:
            space = self._spaces[key] = make(None if self.root is None else self.root / key)
            space.store.add_layers([folder / key for folder in self.read])
        return self._spaces[key]
