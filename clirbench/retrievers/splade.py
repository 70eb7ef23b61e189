"""Learned sparse retrieval (spec ``splade:<model>``): sentence-transformers' SparseEncoder, scipy sparse scoring.

Documents and queries are encoded once into vocabulary-sized sparse vectors (SPLADE++, the
multilingual sparse models, inference-free ones: whatever ``SparseEncoder`` loads;
``encode_query`` / ``encode_document`` apply the model's own prompts and routing). Vectors are
cached on disk as scipy CSR shards keyed by model id + revision + prompt + role + sha256 of the
text. Scores are exact inner products through an inverted index: the documents' CSR matrix
transposed (term -> postings) multiplied by blocks of query rows, accumulated in float64 and
returned as float32 rows over the pool; no matrix of vocabulary size is ever made dense. Copies
of one text share one vector and one score column, so they tie exactly.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..cache.codecs import SPARSE as SPARSE_CODEC
from ..cache.layout import SPARSE, retriever_dir
from ..cache.store import ShardStore, SpaceCache, distinct_rows, fill, text_digest
from ..collection import Text, check_role, texts_of
from ..util.errors import ClirbenchError
from ..util.optional import require
from .encoders import batches, default_device, locate_model, saved_prompts, token_lengths

__all__ = ["SparseEncoderModel", "SparseVectorCache", "SpladeRetriever", "from_spec"]

MAX_BLOCK_BYTES = 128 << 20  # float64 score block of (rows x pool size)


def _csr(data, indices, indptr, shape):
    import scipy.sparse as sp

    return sp.csr_matrix((data, indices, indptr), shape=shape)


def _empty(n: int, dim: int):
    return _csr(np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(n + 1, np.int64), (n, dim))


# ----------------------------------------------------------------------------------------- encoder


class SparseEncoderModel:
    """A sentence-transformers ``SparseEncoder`` by hub id or local directory; loads on first ``encode``.

    ``query_prompt`` / ``doc_prompt`` override the model's own prompts when given.
    """

    def __init__(self, name_or_path: str, device: str | None = None, batch_size: int | None = None,
                 query_prompt: str | None = None, doc_prompt: str | None = None,
                 revision: str | None = None, max_active_dims: int | None = None,
                 show_progress: bool = False) -> None:
        name = str(name_or_path)
        self.name = name.rstrip("/") if len(name) > 1 else name
        self._folder, self.revision, hub_id = locate_model(self.name, revision)
        self.model_id = hub_id or self.name
        self._device = device
        self.batch_size = int(batch_size) if batch_size else 32
        self.max_active_dims = max_active_dims
        self.show_progress = show_progress
        self._explicit = {"query": query_prompt, "document": doc_prompt}
        saved = saved_prompts(self._folder)
        self._prompts = {role: (p if p is not None else saved.get(role, "")) for role, p in self._explicit.items()}
        self._model = None

    def prompt(self, role: str) -> str:
        return self._prompts[check_role(role)]

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = default_device()
        return self._device

    def _load(self):
        if self._model is not None:
            return self._model

        SparseEncoder = getattr(require("sentence_transformers", extra="splade", purpose="splade retrievers"),
                                "SparseEncoder", None)
        if SparseEncoder is None:
            raise ClirbenchError("splade retrievers need sentence-transformers >= 5: pip install 'clirbench[splade]'")
        kwargs: dict[str, Any] = {"device": self.device}
        if self._folder is not None:
            target, kwargs["local_files_only"] = str(self._folder), True
        else:
            target, kwargs["revision"] = self.name, self.revision
        try:
            model = SparseEncoder(target, **kwargs)
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ClirbenchError(f"could not load sparse model {self.name!r}: {first}") from e
        limit = _max_positions(model)
        if limit and (model.max_seq_length is None or model.max_seq_length > limit):
            model.max_seq_length = limit  # longer texts are truncated, never an index error
        model.eval()
        self._model = model
        return model

    def encode(self, texts: Sequence[str], role: str):
        """scipy CSR float32 (len(texts), vocabulary size), zeros dropped, indices sorted.

        Encodes one batch per call and makes each batch's (batch x vocabulary) output sparse at
        once: sentence-transformers' own sparse output splits its sparse tensor row by row, which
        is slow on CPU, and a dense output for all texts would be vocabulary-sized.
        """
        import scipy.sparse as sp

        role = check_role(role)
        model = self._load()
        texts = list(texts)
        dim = model.get_embedding_dimension() or 0
        if not texts:
            return _empty(0, dim)
        fn = model.encode_query if role == "query" else model.encode_document
        kwargs: dict[str, Any] = dict(batch_size=self.batch_size, show_progress_bar=False,
                                      convert_to_tensor=True, convert_to_sparse_tensor=False, save_to_cpu=True)
        if self._explicit[role] is not None:
            kwargs["prompt"] = self._explicit[role]
        if self.max_active_dims is not None:
            kwargs["max_active_dims"] = self.max_active_dims
        parts = []
        for a in batches(len(texts), self.batch_size, self.show_progress, f"splade {role}"):
            emb = fn(texts[a:a + self.batch_size], **kwargs)
            if emb.is_sparse:
                emb = emb.to_dense()
            part = sp.csr_matrix(emb.detach().float().cpu().numpy().reshape(-1, emb.shape[-1]), dtype=np.float32)
            part.eliminate_zeros()
            parts.append(part)
        out = sp.vstack(parts, format="csr") if len(parts) > 1 else parts[0]
        out.sort_indices()
        return out

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text, up to ``max_seq_length``: the cache batches texts by them (less padding)."""
        model = self._load()
        return token_lengths(getattr(model, "tokenizer", None), texts, model.max_seq_length)

    def settings_key(self) -> str:
        """What, besides model, revision, prompt and role, changes the vectors."""
        return f"max_active_dims={self.max_active_dims}"

    def describe(self) -> dict:
        out = {
            "model_id": self.model_id,
            "revision": self.revision,
            "prompts": dict(self._prompts),
            "library": f"sentence-transformers {md.version('sentence-transformers')} SparseEncoder",
            "device": self.device,
            "max_active_dims": self.max_active_dims,
        }
        if self.name != self.model_id:
            out["path"] = self.name
        if self._model is not None:
            out["max_seq_length"] = self._model.max_seq_length
        return out


def _max_positions(model) -> int | None:
    try:
        config = model.transformers_model.config
    except Exception:
        return None
    n = getattr(config, "max_position_embeddings", None)
    if not n:
        return None
    # RoBERTa-style models reserve padding_idx + 1 positions
    return int(n) - (int(config.pad_token_id) + 1 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else 0)


# ----------------------------------------------------------------------------------------- cache


class _Space:
    """Sparse vectors of one (model, revision, prompt, role, settings): memory memo + shard store."""

    def __init__(self, meta: dict, folder: Path | None) -> None:
        self.meta = meta
        self.store = ShardStore(folder, SPARSE_CODEC, meta)
        self.mats: list = []  # CSR matrices: loaded shards and freshly encoded chunks
        self.memo: dict[bytes, tuple[int, int]] = {}  # digest -> (matrix, row)
        self.loaded: dict[str, int] = {}  # shard name -> matrix number

    def refresh(self) -> None:
        self.store.refresh()

    def read(self, keys: list[bytes]) -> list[bytes]:
        """Load the shards holding ``keys`` into memory (each checked once); returns the keys found."""
        found, groups = self.store.read(keys)
        for name, mat, pos, rows in groups:
            number = self.loaded.get(name)
            if number is None:
                number = self.loaded[name] = len(self.mats)
                self.mats.append(mat)
            for i, row in zip(pos.tolist(), rows.tolist()):
                self.memo[found[i]] = (number, row)
        return found

    def add(self, keys: list[bytes], mat) -> None:
        if self.store.dim is not None and mat.shape[1] != self.store.dim:
            raise ValueError(f"encoder returned {mat.shape[1]}-d vectors, the cache holds {self.store.dim}-d")
        self.store.dim = mat.shape[1]
        number = len(self.mats)
        self.mats.append(mat)
        for row, k in enumerate(keys):
            self.memo[k] = (number, row)

    def gather(self, keys: list[bytes]):
        """CSR rows of ``keys`` (all in the memo), in order."""
        import scipy.sparse as sp

        if not keys:
            return _empty(0, self.store.dim or 0)
        where = np.array([self.memo[k] for k in keys], dtype=np.int64)
        parts, order = [], []
        for number in np.unique(where[:, 0]):
            sel = np.flatnonzero(where[:, 0] == number)
            parts.append(self.mats[int(number)][where[sel, 1]])
            order.append(sel)
        stacked = sp.vstack(parts, format="csr") if len(parts) > 1 else parts[0]
        perm = np.concatenate(order)
        if len(parts) > 1 or not np.array_equal(perm, np.arange(len(perm))):
            stacked = stacked[np.argsort(perm, kind="stable")]
        return stacked.tocsr()


class SparseVectorCache(SpaceCache):
    """Sparse vectors by (model id, revision, prompt, role, settings, text); ``root=None``: memory only.

    Layout: ``root/<sha256(json(key))[:16]>/`` with ``meta.json`` and shards ``<name>.npz`` (scipy
    CSR) + ``<name>.hashes.npy`` (n x 32 sha256 digests) + ``<name>.shard.json`` (checksums,
    written last: marks the shard complete; see ``clirbench.cache.shards``).
    Counters over distinct texts: ``hits``, ``misses``, ``encoded``, ``loaded``.
    """

    kind = SPARSE  # its folder in a cache root, for read-only layers

    def _space(self, encoder, role: str) -> _Space:
        meta = {"model_id": str(encoder.model_id), "revision": str(encoder.revision),
                "prompt": str(encoder.prompt(role)), "role": role, "settings": str(encoder.settings_key())}
        key = hashlib.sha256(json.dumps(["sparse", meta["model_id"], meta["revision"], meta["prompt"], role,
                                         meta["settings"]]).encode()).hexdigest()[:16]
        return self.space_for(key, lambda folder: _Space(meta, folder))

    def vectors_rows(self, encoder, texts: Sequence[str], role: str, chunk: int = 1024):
        """``(matrix, rows)``: text i's vector is ``matrix[rows[i]]``; ``matrix`` holds each distinct text once."""
        space = self._space(encoder, check_role(role))
        distinct, rows = distinct_rows(texts)
        keys = [text_digest(t) for t in distinct]
        fill(self, space, keys, distinct, chunk,
             lambda part, _: self._encode(encoder, space, role, [distinct[i] for i in part], [keys[i] for i in part]),
             length=getattr(encoder, "token_lengths", None))
        return space.gather(keys), rows

    def _encode(self, encoder, space: _Space, role: str, texts: list[str], keys: list[bytes]) -> None:
        mat = encoder.encode(texts, role)
        self.encoded += len(texts)
        if mat.shape[0] != len(texts):
            raise ValueError(f"encoder returned {mat.shape[0]} vectors for {len(texts)} texts")
        if not np.isfinite(mat.data).all():
            raise ValueError("encoder returned non-finite values")
        mat = mat.astype(np.float32, copy=False).tocsr()
        space.store.write(keys, mat)
        space.add(keys, mat)

    def vectors(self, encoder, texts: Sequence[str], role: str):
        """CSR float32 (len(texts), vocabulary size), one row per text."""
        mat, rows = self.vectors_rows(encoder, texts, role)
        return mat[rows]


# ----------------------------------------------------------------------------------------- retriever


class SpladeRetriever:
    """Exact sparse inner products ``q . d`` over the pool via a CSR inverted index (see module doc)."""

    def __init__(self, encoder, cache: SparseVectorCache | None = None, spec: str | None = None,
                 max_block_bytes: int = MAX_BLOCK_BYTES) -> None:
        self.encoder = encoder
        self.cache = cache if cache is not None else SparseVectorCache(None)
        self.spec = spec or f"splade:{encoder.model_id}"
        self.max_block_bytes = int(max_block_bytes)
        self.progress = False

    def describe(self) -> dict:
        out = {"spec": self.spec, "family": "splade",
               "similarity": "inner product of sparse vectors, exact (scipy CSR inverted index, float64 sums)",
               "score_dtype": "float32"}
        enc = self.encoder.describe() if hasattr(self.encoder, "describe") else {
            "model_id": self.encoder.model_id, "revision": self.encoder.revision}
        out.update({k: v for k, v in enc.items() if k not in out})
        return out

    def _sync_progress(self) -> None:
        if hasattr(self.encoder, "show_progress"):
            self.encoder.show_progress = self.progress

    def prepare(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        """Encode every missing document and query now."""
        self._sync_progress()
        self.cache.vectors_rows(self.encoder, texts_of(docs), "document")
        self.cache.vectors_rows(self.encoder, texts_of(queries), "query")

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, scores[b, len(docs)])`` float32 blocks, each query row exactly once."""
        self._sync_progress()
        D, drows = self.cache.vectors_rows(self.encoder, texts_of(docs), "document")
        Q, qrows = self.cache.vectors_rows(self.encoder, texts_of(queries), "query")
        n_q, n_d = len(qrows), len(drows)
        if n_d == 0:
            for start in range(0, n_q, 4096):
                yield start, np.zeros((min(4096, n_q - start), 0), dtype=np.float32)
            return
        if Q.shape[1] != D.shape[1]:
            raise ValueError(f"query vectors have {Q.shape[1]} dimensions, document vectors {D.shape[1]}")
        index = D.T.astype(np.float64).tocsr()  # term -> postings over the distinct documents
        Q = Q.astype(np.float64)
        step = max(1, self.max_block_bytes // max(1, 8 * (D.shape[0] + n_d)))
        for start in range(0, n_q, step):
            stop = min(start + step, n_q)
            distinct = (Q[qrows[start:stop]] @ index).toarray()  # (b, distinct docs)
            yield start, distinct[:, drows].astype(np.float32)


def from_spec(arg: str, options: dict) -> SpladeRetriever:
    """``splade:<hub id or local path>``, e.g. ``splade:naver/splade-cocondenser-ensembledistil``."""
    if not arg:
        raise ClirbenchError("retriever 'splade:' needs a model: splade:<hub id or local path>")
    encoder = SparseEncoderModel(arg, device=options.get("device"), batch_size=options.get("batch_size"),
                                 query_prompt=options.get("query_prompt"), doc_prompt=options.get("doc_prompt"))
    cache = SparseVectorCache(retriever_dir(options.get("cache_dir"), SPARSE))
    return SpladeRetriever(encoder, cache, spec=f"splade:{encoder.name}")
