"""Measures at rank cutoffs (``P_10``) and at recall points (``iprec_at_recall_0.10``), one column per
cutoff, for every query at once, as trec_eval's ``m_*.c``: each returns an (n, len(cutoffs))
float64 array (11pt_avg: (n,)). A cutoff deeper than the ranking sees nonrelevant documents filling
it (``P_20`` of 15 documents with 4 relevant is 4/20). Recall points become document counts with
``lround`` (iprec_at_recall, 11pt_avg) or ``(long)(x + 0.9)`` (Rprec_mult), as trec_eval 10.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from . import segments as sg
from .rankings import Rankings

__all__ = ["precision", "recall", "map_cut", "ndcg_cut", "relative_p", "success", "unjudged",
           "iprec_at_recall", "eleven_pt_avg", "rprec_mult", "lround", "ideal_levels"]


def _div(a, b) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(a, b, dtype=np.float64)


def _upto(r: Rankings, mask: np.ndarray, ks) -> np.ndarray:
    """(n, len(ks)) entries of each query where ``mask`` holds with rank <= k, per cutoff."""
    bounds = sg.sub_bounds(mask, r.bounds)
    rank = r.rank[mask]
    top = int(rank.max(initial=0)) + 1
    key = r.qidx[mask] * top + rank
    base = np.arange(r.n, dtype=np.int64) * top
    out = np.empty((r.n, len(ks)), dtype=np.int64)
    for j, k in enumerate(ks):
        out[:, j] = np.searchsorted(key, base + min(int(k), top - 1), side="right") - bounds[:-1]
    return out


def _found(r: Rankings, ks) -> np.ndarray:
    """(n, len(ks)) relevant documents in the top k."""
    return r.memoised(("found", tuple(ks)), lambda: _upto(r, r.is_rel, ks))


def _cut(ks) -> np.ndarray:
    return np.asarray(ks, dtype=np.float64)[None, :]


def precision(r: Rankings, ks, n_docs) -> np.ndarray:
    return _div(_found(r, ks), _cut(ks))


def recall(r: Rankings, ks, n_docs) -> np.ndarray:
    rel = r.num_rel[:, None]
    return np.where(rel > 0, _div(_found(r, ks), rel), 0.0)


def success(r: Rankings, ks, n_docs) -> np.ndarray:
    return (_found(r, ks) > 0).astype(np.float64)


def relative_p(r: Rankings, ks, n_docs) -> np.ndarray:
    rel = r.num_rel[:, None]
    return np.where(rel > 0, _div(_found(r, ks), np.minimum(np.asarray(ks, dtype=np.int64)[None, :], rel)), 0.0)


def unjudged(r: Rankings, ks, n_docs) -> np.ndarray:
    """Not pooled or pooled-unjudged documents in the top min(k, num_ret), over k."""
    shown = np.minimum(np.asarray(ks, dtype=np.int64)[None, :], r.num_ret[:, None])
    return _div(shown - _upto(r, r.value >= 0, ks), _cut(ks))


def _at(prefix: np.ndarray, bounds: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(n, k) the running sum after each query's first ``counts`` items (0.0 after none)."""
    idx = bounds[:-1, None] + counts - 1
    return np.where(counts > 0, prefix[np.maximum(idx, 0)] if len(prefix) else 0.0, 0.0)


def map_cut(r: Rankings, ks, n_docs) -> np.ndarray:
    rel = r.is_rel
    bounds = sg.sub_bounds(rel, r.bounds)
    prefix = sg.seq_cumsum(_div(sg.running_count(rel, r.bounds)[rel], r.rank[rel]), bounds)
    num_rel = r.num_rel[:, None]
    return np.where(num_rel > 0, _div(_at(prefix, bounds, _found(r, ks)), num_rel), 0.0)


def ideal_levels(r: Rankings) -> tuple[np.ndarray, np.ndarray]:
    """(bounds, grades) of each query's ideal ranking by grade: its judgements of grade >= 1, best first."""
    keep = r.level_grade >= 1
    owner = sg.owner(r.level_bounds)[keep]
    grade, count = r.level_grade[keep], r.level_count[keep]
    order = np.lexsort((-grade, owner))
    grades = np.repeat(grade[order], count[order])
    bounds = np.zeros(r.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, weights=count, minlength=r.n).astype(np.int64), out=bounds[1:])
    return bounds, grades


def _positions(bounds: np.ndarray) -> np.ndarray:
    """(m,) each item's 0-based position in its query."""
    return np.arange(int(bounds[-1]), dtype=np.int64) - np.repeat(bounds[:-1], np.diff(bounds))


def ndcg_cut(r: Rankings, ks, n_docs) -> np.ndarray:
    """Gain = the grade (any grade > 0, whatever ``-l``), ideal ranking from the judged grades."""
    pos = r.value > 0
    bounds = sg.sub_bounds(pos, r.bounds)
    rank = r.rank[pos]
    dcg = sg.seq_cumsum(r.value[pos] / sg.log2_table(int(rank.max(initial=0)) + 1)[rank + 1], bounds)
    got = _at(dcg, bounds, _upto(r, pos, ks))
    i_bounds, i_grades = ideal_levels(r)
    t = _positions(i_bounds)
    ideal = sg.seq_cumsum(i_grades / sg.log2_table(int(t.max(initial=0)) + 2)[t + 2], i_bounds)
    n_ideal = np.diff(i_bounds)[:, None]
    best = _at(ideal, i_bounds, np.minimum(np.asarray(ks, dtype=np.int64)[None, :], n_ideal))
    return np.where(best > 0, _div(got, best), got)


def lround(x: float) -> int:
    """C's ``lround``: halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _counts(r: Rankings, points: Sequence[float]) -> np.ndarray:
    """(n, len(points)) ``lround(point * num_rel)``: the recall points as numbers of relevant documents."""
    num_rel, inverse = np.unique(r.num_rel, return_inverse=True)  # few distinct values
    x = np.multiply.outer(num_rel.astype(np.float64), np.asarray(points, dtype=np.float64))
    table = np.asarray([lround(v) for v in x.ravel().tolist()], dtype=np.int64).reshape(x.shape)
    return table[inverse.reshape(-1)]


def _walk(r: Rankings):
    """trec_eval's bottom-up walk of the ranking (iprec_at_recall, 11pt_avg): per relevant entry its
    walk count w (num_rel_ret less the relevant entries below it: the entries with w >= 1 are the
    ones the walk meets before it stops) and the precision w / rank there; per query the precision
    the walk starts from (num_rel_ret / num_ret)."""
    def compute():
        rel = r.is_rel
        bounds = sg.sub_bounds(rel, r.bounds)
        q = r.qidx[rel]
        w = r.num_rel_ret[q] - np.diff(bounds)[q] + sg.running_count(rel, r.bounds)[rel]
        return bounds, w, _div(w, r.rank[rel]), _div(r.num_rel_ret, r.num_ret)
    return r.memoised("walk", compute)


def _interpolated(r: Rankings, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, len) interpolated precision at each count of relevant documents (columns in the given
    order), as trec_eval's walk assigns it, and the order it assigns them (for 11pt_avg's sum): the
    cutoffs are taken from the last; those above num_rel_ret at the end get 0; then each one the
    walk meets (1 <= count <= the previous one met) gets the best precision at or below the rank
    where that many relevant documents are found, the rest the value where the walk ends."""
    bounds, w, prec, start = _walk(r)
    with np.errstate(invalid="ignore"):
        final = np.maximum(start, sg.seg_max(np.where(w >= 1, prec, -np.inf), bounds))
    nrr = r.num_rel_ret
    out = np.zeros(counts.shape)
    phase = np.zeros(r.n, dtype=np.int8)  # 0: skipping the cutoffs above num_rel_ret, 1: walking, 2: ended
    reach = nrr.copy()
    q = sg.owner(bounds)
    for cc in range(counts.shape[1] - 1, -1, -1):
        c = counts[:, cc]
        phase = np.where((phase == 0) & (c <= nrr), 1, phase)
        meet = (phase == 1) & (c >= 1) & (c <= reach)
        if meet.any():
            best = sg.seg_max(np.where(w >= c[q], prec, -np.inf), bounds)
            with np.errstate(invalid="ignore"):
                out[meet, cc] = np.maximum(start, best)[meet]
        reach = np.where(meet, c, reach)
        phase = np.where((phase == 1) & ~meet, 2, phase)
        out[phase == 2, cc] = final[phase == 2]
    return out, final


def iprec_at_recall(r: Rankings, points, n_docs) -> np.ndarray:
    return _interpolated(r, _counts(r, points))[0]


def eleven_pt_avg(r: Rankings, points, n_docs) -> np.ndarray:
    if not points:
        raise ValueError("11pt_avg needs at least one recall point")
    values, _ = _interpolated(r, _counts(r, points))
    total = np.zeros(r.n)
    for cc in range(values.shape[1] - 1, -1, -1):  # trec_eval adds them from the last cutoff down
        total = total + values[:, cc]
    return total / len(points)


def rprec_mult(r: Rankings, mults, n_docs) -> np.ndarray:
    """Precision at (long)(m * num_rel + 0.9) documents; 0 where trec_eval's walk has stopped
    (no relevant document counted in num_rel_ret at or above that rank) or the count is 0."""
    x = np.multiply.outer(r.num_rel.astype(np.float64), np.asarray(mults, dtype=np.float64)) + 0.9
    ks = np.trunc(x).astype(np.int64)
    rel = r.is_rel
    bounds = sg.sub_bounds(rel, r.bounds)
    extra = (np.diff(bounds) - r.num_rel_ret)[:, None]  # relevant entries the walk does not count
    out = np.zeros(ks.shape)
    for j in range(ks.shape[1]):
        k = ks[:, j]
        walked = sg.count(rel & (r.rank <= k[r.qidx]), r.bounds) - extra[:, 0]
        out[:, j] = np.where(k > r.num_ret, _div(r.num_rel_ret, k),
                             np.where((k >= 1) & (walked >= 1), _div(walked, k), 0.0))
    return out

