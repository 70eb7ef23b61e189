"""A pool's judged pairs: the (query row, doc column) pairs of its relevant judgements and exclusions,
checked against its ids (duplicates, qrels or exclusions naming documents outside the pool)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

import numpy as np

from ..util.strict import first_duplicate
from .table import RankTable, finish_table

__all__ = ["JudgedPairs", "judged_pairs"]


@dataclass(frozen=True)
class JudgedPairs:
    """The (query row, doc column) pairs a pool ranking needs: relevant judgements and exclusions.

    ``rel_row``/``ex_row`` are sorted ascending (rows index ``query_ids``); ``evaluated`` lists the
    rows of the evaluated queries; ``num_docs`` their |D| after exclusions.
    """

    query_ids: tuple[str, ...]
    evaluated: list[int]
    num_docs: np.ndarray
    rel_row: np.ndarray
    rel_col: np.ndarray
    rel_grade: list
    ex_row: np.ndarray
    ex_col: np.ndarray
    rel_doc: tuple[str, ...] = ()  # the document id of each relevant pair, in ``rel_*`` order

    def finish(self, rank: np.ndarray, doc_langs: Sequence[str] | None = None,
               query_lang: str | None = None) -> RankTable:
        """The RankTable of these pairs given ``rank`` (one per relevant pair, in ``rel_*`` order)."""
        rel_col = self.rel_col
        t_of_row = np.full(len(self.query_ids), -1, dtype=np.int64)
        t_of_row[self.evaluated] = np.arange(len(self.evaluated))
        same = doc_lang = None
        if doc_langs is not None:
            doc_lang = np.asarray(doc_langs, dtype=object)[rel_col] if len(rel_col) else np.zeros(0, str)
            if query_lang is not None:
                same = doc_lang == query_lang if len(rel_col) else np.zeros(0, bool)
        doc_id = self.rel_doc if len(self.rel_doc) == len(rel_col) else None
        return finish_table([self.query_ids[i] for i in self.evaluated], self.num_docs, t_of_row[self.rel_row],
                            rank, self.rel_grade, same, doc_lang, doc_id)


def judged_pairs(
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    exclusions: Mapping[str, Collection[str]] = {},
    doc_langs: Sequence[str] | None = None,
) -> JudgedPairs:
    """Check a pool's ids, qrels and exclusions (as ``rank_relevant`` does) and index its pairs."""
    doc_ids, query_ids = list(doc_ids), list(query_ids)
    n_docs, n_q = len(doc_ids), len(query_ids)
    dindex = _doc_index(doc_ids)
    if doc_langs is not None and len(doc_langs) != n_docs:
        raise ValueError(f"doc_langs has {len(doc_langs)} entries for {n_docs} docs")
    if len(set(query_ids)) != n_q:
        raise ValueError(f"duplicate query id {first_duplicate(query_ids)[0]!r}")

    evaluated = [i for i, q in enumerate(query_ids) if qrels.get(q)]
    rel_row, rel_col, rel_grade, rel_doc, ex_row, ex_col = [], [], [], [], [], []
    num_docs = np.full(len(evaluated), float(n_docs))
    no_exclusions = frozenset()
    for t, i in enumerate(evaluated):
        q = query_ids[i]
        excl = no_exclusions
        if exclusions.get(q):
            excl = set()
            for d in exclusions[q]:
                if d not in dindex:
                    raise ValueError(f"excluded doc {d!r} of query {q!r} is not in the pool")
                excl.add(dindex[d])
            num_docs[t] -= len(excl)
            ex_row.extend([i] * len(excl))
            ex_col.extend(sorted(excl))
        for d, g in qrels[q].items():
            col = dindex.get(d)
            if col is None:
                raise ValueError(f"qrels doc {d!r} of query {q!r} is not in the pool")
            if g > 0:
                if col in excl:
                    raise ValueError(f"relevant doc {d!r} of query {q!r} is excluded")
                rel_row.append(i)
                rel_col.append(col)
                rel_grade.append(g)
                rel_doc.append(d)
    return JudgedPairs(tuple(query_ids), evaluated, num_docs, np.asarray(rel_row, dtype=np.int64),
                       np.asarray(rel_col, dtype=np.int64), rel_grade, np.asarray(ex_row, dtype=np.int64),
                       np.asarray(ex_col, dtype=np.int64), tuple(rel_doc))


def _doc_index(doc_ids: Sequence[str]) -> dict[str, int]:
    index = {d: i for i, d in enumerate(doc_ids)}
    if len(index) != len(doc_ids):
        raise ValueError(f"duplicate doc id {first_duplicate(doc_ids)[0]!r}")
    return index
