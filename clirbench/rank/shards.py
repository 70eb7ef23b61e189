"""How a pool is cut into document shards: how many, query blocks within a memory budget, contiguous
column ranges, and copies of one text kept in one shard (docs/large-pools.md)."""
from __future__ import annotations

import numpy as np

__all__ = ["AUTO_SHARD_DOCS", "SHARD_BYTES", "shard_plan", "shard_counts", "shard_slices", "grouped_shards",
           "shards_of", "cols_index"]

AUTO_SHARD_DOCS = 1_000_000
"""Pools with more documents than this are ranked by shard without ``--shards``: above it, a
block of 64 queries' full rows alone passes 256 MiB and the full-row path's per-pair copies grow
with the pool."""

SHARD_BYTES = 256 << 20  # default budget for one (query block x shard) float32 score block


def shard_plan(n_docs: int, n_queries: int, budget_bytes: int = SHARD_BYTES,
               block_rows: int = 4096) -> tuple[int, int]:
    """``(shards, query_block_rows)`` keeping two float32 score blocks (the one being counted and
    the next product) within ``budget_bytes``; queries in blocks of ``block_rows`` at most (matmul
    efficiency), shards as few as fit. Counting's temporaries are a few cache-sized row chunks."""
    rows = max(1, min(int(block_rows), int(n_queries) or 1))
    per_block = max(1, int(budget_bytes) // (2 * 4 * rows))
    return max(1, -(-int(n_docs) // per_block)), rows


def shard_counts(n_docs: int, n_queries: int, shards: int | None, budget_bytes: int = SHARD_BYTES) -> tuple[int, int]:
    """``(shards, query_block_rows)`` for a run: ``shards`` as asked (``shard_plan``'s count when
    None), query blocks shrunk so that one block x shard stays within ``budget_bytes``."""
    auto, block = shard_plan(n_docs, n_queries, budget_bytes)
    n = int(shards) if shards else auto
    if n < 1:
        raise ValueError(f"shards must be >= 1, not {shards}")
    return n, max(1, min(block, int(budget_bytes) // (8 * max(1, -(-int(n_docs) // n)))))


def shard_slices(n_docs: int, shards: int) -> list[slice]:
    """``shards`` contiguous, near-equal column ranges (fewer when there are fewer documents)."""
    if int(shards) < 1:
        raise ValueError(f"shards must be >= 1, not {shards}")
    bounds = np.linspace(0, n_docs, min(int(shards), max(n_docs, 1)) + 1).round().astype(np.int64)
    return [slice(int(a), int(b)) for a, b in zip(bounds, bounds[1:])]


def grouped_shards(rows: np.ndarray, shards: int) -> list:
    """``shards`` column sets of near-equal size, copies of one text always in the same set (so a
    single product gives all of them one score). Contiguous slices when there are no copies."""
    n = len(rows)
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    first_of_doc = first[inverse.ravel()] if n else np.zeros(0, np.int64)
    if np.all(first_of_doc == np.arange(n)):
        return shard_slices(n, shards)
    order = np.lexsort((np.arange(n), first_of_doc))  # docs grouped at their text's first occurrence
    grouped = first_of_doc[order]
    parts, lo = [], 0
    for cut in (s.stop for s in shard_slices(n, shards)):
        cut = int(np.searchsorted(grouped, grouped[cut - 1], side="right")) if cut < n else n
        if cut > lo:
            parts.append(np.sort(order[lo:cut]))
            lo = cut
    return parts


def shards_of(shards, n_docs: int) -> list:
    """The column sets of ``shards``: a count (``shard_slices``) or the sets themselves."""
    return shard_slices(n_docs, shards) if isinstance(shards, (int, np.integer)) else list(shards)


def cols_index(cols, n_docs: int) -> np.ndarray:
    """The pool columns of a shard given as a slice or an index array."""
    return np.arange(n_docs)[cols] if isinstance(cols, slice) else np.asarray(cols, dtype=np.int64)
