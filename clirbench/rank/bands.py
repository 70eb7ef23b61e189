"""Counting against a band of float32 scores: the rounding of bounds to float32 (``round32``), a band
widened by a product's error bound (``band_limits``), and per row the count of scores above the
band and the scores inside it (``count_band``). The full-row and sharded rankers decide with these
what a float32 product settles and score only the rest exactly."""
from __future__ import annotations

import numpy as np

__all__ = ["round32", "band_limits", "count_band", "NOT_IEEE"]

NOT_IEEE = ("a float32 product fell outside its error bound: the products are not IEEE float32 (TF32 or "
            "reduced-precision matmul?); rank with exact scores instead")


def round32(x: np.ndarray, up: bool) -> np.ndarray:
    """float32 values <= x (up=False) or >= x (up=True), the nearest such."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        f = x.astype(np.float32)
    if up:
        return np.where(f.astype(np.float64) < x, np.nextafter(f, np.float32(np.inf)), f)
    return np.where(f.astype(np.float64) > x, np.nextafter(f, np.float32(-np.inf)), f)


def band_limits(lo: np.ndarray, hi: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 ``(lo', hi')`` for approximate scores within ``err`` of the true dot product: an
    approximate score > hi' is surely a canonical float32 score > ``hi``, one < lo' surely < ``lo``."""
    up = np.nextafter(np.asarray(hi, np.float32), np.float32(np.inf)).astype(np.float64) + err
    down = np.nextafter(np.asarray(lo, np.float32), np.float32(-np.inf)).astype(np.float64) - err
    return round32(down, up=False), round32(up, up=True)


def count_band(R: np.ndarray, lo: np.ndarray, hi: np.ndarray, rows: int = 64):
    """Per row the count of entries > hi, and the entries in [lo, hi] as (row, col, score); in row
    chunks whose boolean temporaries stay in cache (about 3x faster than whole-block passes). A
    chunk with few entries >= lo (a good retriever's: the relevant document near the top) is
    counted from those entries alone, with one comparison pass instead of two."""
    n, w = R.shape
    gt = np.empty(n, dtype=np.int64)
    above, atleast = np.empty((min(rows, n), w), dtype=bool), np.empty((min(rows, n), w), dtype=bool)
    parts = []
    for a in range(0, n, rows):
        b = min(a + rows, n)
        t, u = above[:b - a], atleast[:b - a]
        np.greater_equal(R[a:b], lo[a:b, None], out=u)
        if np.count_nonzero(u) <= u.size >> 6:  # sparse: gather the entries >= lo, split them at hi
            i, c = np.divmod(np.flatnonzero(u), w)
            v = R[a + i, c]
            over = v > hi[a + i]
            gt[a:b] = np.bincount(i[over], minlength=b - a)
            inside = np.flatnonzero(~over)
            if len(inside):
                parts.append((a + i[inside], c[inside], v[inside]))
            continue
        np.greater(R[a:b], hi[a:b, None], out=t)
        for r in range(b - a):  # count_nonzero of one row: a popcount, 1.5x a casting row sum
            gt[a + r] = np.count_nonzero(t[r])
        np.not_equal(t, u, out=u)  # lo <= x <= hi
        flat = np.flatnonzero(u)  # 1-d: a 2-d np.nonzero costs several times more
        if len(flat):
            i, c = np.divmod(flat, w)
            parts.append((a + i, c, R[a + i, c]))
    if not parts:
        return gt, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return (gt,) + tuple(np.concatenate(x) for x in zip(*parts))
