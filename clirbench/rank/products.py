"""Exact float32 scores of embedding products and their error bounds.

A (query, doc) pair gets the float32 score ``fl32(fl64(q . d))`` (``exact_scores``): the exact dot
product rounded to float64, then to float32, whatever the query block, the document shard, the
executor or the BLAS build and thread count. A float32 BLAS product is faster but its last bits
depend on the shape, the element's position and the thread count; ``BoundedScores`` /
``BoundedBlock`` pair it with a rigorous error bound, so a ranker decides the near-ties exactly.
Used by ``retrievers.dense.DenseRetriever`` (full rows) and the sharded and Ray rankers.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["full_float32", "ExactScores", "exact_scores", "pair_scores", "BoundedScores", "BoundedBlock",
           "duplicate_columns", "row_norms", "product_error", "products_finite"]

_U = 2.0 ** -53  # float64 unit roundoff
_SUB_BYTES = 64 << 20  # float64 product rows computed at a time
_CHUNK_BYTES = 1 << 20  # float64 rows checked at a time
_PAIRS = 2048  # row pairs scored at a time by pair_scores


def full_float32(device) -> bool:
    """Whether torch's float32 products on ``device`` are IEEE float32 ones (no TF32 or lower), so that
    ``product_error`` bounds them. ``torch.set_float32_matmul_precision("high")`` (or the cuBLAS TF32
    flag) turns that off, and with it the exact ranks of ``score_bounded``."""
    import torch

    if device.type == "cuda":
        return torch.get_float32_matmul_precision() == "highest" and not torch.backends.cuda.matmul.allow_tf32
    return device.type == "cpu" and torch.get_float32_matmul_precision() == "highest"


class ExactScores:
    """``Q @ D.T`` where each element is ``fl32(fl64(q . d))``: a function of the two embeddings only.

    How: a float64 BLAS product (products of float32 values are exact in float64; the sum's error
    is at most ``gamma_(dim-1) * |q| |d|`` whatever the summation order, FMA or threads), rounded
    to float32. Where the interval ``S +- bound`` straddles a float32 rounding boundary (about 3 in
    10,000 elements for random 384-d unit vectors: scores near 0 have small ulps) the value is
    recomputed with an error-free split of the products (``_refine``), and with ``math.fsum``
    (correctly rounded) where even that cannot decide. So the float32 result never depends on
    the BLAS, the block shape or the thread count. ``dtype=float64`` returns the float64 values
    (last bits may vary) whose float32 rounding is that canonical score.
    Cost: about 2x a float32 product (float64 BLAS) plus a few elementwise passes.
    """

    def __init__(self, D: np.ndarray) -> None:
        self.source = D
        self.D = np.ascontiguousarray(D, dtype=np.float64)
        self.dim = self.D.shape[1] if self.D.ndim == 2 else 0
        self.d_norm = float(np.sqrt(np.einsum("ij,ij->i", self.D, self.D)).max()) if len(self.D) else 0.0

    def __call__(self, Q: np.ndarray, dtype=np.float32) -> np.ndarray:
        dtype = np.dtype(dtype)
        Q = np.ascontiguousarray(Q, dtype=np.float64)
        n_q, n_d = len(Q), len(self.D)
        wide = dtype.itemsize > 4
        out = np.empty((n_q, n_d), dtype=np.float64 if wide else np.float32)
        if n_q and n_d:
            # |S - q.d| <= gamma_(dim-1) sum|q_k d_k| <= gamma_(dim-1) |q| |d|; margin for the norms and S +- e
            e = ((self.dim + 2) * _U * (1 + 2.0 ** -20)) * np.sqrt(np.einsum("ij,ij->i", Q, Q)) * self.d_norm
            step = max(1, _SUB_BYTES // (8 * n_d))  # rows per float64 product
            chunk = max(1, _CHUNK_BYTES // (8 * n_d))  # rows per check: its temporaries stay in cache
            T = np.empty((min(chunk, n_q), n_d))
            H = np.empty((min(chunk, n_q), n_d), dtype=np.float32)
            L = None if not wide else np.empty((min(chunk, n_q), n_d), dtype=np.float32)
            for a in range(0, n_q, step):
                S = Q[a:min(a + step, n_q)] @ self.D.T
                if wide:
                    out[a:a + len(S)] = S
                for i in range(0, len(S), chunk):
                    s, j = S[i:i + chunk], a + i
                    t, hi = T[:len(s)], H[:len(s)]
                    lo = out[j:j + len(s)] if not wide else L[:len(s)]
                    ea = e[j:j + len(s), None]
                    np.subtract(s, ea, out=t)
                    np.copyto(lo, t, casting="same_kind")
                    np.add(s, ea, out=t)
                    np.copyto(hi, t, casting="same_kind")
                    flat = np.flatnonzero(lo != hi)  # 1-d: a 2-d np.nonzero costs more than the product
                    if len(flat):
                        r, c = np.divmod(flat, n_d)
                        keep = np.isfinite(s[r, c])  # NaN embeddings stay NaN
                        r, c = r[keep], c[keep]
                        out[j + r, c] = _refine(Q[j + r], self.D[c])
        return out if out.dtype == dtype else out.astype(dtype)


def exact_scores(Q: np.ndarray, D: np.ndarray, dtype=np.float32) -> np.ndarray:
    """``ExactScores(D)(Q, dtype)``: every element ``fl32(fl64(q . d))``, independent of shapes and BLAS."""
    return ExactScores(D)(Q, dtype)


def pair_scores(q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """float32 ``fl32(fl64(q[i] . d[i]))`` of row pairs: ``exact_scores``' value of each pair."""
    out = np.empty(len(q), dtype=np.float32)
    dim = q.shape[1] if q.ndim == 2 else 0
    for a in range(0, len(q), _PAIRS):  # temporaries of bounded size (malloc reuses them)
        qa, da = q[a:a + _PAIRS], d[a:a + _PAIRS]
        f64 = dict(dtype=np.float64, casting="safe")  # float32 inputs: products exact in float64, no copies
        S = np.einsum("ij,ij->i", qa, da, **f64)
        # products are exact in float64, so only the summation errs: gamma * sum |q_i d_i| (Higham
        # 3.1); zero where the supports are disjoint (a score of exactly 0 needs no refinement)
        e = ((dim + 2) * _U * (1 + 2.0 ** -20)) * np.einsum("ij,ij->i", np.abs(qa), np.abs(da), **f64)
        lo, hi = (S - e).astype(np.float32), (S + e).astype(np.float32)
        out[a:a + len(qa)] = lo
        r = np.flatnonzero((lo != hi) & np.isfinite(S))
        if len(r):
            out[a + r] = _refine(qa[r].astype(np.float64), da[r].astype(np.float64))
    return out


def row_norms(Q: np.ndarray) -> np.ndarray:
    """The float64 Euclidean norm of each row of ``Q`` (``product_error``'s and ``products_finite``'s
    ``q_norm``: a caller scoring the same rows against many shards computes it once)."""
    return np.sqrt(np.einsum("ij,ij->i", Q, Q, dtype=np.float64)) if Q.ndim == 2 else np.zeros(0)


def product_error(Q: np.ndarray, d_norm: float, q_norm: np.ndarray | None = None) -> np.ndarray:
    """Per row of ``Q`` a bound on ``|fl(q . d) - q . d|`` for an IEEE float32 product computed in
    any summation order, with or without FMA, by any thread split: ``gamma_n * sum |q_i d_i| <=
    gamma_n |q| |d|`` (Higham, Accuracy and Stability, 3.1) with n = dim + 2 for slack, float32's unit
    roundoff, plus a term for underflow, for documents of norm <= ``d_norm``. (A TF32 or bfloat16
    product breaks it; the rankers check that each relevant document's own score keeps within it.)"""
    dim = Q.shape[1] if Q.ndim == 2 else 0
    n, u = dim + 2, 2.0 ** -24
    gamma = n * u / (1 - n * u)
    q_norm = row_norms(Q) if q_norm is None else q_norm
    return gamma * q_norm * d_norm * (1 + 2.0 ** -20) + dim * 2.0 ** -125


class BoundedScores:
    """A block of float32 BLAS scores ``approx`` (fast, last bits shape-dependent; a numpy array, or a
    torch tensor on its device for the sharded counter) with, per row, a
    rigorous bound ``err`` on ``|approx - q . d|``, and ``exact(rows, cols)``: the canonical
    ``fl32(fl64(q . d))`` of chosen elements. A ranker counts what ``approx`` decides (scores
    farther than the bound from the one compared with) and asks ``exact`` for the rest, so its
    ranks equal those of ``ExactScores`` blocks at the cost of a float32 product."""

    def __init__(self, Q: np.ndarray, D: np.ndarray, approx: np.ndarray, err: np.ndarray,
                 finite: bool = False) -> None:
        self.Q, self.D, self.approx, self.err = Q, D, approx, err
        self.finite = finite  # proven free of NaN (``products_finite``): no scan needed

    @property
    def shape(self) -> tuple[int, int]:
        return self.approx.shape

    def exact(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """float32 exact scores of the elements ``(rows[i], cols[i])`` of this block."""
        return _exact_at(self.Q, self.D, rows, cols)


def _exact_at(Q: np.ndarray, D: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``pair_scores`` of ``(Q[rows[i]], D[cols[i]])``, gathered in slices of bounded size."""
    out = np.empty(len(rows), dtype=np.float32)
    for a in range(0, len(rows), _PAIRS):
        out[a:a + _PAIRS] = pair_scores(Q[rows[a:a + _PAIRS]], D[cols[a:a + _PAIRS]])
    return out


def duplicate_columns(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(dup, src)`` for score columns given by their embedding rows: the columns that repeat an
    earlier column's row, and that row's first column for each. Copying ``S[:, src]`` into
    ``S[:, dup]`` after a product gives copies of one text bit-identical scores."""
    rows = np.asarray(rows).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    first_col = first[inverse.ravel()] if len(rows) else np.zeros(0, np.int64)
    dup = np.flatnonzero(first_col != np.arange(len(rows)))
    return dup, first_col[dup]


class BoundedBlock:
    """Score rows not computed yet: ``part(a, b)`` computes rows ``a:b`` as ``BoundedScores`` (a
    float32 BLAS product with its error bound; copies of a document get its first copy's column).
    A ranker computes the parts on several threads, each counting the rows it computed, so the
    counting spreads over the cores as the product does (``ranking.rank_relevant``)."""

    def __init__(self, qvecs: np.ndarray, qrows: np.ndarray, D: np.ndarray, d_norm: float,
                 dup: np.ndarray, src: np.ndarray, q_norm: np.ndarray | None = None) -> None:
        self.qvecs, self.qrows, self.D, self.d_norm, self.dup, self.src = qvecs, qrows, D, d_norm, dup, src
        self.q_norm = q_norm  # row_norms of qvecs[qrows], when the caller has them

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.qrows), len(self.D)

    def exact(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """float32 exact scores of the elements ``(rows[i], cols[i])`` of this block (no product)."""
        return _exact_at(self.qvecs, self.D, self.qrows[rows], cols)

    def part(self, a: int, b: int) -> BoundedScores:
        Q = self.qvecs[self.qrows[a:b]].astype(np.float32, copy=False)
        S = Q @ self.D.T
        if len(self.dup):
            S[:, self.dup] = S[:, self.src]
        q_norm = row_norms(Q) if self.q_norm is None else self.q_norm[a:b]
        return BoundedScores(Q, self.D, S, product_error(Q, self.d_norm, q_norm),
                             products_finite(Q, self.d_norm, q_norm))


def products_finite(Q: np.ndarray, d_norm: float, q_norm: np.ndarray | None = None) -> bool:
    """True when every float32 product ``q . d`` with documents of norm <= ``d_norm`` is surely
    finite: each partial sum is at most ``(1 + gamma) |q| |d|``, far from float32 overflow (a NaN
    or infinite embedding makes a norm NaN or inf: False)."""
    if not len(Q):
        return True
    qn = float((row_norms(Q) if q_norm is None else q_norm).max())
    return qn * d_norm < 2.0 ** 120


def _refine(q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """float64 values of the row pairs' dot products ``q[i] . d[i]`` whose float32 rounding is
    ``fl32(fl64(exact))``. The exact float64 products are split on a grid fine enough that the
    high parts sum exactly (Rump-Ogita-Oishi ExtractScalar); the low parts' sum is tiny and
    bounded; rows still undecided are summed by ``math.fsum`` (correctly rounded)."""
    P = q * d
    n, dim = P.shape
    M = np.abs(P).max(axis=1) if dim else np.zeros(n)
    k = np.ceil(np.log2(np.where(M > 0, M, 1.0))).astype(np.int64) + math.ceil(math.log2(dim + 1)) + 2
    sigma = np.ldexp(1.0, k)[:, None]
    high = (sigma + P) - sigma  # multiples of ulp(sigma), |partial sums| < sigma / 2: exact sum
    low = P - high  # exact
    r = high.sum(axis=1) + low.sum(axis=1)
    err = 2 * (dim + 2) * _U * np.abs(low).sum(axis=1) + 4 * _U * np.abs(r)
    undecided = np.flatnonzero((r - err).astype(np.float32) != (r + err).astype(np.float32))
    for i in undecided.tolist():
        r[i] = math.fsum(P[i].tolist())
    return r
