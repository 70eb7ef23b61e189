"""Each query's k best documents under the tie rule, merged document shard by shard (``topk_sharded``)
or from per-shard lists (``merge_topk``: Ray's tasks)."""
from __future__ import annotations

from typing import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

from .counting import to_numpy
from .shards import cols_index, shards_of
from .table import as_trec_scores, tie_keys

__all__ = ["topk_sharded", "merge_topk"]


def topk_sharded(score_shard: Callable[[object], Iterable[tuple[int, np.ndarray]]], shards: int | Sequence,
                 doc_ids: Sequence[str], n_queries: int, k: int,
                 exclusions: Mapping[int, Collection[int]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per query the ``k`` best documents under the tie rule, merged shard by shard.

    Returns ``(doc, score)`` of shape (n_queries, k): doc indices best first and their float32
    scores, padded with -1 / -inf where fewer than k documents were returned. -inf scores (not
    returned) and ``exclusions`` (query row -> doc indices) never enter a list. Equal to sorting
    each full row by (float32 score, doc id byte-wise) descending and keeping the first k.
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k}")
    n_docs = len(doc_ids)
    keys = tie_keys(doc_ids)
    best_doc = np.full((n_queries, k), -1, dtype=np.int64)
    best_score = np.full((n_queries, k), -np.inf, dtype=np.float32)
    for cols in shards_of(shards, n_docs):
        cidx = cols_index(cols, n_docs)
        for start, S in score_shard(cols):
            S = as_trec_scores(to_numpy(S)).copy()
            if np.isnan(S).any():
                raise ValueError(f"NaN score in rows {start}:{start + S.shape[0]}")
            b, w = S.shape
            for r in range(b) if exclusions else ():
                ex = exclusions.get(start + r)
                if ex:
                    S[r, np.isin(cidx, np.fromiter(ex, np.int64))] = -np.inf
            kk = min(k, w)
            if kk == 0:
                continue
            kth = np.partition(S, w - kk, axis=1)[:, w - kk]
            r, c = np.nonzero((S >= kth[:, None]) & (S > -np.inf))
            old = best_doc[start:start + b] >= 0
            orr, oc = np.nonzero(old)
            row = np.r_[r, orr]
            doc = np.r_[cidx[c], best_doc[start:start + b][orr, oc]]
            score = np.r_[S[r, c], best_score[start:start + b][orr, oc]]
            order = np.lexsort((-keys[doc], -score.astype(np.float64), row))
            row, doc, score = row[order], doc[order], score[order]
            first = np.searchsorted(row, row, side="left")
            pos = np.arange(len(row)) - first
            keep = pos < k
            best_doc[start:start + b] = -1
            best_score[start:start + b] = -np.inf
            best_doc[start + row[keep], pos[keep]] = doc[keep]
            best_score[start + row[keep], pos[keep]] = score[keep]
    return best_doc, best_score


def merge_topk(parts: Iterable[tuple[np.ndarray, np.ndarray]], keys: np.ndarray, n_queries: int,
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """``topk_sharded``'s lists from per-shard ones: ``parts`` yields ``(doc, score)`` of shape
    (n_queries, k_i) with pool doc indices (-1 = none); ``keys`` the pool's ``tie_keys``."""
    k = int(k)
    best_doc = np.full((n_queries, k), -1, dtype=np.int64)
    best_score = np.full((n_queries, k), -np.inf, dtype=np.float32)
    rows, docs, scores = [], [], []
    for doc, score in parts:
        r, c = np.nonzero(doc >= 0)
        rows.append(r), docs.append(doc[r, c]), scores.append(score[r, c])
    if not rows:
        return best_doc, best_score
    row, doc, score = np.concatenate(rows), np.concatenate(docs), np.concatenate(scores).astype(np.float32)
    order = np.lexsort((-keys[doc], -score.astype(np.float64), row))
    row, doc, score = row[order], doc[order], score[order]
    pos = np.arange(len(row)) - np.searchsorted(row, row, side="left")
    keep = pos < k
    best_doc[row[keep], pos[keep]] = doc[keep]
    best_score[row[keep], pos[keep]] = score[keep]
    return best_doc, best_score
