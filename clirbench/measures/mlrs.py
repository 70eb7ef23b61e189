"""MLRS@K (Park & Lee, ACL 2025 Findings, arXiv 2502.11175) on parallel pools, the gold parallel
passage in place of their machine translation: how far the passages of a query's top K rise when
each, one at a time, is replaced by its version in language L and re-scored (the other K - 1 keep
their scores). Per query and L, over the passages of the K that have a version in L in the pool
and are not in L already:

    MLRS(L) = 100 * sum max(r0 - r1, 0) / sum (r0 - 1)   (0 when the sum of r0 - 1 is 0)

r0 a passage's rank among the K, r1 its version's rank among the K with it replaced; both are
tie-aware (equal float32 scores share their average rank). A passage already in L is left out of
both sums (replacing it by itself moves nothing), and so is one without a version in L in the pool
(counted in ``missing``); a query with no passage left has no value (NaN). The replacement scores
come from a callback (``rank.pair_scores.head_pair_scorer``: the pool's own scores of those pairs).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = ["MLRS", "tied_ranks", "replaced_ranks", "mlrs_rows", "parallel_columns", "head_mlrs"]


@dataclass(frozen=True)
class MLRS:
    """MLRS@k of each query (rows, ``query_ids``) toward each language (columns, ``langs``)."""

    query_ids: tuple[str, ...]
    langs: tuple[str, ...]
    k: int
    values: np.ndarray  # (n, L) float64 percent; NaN where no passage of the K could be replaced
    rises: np.ndarray  # (n, L) float64: sum of max(r0 - r1, 0)
    room: np.ndarray  # (n, L) float64: sum of r0 - 1
    passages: np.ndarray  # (n, L) int64: the passages replaced (in both sums)
    missing: np.ndarray  # (n, L) int64: passages not in L with no version in L in the pool

    def column(self, lang: str) -> np.ndarray:
        """The per-query values toward ``lang``."""
        return self.values[:, self.langs.index(lang)]


def tied_ranks(scores: np.ndarray) -> np.ndarray:
    """1-based ranks (float64) by score descending, equal scores sharing their average rank."""
    s = np.asarray(scores, dtype=np.float32)
    asc = np.sort(s)
    above = len(s) - np.searchsorted(asc, s, side="right")
    equal = np.searchsorted(asc, s, side="right") - np.searchsorted(asc, s, side="left")
    return 1.0 + above + (equal - 1) / 2.0


def replaced_ranks(scores: np.ndarray, replaced: np.ndarray) -> np.ndarray:
    """r1 of each position p: the tie-aware rank of ``replaced[p]`` among ``scores`` with ``scores[p]``
    replaced by it (the other scores as they are)."""
    s = np.asarray(scores, dtype=np.float32)
    x = np.asarray(replaced, dtype=np.float32)
    asc = np.sort(s)
    right, left = np.searchsorted(asc, x, side="right"), np.searchsorted(asc, x, side="left")
    above = len(s) - right - (s > x)
    equal = right - left - (s == x)
    return 1.0 + above + equal / 2.0


def mlrs_rows(scores: np.ndarray, listed: np.ndarray, replaced: np.ndarray,
              eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(values, rises, room, passages)`` per row of (n, K) arrays: ``scores`` the K's float32 scores,
    ``listed`` which slots hold a document, ``replaced`` each slot's replacement score, ``eligible``
    the slots replaced (listed ones only)."""
    n = len(scores)
    rises, room = np.zeros(n), np.zeros(n)
    passages = np.zeros(n, dtype=np.int64)
    for i in range(n):
        on = np.asarray(listed[i], dtype=bool)
        use = np.asarray(eligible[i], dtype=bool)[on]
        if not use.any():
            continue
        s = np.asarray(scores[i], dtype=np.float32)[on]
        r0 = tied_ranks(s)[use]
        r1 = replaced_ranks(s, np.where(use, np.asarray(replaced[i], dtype=np.float32)[on], s))[use]
        rises[i], room[i], passages[i] = np.maximum(r0 - r1, 0.0).sum(), (r0 - 1.0).sum(), int(use.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(room > 0, 100.0 * rises / np.where(room > 0, room, 1.0), 0.0)
    return np.where(passages > 0, values, np.nan), rises, room, passages


def parallel_columns(head, doc_items: Sequence[str], lang: str, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(columns, missing)`` of the first ``k`` slots of ``head`` (``rank.head.Head``): the index in
    ``head.doc_ids`` of each listed document's version in ``lang`` (the pool document of the same
    ``Text.item`` in ``lang``, from ``doc_items`` aligned with ``doc_ids``), -1 where the document is
    in ``lang`` already, has none or the slot is empty; ``missing`` marks listed documents not in
    ``lang`` without a version. A ValueError when two documents share an item and a language."""
    docs = head.docs[:, :k] if k else head.docs
    langs = np.asarray(head.doc_langs if head.doc_langs is not None else [""] * len(head.doc_ids), dtype=str)
    if len(doc_items) != len(head.doc_ids):
        raise ValueError(f"doc_items gives {len(doc_items)} items for {len(head.doc_ids)} documents")
    where: dict[str, int] = {}
    for d in np.flatnonzero(langs == lang).tolist():
        item = doc_items[d]
        if item and where.setdefault(item, d) != d:
            raise ValueError(f"two documents of item {item!r} in {lang!r}: {head.doc_ids[where[item]]}, "
                             f"{head.doc_ids[d]}")
    version = np.fromiter((where.get(item, -1) if item else -1 for item in doc_items), np.int64, len(doc_items))
    listed = docs >= 0
    other = listed & (langs[np.maximum(docs, 0)] != lang)
    cols = np.where(other, version[np.maximum(docs, 0)], -1)
    return cols, other & (cols < 0)


def head_mlrs(head, doc_items: Sequence[str], score_pairs: Callable[[np.ndarray, np.ndarray], np.ndarray],
              langs: Sequence[str] | None = None, k: int | None = None) -> MLRS:
    """MLRS@k of every query of ``head`` toward each of ``langs`` (default: the head's document
    languages); ``k`` defaults to the head's depth. ``score_pairs(rows, cols)``: the float32 pool
    scores of the pairs (``head.query_ids[rows[i]]``, ``head.doc_ids[cols[i]]``), called once."""
    k = min(int(k), head.depth) if k else head.depth
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k}")
    langs = tuple(sorted(set(head.doc_langs or ()))) if langs is None else tuple(langs)
    docs, scores = head.docs[:, :k], head.scores[:, :k]
    found = [parallel_columns(head, doc_items, lang, k) for lang in langs]
    rows = np.broadcast_to(np.arange(len(docs))[:, None], docs.shape)
    pairs = np.unique(np.concatenate([(rows[c >= 0] * len(head.doc_ids) + c[c >= 0]) for c, _ in found]
                                     + [np.zeros(0, np.int64)]))
    got = np.asarray(score_pairs(pairs // max(len(head.doc_ids), 1), pairs % max(len(head.doc_ids), 1)),
                     dtype=np.float32) if len(pairs) else np.zeros(0, np.float32)
    if got.shape != pairs.shape:
        raise ValueError(f"score_pairs gave {got.shape} scores for {len(pairs)} pairs")
    shape = (len(docs), len(langs))
    out = {name: np.zeros(shape) for name in ("values", "rises", "room")}
    passages, missing = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    for j, (cols, lost) in enumerate(found):
        eligible = cols >= 0
        replaced = np.full(docs.shape, np.nan, dtype=np.float32)
        replaced[eligible] = got[np.searchsorted(pairs, rows[eligible] * len(head.doc_ids) + cols[eligible])]
        values, rises, room, passages[:, j] = mlrs_rows(scores, docs >= 0, replaced, eligible)
        out["values"][:, j], out["rises"][:, j], out["room"][:, j] = values, rises, room
        missing[:, j] = lost.sum(axis=1)
    return MLRS(tuple(head.query_ids), langs, k, out["values"], out["rises"], out["room"], passages, missing)


def mlrs_measure(p, k: int) -> np.ndarray:
    """The ``MLRS@k`` family's per-query values toward each query's language: computed by the runner
    (``evaluation.evaluate_pool``, which has the retriever to re-score the parallel passages) into
    the judged head's ``precomputed``."""
    values = p.head.precomputed.get(f"MLRS@{k}")
    if values is None:
        raise ValueError(f"MLRS@{k} re-scores passages with the retriever: `clirbench run` computes it on "
                         "parallel pools; a ready run cannot give it")
    return np.asarray(values, dtype=np.float64)
