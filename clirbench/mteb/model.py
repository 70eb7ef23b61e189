"""MTEB's models as clirbench retrievers: ``mteb:<model name>`` (docs/retrievers.md).

``mteb:<registry name>`` loads the model with MTEB's own loader and settings (``mteb.get_model``),
so it gets the prompts MTEB gives it on a retrieval task; ``mteb:<registry name>=<local dir>`` uses
that loader and those settings with weights from a local directory (offline); ``mteb:<local dir>``
wraps a local sentence-transformers model in MTEB's wrapper. Texts go through the model's MTEB
``encode`` with the metadata of a generic clirbench retrieval task (``mteb.TaskMetadata``), then
DenseRetriever scores them exactly (cosine; the dot product when MTEB's metadata says so).
"""
from __future__ import annotations

import importlib.metadata as md
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..cache.embeddings import EmbeddingCache
from ..identity import local_model_name
from ..retrievers.base import Retriever
from ..retrievers.dense import DenseRetriever
from ..retrievers.encoders import mteb_prompts, weights_hash
from ..util.errors import ClirbenchError, UnknownNameError
from ..util.optional import require

__all__ = ["MTEBEncoder", "from_spec", "task_metadata"]


def task_metadata():
    """The TaskMetadata MTEB models see when clirbench encodes (a generic retrieval task)."""
    from mteb.abstasks.task_metadata import TaskMetadata

    from .tasks import TASK_METADATA_DEFAULTS  # lazy: mteb

    return TaskMetadata(name="clirbench.retrieval", description="Cross-lingual retrieval (clirbench).",
                        reference="https://example.invalid/clirbench",
                        dataset={"path": "clirbench", "revision": "none"}, eval_langs=["eng-Latn"],
                        main_score="ndcg_at_10", license="not specified", bibtex_citation="",
                        **TASK_METADATA_DEFAULTS)


def _load(arg: str, device: str | None):
    """(MTEB model, registry name or None, local path or None)."""
    import mteb

    name, _, path = arg.partition("=")
    name, path = name.strip(), path.strip() or None
    if path is None and os.path.isdir(os.path.expanduser(name)):
        from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

        return SentenceTransformerEncoderWrapper(os.path.expanduser(name), device=device), None, name
    try:
        meta = mteb.get_model_meta(name, fetch_from_hf=False)
    except (KeyError, ValueError, LookupError):
        meta = None
    if meta is None or meta.loader is None:
        raise UnknownNameError(f"retriever mteb:{name}: MTEB's registry has no loadable model {name!r} "
                               f"(give a registry name, a local directory, or <registry name>=<local dir>)")
    if path is not None and not os.path.isdir(os.path.expanduser(path)):
        raise UnknownNameError(f"retriever mteb:{arg}: {path!r} is not a directory")
    try:
        if path is None:
            model = meta.load_model(device=device)
        else:  # MTEB's loader and settings, weights from the local directory
            kwargs = dict(meta.loader_kwargs or {})
            if device is not None:
                kwargs["device"] = device
            model = meta.loader(os.path.expanduser(path), revision=meta.revision, **kwargs)
            model.mteb_model_meta = meta
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ClirbenchError(f"could not load mteb:{arg}: {first}") from e
    return model, name, path


class MTEBEncoder:
    """clirbench Encoder over an MTEB model (anything with MTEB's ``encode``)."""

    def __init__(self, model, model_id: str, revision: str, path: str | None = None, batch_size: int = 32) -> None:
        from mteb.types import PromptType

        self.model = model
        self.model_id = model_id
        self.revision = revision
        self.path = path
        self.batch_size = int(batch_size)
        self.metadata = task_metadata()
        self._types = {"query": PromptType.query, "document": PromptType.document}
        meta = getattr(model, "mteb_model_meta", None)
        self.similarity = str(getattr(meta, "similarity_fn_name", None) or "cosine")
        if self.similarity not in ("cosine", "dot", "ScoringFunction.COSINE", "ScoringFunction.DOT_PRODUCT"):
            raise ClirbenchError(f"mteb:{model_id} scores with {self.similarity}; clirbench supports cosine and dot")
        self.normalize = "dot" not in self.similarity.lower()
        self._prompts = {role: self._resolve_prompt(role) for role in ("query", "document")}

    def _resolve_prompt(self, role: str) -> str:
        from mteb.models.abs_encoder import get_prompt_name

        prompts = getattr(self.model, "model_prompts", None)
        if isinstance(prompts, dict):
            name = get_prompt_name(prompts, self.metadata, self._types[role])
            return str(prompts.get(name) or "") if name else ""

        found = mteb_prompts(self.model_id) or {}
        return f"[{type(self.model).__name__}] {found.get(role, '')}"

    def prompt(self, role: str) -> str:
        return self._prompts[role]

    def encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        from datasets import Dataset
        from mteb._create_dataloaders import create_dataloader

        texts = list(texts)
        ptype = self._types[role]
        data = Dataset.from_dict({"id": [str(i) for i in range(len(texts))], "text": texts})
        loader = create_dataloader(data, task_metadata=self.metadata, prompt_type=ptype, batch_size=self.batch_size)
        emb = self.model.encode(loader, task_metadata=self.metadata, hf_split="test", hf_subset="default",
                                prompt_type=ptype, batch_size=self.batch_size, show_progress_bar=False)
        emb = np.asarray(emb.cpu() if hasattr(emb, "cpu") else emb, dtype=np.float32)
        if self.normalize:
            emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        return emb

    def describe(self) -> dict:
        out: dict[str, Any] = {
            "model_id": self.model_id, "revision": self.revision, "prompts": dict(self._prompts),
            "prompt_source": {"query": "mteb", "document": "mteb"},
            "library": f"mteb {md.version('mteb')}", "mteb_wrapper": type(self.model).__name__,
            "normalize": self.normalize,
        }
        if self.path:
            out["path"] = self.path
        return out


def from_spec(arg: str, options: dict) -> Retriever:
    """``mteb:<registry name>``, ``mteb:<registry name>=<local dir>`` or ``mteb:<local dir>``."""

    if not arg:
        raise ClirbenchError("retriever 'mteb:' needs a model: mteb:<MTEB model name>")
    for key in ("query_prompt", "doc_prompt"):
        if options.get(key) is not None:
            raise ClirbenchError(f"mteb:<model> uses MTEB's prompts; {key} cannot change them (use dense:<model>)")

    require("mteb", purpose="retriever mteb:<model>")
    model, name, path = _load(arg, options.get("device"))
    meta = model.mteb_model_meta

    local = Path(os.path.expanduser(path)) if path else None
    revision = (weights_hash(local) if local is not None else None) or str(meta.revision or "unknown")
    model_id = name or str(path)
    if name is None:  # a local folder: MTEB would call it no_model_name/available, no_revision_available
        try:
            model.mteb_model_meta = meta.model_copy(update={"name": f"local/{local_model_name(str(path), revision)}",
                                                            "revision": revision})
        except (AttributeError, TypeError, ValueError):  # a wrapper whose meta cannot be replaced
            pass
    encoder = MTEBEncoder(model, model_id, revision, path=path, batch_size=options.get("batch_size") or 32)
    spec = f"mteb:{name}" if name else f"mteb:{str(path).rstrip('/')}"
    return DenseRetriever(encoder, EmbeddingCache(options.get("cache_dir")), spec=spec, device=options.get("device"))
