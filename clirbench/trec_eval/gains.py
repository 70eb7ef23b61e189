"""Gain-based measures (ndcg, dcg, ideal_dcg, ndcg_rel, Rndcg, G, rbp, rbp_resid) for every query at
once, as trec_eval's ``m_*.c`` with ``gain_init.c``: a grade's gain is the grade unless a
``grade=gain`` parameter (``-m ndcg.1=3,2=9,4=4.5``) sets it. A query's gain table holds the
parameters' levels, then its grades 0 .. highest not among them, sorted by gain with trec_eval's
comparator (the difference truncated to an integer; a stable sort, as the C library's). The
table depends on the highest grade only, so queries are grouped by it. The ideal ranking walks the
table from the top: nothing when the top gain is <= 0; else each level's judged documents, until a
judged level whose gain is <= 0.
"""
from __future__ import annotations

import functools
import math
import re

import numpy as np

from . import segments as sg
from .rankings import Rankings

__all__ = ["gain_table", "ndcg", "dcg", "ideal_dcg", "ndcg_rel", "rndcg", "g", "rbp", "rbp_resid"]

_INT = re.compile(r"[+-]?[0-9]+")


def _div(a, b) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(a, b, dtype=np.float64)


def gain_table(num_rel_levels: int, pairs) -> list[tuple[int, float, bool]]:
    """(level, gain, counted) rows in trec_eval's order for queries whose highest grade is
    ``num_rel_levels`` - 1; ``counted``: the row that holds the level's judgements (the first one
    naming the level, grades 0 .. num_rel_levels - 1 only)."""
    # a level of over 19 digits (beyond C's long) never equals a grade: left out, as it changes nothing
    table = [[int(name), float(value), False] for name, value in pairs
             if _INT.fullmatch(name) and len(name.lstrip("+-")) <= 19]
    for level in range(num_rel_levels):
        for row in table:
            if row[0] == level:
                row[2] = True
                break
        else:
            table.append([level, float(level), True])
    table.sort(key=functools.cmp_to_key(lambda a, b: int(a[1] - b[1])))
    return [tuple(row) for row in table]


class _Gains:
    """Per entry its gain; per query its ideal gains (flat, best first), for one measure's pairs."""

    def __init__(self, r: Rankings, pairs, rescale: bool = False) -> None:
        self.entry = np.zeros(len(r.value))
        ideal_q, ideal_g = [np.zeros(0, np.int64)], [np.zeros(0)]
        nrl = r.num_rel_levels
        for levels in np.unique(nrl).tolist():
            queries = np.flatnonzero(nrl == levels)
            table = gain_table(levels, pairs)
            gains = np.asarray([gain for _, gain, _ in table], dtype=np.float64)
            if rescale and len(gains) and (gains.min() < 0 or gains.max() > 1):  # rbp: gains into [0, 1]
                gains = (gains - gains.min()) / (gains.max() - gains.min())
            self._entry_gains(r, queries, table, gains)
            q, g = self._ideal(r, queries, table, gains)
            ideal_q.append(q)
            ideal_g.append(g)
        q, g = np.concatenate(ideal_q), np.concatenate(ideal_g)
        order = np.argsort(q, kind="stable")
        self.ideal = g[order]
        self.ideal_bounds = np.zeros(r.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(q, minlength=r.n), out=self.ideal_bounds[1:])

    def _entry_gains(self, r: Rankings, queries: np.ndarray, table, gains: np.ndarray) -> None:
        """get_gain: the first row of the table with the entry's value (0.0 for none)."""
        low, top = int(r.value.min(initial=0)), int(r.value.max(initial=0))  # the values that occur
        lookup = np.zeros(top - low + 1)
        seen = set()
        for (level, _, _), gain in zip(table, gains.tolist()):
            if level not in seen and low <= level <= top:
                seen.add(level)
                lookup[level - low] = gain
        mine = np.zeros(r.n, dtype=bool)
        mine[queries] = True
        at = np.flatnonzero(mine[r.qidx])
        value = r.value[at]
        inside = (value >= low) & (value <= top)
        self.entry[at[inside]] = lookup[value[inside] - low]

    @staticmethod
    def _ideal(r: Rankings, queries: np.ndarray, table, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query, gain) of each ideal position of ``queries``, grouped by query, best first."""
        if not table or gains[-1] <= 0:
            return np.zeros(0, np.int64), np.zeros(0)
        counted_grades = np.asarray([level if counted else -1 for level, _, counted in table], dtype=np.int64)
        counts = r.level_counts_of(counted_grades)[queries]  # (queries, rows); -1 matches no grade
        counts[:, counted_grades < 0] = 0
        counts = counts[:, ::-1]  # from the top row down
        top_first = gains[::-1]
        stops = np.logical_or.accumulate((counts > 0) & (top_first <= 0)[None, :], axis=1)
        counts = np.where(stops, 0, counts)
        q = np.repeat(np.repeat(queries, counts.shape[1]), counts.ravel())
        g = np.repeat(np.tile(top_first, len(queries)), counts.ravel())
        return q.astype(np.int64), g


def _gains(r: Rankings, pairs, rescale: bool = False) -> _Gains:
    return r.memoised(("gains", tuple(pairs), rescale), lambda: _Gains(r, pairs, rescale))


def _positions(bounds: np.ndarray) -> np.ndarray:
    return np.arange(int(bounds[-1]), dtype=np.int64) - np.repeat(bounds[:-1], np.diff(bounds))


def _discounted(r: Rankings, gains: _Gains):
    """(bounds, running dcg) over the entries with a gain != 0, and (running ideal dcg) per ideal position."""
    def compute():
        nz = gains.entry != 0
        bounds = sg.sub_bounds(nz, r.bounds)
        rank = r.rank[nz]
        dcg = sg.seq_cumsum(gains.entry[nz] / sg.log2_table(int(rank.max(initial=0)) + 1)[rank + 1], bounds)
        t = _positions(gains.ideal_bounds)
        ideal = sg.seq_cumsum(gains.ideal / sg.log2_table(int(t.max(initial=0)) + 2)[t + 2], gains.ideal_bounds)
        return nz, bounds, dcg, ideal
    return r.memoised(("discounted", id(gains)), compute)


def dcg(r: Rankings, pairs, n_docs) -> np.ndarray:
    gains = _gains(r, pairs)
    _, bounds, running, _ = _discounted(r, gains)
    return sg.last_of(running, bounds)


def ideal_dcg(r: Rankings, pairs, n_docs) -> np.ndarray:
    gains = _gains(r, pairs)
    return sg.last_of(_discounted(r, gains)[3], gains.ideal_bounds)


def ndcg(r: Rankings, pairs, n_docs) -> np.ndarray:
    got, best = dcg(r, pairs, n_docs), ideal_dcg(r, pairs, n_docs)
    return np.where(best > 0.0, _div(got, best), 0.0)


def ndcg_rel(r: Rankings, pairs, n_docs) -> np.ndarray:
    """Mean over the ideal ranking's length of ndcg at each rank with a positive gain (ndcg there:
    the ideal cut at the rank, or whole), the missing ones counted at the run's end."""
    gains = _gains(r, pairs)
    nz, bounds, running, ideal = _discounted(r, gains)
    n_ideal = np.diff(gains.ideal_bounds)
    positive = gains.entry[nz] > 0
    q = r.qidx[nz][positive]
    p = r.rank[nz][positive] - 1
    at = gains.ideal_bounds[q] + np.minimum(p, n_ideal[q] - 1)
    best = np.where(n_ideal[q] > 0, ideal[np.maximum(at, 0)] if len(ideal) else 0.0, 0.0)
    total = sg.seq_sum(_div(running[positive], best), sg.sub_bounds(positive, bounds))
    final, whole = sg.last_of(running, bounds), sg.last_of(ideal, gains.ideal_bounds)
    missing = (n_ideal - sg.count(positive, bounds)).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = total + missing * final / whole
        return np.where(total > 0.0, _div(total, n_ideal), 0.0)


def rndcg(r: Rankings, pairs, n_docs) -> np.ndarray:
    """Mean of ndcg at each rank where the ideal gain changes (the end of the ideal ranking included),
    and over the whole run when it holds 2 documents more than the ideal ranking."""
    gains = _gains(r, pairs)
    nz, bounds, running, ideal = _discounted(r, gains)
    ib, n_ideal = gains.ideal_bounds, np.diff(gains.ideal_bounds)
    t = _positions(ib)
    q = sg.owner(ib)
    nxt = np.r_[gains.ideal[1:], 0.0]
    change = (t == n_ideal[q] - 1) | (gains.ideal != nxt)  # the gain after position t differs: event at t + 1
    eq, eb = q[change], t[change] + 1  # events: query, b (ideal positions before it)
    got = _dcg_upto(r, nz, bounds, running, eq, eb)
    terms = _div(got, ideal[np.flatnonzero(change)])
    whole = (r.num_ret >= n_ideal + 2) & (n_ideal > 0)
    wq = np.flatnonzero(whole)
    all_q = np.r_[eq, wq]
    all_terms = np.r_[terms, _div(sg.last_of(running, bounds)[wq], sg.last_of(ideal, ib)[wq])]
    order = np.argsort(all_q, kind="stable")
    ev_bounds = np.zeros(r.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_q, minlength=r.n), out=ev_bounds[1:])
    total = sg.seq_sum(all_terms[order], ev_bounds)
    value = _div(total, np.diff(ev_bounds))
    return np.where(r.num_rel > 0, value, 0.0)


def _dcg_upto(r: Rankings, nz, bounds, running, query: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The running dcg of ``query`` over its ranks <= b (0.0 before the first gain)."""
    rank = r.rank[nz]
    top = int(max(rank.max(initial=0), b.max(initial=0))) + 1
    key = r.qidx[nz] * top + rank
    n = np.searchsorted(key, query * top + b, side="right") - bounds[query]
    return np.where(n > 0, running[np.maximum(bounds[query] + n - 1, 0)] if len(running) else 0.0, 0.0)


def g(r: Rankings, pairs, n_docs) -> np.ndarray:
    """Sum of gain / log2(2 + cost so far - gain so far) over the ranks with a gain, over the ideal
    gain: the cost of a rank is its ideal gain where that is >= 1, else 1."""
    gains = _gains(r, pairs)
    ib, n_ideal = gains.ideal_bounds, np.diff(gains.ideal_bounds)
    cost = sg.seq_cumsum(np.where(gains.ideal >= 1.0, gains.ideal, 1.0), ib)
    cost_end = sg.last_of(cost, ib)
    nz = gains.entry != 0
    bounds = sg.sub_bounds(nz, r.bounds)
    seen = sg.seq_cumsum(gains.entry[nz], bounds)
    q, p = r.qidx[nz], r.rank[nz] - 1
    inside = p < n_ideal[q]
    spent = np.empty(len(p))
    spent[inside] = cost[ib[q[inside]] + p[inside]]
    spent[~inside] = _plus_ones(cost_end[q[~inside]], p[~inside] - n_ideal[q[~inside]] + 1)
    arg = (2 + spent) - seen
    terms = gains.entry[nz] / _c_log2(arg)
    total = sg.seq_sum(terms, bounds)
    best = sg.seq_sum(gains.ideal, ib)
    return np.where(best > 0.0, _div(total, best), 0.0)


def _c_log2(x: np.ndarray) -> np.ndarray:
    out = np.empty(len(x))
    pos = x > 0
    out[pos] = sg.libm(math.log2, x[pos])
    with np.errstate(divide="ignore", invalid="ignore"):
        out[~pos] = np.log2(x[~pos])
    return out


def _plus_ones(start: np.ndarray, k: np.ndarray) -> np.ndarray:
    """start + 1.0 + 1.0 ... (k times), added one at a time as trec_eval's loop does."""
    if np.all((start == np.floor(start)) & (np.abs(start) < 2.0 ** 52)):
        return start + k  # whole numbers: every addition is exact
    out = start.copy()
    for step in range(int(k.max(initial=0))):
        more = k > step
        out[more] += 1.0
    return out


def _persistence(pairs) -> float:
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = float(value)
    return p


def _powers(p: float, n: int) -> np.ndarray:
    """(n + 1,) p^0 .. p^n, each the previous times p (trec_eval's cur_p)."""
    return np.cumprod(np.r_[1.0, np.full(n, p)])


def rbp(r: Rankings, pairs, n_docs) -> np.ndarray:
    """Rank-biased precision, gains rescaled to [0, 1] when any lies outside."""
    p = _persistence(pairs)
    gains = _gains(r, pairs, rescale=True)
    nz = gains.entry != 0
    weights = _powers(p, int(r.rank.max(initial=0)))
    total = sg.seq_sum(gains.entry[nz] * weights[r.rank[nz] - 1], sg.sub_bounds(nz, r.bounds))
    return (1.0 - p) * total


def rbp_resid(r: Rankings, pairs, n_docs) -> np.ndarray:
    """The rbp that the unjudged retrieved documents could still add, plus the tail below the run:
    p^num_ret + (1 - p) * (the weights p^(rank-1) of the documents with a negative value, added in
    rank order)."""
    p = _persistence(pairs)
    depth = int(r.num_ret.max(initial=0))
    weights = _powers(p, depth)
    judged = r.value >= 0
    unjudged = r.num_ret - sg.count(judged, r.bounds)
    order = np.argsort(-r.num_ret, kind="stable")
    slot = np.empty(r.n, dtype=np.int64)
    slot[order] = np.arange(r.n)
    active = np.searchsorted(-r.num_ret[order], -np.arange(depth), side="left")  # queries with num_ret > t
    j_slot, j_rank = slot[r.qidx[judged]], r.rank[judged]
    by_rank = np.argsort(j_rank, kind="stable")
    j_slot, j_rank = j_slot[by_rank], j_rank[by_rank]
    edges = np.searchsorted(j_rank, np.arange(1, depth + 2))
    total = np.zeros(r.n)
    for t, n in enumerate(active.tolist()):
        add = np.full(n, weights[t])
        add[j_slot[edges[t]:edges[t + 1]]] = 0.0
        total[:n] += add
    value = weights[r.num_ret][order] + (1 - p) * total
    out = np.zeros(r.n)
    out[order] = np.where(unjudged[order] > 0, value, 0.0)
    return out
