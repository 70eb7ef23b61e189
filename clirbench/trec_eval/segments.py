"""Per-query operations on flat arrays grouped by query (``bounds``: query i owns ``[bounds[i],
bounds[i + 1])``), computed for all queries at once.

Sums are taken in trec_eval's order: each query's terms one after the other, from 0.0, as its C
loops add them (``seq_cumsum``), so that a value prints as trec_eval prints it even where
floating-point addition in another order would round differently. ``libm`` applies C's ``log``,
``log2`` and ``exp`` (numpy's vectorised versions differ from them in the last bit).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["lengths", "owner", "sub_bounds", "running_count", "count", "seq_cumsum", "seq_sum", "last_of",
           "first_of", "seg_max", "libm", "log2_table"]


def lengths(bounds: np.ndarray) -> np.ndarray:
    """(n,) items per query."""
    return np.diff(bounds)


def owner(bounds: np.ndarray) -> np.ndarray:
    """(m,) the query of each item."""
    return np.repeat(np.arange(len(bounds) - 1, dtype=np.int64), np.diff(bounds))


def sub_bounds(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The bounds of ``items[mask]`` (the items kept, grouped by the same queries)."""
    cum = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(mask, out=cum[1:])
    return cum[bounds]


def running_count(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(m,) per item, the items of its query up to and including it where ``mask`` holds."""
    cum = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(mask, out=cum[1:])
    return cum[1:] - np.repeat(cum[bounds[:-1]], np.diff(bounds))


def count(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(n,) items per query where ``mask`` holds."""
    return np.diff(sub_bounds(mask, bounds))


def seq_cumsum(terms: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(m,) float64 running sums within each query, added one term after the other from 0.0 (C's
    loop order). One vectorised step per position, over the queries that have that many items."""
    out = np.asarray(terms, dtype=np.float64) + 0.0  # a copy; 0.0 + -0.0 is 0.0, as in C
    lens = np.diff(bounds)
    if not len(out) or lens.max(initial=0) < 2:
        return out
    order = np.argsort(-lens, kind="stable")
    starts, desc = bounds[:-1][order], lens[order]
    active = np.searchsorted(-desc, -np.arange(1, int(desc[0])), side="left")  # queries longer than j
    for j, n in enumerate(active.tolist(), start=1):
        at = starts[:n] + j
        out[at] += out[at - 1]
    return out


def last_of(values: np.ndarray, bounds: np.ndarray, empty: float = 0.0) -> np.ndarray:
    """(n,) each query's last item (``empty`` for a query without items)."""
    out = np.full(len(bounds) - 1, empty, dtype=np.float64)
    has = bounds[1:] > bounds[:-1]
    out[has] = values[bounds[1:][has] - 1]
    return out


def seq_sum(terms: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(n,) each query's terms added in order from 0.0 (0.0 for none)."""
    return last_of(seq_cumsum(terms, bounds), bounds)


def first_of(mask: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(n,) index of each query's first item where ``mask`` holds; -1 where none does."""
    hits = np.flatnonzero(mask)
    pos = np.searchsorted(hits, bounds[:-1])
    found = pos < len(hits)
    first = np.where(found, hits[np.minimum(pos, max(len(hits) - 1, 0))] if len(hits) else -1, -1)
    return np.where(found & (first < bounds[1:]), first, -1)


def seg_max(values: np.ndarray, bounds: np.ndarray, empty: float = -np.inf) -> np.ndarray:
    """(n,) each query's largest value (``empty`` for none); NaN items are skipped."""
    out = np.full(len(bounds) - 1, empty, dtype=np.float64)
    has = np.flatnonzero(bounds[1:] > bounds[:-1])
    if len(has):
        clean = np.where(np.isnan(values), -np.inf, values)
        out[has] = np.maximum.reduceat(clean, bounds[:-1][has])
    return out


def libm(func, values: np.ndarray) -> np.ndarray:
    """``func`` (``math.log``, ``math.log2``, ``math.exp``: the C library's) on each value."""
    return np.fromiter(map(func, np.asarray(values, dtype=np.float64).tolist()), dtype=np.float64,
                       count=np.size(values))


_LOG2: list[np.ndarray] = [np.zeros(0)]


def log2_table(n: int) -> np.ndarray:
    """(n + 1,) C's ``log2(i)`` for i = 0..n (``-inf`` at 0)."""
    if len(_LOG2[0]) <= n:
        size = max(n + 1, 2 * len(_LOG2[0]), 1024)
        table = np.empty(size)
        table[0] = -np.inf
        table[1:] = libm(math.log2, np.arange(1, size, dtype=np.float64))
        _LOG2[0] = table
    return _LOG2[0][:n + 1]
