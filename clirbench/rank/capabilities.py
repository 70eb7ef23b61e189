"""What a retriever can do, as the rankers ask it: protocols checked at runtime (``isinstance``), so a
retriever of any class qualifies by its methods. Full score rows (every ranker's fallback), the
same rows as a bounded float32 product (faster exact ranks), embeddings (document shards, Ray,
an approximate index), embeddings through a shared cache (Ray's workers), a recipe to build it
again on a worker, and scores of candidate pairs (a second stage reranking a first: ``rerank.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ScoresRows", "ScoresBoundedRows", "Embeds", "EmbedsIntoCache", "Rebuildable", "ScoresPairs",
           "name_of"]


@runtime_checkable
class ScoresRows(Protocol):
    """Full score rows: ``ExactRanker`` ranks them, sharded counting splits them by column."""

    def score(self, queries: Sequence, docs: Sequence) -> Iterator[tuple[int, "np.ndarray"]]:
        """Yield ``(start_row, scores)`` blocks, ``scores`` of shape (b, len(docs)), rows in order."""
        ...


@runtime_checkable
class ScoresBoundedRows(Protocol):
    """``score``'s rows as a float32 product with its error bound (``products.BoundedBlock`` or
    ``BoundedScores``; plain rows where that does not apply): the same exact ranks, faster."""

    def score_bounded(self, queries: Sequence, docs: Sequence) -> Iterator[tuple[int, object]]:
        ...


@runtime_checkable
class Embeds(Protocol):
    """Embeddings whose inner products are the scores (computed as ``products.exact_scores``): ranked
    by document shard (``--shards``), on Ray, or through an approximate index (``--index``)."""

    score_dtype: Any  # the numpy dtype products are computed in (float32 unless asked otherwise)

    def embed(self, texts: Sequence[str], role: str) -> "np.ndarray":
        """(len(texts), d) float embeddings of ``texts`` for ``role`` ("query" or "document")."""
        ...


@runtime_checkable
class EmbedsIntoCache(Embeds, Protocol):
    """Embeds with an ``encoder`` through an on-disk ``cache.embeddings.EmbeddingCache``: Ray's actors
    encode into that (shared) folder, its shard tasks read from it."""

    encoder: Any
    cache: Any

    def describe(self) -> dict:
        ...


@runtime_checkable
class Rebuildable(Protocol):
    """Built again elsewhere (a Ray worker): ``recipe(cache_dir)`` returns an equal retriever over that
    cache folder; picklable."""

    recipe: Callable[[Any], Any]


@runtime_checkable
class ScoresPairs(Protocol):
    """Scores of candidate (query, doc) pairs, e.g. a cross-encoder reranking a first stage's top-k."""

    def score_pairs(self, queries: Sequence, docs: Sequence, pairs: "np.ndarray") -> "np.ndarray":
        """float scores of the (query index, doc index) rows of ``pairs``, shape (len(pairs),)."""
        ...


def name_of(retriever) -> str:
    """The retriever's spec for a message (its class name when it has none)."""
    return str(getattr(retriever, "spec", None) or type(retriever).__name__)
