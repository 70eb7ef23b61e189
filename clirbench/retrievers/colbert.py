"""Late interaction (ColBERT, PLAID-X): exact MaxSim over the pool, token embeddings cached on disk.

Models load through sentence-transformers' ``MultiVectorEncoder`` (sentence-transformers >= 6),
which reads PyLate checkpoints and Stanford ColBERT checkpoints (ColBERTv2, HLTCOE's PLAID-X)
and reproduces PyLate's embeddings exactly; where only PyLate is installed (the ``colbert``
extra: sentence-transformers 5.3 + PyLate), ``pylate.models.ColBERT`` is used instead.

score(q, d) = sum over query tokens t of max over document tokens k of <q_t, d_k> (MaxSim), exact,
computed per distinct document text (copies get identical columns). Above ``exact_limit``
distinct documents, a Voyager HNSW index over document tokens proposes candidates (the ``k_tokens``
nearest document tokens of every query token), which are scored exactly; the others get -inf,
so they rank after every returned document by the tie rule.

Token embeddings are cached like dense ones (``EmbeddingCache``'s key: model id, revision, prompt
and settings, role, SHA-256 of the text) in ``<cache>/multivector/<key>/`` shards of
``<name>.tokens.npy`` (float32, all tokens), ``<name>.offsets.npy``, ``<name>.hashes.npy`` and
``<name>.shard.json`` (checksums, written last: marks the shard complete; see ``clirbench.cache.shards``).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..cache.codecs import TOKENS
from ..cache.embeddings import space_key
from ..cache.layout import MULTIVECTOR, retriever_dir
from ..cache.store import ShardStore, SpaceCache, distinct_rows, fill, text_digest
from ..collection import Text
from ..util.errors import ClirbenchError
from ..util.optional import require
from .encoders import token_lengths

__all__ = ["MultiVectorModel", "TokenEmbeddingCache", "ColBERTRetriever", "from_spec", "maxsim",
           "EXACT_LIMIT", "MAX_BLOCK_BYTES"]

EXACT_LIMIT = 100_000
MAX_BLOCK_BYTES = 256 << 20
_MISSING = ("colbert:<model> needs sentence-transformers >= 6 (MultiVectorEncoder) or PyLate "
            "(pip install 'clirbench[colbert]', see docs/retrievers.md); neither is installed here")


def _backend() -> str:
    try:
        from sentence_transformers import MultiVectorEncoder  # noqa: F401

        return "sentence-transformers"
    except ImportError:
        pass
    try:
        import pylate  # noqa: F401

        return "pylate"
    except ImportError:
        raise ClirbenchError(_MISSING) from None


def _revision(model: str) -> str:
    """SHA-256 (16 hex) of a local model folder's files; the hub commit of a cached hub model."""
    path = Path(model).expanduser()
    if path.is_dir():
        h = hashlib.sha256()
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(path)).encode() + b"\0")
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 24), b""):
                    h.update(block)
        return h.hexdigest()[:16]
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True)).name
    except Exception:  # noqa: BLE001 - offline and not cached: the model load below says so
        return "unresolved"


class MultiVectorModel:
    """A ColBERT-style encoder: text -> (tokens, dim) float32 L2-normalised token embeddings."""

    def __init__(self, model: str, *, device: str | None = None, batch_size: int | None = None,
                 backend: str | None = None) -> None:
        self.model_id = str(model)
        self.backend = backend or _backend()
        self.batch_size = int(batch_size or 32)
        self.revision = _revision(model)
        if self.backend == "sentence-transformers":
            from sentence_transformers import MultiVectorEncoder

            self.model = MultiVectorEncoder(self.model_id, device=device)
            prompts = dict(self.model.prompts or {})
            self._prefix = {"query": prompts.get("query", ""), "document": prompts.get("document", "")}
            cfg = self.model[0].get_config_dict()
            self.settings = {k: cfg.get(k) for k in ("document_length", "query_expansion", "max_seq_length")}
        elif self.backend == "pylate":
            from pylate import models

            self.model = models.ColBERT(model_name_or_path=self.model_id, device=device)
            m = self.model
            self._prefix = {"query": m.query_prefix, "document": m.document_prefix}
            self.settings = {"document_length": m.document_length, "query_length": m.query_length,
                             "do_query_expansion": m.do_query_expansion,
                             "attend_to_expansion_tokens": m.attend_to_expansion_tokens}
        else:
            raise ClirbenchError(f"colbert: unknown backend {self.backend!r}")

    def prompt(self, role: str) -> str:
        return self._prefix[role]

    def space(self, role: str) -> str:
        """Cache key part beyond the prompt: the settings that change token embeddings."""
        return json.dumps({"prefix": self._prefix[role], **self.settings}, sort_keys=True, default=str)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text, up to the model's length: the cache batches texts by them (less padding)."""
        return token_lengths(getattr(self.model, "tokenizer", None), texts, getattr(self.model, "max_seq_length", None))

    def encode(self, texts: Sequence[str], role: str) -> list[np.ndarray]:
        """Token embeddings, one library call per model batch of consecutive texts (the cache passes
        them longest first in tokens; the library's own order, by characters, pads more)."""
        texts, out = list(texts), []
        for a in range(0, len(texts), self.batch_size):
            batch = texts[a:a + self.batch_size]
            if self.backend == "sentence-transformers":
                fn = self.model.encode_query if role == "query" else self.model.encode_document
                out.extend(fn(batch, batch_size=len(batch), convert_to_numpy=True, show_progress_bar=False))
            else:
                out.extend(self.model.encode(batch, is_query=role == "query", batch_size=len(batch),
                                             convert_to_numpy=True, show_progress_bar=False))
        return [np.ascontiguousarray(np.asarray(v, dtype=np.float32)) for v in out]

    def describe(self) -> dict:
        return {"backend": self.backend, "model_settings": json.loads(json.dumps(self.settings, default=str))}


class _Space:
    """Token embeddings of one (model, revision, prompt + settings, role): memory memo + shard store."""

    def __init__(self, meta: dict, folder: Path | None) -> None:
        self.store = ShardStore(folder, TOKENS, meta)
        self.memo: dict[bytes, np.ndarray] = {}

    def refresh(self) -> None:
        self.store.refresh()

    def read(self, keys: list[bytes]) -> list[bytes]:
        """Copy the token matrices of ``keys`` found on disk (in good shards) into the memo; returns those found."""
        found, groups = self.store.read(keys)
        for _, (tokens, offsets), pos, rows in groups:
            for i, row in zip(pos.tolist(), rows.tolist()):
                self.memo[found[i]] = np.array(tokens[offsets[row]: offsets[row + 1]])
        return found


class TokenEmbeddingCache(SpaceCache):
    """Per-token embeddings by (model, revision, prompt + settings, role, text); ``root=None``: memory only."""

    kind = MULTIVECTOR  # its folder in a cache root, for read-only layers

    def _space(self, model: MultiVectorModel, role: str) -> _Space:
        key = space_key(model.model_id, model.revision, model.space(role), role)
        meta = {"model_id": model.model_id, "revision": model.revision, "space": model.space(role), "role": role}
        return self.space_for(key, lambda folder: _Space(meta, folder))

    def embed(self, model: MultiVectorModel, texts: Sequence[str], role: str, chunk: int = 256) -> list[np.ndarray]:
        """Token embeddings of ``texts`` (equal texts share one array), encoding only what is missing."""
        space = self._space(model, role)
        distinct, rows = distinct_rows(texts)
        keys = [text_digest(t) for t in distinct]
        fill(self, space, keys, distinct, chunk,
             lambda part, _: self._encode(model, space, role, [distinct[i] for i in part], [keys[i] for i in part]),
             length=getattr(model, "token_lengths", None))
        return [space.memo[keys[r]] for r in rows.tolist()]

    def _encode(self, model: MultiVectorModel, space: _Space, role: str, texts: list[str], keys: list[bytes]) -> None:
        vecs = model.encode(texts, role)
        if len(vecs) != len(keys) or any(v.ndim != 2 or not np.isfinite(v).all() for v in vecs):
            raise ValueError("multi-vector encoder returned malformed or non-finite embeddings")
        self.encoded += len(keys)
        space.store.write(keys, vecs)
        space.memo.update(zip(keys, vecs))


def maxsim(queries: Sequence[np.ndarray], docs: Sequence[np.ndarray], *, max_elements: int = 1 << 25) -> np.ndarray:
    """Exact MaxSim, float32 (len(queries), len(docs)): sum_t max_k <q_t, d_k>, in bounded chunks."""
    import torch

    n_q, n_d = len(queries), len(docs)
    out = np.zeros((n_q, n_d), dtype=np.float32)
    if not n_q or not n_d:
        return out
    dim = queries[0].shape[1]
    lq = max(len(q) for q in queries)
    Q = torch.zeros((n_q, lq, dim), dtype=torch.float32)
    for i, q in enumerate(queries):
        Q[i, : len(q)] = torch.from_numpy(np.asarray(q, dtype=np.float32))  # zero rows add 0 to every doc
    order = np.argsort([len(d) for d in docs], kind="stable")  # similar lengths share a chunk
    per_doc = lq * min(n_q, 64)
    a = 0
    while a < n_d:
        b = a + 1  # sorted by length: the chunk's last document is its longest
        while b < n_d and (b + 1 - a) * max(1, len(docs[order[b]])) * per_doc <= max_elements:
            b += 1
        ld = max(1, len(docs[order[b - 1]]))
        idx = order[a:b]
        D = torch.zeros((len(idx), ld, dim), dtype=torch.float32)
        pad = torch.ones((len(idx), ld), dtype=torch.bool)
        for j, k in enumerate(idx):
            D[j, : len(docs[k])] = torch.from_numpy(np.asarray(docs[k], dtype=np.float32))
            pad[j, : len(docs[k])] = False
        for s in range(0, n_q, 64):
            sim = torch.einsum("qtd,nkd->qntk", Q[s: s + 64], D)
            sim.masked_fill_(pad[None, :, None, :], float("-inf"))
            best = sim.max(dim=3).values
            best = torch.where(torch.isinf(best), torch.zeros_like(best), best)  # empty documents score 0
            out[s: s + 64, idx] = best.sum(dim=2).numpy()
        a = b
    return out


class ColBERTRetriever:
    """Exact MaxSim over the pool (approximate Voyager candidates above ``exact_limit`` documents)."""

    family = "colbert"

    def __init__(self, model: MultiVectorModel, cache: TokenEmbeddingCache | None = None, *,
                 spec: str | None = None, exact_limit: int = EXACT_LIMIT, k_tokens: int = 32,
                 max_block_bytes: int = MAX_BLOCK_BYTES) -> None:
        self.model = model
        self.cache = cache if cache is not None else TokenEmbeddingCache(None)
        self.spec = spec or f"colbert:{model.model_id}"
        self.exact_limit = int(exact_limit)
        self.k_tokens = int(k_tokens)
        self.max_block_bytes = int(max_block_bytes)
        self.progress = False
        self._index: tuple[tuple[bytes, ...], object, np.ndarray] | None = None

    def describe(self) -> dict:
        return {"spec": self.spec, "family": "colbert", "model_id": self.model.model_id,
                "revision": self.model.revision,
                "prompts": {r: self.model.prompt(r) for r in ("query", "document")},
                "similarity": "MaxSim: sum over query tokens of the max inner product with a document token "
                              "(L2-normalised token embeddings), exact",
                "exact_limit": self.exact_limit,
                "approximate": f"above exact_limit distinct documents: Voyager HNSW over document tokens, "
                               f"{self.k_tokens} nearest tokens per query token, candidates scored exactly, "
                               f"others -inf",
                **self.model.describe()}

    def prepare(self, queries: Sequence[Text], docs: Sequence[Text]) -> None:
        self.cache.embed(self.model, [d.text for d in docs], "document")
        self.cache.embed(self.model, [q.text for q in queries], "query")

    def _candidates(self, qvecs: list[np.ndarray], dvecs: list[np.ndarray], keys: tuple[bytes, ...]) -> list[np.ndarray]:
        """Per query, the distinct documents owning one of the nearest tokens of its tokens (Voyager)."""

        voyager = require("voyager", purpose="colbert: on pools over 100k documents (its approximate index)")
        Index, Space = voyager.Index, voyager.Space

        if self._index is None or self._index[0] != keys:
            index = Index(Space.InnerProduct, num_dimensions=dvecs[0].shape[1], M=16, ef_construction=100)
            owner = np.repeat(np.arange(len(dvecs)), [len(v) for v in dvecs])
            ids = index.add_items(np.concatenate(dvecs))
            token_doc = np.empty(len(owner), dtype=np.int64)
            token_doc[np.asarray(ids)] = owner
            self._index = (keys, index, token_doc)
        _, index, token_doc = self._index
        out = []
        for q in qvecs:
            neighbours, _ = index.query(q, k=min(self.k_tokens, len(token_doc)))
            out.append(np.unique(token_doc[np.asarray(neighbours).ravel()]))
        return out

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, scores[b, len(docs)])`` float32 blocks of whole rows, in order."""
        rows_of: dict[str, int] = {}
        drows = np.array([rows_of.setdefault(d.text, len(rows_of)) for d in docs], dtype=np.int64)
        distinct = list(rows_of)
        dvecs = self.cache.embed(self.model, distinct, "document")
        qvecs = self.cache.embed(self.model, [q.text for q in queries], "query")
        n_q, n_d = len(queries), len(docs)
        step = max(1, self.max_block_bytes // max(1, 4 * max(n_d, len(distinct))))
        approximate = len(distinct) > self.exact_limit
        keys = tuple(text_digest(t) for t in distinct) if approximate else ()
        for start in range(0, n_q, step):
            stop = min(start + step, n_q)
            if not approximate:
                S = maxsim(qvecs[start:stop], dvecs)
            else:
                S = np.full((stop - start, len(distinct)), -np.inf, dtype=np.float32)
                for i, cand in enumerate(self._candidates(qvecs[start:stop], dvecs, keys)):
                    S[i, cand] = maxsim([qvecs[start + i]], [dvecs[c] for c in cand])[0]
            yield start, S[:, drows]


def from_spec(arg: str, options: dict) -> ColBERTRetriever:
    """``colbert:<model>``: a hub id or a local PyLate / Stanford ColBERT (PLAID-X) checkpoint."""
    if not arg:
        raise ClirbenchError("retriever 'colbert:' needs a model: colbert:<hub id or local path>")
    backend = _backend()
    model = MultiVectorModel(arg, device=options.get("device"), batch_size=options.get("batch_size"), backend=backend)
    cache = TokenEmbeddingCache(retriever_dir(options.get("cache_dir"), MULTIVECTOR))
    return ColBERTRetriever(model, cache, spec=f"colbert:{arg}")
