"""Dense bi-encoder retrieval: exact inner products of L2-normalised embeddings, in row blocks.

Scores are deterministic: a (query, doc) pair gets the float32 score ``exact_scores`` defines,
``fl32(fl64(q . d))`` (the exact dot product of the embeddings rounded to float64, then to float32),
whatever the query block, the document shard, the executor or the BLAS build and thread count.
A float32 BLAS product cannot promise that: its per-element rounding depends on the matrix shape,
the element's position in it and the thread count (OpenBLAS 0.3.31 on AMD EPYC: thousands of
last-bit differences between blocks of 7 and 3 rows, 1 and 2 threads, or column shards).
"""
from __future__ import annotations

import sys
from typing import Iterator, Sequence

import numpy as np

from ..cache.cost import EncodeReport
from ..cache.embeddings import EmbeddingCache
from ..collection import Text, texts_of
from ..rank.products import (
    BoundedBlock,
    BoundedScores,
    ExactScores,
    duplicate_columns,
    exact_scores,
    full_float32,
    pair_scores,
    product_error,
    products_finite,
    row_norms,
)
from .encoders import check_device

__all__ = ["DenseRetriever", "MAX_BLOCK_BYTES", "ExactScores", "exact_scores", "pair_scores", "BoundedScores",
           "BoundedBlock", "duplicate_columns", "row_norms", "product_error", "products_finite"]

MAX_BLOCK_BYTES = 256 << 20  # one yielded score block stays at or below this


class DenseRetriever:
    """Scores = Q @ D.T (cosine, the encoder normalises), yielded in blocks of whole rows.

    Embeddings go through ``cache`` (memory-only if None): each distinct (role, text) is encoded
    once. On the CPU every score is ``exact_scores``' ``fl32(fl64(q . d))``: the same (query, doc)
    pair gets the same float32 score in any query block, document shard, executor (in-process,
    sharded, Ray) and BLAS thread count, so copies of a text get bit-identical rows and columns
    and every ranking path gives the same ranks. Duplicate columns are also copied from their first
    occurrence after each product (a ``_product`` override or the GPU keep that property).
    Blocks hold at most ``max_block_bytes`` unless ``block_rows`` is given. ``device="cuda"`` (or
    None with torch already imported and CUDA available) computes products with torch on the GPU,
    in float32: fast, but those scores may differ in the last bits between block shapes.
    ``score_bounded`` gives them the same error bound as on the CPU, so the ranks stay the exact
    ones (unless TF32 is allowed: ``full_float32``).
    """

    def __init__(self, encoder, cache: EmbeddingCache | None = None, *, block_rows: int | None = None,
                 score_dtype=np.float32, spec: str | None = None, device: str | None = None,
                 batch_size: int | None = None, progress: bool = False,
                 max_block_bytes: int = MAX_BLOCK_BYTES) -> None:
        self.encoder = encoder
        self.cache = cache if cache is not None else EmbeddingCache(None)
        self.block_rows = int(block_rows) if block_rows else None
        self.score_dtype = np.dtype(score_dtype)
        if self.score_dtype.kind != "f":
            raise ValueError(f"score_dtype must be a float type, not {self.score_dtype}")
        self.spec = spec or f"dense:{encoder.model_id}"
        self.device = device
        self.batch_size = batch_size  # texts per cache chunk (None: 8 x the encoder's batch size)
        self.progress = progress
        self.max_block_bytes = int(max_block_bytes)
        self._exact: ExactScores | None = None  # the current score call's documents, in float64

    def describe(self) -> dict:
        enc = self.encoder.describe() if hasattr(self.encoder, "describe") else {}
        out = {
            "spec": self.spec,
            "family": "dense",
            "model_id": self.encoder.model_id,
            "revision": self.encoder.revision,
            "prompts": {role: self.encoder.prompt(role) for role in ("query", "document")},
            "similarity": "inner product of L2-normalised embeddings (cosine), exact",
            "score_dtype": self.score_dtype.name,
        }
        out.update({k: v for k, v in enc.items() if k not in out})
        return out

    def embed(self, texts: Sequence[Text] | Sequence[str], role: str) -> np.ndarray:
        """float32 (n, d) embeddings of ``texts`` through the cache."""
        return self.cache.embed(self.encoder, texts_of(texts), role, self.batch_size, self.progress)

    def prepare(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        """Encode every missing document and query now."""
        self.encode_ahead(queries, docs)

    def encode_ahead(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        """Encode every missing document and query now: the runner's encoding stage, over every pool's
        texts at once (its bars name the texts' languages and the cache folder)."""
        for role, texts in (("document", docs), ("query", queries)):
            self.cache.embed_rows(self.encoder, texts_of(texts), role, self.batch_size, self.progress,
                                  langs=[getattr(t, "lang", "") for t in texts])

    def cost(self, queries: Sequence[Text], docs: Sequence[Text]):
        """The encoding cost of ``docs`` and ``queries`` (``results.cost.EncodeReport``: the model
        seconds the cache recorded when they were encoded) and the bytes of the document embeddings
        that ``score`` ranks against (``len(docs) x dim`` in ``score_dtype``). Nothing is encoded: texts
        this process did not embed (scored on Ray workers) report no encoding cost."""

        dtexts, qtexts = texts_of(docs), texts_of(queries)
        dim = self.cache.dim(self.encoder, "document")
        return EncodeReport(docs=self.cache.cost(self.encoder, dtexts, "document"),
                            queries=self.cache.cost(self.encoder, qtexts, "query"),
                            index_bytes=None if dim is None else len(dtexts) * dim * self.score_dtype.itemsize)

    def rows_per_block(self, n_docs: int) -> int:
        if self.block_rows:
            return self.block_rows
        return max(1, self.max_block_bytes // max(1, n_docs * self.score_dtype.itemsize))

    def _torch_device(self):
        dev = self.device
        if dev is None:  # only when torch is already loaded (e.g. by the encoder): never import it for this
            torch = sys.modules.get("torch")
            if torch is None or not torch.cuda.is_available():
                return None
            enc_dev = getattr(self.encoder, "device", None)
            dev = enc_dev if isinstance(enc_dev, str) and enc_dev.startswith("cuda") else "cuda"
        if dev == "cpu":
            return None
        import torch

        return torch.device(check_device(dev, "device"))  # one line for a device this machine lacks

    def _product(self, Q: np.ndarray, D: np.ndarray) -> np.ndarray:
        exact = self._exact if self._exact is not None and self._exact.source is D else ExactScores(D)
        return exact(Q, self.score_dtype)

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, scores[b, len(docs)])`` for consecutive query rows, each row exactly once."""
        return self._blocks(queries, docs, bounded=False)

    def score_bounded(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, object]]:
        """``score``'s blocks as a float32 product with its error bound (exact scores on demand):
        ``BoundedBlock`` on the CPU (the ranker computes its rows where it counts them),
        ``BoundedScores`` from torch's device; plain blocks where that does not apply (a ``_product``
        override, a float64 score dtype, TF32 allowed on the device). ``ranking.rank_relevant`` gives
        the exact ranks from each, except from a device's plain blocks (last bits of its product)."""
        bounded = type(self)._product is DenseRetriever._product and self.score_dtype == np.float32
        return self._blocks(queries, docs, bounded=bounded)

    def _blocks(self, queries, docs, bounded: bool) -> Iterator[tuple[int, object]]:
        dvecs, drows = self.cache.embed_rows(self.encoder, texts_of(docs), "document", self.batch_size, self.progress)
        qvecs, qrows = self.cache.embed_rows(self.encoder, texts_of(queries), "query", self.batch_size, self.progress)
        n_q, n_d = len(qrows), len(drows)
        dim = dvecs.shape[1] if dvecs.ndim == 2 and dvecs.shape[1] else (qvecs.shape[1] if qvecs.ndim == 2 else 0)
        D = dvecs[drows].astype(self.score_dtype, copy=False) if n_d else np.zeros((0, dim), self.score_dtype)
        dup, src = duplicate_columns(drows)  # copies of one text: the first copy's column (bit-identical scores)
        step = self.rows_per_block(n_d)
        device = self._torch_device() if n_q and n_d else None
        bounded = bounded and (device is None or full_float32(device))
        if bounded and n_d:
            d_norm = float(np.sqrt(np.einsum("ij,ij->i", D, D, dtype=np.float64)).max())
        if device is not None:
            import torch

            Dt = torch.from_numpy(np.ascontiguousarray(D)).to(device)
            dup_t, src_t = torch.from_numpy(dup).to(device), torch.from_numpy(src).to(device)
        try:
            for start in range(0, n_q, step):
                stop = min(start + step, n_q)
                if n_d == 0:
                    yield start, np.zeros((stop - start, 0), dtype=self.score_dtype)
                    continue
                if bounded and device is None:  # computed, part by part, by the ranker's threads
                    yield start, BoundedBlock(qvecs, qrows[start:stop], D, d_norm, dup, src)
                    continue
                Q = qvecs[qrows[start:stop]].astype(self.score_dtype, copy=False)
                if device is not None:
                    S = torch.from_numpy(Q).to(device) @ Dt.T
                    if len(dup):
                        S[:, dup_t] = S[:, src_t]
                    S = S.cpu().numpy()
                else:
                    if self._exact is None or self._exact.source is not D:
                        self._exact = ExactScores(D)  # D in float64 once per call
                    S = self._product(Q, D)
                    if len(dup):
                        S[:, dup] = S[:, src]
                if bounded:  # a float32 product on the device: within product_error in any order
                    q_norm = row_norms(Q)
                    S = BoundedScores(Q, D, S, product_error(Q, d_norm, q_norm), products_finite(Q, d_norm, q_norm))
                yield start, S
        finally:
            self._exact = None  # the float64 documents live as long as the call
