"""On-disk cache of a second stage's (query, document) pair scores, content-addressed like the
embeddings: one space per model (its id, revision and whatever else decides a pair's score: prompts,
maximum length, the score's activation; ``meta``), each pair keyed by the SHA-256 of its two texts.

Layout: ``<cache>/embeddings/pairs/<space>/`` (``layout.PAIRS``), the shard store of ``store.py`` with
the dense codec, each score a 1-wide float32 vector: sealed, checksummed shards written under the
folder's writer lock, read-only layers (``$CLIRBENCH_CACHE_READ``), quarantine of damaged shards. A
killed run keeps every chunk it finished. Missing pairs are scored in chunks of similar lengths
(longest first), so a model's batches hold pairs of about one length.
"""
from __future__ import annotations

import hashlib
import json
from typing import Callable, Sequence

import numpy as np

from .codecs import DENSE
from .layout import PAIRS
from .store import ShardStore, SpaceCache, claim, find_missing

__all__ = ["PairScoreCache", "pair_digest", "pair_space_key"]


def pair_digest(query: str, doc: str) -> bytes:
    """The 32-byte key of a (query text, document text) pair."""
    return hashlib.sha256(json.dumps([query, doc], ensure_ascii=False).encode("utf-8", "surrogatepass")).digest()


def pair_space_key(meta: dict) -> str:
    """Folder name of one model's pair scores (``meta``: what decides a pair's score)."""
    return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]


class _PairSpace:
    """Scores of one model: an in-memory memo backed by a shard store."""

    def __init__(self, meta: dict, folder) -> None:
        self.store = ShardStore(folder, DENSE, meta, check_meta=True)
        self.memo: dict[bytes, float] = {}

    def refresh(self) -> None:
        self.store.refresh()

    def read(self, keys: list[bytes]) -> list[bytes]:
        """Move ``keys`` found in good shards into the memo; returns those found."""
        found, groups = self.store.read(keys)
        for _, vecs, pos, rows in groups:
            values = np.asarray(vecs[np.sort(rows)], dtype=np.float32)[:, 0]
            order = np.argsort(rows)
            for p, v in zip(pos[order].tolist(), values.tolist()):
                self.memo[found[p]] = v
        return found


class PairScoreCache(SpaceCache):
    """Pair scores by (model ``meta``, query text, document text); ``root=None`` keeps them in memory
    only. Counters over distinct pairs: ``hits``, ``misses``, ``encoded`` (pairs scored by the model),
    ``loaded`` (read from disk)."""

    kind = PAIRS

    def _space(self, meta: dict) -> _PairSpace:
        meta = {str(k): str(v) for k, v in meta.items()}
        return self.space_for(pair_space_key(meta), lambda folder: _PairSpace(meta, folder))

    def scores(self, meta: dict, pairs: Sequence[tuple[str, str]], score: Callable[[list], np.ndarray],
               chunk: int = 1024) -> np.ndarray:
        """float32 scores of ``pairs`` ((query text, document text)), scoring only the distinct pairs the
        cache lacks with ``score(list of pairs) -> scores``, ``chunk`` at a time, each chunk's pairs of
        similar lengths (longest first) and written to disk before the next."""
        space = self._space(meta)
        keys = [pair_digest(q, d) for q, d in pairs]
        distinct = list(dict.fromkeys(keys))
        first = dict(zip(keys, range(len(keys))))  # a key's first pair
        todo = find_missing(self, space, distinct)
        todo.sort(key=lambda i: -sum(map(len, pairs[first[distinct[i]]])))
        for a in range(0, len(todo), chunk):
            with space.store.lock():
                part = claim(self, space, distinct, todo[a:a + chunk])
                if part:
                    self._score(space, [distinct[i] for i in part], [pairs[first[distinct[i]]] for i in part], score)
        return np.fromiter((space.memo[k] for k in keys), dtype=np.float32, count=len(keys))

    def _score(self, space: _PairSpace, keys: list[bytes], pairs: list, score) -> None:
        values = np.asarray(score(pairs), dtype=np.float32).reshape(-1)
        if values.shape != (len(pairs),):
            raise ValueError(f"the model gave {values.shape[0]} scores for {len(pairs)} pairs")
        if not np.isfinite(values).all():
            raise ValueError("the model gave a non-finite pair score")
        space.store.write(keys, values[:, None])
        space.memo.update(zip(keys, values.tolist()))
        self.encoded += len(keys)
