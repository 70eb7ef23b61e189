"""Per-query values from a RankTable, vectorised over its flat arrays (no per-query loop).

The trec_eval measures (nDCG, AP, RR, R, P, Success) equal pytrec_eval's ``ndcg[_cut_k]``,
``map[_cut_k]``, ``recip_rank``, ``recall_k``, ``P_k``, ``success_k``: gain = grade, discount
log2(rank + 1), ideal DCG over all relevant judgements (cut at k for nDCG@k), and 0 for a query
with judgements but no relevant document. RR@k is 1/rank of the first relevant doc if within k.
The rank-set measures (MaxR, MaxR_norm, Complete@K, SameLangFirst) are NaN for such a query.
PEER@k (language fairness) lives in ``peer.py``. Each function takes (Prep, cutoff or None); the
family records (families.py) bind them to names.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .peer import peer

if TYPE_CHECKING:  # annotations only: the measures read a RankTable and need no rank code at run time
    from ..rank.table import RankTable

__all__ = ["Prep", "maxr_norm_of_mean", "ndcg", "ap", "rr", "recall", "precision", "success", "complete",
           "max_rank", "maxr_norm", "same_lang_first", "peer_at"]


def maxr_norm_of_mean(mean_maxr, num_docs, num_rel):
    """100 * (log2|D| - log2 mean_maxr) / (log2|D| - log2|R|): the paper's Max@R_norm (Table 1)."""
    mean_maxr, num_docs, num_rel = (np.asarray(x, dtype=np.float64) for x in (mean_maxr, num_docs, num_rel))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 100.0 * (np.log2(num_docs) - np.log2(mean_maxr)) / (np.log2(num_docs) - np.log2(num_rel))
    return out[()] if out.ndim == 0 else out


class Prep:
    """Shared intermediate arrays: rows sorted by (query, rank) and by (query, -grade)."""

    def __init__(self, table: RankTable) -> None:
        self.t = table
        self.n = len(table.query_ids)
        self.num_rel = np.bincount(table.qidx, minlength=self.n)
        self.has = self.num_rel > 0
        self.starts = np.cumsum(self.num_rel) - self.num_rel

    def _sorted(self, key: np.ndarray):
        q = self.t.qidx
        if len(q) > 1 and not np.all((q[1:] > q[:-1]) | (key[1:] >= key[:-1])):
            order = np.lexsort((key, q))
            return order, np.arange(len(q)) - self.starts[q[order]]
        return None, np.arange(len(q)) - self.starts[q]

    @cached_property
    def by_rank(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(rank, grade, position within query 0-based, same_lang) sorted by (query, rank)."""
        order, pos = self._sorted(self.t.rank)
        pick = (lambda a: a) if order is None else (lambda a: a[order])
        same = None if self.t.same_lang is None else pick(self.t.same_lang)
        return pick(self.t.rank), pick(self.t.grade), pos, same

    @cached_property
    def ideal_pos(self) -> tuple[np.ndarray, np.ndarray]:
        """(grade, position in the ideal ranking 0-based), grouped by query."""
        order, pos = self._sorted(-self.t.grade)
        return (self.t.grade if order is None else self.t.grade[order]), pos

    @cached_property
    def min_rank(self) -> np.ndarray:
        out = np.full(self.n, np.inf)
        out[self.has] = self.by_rank[0][self.starts[self.has]]
        return out

    @cached_property
    def max_rank(self) -> np.ndarray:
        out = np.full(self.n, np.nan)
        out[self.has] = self.by_rank[0][(self.starts + self.num_rel - 1)[self.has]]
        return out

    def count_within(self, k: float) -> np.ndarray:
        return np.bincount(self.t.qidx, weights=self.t.rank <= k, minlength=self.n)

    def per_rel(self, values: np.ndarray) -> np.ndarray:
        """values / |R_q|, 0 where the query has no relevant document (trec_eval)."""
        return np.divide(values, self.num_rel, out=np.zeros(self.n), where=self.has)

    def sum_sorted(self, weights: np.ndarray) -> np.ndarray:
        """Sum per query of weights given in by_rank order (qidx sorted is shared by both orders)."""
        return np.bincount(self.t.qidx, weights=weights, minlength=self.n)


def ndcg(p: Prep, k: int | None) -> np.ndarray:
    k = np.inf if k is None else k
    rank, grade, _, _ = p.by_rank
    dcg = p.sum_sorted(np.where(rank <= k, grade / np.log2(rank + 1.0), 0.0))
    ig, ipos = p.ideal_pos
    idcg = p.sum_sorted(np.where(ipos < k, ig / np.log2(ipos + 2.0), 0.0))
    return np.divide(dcg, idcg, out=np.zeros(p.n), where=idcg > 0)


def ap(p: Prep, k: int | None) -> np.ndarray:
    k = np.inf if k is None else k
    rank, _, pos, _ = p.by_rank
    return p.per_rel(p.sum_sorted(np.where(rank <= k, (pos + 1.0) / rank, 0.0)))


def rr(p: Prep, k: int | None) -> np.ndarray:
    r = p.min_rank
    k = np.inf if k is None else k
    return np.divide(1.0, r, out=np.zeros(p.n), where=r <= k)


def maxr_norm(p: Prep, k: None) -> np.ndarray:
    return maxr_norm_of_mean(p.max_rank, p.t.num_docs, np.where(p.has, p.num_rel, np.nan))


def complete(p: Prep, k: int) -> np.ndarray:
    return np.where(p.has, 100.0 * (p.max_rank <= k), np.nan)


def same_lang_first(p: Prep, k: None) -> np.ndarray:
    """100 when the query's best-ranked same-language relevant document outranks every relevant
    document in another language, else 0 (k languages: neutral at 100/k); NaN without both kinds."""
    rank, _, _, same = p.by_rank
    if same is None:
        return np.full(p.n, np.nan)

    def best(mask: np.ndarray) -> np.ndarray:
        out = np.full(p.n, np.inf)
        q, r = p.t.qidx[mask], rank[mask]  # still sorted by (query, rank)
        first = np.flatnonzero(np.r_[True, np.diff(q) != 0]) if len(q) else np.zeros(0, np.int64)
        out[q[first]] = r[first]
        return out

    s, o = best(same), best(~same)
    ok = np.isfinite(np.minimum(s, o)) & (np.bincount(p.t.qidx, weights=same, minlength=p.n) > 0) \
        & (np.bincount(p.t.qidx, weights=~same, minlength=p.n) > 0)
    return np.where(ok, 100.0 * (s < o), np.nan)


def recall(p: Prep, k: int) -> np.ndarray:
    return p.per_rel(p.count_within(k))


def precision(p: Prep, k: int) -> np.ndarray:
    return p.count_within(k) / k


def success(p: Prep, k: int) -> np.ndarray:
    return (p.count_within(k) > 0).astype(np.float64)


def max_rank(p: Prep, k: None) -> np.ndarray:
    return p.max_rank.copy()


def peer_at(p: Prep, k: int) -> np.ndarray:
    return peer(p.t, k)
