"""Document shards of a retriever that embeds (``capabilities.Embeds``): its embeddings, and per shard
blocks of products ``Q_block @ D_shard.T`` for the counter (docs/large-pools.md).

On the CPU every score is ``products.exact_scores``' ``fl32(fl64(q . d))``, exactly as a
DenseRetriever's full rows, so sharded, Ray and full-row ranks are identical (a float32 BLAS
product is not: its rounding depends on the shard's width, the element's position and the thread
count); counted as ``BoundedBlock`` parts, a float32 product whose near-ties are scored exactly.
The torch path multiplies in float32 on the device (bounds of the float32 rounding error, ranks
exact for the scores it computed). ``precision="float16"|"bfloat16"`` (torch only) multiplies in
half precision: the ranks are exact for those scores, which are not the float32 ones, so the
result records itself as not exact.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..cache.store import distinct_rows
from ..collection import texts_of
from .capabilities import Embeds
from .products import (
    BoundedBlock,
    BoundedScores,
    ExactScores,
    duplicate_columns,
    full_float32,
    product_error,
    products_finite,
    row_norms,
)

__all__ = ["DenseShards", "dense_bounds", "dense_shard_scorer"]


@dataclass
class DenseShards:
    """Document shards of a retriever that embeds: blocked products Q_block @ D_shard.T."""

    Q: np.ndarray  # (n_q, d) query embeddings (score dtype)
    U: np.ndarray  # (n_distinct, d) distinct document embeddings (score dtype)
    rows: np.ndarray  # (n_docs,) row of U for each pool doc
    block_rows: int
    device: object = None  # torch.device or None (numpy)
    precision: str = "float32"

    def exact_ranks(self) -> bool:
        """Whether the counter's ranks are those of the canonical ``fl32(fl64(q . d))`` scores (the
        full-row path's): always on the CPU; on a torch device for float32 products at full precision,
        counted as ``BoundedScores`` (``scorer(bounded=True)``); not for half precision or TF32."""
        if self.device is None:
            return True
        return self.precision == "float32" and self.Q.dtype == np.float32 and full_float32(self.device)

    def counts_bounded(self) -> bool:
        """Whether the counter should get ``scorer(bounded=True)``'s blocks: float32 products (numpy's,
        or a device's at full precision) with their error bound, the near-ties scored exactly."""
        return self.Q.dtype == np.float32 and self.exact_ranks()

    def scorer(self, bounded: bool = False):
        """``score_shard(cols)``: copies of one text share one row of U, so they get one score; on the
        CPU every score is ``products.exact_scores``' (the full-row path's, whatever the shard).
        ``bounded=True`` (float32, for counting; on a device only where ``exact_ranks()``):
        ``BoundedScores`` blocks, a float32 product (numpy, or a tensor on the device) with its error
        bound and exact scores on demand (the counter's ranks are the same)."""
        torch = None
        if self.device is not None:
            import torch
            half = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(self.precision)
            dt = half or torch.float32
            Qt = torch.from_numpy(np.ascontiguousarray(self.Q, dtype=np.float32)).to(self.device, dt)
        if bounded and not self.exact_ranks():
            raise ValueError("bounded blocks need IEEE float32 products (no half precision, no TF32)")
        q_norms = row_norms(self.Q) if bounded else None  # once, not once per shard

        def score_shard(cols) -> Iterator[tuple[int, object]]:
            urows = self.rows[cols]
            uniq, inverse = np.unique(urows, return_inverse=True)
            gather = None if len(uniq) == len(urows) and np.all(uniq == urows) else inverse.ravel()
            D = self.U[uniq]
            if torch is not None:
                Dt = torch.from_numpy(np.ascontiguousarray(D, dtype=np.float32)).to(self.device, dt)
                g = None if gather is None else torch.from_numpy(gather).to(self.device)
            if bounded:
                Dg = D if gather is None else D[gather]
                d_norm = float(np.sqrt(np.einsum("ij,ij->i", D, D, dtype=np.float64)).max()) if len(D) else 0.0
                if torch is None:  # for the counter's threads, which compute the products
                    dup, src = duplicate_columns(urows)
            elif torch is None:
                exact = ExactScores(D)
            for start in range(0, len(self.Q), self.block_rows):
                stop = min(start + self.block_rows, len(self.Q))
                if torch is not None and not bounded:
                    S = (Qt[start:stop] @ Dt.T).float()
                    yield start, S if g is None else S[:, g]
                elif bounded and torch is None:
                    yield start, BoundedBlock(self.Q, np.arange(start, stop), Dg, d_norm, dup, src, q_norms[start:stop])
                elif bounded:  # the float32 bound holds for the device's product too
                    Qb = self.Q[start:stop]
                    S = Qt[start:stop] @ Dt.T
                    if g is not None:
                        S = S[:, g]
                    qn = q_norms[start:stop]
                    yield start, BoundedScores(Qb, Dg, S, product_error(Qb, d_norm, qn),
                                               products_finite(Qb, d_norm, qn))
                else:
                    S = exact(self.Q[start:stop], self.Q.dtype)
                    yield start, S if gather is None else S[:, gather]

        return score_shard

    def bounds(self, rel_row: np.ndarray, rel_col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """An interval surely holding each pair's computed float32 score (``dense_bounds``)."""
        return dense_bounds(self.Q[rel_row], self.U[self.rows[rel_col]], exact=self.exact_ranks())


def dense_bounds(q: np.ndarray, d: np.ndarray, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` surely holding the float32 score of each row pair ``q[i] . d[i]``.

    ``exact=True`` (the CPU scorers): the score is ``fl32(fl64(q . d))`` (``exact_scores``); the
    float64 dot product +- its own error bound brackets ``fl64(q . d)``, so the float32 interval
    ``round32`` makes of it is about one ulp wide. ``exact=False``: a product computed in the
    embeddings' dtype by any summation order (float32 on a GPU): the float64 dot product +-
    gamma_dim * sum|q_i d_i|, plus the rounding of a wider score dtype to float32."""
    exact_dot = np.einsum("ij,ij->i", q.astype(np.float64), d.astype(np.float64))
    absdot = np.einsum("ij,ij->i", np.abs(q).astype(np.float64), np.abs(d).astype(np.float64))
    dim = q.shape[1]
    if exact:
        eps = 2 * (dim + 2) * 2.0 ** -53 * absdot + 4 * 2.0 ** -53 * np.abs(exact_dot)
        return exact_dot - eps, exact_dot + eps
    u = np.finfo(q.dtype).eps / 2
    eps = (dim * u / (1 - dim * u)) * absdot + 4 * dim * 2.0 ** -53 * absdot
    if q.dtype.itemsize > 4:
        eps = eps + np.abs(exact_dot) * 2.0 ** -23
    return exact_dot - eps, exact_dot + eps


def dense_shard_scorer(retriever: Embeds, queries, docs, block_rows: int, device=None,
                       precision: str = "float32") -> DenseShards:
    """The document-shard scorer of a retriever that embeds (``capabilities.Embeds``): each distinct
    text embedded once (documents first), products in its ``score_dtype``; ``device`` a torch device
    name or None (numpy)."""
    if precision not in ("float32", "float16", "bfloat16"):
        raise ValueError(f"precision must be float32, float16 or bfloat16, not {precision!r}")
    if precision != "float32" and device is None:
        raise ValueError("half precision needs a torch device")
    dt = np.dtype(retriever.score_dtype)
    if device is not None and dt != np.float32:
        raise ValueError("the torch path multiplies float32 embeddings; use score_dtype float32")
    dtexts, drows = distinct_rows(texts_of(docs))
    qtexts, qrows = distinct_rows(texts_of(queries))
    U = np.ascontiguousarray(retriever.embed(dtexts, "document"), dtype=dt)
    Q = np.ascontiguousarray(np.asarray(retriever.embed(qtexts, "query"))[qrows], dtype=dt)
    if np.isnan(Q).any() or np.isnan(U).any():
        raise ValueError("NaN in the embeddings")
    dev = None
    if device is not None:
        import torch  # lazy: optional, for a device's products

        dev = torch.device(device)
    return DenseShards(Q, U, np.asarray(drows, dtype=np.int64), int(block_rows), dev, precision)
