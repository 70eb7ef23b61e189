"""One query's ranked judgements, as trec_eval's ``form_res_rels`` builds them.

The run is sorted by score, highest first, ties by document id in *decreasing* byte order
(trec_eval's ``comp_sim_docno``); cut at ``max_ret`` (``-M``); each retrieved document gets its
grade, -1 when the qrels do not hold it ("not pooled") and -2 when they hold it with a negative
grade ("pooled but unjudged"). ``judged_only`` (``-J``) then drops every document with a negative
value, keeping the order. ``levels[g]`` counts the query's judgements of grade g >= 0 (retrieved
or not): the ideal rankings and bpref's nonrelevant count come from it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

__all__ = ["NOT_POOLED", "UNJUDGED", "Ranked", "rank_query"]

NOT_POOLED = -1
UNJUDGED = -2


@dataclass(frozen=True)
class Ranked:
    """``rels``: (num_ret,) int64 value per retrieved document in rank order; ``levels``: judgements
    per grade; ``rel_level``: the least relevant grade (``-l``); counts as trec_eval's RES_RELS."""

    rels: np.ndarray
    levels: np.ndarray
    rel_level: int
    num_rel: int
    num_rel_ret: int
    num_nonpool: int
    num_unjudged: int

    @property
    def num_ret(self) -> int:
        return len(self.rels)

    @property
    def num_rel_levels(self) -> int:
        """1 + the highest grade judged (0 when there is none)."""
        nz = np.flatnonzero(self.levels)
        return int(nz[-1]) + 1 if len(nz) else 0

    @property
    def is_rel(self) -> np.ndarray:
        """(num_ret,) bool: value >= the relevance level (trec_eval's test in most measures)."""
        return self.rels >= self.rel_level


def rank_query(judged: Mapping[str, int], scores: Mapping[str, float], rel_level: int = 1,
               max_ret: int | None = None, judged_only: bool = False) -> Ranked:
    """The ``Ranked`` of one query from its qrels ``{docid: grade}`` and run ``{docid: score}``."""
    order = sorted(((s, d) for d, s in scores.items()), reverse=True)
    if max_ret is not None:
        order = order[:max_ret]
    rels = np.fromiter((_value(judged.get(d)) for _, d in order), dtype=np.int64, count=len(order))
    grades = np.fromiter((g for g in judged.values() if g >= 0), dtype=np.int64)
    levels = np.bincount(grades) if len(grades) else np.zeros(0, np.int64)
    if judged_only:
        rels = rels[rels >= 0]
    pooled = rels >= 0
    return Ranked(rels, levels, rel_level, int(levels[max(rel_level, 0):].sum()),
                  int(np.count_nonzero(pooled & (rels >= rel_level))),
                  int(np.count_nonzero(rels == NOT_POOLED)), int(np.count_nonzero(rels == UNJUDGED)))


def _value(grade: int | None) -> int:
    return NOT_POOLED if grade is None else (grade if grade >= 0 else UNJUDGED)
