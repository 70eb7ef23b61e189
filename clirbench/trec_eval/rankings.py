"""Every evaluated query's ranked judgements at once, as trec_eval's ``form_res_rels`` builds them
for one query: held sparse, the judged documents of each ranking (rank and value) and the number
of documents retrieved; every other retrieved document is "not pooled" (value -1).

The run is sorted by score (a C double), highest first, ties by document id in *decreasing* byte
order (``comp_sim_docno``); cut at ``max_ret`` (``-M``); each retrieved document gets its grade, -1
when the qrels do not hold it and -2 when they hold it with a negative grade ("pooled but
unjudged"). ``judged_only`` (``-J``) then drops every document with a negative value, keeping the
order. The levels (judgements per grade >= 0 of each query, retrieved or not) give the ideal
rankings and bpref's nonrelevant count. ``dense()`` lists the not-pooled documents too, for the
options that score them (a relevance level <= -1, a gain for grade -1).

Ranks come from ``rank.run_file`` (the pyarrow reader of ``clirbench evaluate``) or, for runs
already in memory, ``rank.runs.rank_in_segments``: each judgement is handed to them as a positive
"grade" (its index + 1), so that the ranks of all judged documents, relevant or not, come back.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np

from ..rank.runs import rank_in_segments
from . import segments as sg

__all__ = ["NOT_POOLED", "UNJUDGED", "STAND_IN_DOC", "Judgements", "Rankings", "judgements", "from_table",
           "from_dicts"]

NOT_POOLED = -1
UNJUDGED = -2
STAND_IN_DOC = "ceci_nest_pas_un_docno"  # trec_eval's ranking for a judged query missing from the run


@dataclass(frozen=True, eq=False)
class Judgements:
    """The qrels flattened: ``query_ids`` sorted (trec_eval's evaluation order), judgement j of query
    ``query_ids[i]`` at ``bounds[i] <= j < bounds[i + 1]`` with its ``grade``; ``codes[q][doc]`` is
    j + 1; ``positive``: the judgements with a grade > 0 (``-c``'s num_rel)."""

    query_ids: tuple[str, ...]
    bounds: np.ndarray
    grade: np.ndarray
    codes: dict = field(repr=False)
    positive: int = 0


def judgements(qrels: Mapping[str, Mapping[str, int]]) -> Judgements:
    """``Judgements`` of ``{qid: {docid: grade}}``."""
    ids = tuple(sorted(qrels))
    codes: dict[str, dict[str, int]] = {}
    grades: list[int] = []
    bounds = [0]
    for q in ids:
        judged = qrels[q]
        start = len(grades)
        codes[q] = dict(zip(judged, range(start + 1, start + len(judged) + 1)))
        grades.extend(judged.values())
        bounds.append(len(grades))
    grade = np.asarray(grades, dtype=np.int64)
    return Judgements(ids, np.asarray(bounds, dtype=np.int64), grade, codes, int(np.count_nonzero(grade > 0)))


@dataclass(frozen=True, eq=False)
class Rankings:
    """``query_ids`` (n, evaluation order), ``num_ret`` (n,) documents retrieved; entries of query i at
    ``bounds[i]:bounds[i + 1]``: ``rank`` (1-based, increasing) and ``value`` (grade >= 0, UNJUDGED,
    or NOT_POOLED where ``dense``); levels of query i at ``level_bounds[i]:level_bounds[i + 1]``:
    ``level_grade`` (increasing, >= 0) and ``level_count``; ``stand_in`` (n,) bool: scored on
    trec_eval's stand-in ranking (``-c``, a query the run lacks); ``rel_level``: ``-l``."""

    query_ids: tuple[str, ...]
    num_ret: np.ndarray
    bounds: np.ndarray
    rank: np.ndarray
    value: np.ndarray
    level_bounds: np.ndarray
    level_grade: np.ndarray
    level_count: np.ndarray
    stand_in: np.ndarray
    rel_level: int = 1
    dense: bool = False
    memo: dict = field(init=False, default_factory=dict, repr=False)  # values shared by several measures

    def memoised(self, key, compute):
        """``compute()``, computed once for these rankings."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    @property
    def n(self) -> int:
        return len(self.query_ids)

    @functools.cached_property
    def qidx(self) -> np.ndarray:
        return sg.owner(self.bounds)

    @functools.cached_property
    def is_rel(self) -> np.ndarray:
        """(m,) value >= the relevance level (trec_eval's test in most measures)."""
        if self.rel_level <= NOT_POOLED and not self.dense:
            raise ValueError("a relevance level <= -1 needs the dense rankings")
        return self.value >= self.rel_level

    @functools.cached_property
    def num_rel(self) -> np.ndarray:
        """(n,) judgements with a grade >= max(rel_level, 0)."""
        return self.level_total(max(self.rel_level, 0), None)

    @functools.cached_property
    def num_rel_ret(self) -> np.ndarray:
        return sg.count((self.value >= 0) & (self.value >= self.rel_level), self.bounds)

    @functools.cached_property
    def num_judged_ret(self) -> np.ndarray:
        """(n,) retrieved documents with a grade >= 0."""
        return sg.count(self.value >= 0, self.bounds)

    @functools.cached_property
    def num_unjudged(self) -> np.ndarray:
        return sg.count(self.value == UNJUDGED, self.bounds)

    @functools.cached_property
    def num_nonpool(self) -> np.ndarray:
        listed = np.diff(self.bounds) - sg.count(self.value == NOT_POOLED, self.bounds)
        return self.num_ret - listed

    @functools.cached_property
    def num_rel_levels(self) -> np.ndarray:
        """(n,) 1 + the highest grade judged (0 when there is none)."""
        out = np.zeros(self.n, dtype=np.int64)
        has = self.level_bounds[1:] > self.level_bounds[:-1]
        out[has] = self.level_grade[self.level_bounds[1:][has] - 1] + 1
        return out

    def level_total(self, lo: int, hi: int | None) -> np.ndarray:
        """(n,) judgements with lo <= grade < hi (no upper bound for None)."""
        keep = self.level_grade >= lo
        if hi is not None:
            keep &= self.level_grade < hi
        return _weighted_count(keep, self.level_count, self.level_bounds)

    def level_counts_of(self, grades: np.ndarray) -> np.ndarray:
        """(n, len(grades)) judgements of each grade per query."""
        out = np.zeros((self.n, len(grades)), dtype=np.int64)
        owner = sg.owner(self.level_bounds)
        for j, g in enumerate(np.asarray(grades).tolist()):
            hit = self.level_grade == g
            out[owner[hit], j] = self.level_count[hit]
        return out

    def where(self, keep: np.ndarray, rank: np.ndarray | None = None, num_ret: np.ndarray | None = None
              ) -> "Rankings":
        """The entries ``keep`` (with new ranks and counts if given)."""
        bounds = sg.sub_bounds(keep, self.bounds)
        return _fresh(self, bounds=bounds, rank=(self.rank if rank is None else rank)[keep],
                      value=self.value[keep], num_ret=self.num_ret if num_ret is None else num_ret)

    def cut(self, max_ret: int | None) -> "Rankings":
        """``-M``: the top ``max_ret`` documents."""
        if max_ret is None:
            return self
        return self.where(self.rank <= max_ret, num_ret=np.minimum(self.num_ret, max_ret))

    def judged_only(self) -> "Rankings":
        """``-J``: the documents with a value >= 0, ranked among themselves."""
        keep = self.value >= 0
        new_rank = sg.running_count(keep, self.bounds)
        return self.where(keep, rank=new_rank, num_ret=sg.count(keep, self.bounds))

    def with_level(self, rel_level: int) -> "Rankings":
        return _fresh(self, rel_level=rel_level)

    def densified(self) -> "Rankings":
        """Every retrieved document listed, the not-pooled ones with value NOT_POOLED."""
        if self.dense:
            return self
        total = int(self.num_ret.sum())
        bounds = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(self.num_ret, out=bounds[1:])
        value = np.full(total, NOT_POOLED, dtype=np.int64)
        value[bounds[:-1][self.qidx] + self.rank - 1] = self.value
        rank = np.arange(total, dtype=np.int64) - np.repeat(bounds[:-1], self.num_ret) + 1
        return _fresh(self, bounds=bounds, rank=rank, value=value, dense=True)


def _weighted_count(keep: np.ndarray, weight: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    cum = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(np.where(keep, weight, 0), out=cum[1:])
    return cum[bounds[1:]] - cum[bounds[:-1]]


def _fresh(r: Rankings, **changes) -> Rankings:
    """A copy with ``changes`` (cached properties recomputed)."""
    return replace(r, **changes)


def _levels(judg: Judgements, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bounds, grade, count) of the judgements >= 0 of the qrels queries ``rows``, grouped by query."""
    lo, hi = judg.bounds[rows], judg.bounds[rows + 1]
    sizes = hi - lo
    idx = np.repeat(lo - np.r_[0, np.cumsum(sizes)[:-1]], sizes) + np.arange(int(sizes.sum()))
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), sizes)
    grade = judg.grade[idx]
    keep = grade >= 0
    owner, grade = owner[keep], grade[keep]
    if not len(grade):
        return np.zeros(len(rows) + 1, dtype=np.int64), grade, grade.copy()
    order = np.lexsort((grade, owner))
    owner, grade = owner[order], grade[order]
    new = np.r_[True, (owner[1:] != owner[:-1]) | (grade[1:] != grade[:-1])]
    starts = np.flatnonzero(new)
    count = np.diff(np.r_[starts, len(grade)])
    level_owner = owner[starts]
    bounds = np.searchsorted(level_owner, np.arange(len(rows) + 1))
    return bounds.astype(np.int64), grade[starts], count.astype(np.int64)


def _evaluated(judg: Judgements, run_lengths: Mapping[str, int], complete: bool) -> tuple[np.ndarray, np.ndarray,
                                                                                         np.ndarray]:
    """(qrels rows evaluated, their num_ret, stand-in flags): the judged queries of the run, in
    order (with ``complete``, every judged query; one the run lacks gets the stand-in ranking)."""
    rows, num_ret, stand_in = [], [], []
    for i, q in enumerate(judg.query_ids):
        n = run_lengths.get(q)
        if n is None and not complete:
            continue
        rows.append(i)
        num_ret.append(1 if n is None else n)
        stand_in.append(n is None)
    return (np.asarray(rows, dtype=np.int64), np.asarray(num_ret, dtype=np.int64),
            np.asarray(stand_in, dtype=bool))


def _assemble(judg: Judgements, rows, num_ret, stand_in, entry_row, entry_rank, entry_code) -> Rankings:
    """Rankings of the qrels rows ``rows`` from entries (qrels row, rank, judgement code)."""
    position = np.full(len(judg.query_ids), -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    q = position[entry_row]
    order = np.lexsort((entry_rank, q))
    q, rank, code = q[order], entry_rank[order], entry_code[order]
    grade = judg.grade[code - 1]
    value = np.where(grade >= 0, grade, UNJUDGED)
    bounds = np.searchsorted(q, np.arange(len(rows) + 1)).astype(np.int64)
    level_bounds, level_grade, level_count = _levels(judg, rows)
    return Rankings(tuple(judg.query_ids[i] for i in rows.tolist()), num_ret, bounds, rank.astype(np.int64),
                    value.astype(np.int64), level_bounds, level_grade, level_count, stand_in)


def _stand_in_entries(judg: Judgements, rows, stand_in) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stand-in document's entry (rank 1) in each stand-in query whose qrels judge it."""
    out_row, out_code = [], []
    for i in rows[stand_in].tolist():
        code = judg.codes[judg.query_ids[i]].get(STAND_IN_DOC)
        if code is not None:
            out_row.append(i)
            out_code.append(code)
    return (np.asarray(out_row, dtype=np.int64), np.ones(len(out_row), dtype=np.int64),
            np.asarray(out_code, dtype=np.int64))


def from_table(judg: Judgements, table, run_ids: Sequence[str], run_lengths: np.ndarray,
               complete: bool = False) -> Rankings:
    """Rankings from a ``RankTable`` whose grades are judgement codes (``judg.codes`` handed to the
    ranker as qrels), with the run's query ids and lines per query."""
    lengths = dict(zip(run_ids, np.asarray(run_lengths).tolist()))
    rows, num_ret, stand_in = _evaluated(judg, lengths, complete)
    row_of = {q: i for i, q in enumerate(judg.query_ids)}
    table_row = np.asarray([row_of[q] for q in table.query_ids], dtype=np.int64)
    found = np.isfinite(table.rank)
    entry_row = table_row[table.qidx[found]]
    entry_rank = table.rank[found].astype(np.int64)
    entry_code = table.grade[found].astype(np.int64)
    s_row, s_rank, s_code = _stand_in_entries(judg, rows, stand_in)
    return _assemble(judg, rows, num_ret, stand_in, np.r_[entry_row, s_row], np.r_[entry_rank, s_rank],
                     np.r_[entry_code, s_code])


def from_dicts(judg: Judgements, run: Mapping[str, Mapping[str, float]], complete: bool = False) -> Rankings:
    """Rankings of a run ``{qid: {docid: score}}`` (scores compared as C doubles)."""
    lengths = {q: len(hits) for q, hits in run.items()}
    rows, num_ret, stand_in = _evaluated(judg, lengths, complete)
    ranked = rows[~stand_in]
    ids = [judg.query_ids[i] for i in ranked.tolist()]
    sizes = np.asarray([lengths[q] for q in ids], dtype=np.int64)
    starts = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    score = np.fromiter((s for q in ids for s in run[q].values()), dtype=np.float64, count=int(starts[-1])) + 0.0
    docs = [d for q in ids for d in run[q]]
    entry, entry_seg, entry_code = [], [], []
    for k, q in enumerate(ids):
        codes = judg.codes[q]
        base = int(starts[k])
        for j, d in enumerate(run[q]):
            code = codes.get(d)
            if code is not None:
                entry.append(base + j)
                entry_seg.append(k)
                entry_code.append(code)
    entry_a = np.asarray(entry, dtype=np.int64)
    seg_a = np.asarray(entry_seg, dtype=np.int64)
    if len(entry_a):
        def doc_before(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return np.fromiter((docs[x] > docs[y] for x, y in zip(a.tolist(), b.tolist())), dtype=bool, count=len(a))

        rank = np.asarray(rank_in_segments(score, starts[:-1], starts[1:], entry_a, seg_a, doc_before),
                          dtype=np.float64).astype(np.int64)
    else:
        rank = np.zeros(0, dtype=np.int64)
    s_row, s_rank, s_code = _stand_in_entries(judg, rows, stand_in)
    return _assemble(judg, rows, num_ret, stand_in, np.r_[ranked[seg_a], s_row], np.r_[rank, s_rank],
                     np.r_[np.asarray(entry_code, dtype=np.int64), s_code])
