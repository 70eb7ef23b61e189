"""Ranks of relevant documents under trec_eval's tie rule (docs/measures.md).

Documents sort by score descending; equal scores sort by doc id descending, compared byte-wise
(trec_eval's ``strcmp(p2->docno, p1->docno)``). For valid UTF-8, byte order equals Python's
code-point order of ``str``, so plain ``sorted`` gives it. trec_eval stores scores as C ``float``,
so "equal" means equal after rounding to float32 (0.3 and 0.30000000000000004 tie there, so do
1e20 and 1.000000000001e20): every function here rounds scores to float32 before comparing.
Rank = 1 + number of documents sorting before.

Tie counts (optional, ``tied`` and ``tied_before``): per relevant judgement, the other ranked documents
of its query with exactly its score, and how many of them sort before it by the doc-id rule. They give
the language-bias measures their value under uniformly random tie-breaking (docs/measures.md): the
tie group starts at ``rank - tied_before`` and the expected rank is its start + ``tied / 2``.

Evaluated queries follow pytrec_eval: a query is evaluated when it has a non-empty qrels entry
(judged, even if every grade is 0) and was ranked (pool path: it is in ``query_ids``; run path:
it is a key of the run, even with no documents). Queries outside the qrels are dropped. A query
whose judgements are all grade <= 0 is kept with no rows: the trec_eval measures give it 0 (as
pytrec_eval does), the rank-set measures (MaxR, Complete@K, SameLangFirst, ...) NaN.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

__all__ = ["RankTable", "TiedRanks", "tie_keys", "as_trec_scores", "finish_table", "chunk_slices", "CHUNK"]

CHUNK = 1 << 20  # elements per temporary: small enough for malloc to reuse (no fresh page faults)


@dataclass(frozen=True)
class RankTable:
    """Ranks of every relevant (grade > 0) judgement, flat, grouped by query."""

    query_ids: tuple[str, ...]  # n evaluated queries, in order
    num_docs: np.ndarray  # (n,) float: |D| after exclusions; nan if unknown (TREC runs)
    qidx: np.ndarray  # (m,) int64 index into query_ids, sorted ascending
    rank: np.ndarray  # (m,) float64, 1-based; inf when not retrieved and |D| unknown
    grade: np.ndarray  # (m,) float64 > 0
    same_lang: np.ndarray | None = None  # (m,) bool: doc language == query language
    doc_lang: np.ndarray | None = None  # (m,) str: language tag of the judged document (PEER)
    doc_id: np.ndarray | None = None  # (m,) str: the judged document's id (a pool's ranks file)
    tied: np.ndarray | None = None  # (m,) int64: other ranked documents of the query with exactly its score
    tied_before: np.ndarray | None = None  # (m,) int64: those of them sorting before it (doc id rule)
    # the ranking's head judged (a ``judged_head.JudgedHead`` aligned to query_ids): read only by the
    # language exposure measures; None: not kept
    head: object | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        n, m = len(self.query_ids), len(self.qidx)
        if self.num_docs.shape != (n,):
            raise ValueError(f"num_docs has shape {self.num_docs.shape}, expected ({n},)")
        optional = tuple(a for a in ("same_lang", "doc_lang", "doc_id", "tied", "tied_before")
                         if getattr(self, a) is not None)
        for name in ("rank", "grade") + optional:
            if getattr(self, name).shape != (m,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({m},)")
        if m and (self.qidx[0] < 0 or self.qidx[-1] >= n or np.any(np.diff(self.qidx) < 0)):
            raise ValueError("qidx must be sorted ascending and index query_ids")
        if m and not np.all(self.grade > 0):
            raise ValueError("RankTable holds relevant judgements only (grade > 0)")
        if (self.tied is None) != (self.tied_before is None):
            raise ValueError("tied and tied_before come together")
        if self.tied is not None and m and not np.all((0 <= self.tied_before) & (self.tied_before <= self.tied)):
            raise ValueError("tie counts must satisfy 0 <= tied_before <= tied")

    @property
    def tie_start(self) -> np.ndarray:
        """(m,) the rank of the first document of each judgement's tie group (its rank without tie counts)."""
        return self.rank if self.tied is None else self.rank - self.tied_before

    @property
    def tie_size(self) -> np.ndarray:
        """(m,) the documents of each judgement's tie group, itself included (1 without tie counts)."""
        return np.ones(len(self.qidx)) if self.tied is None else self.tied + 1.0

    @property
    def expected_rank(self) -> np.ndarray:
        """(m,) the mean rank over uniformly random orders of tied documents: the tie group's start +
        ``tied / 2`` (its mean position); ``rank`` without tie counts."""
        return self.rank if self.tied is None else self.tie_start + self.tied / 2.0

    @property
    def tie_share(self) -> float | None:
        """The % of relevant judgements whose rank a tie decided (another document of the query has
        exactly its score); None without tie counts or judgements."""
        if self.tied is None or not len(self.qidx):
            return None
        return 100.0 * float(np.count_nonzero(self.tied)) / len(self.qidx)

    @property
    def num_rel(self) -> np.ndarray:
        """(n,) number of relevant documents per query."""
        return np.bincount(self.qidx, minlength=len(self.query_ids))


def tie_keys(doc_ids: Sequence[str]) -> np.ndarray:
    """int64 key per doc: its position in byte-wise ascending id order (bigger key sorts earlier on equal score)."""
    ids = list(doc_ids)
    if ids and max(map(len, ids)) <= 64 and not any("\x00" in d for d in ids):
        arr = np.array(ids)  # numpy 'U' compares code points = UTF-8 byte order (no NULs here)
        order = np.argsort(arr, kind="stable")
        dup = np.flatnonzero(arr[order[1:]] == arr[order[:-1]])
        if len(dup):
            raise ValueError(f"duplicate doc id {ids[order[dup[0]]]!r}")
    else:
        order = np.asarray(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
        for a, b in zip(order, order[1:]):
            if ids[a] == ids[b]:
                raise ValueError(f"duplicate doc id {ids[a]!r}")
    keys = np.empty(len(ids), dtype=np.int64)
    keys[order] = np.arange(len(ids), dtype=np.int64)
    return keys


def as_trec_scores(a: np.ndarray) -> np.ndarray:
    """Scores as trec_eval compares them: float32 (a copy unless already float32)."""
    flat = a.reshape(-1)
    if np.issubdtype(a.dtype, np.floating) and any(np.isnan(flat[ix]).any() for ix in chunk_slices(len(flat))):
        raise ValueError("NaN score")
    with np.errstate(over="ignore"):
        return a.astype(np.float32, copy=False)



class TiedRanks(np.ndarray):
    """Ranks (float64) that carry their tie counts (``tied``, ``tied_before``, or None), so that a caller
    handing ranks on to ``finish_table`` (``JudgedPairs.finish``) hands the counts on too. A view or
    copy of it drops the counts (they belong to these ranks, in this order)."""

    tied: np.ndarray | None = None
    tied_before: np.ndarray | None = None

    @classmethod
    def of(cls, rank: np.ndarray, tied: np.ndarray, tied_before: np.ndarray) -> "TiedRanks":
        out = np.asarray(rank, dtype=np.float64).view(cls)
        out.tied = np.asarray(tied, dtype=np.int64)
        out.tied_before = np.asarray(tied_before, dtype=np.int64)
        return out

    def __array_finalize__(self, obj) -> None:
        self.tied = self.tied_before = None


def finish_table(query_ids, num_docs, t, rank, grade, same, doc_lang=None, doc_id=None, tied=None,
                 tied_before=None) -> RankTable:
    """The RankTable of rows ``t`` (query index), ``rank``, ``grade``, ... sorted by query, then rank;
    read-only. The tie counts default to those ``rank`` carries (``TiedRanks``)."""
    if tied is None and tied_before is None:
        tied, tied_before = getattr(rank, "tied", None), getattr(rank, "tied_before", None)
    order = np.lexsort((np.asarray(rank, dtype=np.float64), t))
    arrays = dict(
        num_docs=np.array(num_docs, dtype=np.float64),
        qidx=np.asarray(t, dtype=np.int64)[order],
        rank=np.asarray(rank, dtype=np.float64)[order],
        grade=np.asarray(grade, dtype=np.float64)[order],
        same_lang=None if same is None else np.asarray(same, dtype=bool)[order],
        doc_lang=None if doc_lang is None else np.asarray(doc_lang, dtype=str)[order],
        doc_id=None if doc_id is None else np.asarray(doc_id, dtype=object)[order],
        tied=None if tied is None else np.asarray(tied, dtype=np.int64)[order],
        tied_before=None if tied_before is None else np.asarray(tied_before, dtype=np.int64)[order],
    )
    for a in arrays.values():
        if a is not None:
            a.flags.writeable = False
    return RankTable(query_ids=tuple(query_ids), **arrays)


def chunk_slices(n: int, size: int = CHUNK) -> Iterator[slice]:
    """Consecutive slices of at most ``size`` covering [0, n)."""
    return (slice(a, min(a + size, n)) for a in range(0, n, size))
