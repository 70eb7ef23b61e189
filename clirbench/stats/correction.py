"""Multiple-testing correction of a family of p-values: Holm (family-wise error, the default) and
Benjamini–Hochberg (false discovery rate), as ``statsmodels.stats.multitest.multipletests``'s
``holm`` and ``fdr_bh``. NaN p-values (a test that could not be made) are outside the family and
stay NaN; the family size is the number of the others.
"""
from __future__ import annotations

import numpy as np

from ..util.checks import CORRECTIONS, check_correction

__all__ = ["CORRECTIONS", "DEFAULT_CORRECTION", "adjust", "family_size", "describe"]

DEFAULT_CORRECTION = CORRECTIONS[0]
_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no correction"}


def family_size(p_values) -> int:
    """How many tests the family holds (NaN p-values left out)."""
    return int((~np.isnan(np.asarray(p_values, dtype=np.float64))).sum())


def adjust(p_values, method: str = DEFAULT_CORRECTION) -> np.ndarray:
    """The adjusted p-values of one family, in the input's order (each in [p, 1])."""
    method = check_correction(method)
    p = np.asarray(p_values, dtype=np.float64).ravel()
    out = p.copy()
    keep = np.flatnonzero(~np.isnan(p))
    m = len(keep)
    if method == "none" or m == 0:
        return out
    order = keep[np.argsort(p[keep], kind="stable")]
    ranked = p[order]
    if method == "holm":  # step-down: max over j <= i of (m - j + 1) p_(j)
        adj = np.maximum.accumulate((m - np.arange(m)) * ranked)
    else:  # Benjamini-Hochberg step-up: min over j >= i of m p_(j) / j
        adj = np.minimum.accumulate((m / np.arange(m, 0, -1)) * ranked[::-1])[::-1]
    out[order] = np.minimum(adj, 1.0)
    return out


def describe(method: str, size: int, family: str) -> str:
    """One line for a report: which correction, over how many tests of what."""
    if size == 1:
        return f"a single test, p needs no correction ({family})"
    if method == "none":
        return f"p not corrected for multiple testing ({size} tests: {family})"
    return f"p adjusted by {_NAMES[method]} over a family of {size} tests ({family})"
