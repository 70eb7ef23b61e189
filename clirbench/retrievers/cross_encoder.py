"""``cross-encoder:<hub id or folder>``: sentence-transformers' ``CrossEncoder`` as a second stage
(``clirbench run --model FIRST --rerank cross-encoder:<model>@K``, docs/retrievers.md#reranking).

It scores given (query, document) pairs (``score_pairs``, the ``ScoresPairs`` capability) and has no
score rows, so it reranks a first stage and cannot rank a pool alone. A pair's score is the model's
raw output (its logit; no sigmoid, which maps distinct logits above about 17 to the same float32 1.0
and would make ties). Scores are cached content-addressed (``cache.pair_scores``: model id, revision,
query prompt, maximum length; the two texts), so a second run, or another first stage proposing the
same pairs, scores nothing again; missing pairs are scored longest first, in batches of similar length.

The model is found as dense models are (``encoders.locate_model``: a local folder, hashed; a hub id
from the local Hugging Face cache, or the hub unless ``HF_HUB_OFFLINE``), and loads on the first
pair the cache lacks. The query prompt comes from MTEB's model registry where it has one for the
model, else none; ``--query-prompt`` is the first stage's, not this one's.
"""
from __future__ import annotations

import importlib.metadata as md
from typing import Any, Sequence

import numpy as np

from ..cache.layout import PAIRS, retriever_dir
from ..cache.pair_scores import PairScoreCache
from ..collection import Text
from ..util.errors import ClirbenchError
from ..util.optional import require
from .encoders import default_device, locate_model, mteb_prompts

__all__ = ["CrossEncoderRetriever", "from_spec", "ACTIVATION"]

ACTIVATION = "identity (raw model output)"


class CrossEncoderRetriever:
    """A sentence-transformers ``CrossEncoder`` by hub id or local folder (module docstring)."""

    score_dtype = np.float32

    def __init__(self, name_or_path: str, cache: PairScoreCache | None = None, device: str | None = None,
                 batch_size: int | None = None, max_length: int | None = None) -> None:
        require("sentence_transformers", purpose="cross-encoder rerankers", load=False)  # the model loads later
        name = str(name_or_path)
        self.name = name.rstrip("/") if len(name) > 1 else name
        self._folder, self.revision, hub_id = locate_model(self.name, None)
        self.model_id = hub_id or self.name
        self.spec = f"cross-encoder:{self.name}"
        self.pair_cache = cache if cache is not None else PairScoreCache(None)  # not ``cache``: no texts are embedded
        self._device = device
        self.batch_size = int(batch_size) if batch_size else 32
        self.max_length = max_length
        registry = mteb_prompts(hub_id) if hub_id else None
        self.query_prompt = (registry or {}).get("query") or ""
        self.prompt_source = "mteb" if self.query_prompt else "none"
        self.progress = False
        self._model = None

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = default_device()
        return self._device

    def _load(self):
        if self._model is not None:
            return self._model
        CrossEncoder = require("sentence_transformers", purpose="cross-encoder rerankers").CrossEncoder
        kwargs: dict[str, Any] = dict(device=self.device)
        if self.max_length is not None:
            kwargs["max_length"] = self.max_length
        if self._folder is not None:
            target, kwargs["local_files_only"] = str(self._folder), True
        else:
            target, kwargs["revision"] = self.name, self.revision
        try:
            model = CrossEncoder(target, **kwargs)
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ClirbenchError(f"could not load cross-encoder {self.name!r}: {first}") from e
        if model.config.num_labels != 1:
            raise ClirbenchError(f"cross-encoder {self.name!r} has {model.config.num_labels} output labels: a "
                                 f"reranker gives one score per pair")
        model.eval()
        self._model = model
        return model

    def _meta(self) -> dict:
        """What decides a pair's score (the pair-score cache's space)."""
        return {"model_id": self.model_id, "revision": self.revision, "query_prompt": self.query_prompt,
                "max_length": "" if self.max_length is None else self.max_length, "activation": ACTIVATION}

    def _predict(self, pairs: list) -> np.ndarray:
        import torch  # lazy: the model's library

        model = self._load()
        with torch.inference_mode():
            out = model.predict([list(p) for p in pairs], batch_size=self.batch_size, activation_fn=torch.nn.Identity(),
                                show_progress_bar=self.progress, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float32).reshape(-1)

    def score_pairs(self, queries: Sequence[Text], docs: Sequence[Text], pairs: np.ndarray) -> np.ndarray:
        """float32 scores of the (query index, document index) rows of ``pairs``."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        texts = [(self.query_prompt + queries[q].text, docs[d].text) for q, d in pairs.tolist()]
        return self.pair_cache.scores(self._meta(), texts, self._predict, chunk=8 * self.batch_size)

    def describe(self) -> dict:
        out = {"spec": self.spec, "family": "cross-encoder", "model_id": self.model_id, "revision": self.revision,
               "prompts": {"query": self.query_prompt}, "prompt_source": {"query": self.prompt_source},
               "activation": ACTIVATION, "library": f"sentence-transformers {md.version('sentence-transformers')}",
               "device": self.device}
        if self.name != self.model_id:
            out["path"] = self.name
        if self.max_length is not None:
            out["max_length"] = self.max_length
        return out


def from_spec(arg: str, options: dict) -> CrossEncoderRetriever:
    """``cross-encoder:<hub id or folder>`` (the family of ``retrievers/spec.py``)."""
    if not arg:
        raise ClirbenchError("retriever 'cross-encoder:' needs a model: cross-encoder:<hub id or local folder>")
    cache_dir = options.get("cache_dir")
    return CrossEncoderRetriever(arg, PairScoreCache(retriever_dir(cache_dir, PAIRS)), device=options.get("device"),
                                 batch_size=options.get("batch_size"))
