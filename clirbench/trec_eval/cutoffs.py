"""Measures at rank cutoffs (``P_10``) and at recall points (``iprec_at_recall_0.10``), one value per
cutoff, as trec_eval's ``m_*.c``. A cutoff deeper than the ranking sees nonrelevant documents
filling it (``P_20`` of 15 documents with 4 relevant is 4/20). Recall points become document counts
with ``lround`` (iprec_at_recall, 11pt_avg) or ``(long)(x + 0.9)`` (Rprec_mult), as trec_eval 10.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .ranked import NOT_POOLED, UNJUDGED, Ranked

__all__ = ["precision", "recall", "map_cut", "ndcg_cut", "relative_p", "success", "unjudged",
           "iprec_at_recall", "eleven_pt_avg", "rprec_mult", "lround"]


def _found(r: Ranked, ks: Sequence[int]) -> np.ndarray:
    """Relevant documents in the top min(k, num_ret), per cutoff."""
    cum = np.concatenate(([0], np.cumsum(r.is_rel)))
    return cum[np.minimum(np.asarray(ks, dtype=np.int64), r.num_ret)].astype(np.float64)


def precision(r: Ranked, ks, n_docs) -> list[float]:
    return (_found(r, ks) / np.asarray(ks, dtype=np.float64)).tolist()


def recall(r: Ranked, ks, n_docs) -> list[float]:
    return (_found(r, ks) / r.num_rel).tolist() if r.num_rel else [0.0] * len(ks)


def success(r: Ranked, ks, n_docs) -> list[float]:
    return (_found(r, ks) > 0).astype(np.float64).tolist()


def relative_p(r: Ranked, ks, n_docs) -> list[float]:
    if not r.num_rel:
        return [0.0] * len(ks)
    return (_found(r, ks) / np.minimum(np.asarray(ks, dtype=np.float64), r.num_rel)).tolist()


def unjudged(r: Ranked, ks, n_docs) -> list[float]:
    cum = np.concatenate(([0], np.cumsum((r.rels == NOT_POOLED) | (r.rels == UNJUDGED))))
    k = np.asarray(ks, dtype=np.int64)
    return (cum[np.minimum(k, r.num_ret)] / k.astype(np.float64)).tolist()


def map_cut(r: Ranked, ks, n_docs) -> list[float]:
    if not r.num_rel:
        return [0.0] * len(ks)
    rel = r.is_rel
    terms = np.where(rel, np.cumsum(rel) / np.arange(1.0, r.num_ret + 1), 0.0)
    cum = np.concatenate(([0.0], np.cumsum(terms)))
    return (cum[np.minimum(np.asarray(ks, dtype=np.int64), r.num_ret)] / r.num_rel).tolist()


def ndcg_cut(r: Ranked, ks, n_docs) -> list[float]:
    """Gain = the grade (any grade > 0, whatever ``-l``), ideal ranking from the judged grades."""
    gains = np.where(r.rels > 0, r.rels, 0).astype(np.float64)
    dcg = np.concatenate(([0.0], np.cumsum(gains / np.log2(np.arange(2.0, r.num_ret + 2)))))
    ideal_gains = np.repeat(np.arange(len(r.levels))[::-1], r.levels[::-1])
    ideal_gains = ideal_gains[ideal_gains > 0].astype(np.float64)
    ideal = np.concatenate(([0.0], np.cumsum(ideal_gains / np.log2(np.arange(2.0, len(ideal_gains) + 2)))))
    k = np.asarray(ks, dtype=np.int64)
    got, best = dcg[np.minimum(k, r.num_ret)], ideal[np.minimum(k, len(ideal_gains))]
    return np.divide(got, best, out=got.copy(), where=best > 0).tolist()


def lround(x: float) -> int:
    """C's ``lround``: halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _interpolated(r: Ranked, counts: Sequence[int]) -> tuple[list[float], float]:
    """trec_eval's interpolated precision, walked from the bottom of the ranking: per cutoff (a count
    of relevant documents, in the given order), the best precision at or below the rank where that
    many relevant documents are found; cutoffs above num_rel_ret get 0, and cutoffs the walk does not
    meet (0, or out of order) the value where it ends.

    The walk counts down from num_rel_ret at each document at or above the relevance level and stops
    at 0: with ``-l`` <= -1 the not-pooled (and, <= -2, unjudged) documents pass that test without
    counting in num_rel_ret, so the walk stops below them; ``cum`` is then the count trec_eval's walk
    holds at each rank (<= 0 above the stop)."""
    rel = r.is_rel
    cum = _walk_counts(r)
    rel = rel & (cum >= 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = cum / np.arange(1.0, r.num_ret + 1)
        last = np.float64(r.num_rel_ret) / np.float64(r.num_ret)
    best = np.maximum.accumulate(prec[::-1])[::-1] if r.num_ret else prec
    best = np.maximum(best, last)
    at_count = best[rel]  # value when the walk meets the i-th relevant document (i = 1..)
    n_found = len(at_count)
    final = float(at_count[0]) if n_found and r.num_rel_ret > 0 else float(last)
    out = [0.0] * len(counts)
    cut = len(counts) - 1
    while cut >= 0 and counts[cut] > r.num_rel_ret:
        cut -= 1
    reach = r.num_rel_ret
    while cut >= 0 and 1 <= counts[cut] <= reach and counts[cut] <= n_found:
        reach = counts[cut]
        out[cut] = float(at_count[reach - 1])
        cut -= 1
    for i in range(cut + 1):
        out[i] = final
    return out, final


def _walk_counts(r: Ranked) -> np.ndarray:
    """(num_ret,) trec_eval's ``rel_so_far`` at each rank of its bottom-up walk: the relevant documents
    at or above that rank, less those that num_rel_ret does not count (not pooled or unjudged
    documents that ``-l`` <= -1 makes "relevant")."""
    rel = r.is_rel
    cum = np.cumsum(rel)
    return cum - (int(cum[-1]) - r.num_rel_ret) if len(cum) else cum


def iprec_at_recall(r: Ranked, points, n_docs) -> list[float]:
    return _interpolated(r, [lround(p * r.num_rel) for p in points])[0]


def eleven_pt_avg(r: Ranked, points, n_docs) -> float:
    if not points:
        raise ValueError("11pt_avg needs at least one recall point")
    values, _ = _interpolated(r, [lround(p * r.num_rel) for p in points])
    return sum(values) / len(points)


def rprec_mult(r: Ranked, mults, n_docs) -> list[float]:
    """Precision at (long)(m * num_rel + 0.9) documents; 0 where trec_eval's walk has stopped (see
    ``_walk_counts``) or the count is 0."""
    cum = np.concatenate(([0], np.maximum(_walk_counts(r), 0)))
    out = []
    for m in mults:
        k = int(m * r.num_rel + 0.9)
        if k > r.num_ret:
            out.append(r.num_rel_ret / k)
        elif k >= 1:
            out.append(float(cum[k]) / k)
        else:
            out.append(0.0)
    return out
