"""Dense bi-encoder retrieval: exact inner products of L2-normalised embeddings, in row blocks."""
from __future__ import annotations

import sys
from typing import Iterator, Sequence

import numpy as np

from ..collection import Text, texts_of
from ..cache.embeddings import EmbeddingCache

__all__ = ["DenseRetriever", "MAX_BLOCK_BYTES"]

MAX_BLOCK_BYTES = 256 << 20  # one yielded score block stays at or below this


class DenseRetriever:
    """Scores = Q @ D.T (cosine, the encoder normalises), yielded in blocks of whole rows.

    Embeddings go through ``cache`` (memory-only if None): each distinct (role, text) is encoded
    once, so copies of a document get bit-identical score columns; duplicate columns are also
    copied from their first occurrence after each product, so this holds whatever the BLAS kernel.
    Blocks hold at most ``max_block_bytes`` unless ``block_rows`` is given. ``device="cuda"`` (or
    None with torch already imported and CUDA available) computes products with torch on the GPU.
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

        return torch.device(dev)

    def _product(self, Q: np.ndarray, D: np.ndarray) -> np.ndarray:
        return Q @ D.T

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, scores[b, len(docs)])`` for consecutive query rows, each row exactly once."""
        dvecs, drows = self.cache.embed_rows(self.encoder, texts_of(docs), "document", self.batch_size, self.progress)
        qvecs, qrows = self.cache.embed_rows(self.encoder, texts_of(queries), "query", self.batch_size, self.progress)
        n_q, n_d = len(qrows), len(drows)
        dim = dvecs.shape[1] if dvecs.ndim == 2 and dvecs.shape[1] else (qvecs.shape[1] if qvecs.ndim == 2 else 0)
        D = dvecs[drows].astype(self.score_dtype, copy=False) if n_d else np.zeros((0, dim), self.score_dtype)
        # copies of one text: overwrite their columns with the first copy's (bit-identical scores)
        _, first, inverse = np.unique(drows, return_index=True, return_inverse=True)
        first_col = first[inverse.ravel()] if n_d else np.zeros(0, np.int64)
        dup = np.flatnonzero(first_col != np.arange(n_d))
        src = first_col[dup]
        step = self.rows_per_block(n_d)
        device = self._torch_device() if n_q and n_d else None
        if device is not None:
            import torch

            Dt = torch.from_numpy(np.ascontiguousarray(D)).to(device)
            dup_t, src_t = torch.from_numpy(dup).to(device), torch.from_numpy(src).to(device)
        for start in range(0, n_q, step):
            stop = min(start + step, n_q)
            Q = qvecs[qrows[start:stop]].astype(self.score_dtype, copy=False) if n_d else None
            if n_d == 0:
                yield start, np.zeros((stop - start, 0), dtype=self.score_dtype)
                continue
            if device is not None:
                S = torch.from_numpy(Q).to(device) @ Dt.T
                if len(dup):
                    S[:, dup_t] = S[:, src_t]
                yield start, S.cpu().numpy()
            else:
                S = self._product(Q, D)
                if len(dup):
                    S[:, dup] = S[:, src]
                yield start, S
