"""A ranking's head, judged: a ``Head``'s rows aligned to a RankTable's queries, with each listed
document's language and qrels grade, the documents tied with the head's last one (``Head.tail``),
the query languages and the pool's language mix. The language exposure measures
(``measures/exposure.py``, docs/measures.md) read it as ``RankTable.head``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from .head import Head

__all__ = ["JudgedHead", "judge_head"]


@dataclass(frozen=True, eq=False)
class JudgedHead:
    """Row i is query ``query_ids[i]``'s top-K, best first (the tie rule of ``table.py``).

    ``lang[i, r]``: the index into ``langs`` of the document at rank r + 1 (-1 past the end);
    ``grades``: its qrels grade (0 unjudged); ``tail[i, l]``: the documents outside the head, in
    language ``langs[l]``, whose float32 score equals the head's K-th (zeros for a list shorter
    than K; ``tail_known`` False when the head did not say, then zeros); ``rel_counts[i, l]``: the
    query's relevant (grade > 0) documents of the pool in language l; ``lang_counts``: the pool's
    documents per language."""

    query_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    langs: tuple[str, ...]
    docs: np.ndarray  # (n, K) int64 index into doc_ids, -1 past the end
    scores: np.ndarray  # (n, K) float32, -inf past the end
    lang: np.ndarray  # (n, K) int64 index into langs, -1 past the end
    grades: np.ndarray  # (n, K) float64
    tail: np.ndarray  # (n, L) int64
    query_langs: tuple[str, ...]
    lang_counts: Mapping[str, int]
    rel_counts: np.ndarray  # (n, L) int64
    tail_known: bool = True
    # per-query values computed outside the measures, by measure name (MLRS@K: the retriever re-scores passages)
    precomputed: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n, L = len(self.query_ids), len(self.langs)
        shape = self.docs.shape
        if self.docs.ndim != 2 or shape[0] != n:
            raise ValueError(f"docs {shape} must be ({n}, K)")
        for name in ("scores", "lang", "grades"):
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name} {getattr(self, name).shape} must be {shape}")
        for name in ("tail", "rel_counts"):
            if getattr(self, name).shape != (n, L):
                raise ValueError(f"{name} {getattr(self, name).shape} must be ({n}, {L})")
        if len(self.query_langs) != n:
            raise ValueError(f"query_langs has {len(self.query_langs)} entries for {n} queries")
        if tuple(sorted(self.lang_counts)) != self.langs:
            raise ValueError("lang_counts must name exactly the head's languages")

    @property
    def depth(self) -> int:
        """K: the length of every row (padded with -1)."""
        return self.docs.shape[1]

    @property
    def pool_size(self) -> int:
        return int(sum(self.lang_counts.values()))

    @property
    def ranked(self) -> np.ndarray:
        """(n,) the documents listed in each row."""
        return np.count_nonzero(self.docs >= 0, axis=1)

    @property
    def full(self) -> np.ndarray:
        """(n,) rows holding K documents: their last tie group may continue past K (``tail``)."""
        return self.docs[:, -1] >= 0 if self.depth else np.zeros(len(self.query_ids), dtype=bool)

    @property
    def query_lang_index(self) -> np.ndarray:
        """(n,) the index into ``langs`` of each query's language (-1: no document in it)."""
        where = {lang: i for i, lang in enumerate(self.langs)}
        return np.array([where.get(q, -1) for q in self.query_langs], dtype=np.int64)

    def check_depth(self, k: int) -> None:
        """A ValueError when a top-``k`` reaches past the head (k > K, and a row may hold more)."""
        if k > self.depth and self.depth < self.pool_size and self.full.any():
            raise ValueError(f"a top-{k} needs a head of depth >= {k}; this ranking kept {self.depth} "
                             "documents per query")


def judge_head(head: Head, qrels: Mapping[str, Mapping[str, float]], query_ids: Sequence[str],
               query_langs: str | Sequence[str]) -> JudgedHead:
    """``head``'s rows of ``query_ids`` (a RankTable's; KeyError for a query the head lacks), judged
    by ``qrels``; ``query_langs``: one language for all, or one per query. A head without
    ``tail`` (older paths) gives zeros there and ``tail_known`` False."""
    if head.doc_langs is None:
        raise ValueError("the exposure measures need the documents' languages; this head has none")
    query_ids = tuple(query_ids)
    langs = tuple(sorted(set(head.doc_langs)))
    if tuple(getattr(head, "langs", langs)) != langs:
        raise ValueError(f"head.langs {head.langs} are not the sorted document languages {langs}")
    qlangs = (query_langs,) * len(query_ids) if isinstance(query_langs, str) else tuple(query_langs)
    row_of = {q: i for i, q in enumerate(head.query_ids)}
    rows = np.array([row_of[q] for q in query_ids], dtype=np.int64)
    doc_lang = np.searchsorted(np.asarray(langs), np.asarray(head.doc_langs))
    docs = head.docs[rows]
    lang = np.where(docs >= 0, doc_lang[np.maximum(docs, 0)], -1) if len(doc_lang) else np.full(docs.shape, -1)
    tail = getattr(head, "tail", None)
    known = tail is not None
    tail = np.zeros((len(rows), len(langs)), np.int64) if tail is None else np.asarray(tail, np.int64)[rows]
    grades, rel_counts = _judge(docs, query_ids, qrels, head.doc_ids, doc_lang, len(langs))
    return JudgedHead(query_ids, tuple(head.doc_ids), langs, docs, head.scores[rows], lang.astype(np.int64),
                      grades, tail, qlangs, dict(sorted(Counter(head.doc_langs).items())), rel_counts, known)


def _judge(docs: np.ndarray, query_ids: tuple[str, ...], qrels: Mapping[str, Mapping[str, float]],
           doc_ids: Sequence[str], doc_lang: np.ndarray, n_langs: int) -> tuple[np.ndarray, np.ndarray]:
    """(grades (n, K) of the listed documents, relevant documents per language (n, L)); judged
    documents outside ``doc_ids`` have no language and are left out."""
    col = {d: i for i, d in enumerate(doc_ids)}
    n_docs = len(doc_ids)
    row, doc, grade = [], [], []
    for i, q in enumerate(query_ids):
        for d, g in (qrels.get(q) or {}).items():
            c = col.get(d)
            if c is not None:
                row.append(i)
                doc.append(c)
                grade.append(float(g))
    row, doc, grade = np.asarray(row, np.int64), np.asarray(doc, np.int64), np.asarray(grade, np.float64)
    rel_counts = np.zeros((len(query_ids), n_langs), np.int64)
    relevant = grade > 0
    np.add.at(rel_counts, (row[relevant], doc_lang[doc[relevant]]), 1)
    grades = np.zeros(docs.shape, np.float64)
    if len(row):
        order = np.argsort(row * n_docs + doc)
        keys = (row * n_docs + doc)[order]
        listed = (np.arange(len(docs))[:, None] * n_docs + docs)[docs >= 0]
        at = np.minimum(np.searchsorted(keys, listed), len(keys) - 1)
        hit = keys[at] == listed
        values = np.zeros(len(listed))
        values[hit] = grade[order][at[hit]]
        grades[docs >= 0] = values
    return grades, rel_counts
