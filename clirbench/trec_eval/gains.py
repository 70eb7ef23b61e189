"""Gain-based measures (ndcg, dcg, ideal_dcg, ndcg_rel, Rndcg, G, rbp, rbp_resid), as trec_eval's
``m_*.c`` with ``gain_init.c``: a grade's gain is the grade unless a ``grade=gain`` parameter
(``-m ndcg.1=3,2=9,4=4.5``) sets it; the ideal ranking takes the judged documents by decreasing
gain (trec_eval sorts the gains with a comparator that truncates their difference to an integer:
reproduced by a stable sort with the same comparator) and stops at the first gain <= 0.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from .ranked import Ranked

__all__ = ["gain_table", "ndcg", "dcg", "ideal_dcg", "ndcg_rel", "rndcg", "g", "rbp", "rbp_resid"]

_INT = re.compile(r"[+-]?[0-9]+")


def gain_table(r: Ranked, pairs) -> list[tuple[int, float, int]]:
    """(grade, gain, judged count) per gain level, in trec_eval's increasing-gain order."""
    # a level of over 19 digits (beyond C's long) never equals a grade: left out, as it changes nothing
    table = [[int(name), float(value), 0] for name, value in pairs
             if _INT.fullmatch(name) and len(name.lstrip("+-")) <= 19]
    for level, count in enumerate(r.levels[:r.num_rel_levels].tolist()):
        for row in table:
            if row[0] == level:
                row[2] = count
                break
        else:
            table.append([level, float(level), count])
    table.sort(key=functools.cmp_to_key(lambda a, b: int(a[1] - b[1])))
    return [tuple(row) for row in table]


def _gains(r: Ranked, table) -> np.ndarray:
    lookup = {}
    for level, gain, _ in table:
        lookup.setdefault(level, gain)
    return np.array([lookup.get(v, 0.0) for v in r.rels.tolist()], dtype=np.float64)


def _ideal(table) -> tuple[np.ndarray, float]:
    """The ideal gains (positive, best first) and the gain that follows them (<= 0, or 0)."""
    out = []
    for _, gain, count in reversed(table):
        if count == 0:
            continue
        if gain <= 0:
            return np.array(out, dtype=np.float64), gain
        out.extend([gain] * count)
    return np.array(out, dtype=np.float64), 0.0


def _discount(n: int) -> np.ndarray:
    return np.log2(np.arange(2.0, n + 2))


def _dcg_parts(r: Ranked, pairs):
    table = gain_table(r, pairs)
    gains = _gains(r, table)
    ideal, after = _ideal(table)
    dcg_prefix = np.cumsum(np.where(gains != 0, gains / _discount(len(gains)), 0.0))
    ideal_prefix = np.cumsum(ideal / _discount(len(ideal)))
    return table, gains, ideal, after, dcg_prefix, ideal_prefix


def dcg(r: Ranked, pairs, n_docs) -> float:
    return float(_dcg_parts(r, pairs)[4][-1]) if r.num_ret else 0.0


def ideal_dcg(r: Ranked, pairs, n_docs) -> float:
    ideal_prefix = _dcg_parts(r, pairs)[5]
    return float(ideal_prefix[-1]) if len(ideal_prefix) else 0.0


def ndcg(r: Ranked, pairs, n_docs) -> float:
    _, _, _, _, dcg_prefix, ideal_prefix = _dcg_parts(r, pairs)
    best = float(ideal_prefix[-1]) if len(ideal_prefix) else 0.0
    got = float(dcg_prefix[-1]) if len(dcg_prefix) else 0.0
    return got / best if best > 0.0 else 0.0


def ndcg_rel(r: Ranked, pairs, n_docs) -> float:
    """Mean over the relevant documents' ranks of ndcg there (the ideal cut at the rank, or whole)."""
    _, gains, ideal, _, dcg_prefix, ideal_prefix = _dcg_parts(r, pairs)
    n_ideal = len(ideal)
    if n_ideal == 0:
        return 0.0
    at = np.flatnonzero(gains > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = float(np.sum(dcg_prefix[at] / ideal_prefix[np.minimum(at, n_ideal - 1)]))
        final = float(dcg_prefix[-1]) if r.num_ret else 0.0
        total += (n_ideal - len(at)) * final / float(ideal_prefix[-1])
    return total / n_ideal if total > 0.0 else 0.0


def rndcg(r: Ranked, pairs, n_docs) -> float:
    """Mean of ndcg at each rank where the ideal gain changes (and at the end of a longer run)."""
    if r.num_rel == 0:
        return 0.0
    table, _, ideal, after, dcg_prefix, ideal_prefix = _dcg_parts(r, pairs)
    n_ideal, n = len(ideal), r.num_ret
    seq = np.append(ideal, after)
    values = []
    for b in range(1, n_ideal + 1):  # each rank where the ideal gain changes, the end of the ideal included
        if seq[b] != seq[b - 1]:
            got = float(dcg_prefix[min(b, n) - 1]) if min(b, n) > 0 else 0.0
            values.append(got / float(ideal_prefix[b - 1]))
    if n_ideal > 0 and n >= n_ideal + 2:  # trec_eval adds the whole run only past one more document
        values.append(float(dcg_prefix[-1]) / float(ideal_prefix[-1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(sum(values)) / np.float64(len(values)))


def g(r: Ranked, pairs, n_docs) -> float:
    table = gain_table(r, pairs)
    gains = _gains(r, table)
    ideal, _ = _ideal(table)
    n = len(gains)
    ideal_at = np.zeros(n)
    m = min(n, len(ideal))
    ideal_at[:m] = ideal[:m]
    cost = np.cumsum(np.where(ideal_at >= 1.0, ideal_at, 1.0))
    seen = np.cumsum(gains)
    with np.errstate(divide="ignore", invalid="ignore"):
        got = float(np.sum(np.where(gains != 0, gains / np.log2(2.0 + cost - seen), 0.0)))
    best = float(np.sum(ideal))
    return got / best if best > 0.0 else 0.0


def _persistence(pairs) -> float:
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = float(value)
    return p


def rbp(r: Ranked, pairs, n_docs) -> float:
    """Rank-biased precision, gains rescaled to [0, 1] when any lies outside."""
    p = _persistence(pairs)
    table = gain_table(r, pairs)
    values = [gain for _, gain, _ in table]
    if values and (min(values) < 0 or max(values) > 1):
        lo, hi = min(values), max(values)
        table = [(level, (gain - lo) / (hi - lo), count) for level, gain, count in table]
    gains = _gains(r, table)
    weights = np.cumprod(np.concatenate(([1.0], np.full(max(len(gains) - 1, 0), p))))[:len(gains)]
    return (1.0 - p) * float(np.sum(np.where(gains != 0, gains * weights, 0.0)))


def rbp_resid(r: Ranked, pairs, n_docs) -> float:
    """The rbp that the unjudged retrieved documents could still add, plus the tail below the run."""
    p = _persistence(pairs)
    n = r.num_ret
    weights = np.cumprod(np.concatenate(([1.0], np.full(n, p))))  # p^0 .. p^n
    unj = r.rels < 0
    if not unj.any():
        return 0.0
    return float(weights[n] + (1 - p) * np.sum(weights[:n][unj]))
