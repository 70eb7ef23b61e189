"""Bootstrap summaries: per-query vectors -> one MeasureValue per measure (one shared resampling)."""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..results.records import MeasureValue
from ..util.strict import first_duplicate
from .bootstrap import bootstrap_ci

__all__ = ["summarise"]


def summarise(measures: Sequence[Any], per_query: Mapping[str, np.ndarray], resamples: int = 1000,
              seed: int = 42, confidence: float = 0.95,
              transforms: Mapping[str, Callable[[float], float]] | None = None) -> dict[str, MeasureValue]:
    """Per-query vectors -> ``{name: MeasureValue}``, one shared bootstrap for all measures.

    ``measures`` are measure objects or names (``str(m)`` keys ``per_query``). A value is the
    mean over the queries where the measure is defined (not NaN), its CI the percentile
    bootstrap. ``transforms[name]`` (required for measures with ``of_mean = True``) maps a mean
    to the reported value: value = f(mean), CI = f at the bootstrap percentile ends, ordered
    (so a decreasing f swaps them). ``f`` is called on one float at a time. ``resamples=0``
    gives the values only (CIs NaN).
    """
    transforms = dict(transforms or {})
    names = [str(m) for m in measures]
    if len(set(names)) != len(names):
        raise ValueError(f"measure {first_duplicate(names)[0]!r} is listed twice")
    for m, name in zip(measures, names):
        if getattr(m, "of_mean", False) and name not in transforms:
            raise ValueError(f"{name} is reported from the mean of its per-query values: pass transforms[{name!r}]")
    unknown = sorted(set(transforms) - set(names))
    if unknown:
        raise ValueError(f"transforms for measures not summarised: {', '.join(unknown)}")
    missing = [n for n in names if n not in per_query]
    if missing:
        raise ValueError(f"no per-query values for {', '.join(missing)}")
    if not names:
        return {}
    vectors = [np.asarray(per_query[n], dtype=np.float64) for n in names]
    lengths = {v.shape for v in vectors}
    if len(lengths) != 1 or vectors[0].ndim != 1:
        raise ValueError(f"per-query vectors must be 1-D of one length, got shapes {sorted(lengths)}")
    stack = np.stack(vectors, axis=1)
    defined = (~np.isnan(stack)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(defined > 0, np.nansum(stack, axis=0) / np.maximum(defined, 1), np.nan)
    if resamples == 0:
        low = high = np.full(len(names), np.nan)
    else:
        low, high = bootstrap_ci(stack, resamples, seed, confidence)
    out: dict[str, MeasureValue] = {}
    for j, name in enumerate(names):
        value, lo, hi = float(means[j]), float(low[j]), float(high[j])
        f = transforms.get(name)
        if f is not None:
            value, lo, hi = (float(f(x)) if not math.isnan(x) else math.nan for x in (value, lo, hi))
            lo, hi = min(lo, hi), max(lo, hi)
        out[name] = MeasureValue(value, lo, hi, int(defined[j]))
    return out

