"""Measures of the whole ranking of one query (trec_eval's ``m_*.c`` of the same names).

Each takes a ``ranked.Ranked``, the measure's parameters and the collection size (``-N``) and
returns a float; counts are floats too (printed as integers). Undefined cases give what trec_eval
gives: 0 where it leaves the value unset, inf or NaN where its C divides by zero.
"""
from __future__ import annotations

import math

import numpy as np

from .ranked import NOT_POOLED, UNJUDGED, Ranked

__all__ = ["MIN_GEO_MEAN", "INFAP_EPSILON", "num_q", "num_ret", "num_rel", "num_rel_ret", "ap", "gm_ap",
           "rprec", "bpref", "gm_bpref", "recip_rank", "infap", "bin_g", "yaap", "utility", "set_p",
           "set_relative_p", "set_recall", "set_map", "set_f", "num_nonrel_judged_ret", "relstring"]

MIN_GEO_MEAN = 0.00001  # gm_map, gm_bpref: log(max(value, MIN_GEO_MEAN))
INFAP_EPSILON = 0.00001


def _div(a, b) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(a) / np.float64(b))


def _ranks(r: Ranked) -> np.ndarray:
    return np.arange(1, r.num_ret + 1, dtype=np.float64)


def num_q(r: Ranked, params, n_docs) -> float:
    return 1.0


def num_ret(r: Ranked, params, n_docs) -> float:
    return float(r.num_ret)


def num_rel(r: Ranked, params, n_docs) -> float:
    return float(r.num_rel)


def num_rel_ret(r: Ranked, params, n_docs) -> float:
    return float(r.num_rel_ret)


def _ap_sum(r: Ranked) -> tuple[float, int]:
    rel = r.is_rel
    found = np.cumsum(rel)[rel]
    return float(np.sum(found / _ranks(r)[rel])), len(found)


def ap(r: Ranked, params, n_docs) -> float:
    total, found = _ap_sum(r)
    return _div(total, r.num_rel) if found else 0.0


def gm_ap(r: Ranked, params, n_docs) -> float:
    return math.log(max(ap(r, params, n_docs), MIN_GEO_MEAN))


def rprec(r: Ranked, params, n_docs) -> float:
    k = min(r.num_ret, r.num_rel)
    return _div(np.count_nonzero(r.is_rel[:k]), r.num_rel) if k > 0 else 0.0


def _judged_counts(r: Ranked):
    """Positions of judged relevant docs, and judged nonrelevant / pooled-unjudged docs before each."""
    judged = r.rels >= 0
    nonrel = judged & (r.rels < r.rel_level)
    rel = judged & ~nonrel
    return np.flatnonzero(rel), np.cumsum(nonrel)[rel], np.cumsum(r.rels == UNJUDGED)[rel]


def bpref(r: Ranked, params, n_docs) -> float:
    num_nonrel = int(r.levels[:max(r.rel_level, 0)].sum())
    _, nonrel_before, _ = _judged_counts(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(nonrel_before > 0,
                         1.0 - np.minimum(nonrel_before, r.num_rel) / np.float64(min(num_nonrel, r.num_rel)), 1.0)
    total = float(np.sum(terms))
    return _div(total, r.num_rel) if r.num_rel else total


def gm_bpref(r: Ranked, params, n_docs) -> float:
    return math.log(max(bpref(r, params, n_docs), MIN_GEO_MEAN))


def recip_rank(r: Ranked, params, n_docs) -> float:
    hit = np.flatnonzero(r.is_rel)
    return 1.0 / (hit[0] + 1.0) if len(hit) else 0.0


def infap(r: Ranked, params, n_docs) -> float:
    pos, nonrel, unjudged = _judged_counts(r)
    before = np.arange(len(pos), dtype=np.float64)  # relevant judged docs above (rel_so_far - 1)
    j = pos.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((before + nonrel + unjudged) / j) * (
            (before + INFAP_EPSILON) / (before + nonrel + 2 * INFAP_EPSILON))
    terms = np.where(pos == 0, 1.0, terms)
    total = float(np.sum(terms))
    return _div(total, r.num_rel) if r.num_rel else total


def bin_g(r: Ranked, params, n_docs) -> float:
    rel = r.is_rel
    i = np.flatnonzero(rel).astype(np.float64)
    found = np.cumsum(rel)[rel]
    return _div(np.sum(1.0 / np.log2(3.0 + i - found)), r.num_rel) if len(found) else 0.0


def yaap(r: Ranked, params, n_docs) -> float:
    total, _ = _ap_sum(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.log(_div(1.0 + total, 1.0 + r.num_rel - total)))


def utility(r: Ranked, params, n_docs) -> float:
    if len(params) != 4:
        raise ValueError(f"utility needs 4 coefficients (e.g. -m utility.1,-1,0,0), got {len(params)}")
    a, b, c, d = params
    return (a * r.num_rel_ret + b * (r.num_ret - r.num_rel_ret) + c * (r.num_rel - r.num_rel_ret)
            + d * (n_docs + r.num_rel_ret - r.num_ret - r.num_rel))


def set_p(r: Ranked, params, n_docs) -> float:
    return r.num_rel_ret / r.num_ret if r.num_ret else 0.0


def set_relative_p(r: Ranked, params, n_docs) -> float:
    return r.num_rel_ret / min(r.num_ret, r.num_rel) if r.num_ret and r.num_rel else 0.0


def set_recall(r: Ranked, params, n_docs) -> float:
    return r.num_rel_ret / r.num_rel if r.num_rel else 0.0


def set_map(r: Ranked, params, n_docs) -> float:
    if not (r.num_ret and r.num_rel):
        return 0.0
    return (float(r.num_rel_ret) * float(r.num_rel_ret)) / (float(r.num_ret) * float(r.num_rel))


def set_f(r: Ranked, params, n_docs) -> float:
    if not r.num_rel_ret:
        return 0.0
    x = params[0]
    p, rec = r.num_rel_ret / r.num_ret, _div(r.num_rel_ret, r.num_rel)
    return _div((x + 1.0) * p * rec, x * p + rec)


def num_nonrel_judged_ret(r: Ranked, params, n_docs) -> float:
    return float(r.num_ret - r.num_nonpool - r.num_unjudged - r.num_rel_ret)


def relstring(r: Ranked, params, n_docs) -> str:
    """The first N values as characters: 0-9, '>' above 9, '-' not pooled, '.' unjudged, '<' other."""
    n = max(min(int(params[0]), r.num_ret), 0)
    out = []
    for v in r.rels[:n].tolist():
        out.append(">" if v > 9 else str(v) if v >= 0 else "-" if v == NOT_POOLED else "." if v == UNJUDGED else "<")
    return "".join(out)
