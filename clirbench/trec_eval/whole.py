"""Measures of the whole ranking (trec_eval's ``m_*.c`` of the same names), for every query at once.

Each takes the ``rankings.Rankings``, the measure's parameters and the collection size (``-N``)
and returns an (n,) float64 array (counts too, printed as integers; relstring: a list of strings).
Sums follow the C loops' order (``segments.seq_sum``). Undefined cases give what trec_eval gives:
0 where it leaves the value unset, inf or NaN where its C divides by zero.
"""
from __future__ import annotations

import math

import numpy as np

from . import segments as sg
from .rankings import UNJUDGED, Rankings

__all__ = ["MIN_GEO_MEAN", "INFAP_EPSILON", "num_q", "num_ret", "num_rel", "num_rel_ret", "ap", "gm_ap",
           "rprec", "bpref", "gm_bpref", "recip_rank", "infap", "bin_g", "yaap", "utility", "set_p",
           "set_relative_p", "set_recall", "set_map", "set_f", "num_nonrel_judged_ret", "relstring", "c_log"]

MIN_GEO_MEAN = 0.00001  # gm_map, gm_bpref: log(MAX(value, MIN_GEO_MEAN))
INFAP_EPSILON = 0.00001


def _div(a, b) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(a, b, dtype=np.float64)


def c_log(x: np.ndarray) -> np.ndarray:
    """C's ``log``: the C library's on positive numbers; numpy's elsewhere (-inf at 0, NaN below)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    pos = x > 0
    out[pos] = sg.libm(math.log, x[pos])
    with np.errstate(divide="ignore", invalid="ignore"):
        out[~pos] = np.log(x[~pos])
    return out


def _geo(x: np.ndarray) -> np.ndarray:
    """log(MAX(x, MIN_GEO_MEAN)) with C's ``MAX`` (NaN gives the minimum)."""
    return c_log(np.where(x > MIN_GEO_MEAN, x, MIN_GEO_MEAN))


def num_q(r: Rankings, params, n_docs) -> np.ndarray:
    return np.ones(r.n)


def num_ret(r: Rankings, params, n_docs) -> np.ndarray:
    return r.num_ret.astype(np.float64)


def num_rel(r: Rankings, params, n_docs) -> np.ndarray:
    return r.num_rel.astype(np.float64)


def num_rel_ret(r: Rankings, params, n_docs) -> np.ndarray:
    return r.num_rel_ret.astype(np.float64)


def _ap_sum(r: Rankings) -> tuple[np.ndarray, np.ndarray]:
    """(sum over the relevant retrieved of rel_so_far / rank, their number), per query."""
    def compute():
        rel = r.is_rel
        bounds = sg.sub_bounds(rel, r.bounds)
        terms = _div(sg.running_count(rel, r.bounds)[rel], r.rank[rel])
        return sg.seq_sum(terms, bounds), np.diff(bounds)
    return r.memoised("ap_sum", compute)


def ap(r: Rankings, params, n_docs) -> np.ndarray:
    total, found = _ap_sum(r)
    return np.where(found > 0, _div(total, r.num_rel), 0.0)


def gm_ap(r: Rankings, params, n_docs) -> np.ndarray:
    return _geo(ap(r, params, n_docs))


def rprec(r: Rankings, params, n_docs) -> np.ndarray:
    k = np.minimum(r.num_ret, r.num_rel)
    found = sg.count(r.is_rel & (r.rank <= k[r.qidx]), r.bounds)
    return np.where(k > 0, _div(found, r.num_rel), 0.0)


def _judged_split(r: Rankings) -> tuple[np.ndarray, np.ndarray]:
    """(judged nonrelevant, judged relevant) entries: value >= 0 below / at or above the level."""
    judged = r.value >= 0
    nonrel = judged & (r.value < r.rel_level)
    return nonrel, judged & ~nonrel


def bpref(r: Rankings, params, n_docs) -> np.ndarray:
    def compute():
        nonrel, rel = _judged_split(r)
        before = sg.running_count(nonrel, r.bounds)[rel]
        q = r.qidx[rel]
        num_rel_q = r.num_rel[q]
        least = np.minimum(r.level_total(0, max(r.rel_level, 0)), r.num_rel)[q]
        terms = np.where(before > 0, 1.0 - _div(np.minimum(before, num_rel_q), least), 1.0)
        total = sg.seq_sum(terms, sg.sub_bounds(rel, r.bounds))
        return np.where(r.num_rel > 0, _div(total, r.num_rel), total)
    return r.memoised("bpref", compute)


def gm_bpref(r: Rankings, params, n_docs) -> np.ndarray:
    return _geo(bpref(r, params, n_docs))


def recip_rank(r: Rankings, params, n_docs) -> np.ndarray:
    first = sg.first_of(r.is_rel, r.bounds)
    hit = first >= 0
    return np.where(hit, _div(1.0, r.rank[np.where(hit, first, 0)] if len(r.rank) else 1.0), 0.0)


def infap(r: Rankings, params, n_docs) -> np.ndarray:
    nonrel, rel = _judged_split(r)
    j = (r.rank[rel] - 1).astype(np.float64)  # 0-based position
    before = sg.running_count(rel, r.bounds)[rel] - 1  # relevant judged above
    nonrel_above = sg.running_count(nonrel, r.bounds)[rel]
    unjudged_above = sg.running_count(r.value == UNJUDGED, r.bounds)[rel]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((before + nonrel_above + unjudged_above) / j) * (
            (before + INFAP_EPSILON) / (before + nonrel_above + 2 * INFAP_EPSILON))
    terms = np.where(j == 0, 1.0, terms)
    total = sg.seq_sum(terms, sg.sub_bounds(rel, r.bounds))
    return np.where(r.num_rel > 0, _div(total, r.num_rel), total)


def bin_g(r: Rankings, params, n_docs) -> np.ndarray:
    rel = r.is_rel
    bounds = sg.sub_bounds(rel, r.bounds)
    arg = 3 + (r.rank[rel] - 1) - sg.running_count(rel, r.bounds)[rel]
    terms = 1.0 / sg.log2_table(int(arg.max(initial=2)))[arg]
    found = np.diff(bounds)
    return np.where(found > 0, _div(sg.seq_sum(terms, bounds), r.num_rel), 0.0)


def yaap(r: Rankings, params, n_docs) -> np.ndarray:
    total, _ = _ap_sum(r)
    return c_log(_div(1.0 + total, (1.0 + r.num_rel) - total))


def utility(r: Rankings, params, n_docs) -> np.ndarray:
    if len(params) != 4:
        raise ValueError(f"utility needs 4 coefficients (e.g. -m utility.1,-1,0,0), got {len(params)}")
    a, b, c, d = params
    nrr, ret, rel = r.num_rel_ret, r.num_ret, r.num_rel
    return a * nrr + b * (ret - nrr) + c * (rel - nrr) + d * (n_docs + nrr - ret - rel)


def set_p(r: Rankings, params, n_docs) -> np.ndarray:
    return np.where(r.num_ret > 0, _div(r.num_rel_ret, r.num_ret), 0.0)


def set_relative_p(r: Rankings, params, n_docs) -> np.ndarray:
    ok = (r.num_ret > 0) & (r.num_rel > 0)
    return np.where(ok, _div(r.num_rel_ret, np.minimum(r.num_ret, r.num_rel)), 0.0)


def set_recall(r: Rankings, params, n_docs) -> np.ndarray:
    return np.where(r.num_rel > 0, _div(r.num_rel_ret, r.num_rel), 0.0)


def set_map(r: Rankings, params, n_docs) -> np.ndarray:
    nrr = r.num_rel_ret.astype(np.float64)
    ok = (r.num_ret > 0) & (r.num_rel > 0)
    return np.where(ok, _div(nrr * nrr, r.num_ret.astype(np.float64) * r.num_rel.astype(np.float64)), 0.0)


def set_f(r: Rankings, params, n_docs) -> np.ndarray:
    x = params[0]
    p, rec = _div(r.num_rel_ret, r.num_ret), _div(r.num_rel_ret, r.num_rel)
    return np.where(r.num_rel_ret > 0, _div((x + 1.0) * p * rec, x * p + rec), 0.0)


def num_nonrel_judged_ret(r: Rankings, params, n_docs) -> np.ndarray:
    return (r.num_ret - r.num_nonpool - r.num_unjudged - r.num_rel_ret).astype(np.float64)


_CHARS = np.frombuffer(b"<.-0123456789>", dtype=np.uint8)  # values -3 (and below) .. 10 (and above)


def relstring(r: Rankings, params, n_docs) -> list[str]:
    """The first N values as characters: 0-9, '>' above 9, '-' not pooled, '.' unjudged, '<' other."""
    n_max = int(params[0])  # C's (long) cast
    length = np.clip(np.minimum(n_max, r.num_ret), 0, None) if n_max > 0 else np.zeros(r.n, dtype=np.int64)
    width = int(length.max(initial=0))
    if width == 0:
        return [""] * r.n
    chars = np.full((r.n, width), ord("-"), dtype=np.uint8)
    shown = r.rank <= np.minimum(length, width)[r.qidx]
    chars[r.qidx[shown], r.rank[shown] - 1] = _CHARS[np.clip(r.value[shown], -3, 10) + 3]
    text = chars.tobytes().decode("ascii")
    return [text[i * width:i * width + k] for i, k in enumerate(length.tolist())]
