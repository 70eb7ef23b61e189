"""Bootstrap intervals and paired tests over per-query values (docs/measures.md).

Conventions shared by every function here:

- ``values`` is ``(n,)`` (one measure) or ``(n, m)`` (m measures of the same n queries); 2-D
  inputs are resampled with the *same* query indices (or sign flips) for every column, and each
  column gives exactly what the 1-D call on that column gives.
- NaN marks a measure undefined for a query. It is dropped for that measure only: a resample's
  mean is the mean over the drawn queries whose value is defined (a nanmean), and a paired
  difference is defined where both systems are. A resample that draws no defined value has mean
  NaN. Infinite values are refused.
- Paired differences are **B − A** (``mean(b) - mean(a)``): positive means B scores higher.
- Resampling is chunked over resamples so that memory stays near ``chunk · n`` numbers, whatever
  the number of resamples; the random stream does not depend on the chunk size. Resample counts
  are at most ``MAX_RESAMPLES`` (1,000,000); the ``(resamples, m)`` array of bootstrap means is
  checked against ``MAX_BOOTSTRAP_BYTES`` before anything is drawn, and refused with the memory
  it would need.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np

from ..util.checks import MAX_RESAMPLES, check_float, check_resamples, check_seed

__all__ = ["MAX_RESAMPLES", "MAX_BOOTSTRAP_BYTES", "bootstrap_means", "bootstrap_ci", "paired_bootstrap",
           "randomization_test", "resample_product"]

#: numbers held per chunk (indices, counts); about 50 MB at 8 bytes each, times three.
_CHUNK_ELEMENTS = 1 << 21
#: bootstrap means plus the copy the percentile step makes; larger requests are refused up front
MAX_BOOTSTRAP_BYTES = 2 << 30
#: below this many queries one flat bincount per chunk beats a Python loop over rows
_FLAT_BINCOUNT = 256
#: relative tolerance for "at least as extreme" in the randomisation test (summation rounding).
_TIE_RTOL = 1e-10


@contextmanager
def quiet_float_warnings():
    """Silence numpy's all-NaN / empty-slice warnings: those cases yield NaN on purpose."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


_BLAS = None


def resample_product(weights: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``weights @ cols`` with BLAS on one thread: bit-identical whatever the thread count.

    A multi-threaded product splits its sums differently by thread count, so a bootstrap run in a
    Ray worker (one thread) and in the driver (all cores) differed in the last bit. One thread
    costs little here: resamples × queries × measures multiply-adds (12 M for XQuAD's 1,190 queries).
    """
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    with _BLAS.limit(limits=1, user_api="blas"):
        return weights @ cols


def _as_values(values, name: str = "values") -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (queries) or 2-D (queries × measures), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: no queries to resample")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values")
    return arr


def _chunk(chunk: int | None, n: int, total: int) -> int:
    if chunk is None:
        chunk = _CHUNK_ELEMENTS // n
    return int(max(1, min(chunk, total)))


def _check_memory(resamples: int, m: int) -> None:
    need = 2 * 8 * resamples * m  # float64 means, and the percentile step's copy
    if need > MAX_BOOTSTRAP_BYTES:
        raise ValueError(f"a bootstrap of {resamples:,} resamples × {m:,} measures needs about "
                         f"{need / 2**30:.1f} GiB (limit {MAX_BOOTSTRAP_BYTES / 2**30:g} GiB): "
                         f"use fewer resamples or measures")


def bootstrap_means(values, resamples: int = 1000, seed: int = 42, chunk: int | None = None) -> np.ndarray:
    """Means of ``resamples`` bootstrap resamples of the queries: ``(B,)`` or ``(B, m)``.

    Resample ``b`` draws ``rng.integers(0, n, size=n)`` from ``np.random.default_rng(seed)``,
    in order, so a plain loop over resamples reproduces it. NaN values are dropped per measure.
    """
    resamples, seed = check_resamples(resamples), check_seed(seed)
    arr = _as_values(values)
    one_d = arr.ndim == 1
    cols = arr[:, None] if one_d else arr
    n, m = cols.shape
    _check_memory(resamples, m)
    defined = ~np.isnan(cols)
    has_nan = not defined.all()
    filled = np.where(defined, cols, 0.0)
    weights = defined.astype(np.float64) if has_nan else None
    rng = np.random.default_rng(seed)
    step = _chunk(chunk, n, resamples)
    out = np.empty((resamples, m), dtype=np.float64)
    for start in range(0, resamples, step):
        c = min(step, resamples - start)
        idx = rng.integers(0, n, size=(c, n))
        if n < _FLAT_BINCOUNT:  # few queries: one bincount over the chunk, no Python loop per row
            idx += np.arange(c, dtype=idx.dtype)[:, None] * n
            counts = np.bincount(idx.ravel(), minlength=c * n).reshape(c, n).astype(np.float64)
        else:
            counts = np.empty((c, n), dtype=np.float64)
            for row in range(c):  # row-wise bincount stays in cache; faster than one flat bincount
                counts[row] = np.bincount(idx[row], minlength=n)
        del idx
        sums = resample_product(counts, filled)
        if weights is None:
            out[start:start + c] = sums / n
        else:
            with quiet_float_warnings():
                out[start:start + c] = sums / resample_product(counts, weights)
    return out[:, 0] if one_d else out


def _check_confidence(confidence: float) -> float:
    if not 0.0 < check_float(confidence, "confidence") < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(confidence)


def percentile_interval(means: np.ndarray, confidence: float) -> tuple:
    confidence = _check_confidence(confidence)
    alpha = (1.0 - confidence) / 2.0
    with quiet_float_warnings():  # an all-NaN column gives a NaN interval
        low, high = np.nanquantile(means, [alpha, 1.0 - alpha], axis=0)
    if np.ndim(low) == 0:
        return float(low), float(high)
    return low, high


def bootstrap_ci(values, resamples: int = 1000, seed: int = 42, confidence: float = 0.95,
                 chunk: int | None = None) -> tuple:
    """Percentile bootstrap interval ``(low, high)`` of the mean; arrays per column if 2-D."""
    _check_confidence(confidence)
    return percentile_interval(bootstrap_means(values, resamples, seed, chunk), confidence)


def _paired_diff(a, b) -> np.ndarray:
    a = _as_values(a, "a")
    b = _as_values(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"paired values must have the same shape, got {a.shape} and {b.shape}")
    return b - a  # NaN where either is undefined


def paired_bootstrap(a, b, resamples: int = 1000, seed: int = 42, confidence: float = 0.95,
                     chunk: int | None = None) -> dict:
    """Paired bootstrap of the difference B − A: ``{diff, ci_low, ci_high, n}``.

    Both systems are resampled with the same query indices (resampling the per-query differences
    is exactly that). Queries where either value is NaN are dropped; ``n`` counts the rest.
    Scalars for 1-D inputs, arrays (one per column) for 2-D.
    """
    d = _paired_diff(a, b)
    with quiet_float_warnings():
        diff = np.nanmean(d, axis=0)
    low, high = bootstrap_ci(d, resamples, seed, confidence, chunk)
    n = (~np.isnan(d)).sum(axis=0)
    if d.ndim == 1:
        return {"diff": float(diff), "ci_low": low, "ci_high": high, "n": int(n)}
    return {"diff": diff, "ci_low": low, "ci_high": high, "n": n}


def _sign_bits(rng: np.random.Generator, c: int, n: int) -> np.ndarray:
    """``(c, n)`` array of 0/1: bit 1 flips the sign of that query's difference."""
    words = rng.integers(0, 1 << 32, size=(c, (n + 31) // 32), dtype=np.uint32)
    raw = words.astype("<u4", copy=False).view(np.uint8)
    return np.unpackbits(raw, axis=1, count=n)


def randomization_test(a, b, resamples: int = 10000, seed: int = 42, chunk: int | None = None,
                       name: str = "resamples"):
    """Two-sided paired randomisation (sign-flip) test of mean(B − A) = 0.

    p = (1 + #{r : |mean(s_r · d)| ≥ |mean(d)|}) / (1 + R), with d = b − a over the queries where
    both are defined and s_r uniform random signs; p ∈ (0, 1]. Identical systems give p = 1.
    Float for 1-D inputs, an array (same sign flips for every column) for 2-D. ``name`` is how
    errors call ``resamples`` (``compare`` passes ``permutations``).
    """
    resamples, seed = check_resamples(resamples, name), check_seed(seed)
    d = _paired_diff(a, b)
    one_d = d.ndim == 1
    cols = d[:, None] if one_d else d
    cols = np.where(np.isnan(cols), 0.0, cols)  # a zero is unchanged by a flip: same as dropping
    n, m = cols.shape
    total = cols.sum(axis=0)
    observed = np.abs(total)
    tol = _TIE_RTOL * np.abs(cols).sum(axis=0)
    rng = np.random.default_rng(seed)
    step = _chunk(chunk, n, resamples)
    hits = np.zeros(m, dtype=np.int64)
    for start in range(0, resamples, step):
        c = min(step, resamples - start)
        flipped = resample_product(_sign_bits(rng, c, n), cols)  # sum of the flipped differences, per resample
        stat = np.abs(total - 2.0 * flipped)
        hits += (stat >= observed - tol).sum(axis=0)
    p = (1.0 + hits) / (1.0 + resamples)
    return float(p[0]) if one_d else p
