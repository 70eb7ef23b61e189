"""Per-query values from a RankTable, vectorised over its flat arrays (no per-query loop).

The trec_eval measures (nDCG, AP, RR, R, P, Success) equal pytrec_eval's ``ndcg[_cut_k]``,
``map[_cut_k]``, ``recip_rank``, ``recall_k``, ``P_k``, ``success_k``: gain = grade, discount
log2(rank + 1), ideal DCG over all relevant judgements (cut at k for nDCG@k), and 0 for a query
with judgements but no relevant document. RR@k is 1/rank of the first relevant doc if within k.
The rank-set measures (MaxR, MaxR_norm, Complete@K, SameLangFirst) are NaN for such a query.
PEER@k (language fairness) lives in ``peer.py``. Each function takes (Prep, cutoff or None); the
family records (families.py) bind them to names.

Ties: the standard measures read trec_eval's ranks (equal scores ordered by doc id). The language
measures (SameLangFirst, PEER, the preference matrix) read their value under uniformly random
tie-breaking from the table's tie counts (``best_tie_group``, ``expected_best_rank``, ``first_share``;
docs/measures.md#ranks-and-the-tie-rule); a table without tie counts gives trec_eval's ranks to both.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .peer import peer

if TYPE_CHECKING:  # annotations only: the measures read a RankTable and need no rank code at run time
    from ..rank.table import RankTable

__all__ = ["Prep", "maxr_norm_of_mean", "ndcg", "ap", "rr", "recall", "precision", "success", "complete",
           "max_rank", "maxr_norm", "same_lang_first", "peer_at", "best_tie_group", "expected_best_rank",
           "first_share"]


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
        self.shared: dict = {}  # intermediates several families read (the exposure measures')

    def memo(self, key, compute):
        """``compute()``, once per ``key`` for this table."""
        if key not in self.shared:
            self.shared[key] = compute()
        return self.shared[key]

    @property
    def head(self):
        """The table's ``JudgedHead`` (``rank/judged_head.py``), aligned to its queries; a ValueError
        when it has none (the language exposure measures need the ranking's head)."""
        head = getattr(self.t, "head", None)
        if head is None:
            raise ValueError("the language exposure measures (Share, AWRF, alpha_nDCG, Top1_*) need the "
                             "ranking's head: a RankTable with head= (rank/judged_head.judge_head)")
        if tuple(head.query_ids) != tuple(self.t.query_ids):
            raise ValueError("the table's head lists other queries than the table")
        return head

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


def best_tie_group(table: RankTable, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query (n,): the best-ranked tie group holding a judgement of ``mask`` (m,) bool: the rank
    of its first document (inf: none, or not ranked), its documents, and ``mask``'s judgements in it.
    Judgements of one query with one tie start share a score, hence a group."""
    n = len(table.query_ids)
    start, q = table.tie_start, table.qidx
    first = np.full(n, np.inf)
    np.minimum.at(first, q[mask], start[mask])
    inside = mask & (start == first[q])
    size = np.ones(n)
    size[q[inside]] = table.tie_size[inside]
    return first, size, np.bincount(q[inside], minlength=n)


def expected_best_rank(table: RankTable, mask: np.ndarray) -> np.ndarray:
    """Per query, the mean over random tie orders of the best rank among ``mask``'s judgements (inf:
    none): c of them in a tie group of g documents starting at rank s come first at s - 1 + (g+1)/(c+1)."""
    first, size, count = best_tie_group(table, mask)
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, first - 1.0 + (size + 1.0) / (count + 1.0), np.inf)


def first_share(table: RankTable, mask: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Per query, the probability over random tie orders that its best-ranked judgement of ``among``
    is one of ``mask``'s: the share of ``mask`` among ``among``'s judgements in ``among``'s best tie
    group (0 or 1 without ties); NaN where ``among`` has no ranked judgement."""
    first, _, count = best_tie_group(table, among)
    q = table.qidx
    hit = np.bincount(q[among & mask & (table.tie_start == first[q])], minlength=len(first))
    return np.where(np.isfinite(first), hit / np.maximum(count, 1), np.nan)


def same_lang_first(p: Prep, k: None) -> np.ndarray:
    """100 × the probability (over random orders of tied documents) that the query's best-ranked
    same-language relevant document outranks every relevant document in another language: 100 or 0
    without ties (k languages: neutral at 100/k); NaN without both kinds."""
    same = p.t.same_lang
    if same is None:
        return np.full(p.n, np.nan)
    share = first_share(p.t, same, np.ones(len(same), dtype=bool))
    ok = (np.bincount(p.t.qidx, weights=same, minlength=p.n) > 0) \
        & (np.bincount(p.t.qidx, weights=~same, minlength=p.n) > 0)
    return np.where(ok, 100.0 * share, np.nan)


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
