"""The pool's own float32 scores of chosen (query, document) pairs: the score each pair gets when the
whole pool is ranked, so that a measure re-sorting a head with other documents' scores (MLRS,
``measures/mlrs.py``) compares like with like. The retriever is passed in.

Two paths, each the one the exact rankers rank by:
- ``"embeddings"`` (a retriever that ``Embeds`` in float32): ``products.pair_scores`` of the pair's
  embeddings, ``fl32(fl64(q . d))``, the canonical score of every exact path (full rows, bounded
  blocks, document shards, Ray); no pass over the pool.
- ``"rows"`` (any retriever with score rows): the retriever's rows over the whole pool, called as
  ``ExactRanker`` calls them (``score_bounded`` where it has it, else ``score``), the pairs read out
  of each block as ``head.HeadBuilder`` reads them (exact scores of a bounded block, float32 of
  plain rows). Scores that depend on the document set (BM25's idf and average length, a top-k cut)
  are those of the pool: one more scoring pass.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from ..collection import texts_of
from ..util.errors import ClirbenchError
from .capabilities import Embeds, ScoresBoundedRows, ScoresRows, name_of
from .products import BoundedBlock, BoundedScores, pair_scores
from .table import as_trec_scores

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["VIAS", "scoring_path", "pool_pair_scores", "head_pair_scorer"]

VIAS = ("embeddings", "rows")


def scoring_path(retriever, via: str | None = None) -> str:
    """``via`` checked against what ``retriever`` can do; None: ``"embeddings"`` for a retriever that
    embeds with float32 scores, else ``"rows"``."""
    embeds = isinstance(retriever, Embeds) and np.dtype(retriever.score_dtype) == np.float32
    if via is None:
        via = "embeddings" if embeds else "rows"
    if via not in VIAS:
        raise ValueError(f"via must be one of {', '.join(VIAS)}, not {via!r}")
    if via == "embeddings" and not embeds:
        raise ClirbenchError(f"{name_of(retriever)} gives no float32 embeddings (embed, score_dtype)")
    if via == "rows" and not isinstance(retriever, ScoresRows):
        raise ClirbenchError(f"{name_of(retriever)} gives no score rows (score(queries, docs))")
    return via


def pool_pair_scores(retriever, seen: "Pool", rows, cols, via: str | None = None) -> np.ndarray:
    """float32 scores of the pairs (``seen.queries[rows[i]]``, ``seen.docs[cols[i]]``) as the ranking of
    the pool ``seen`` (the texts the retriever reads) scores them; ``via`` as ``scoring_path``."""
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if rows.shape != cols.shape or rows.ndim != 1:
        raise ValueError(f"rows {rows.shape} and cols {cols.shape} must be one-dimensional and alike")
    if not len(rows):
        return np.zeros(0, dtype=np.float32)
    if scoring_path(retriever, via) == "embeddings":
        return _embedded_pairs(retriever, seen, rows, cols)
    return _pairs_from_rows(retriever, seen, rows, cols)


def head_pair_scorer(retriever, seen: "Pool", head, via: str | None = None) -> Callable[[np.ndarray, np.ndarray],
                                                                                        np.ndarray]:
    """``score_pairs(rows, cols)`` over ``head``'s indices (``head.query_ids[rows[i]]``,
    ``head.doc_ids[cols[i]]``), mapped to ``seen``'s queries and documents by id: what
    ``measures.mlrs.head_mlrs`` asks for."""
    path = scoring_path(retriever, via)
    qindex = {q.id: i for i, q in enumerate(seen.queries)}
    dindex = {d.id: i for i, d in enumerate(seen.docs)}
    qmap = np.fromiter((qindex[q] for q in head.query_ids), np.int64, len(head.query_ids))
    dmap = np.fromiter((dindex[d] for d in head.doc_ids), np.int64, len(head.doc_ids))

    def score_pairs(rows, cols) -> np.ndarray:
        return pool_pair_scores(retriever, seen, qmap[np.asarray(rows, dtype=np.int64)],
                                dmap[np.asarray(cols, dtype=np.int64)], path)
    return score_pairs


def _embedded_pairs(retriever, seen: "Pool", rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    qs, qat = np.unique(rows, return_inverse=True)
    ds, dat = np.unique(cols, return_inverse=True)
    Q = np.asarray(retriever.embed(texts_of([seen.queries[i] for i in qs.tolist()]), "query"), dtype=np.float32)
    D = np.asarray(retriever.embed(texts_of([seen.docs[i] for i in ds.tolist()]), "document"), dtype=np.float32)
    return pair_scores(Q[qat.reshape(-1)], D[dat.reshape(-1)])


def _pairs_from_rows(retriever, seen: "Pool", rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    score = retriever.score_bounded if isinstance(retriever, ScoresBoundedRows) else retriever.score
    order = np.argsort(rows, kind="stable")
    by_row = rows[order]
    out = np.empty(len(rows), dtype=np.float32)
    done = np.zeros(len(rows), dtype=bool)
    for start, block in score(seen.queries, seen.docs):
        a, b = np.searchsorted(by_row, [start, start + block.shape[0]])
        if a < b:
            at = order[a:b]
            out[at] = _read(block, rows[at] - start, cols[at])
            done[at] = True
    if not done.all():
        raise ValueError(f"{name_of(retriever)} gave no score row for query {int(rows[~done][0])}")
    return out


def _read(block, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 scores of the elements (r[i], c[i]) of one score block, as the head reads them."""
    if isinstance(block, (BoundedBlock, BoundedScores)):
        return block.exact(r, c)
    if isinstance(block, np.ndarray):
        return as_trec_scores(block[r, c])
    import torch  # lazy: optional, a device's block

    return block[torch.from_numpy(r).to(block.device), torch.from_numpy(c).to(block.device)].float().cpu().numpy()
