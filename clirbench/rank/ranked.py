"""What a ranker is and answers: the ``Ranker`` protocol, ``Ranked(table, info, head)``, and ``RankingInfo``,
how the ranks were obtained (recorded as the result's ``retriever.settings.ranking``)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    from ..collection import Pool
    from .head import Head
    from .table import RankTable

__all__ = ["RankingInfo", "Ranked", "Ranker"]


@dataclass(frozen=True)
class RankingInfo:
    """How a ranker obtained its ranks. ``to_dict`` is the record's form: the fields that apply
    (not None), in this order; ``approximate`` is not written (an ANN record holds its ``index``)."""

    path: str  # "sharded counting", "sharded counting on Ray", "approximate top-k", "reranked"
    approximate: bool = False  # top-k lists of an approximate index: cutoff measures only, another system
    # an approximate index (rank.ann): its description, depth, candidates rescored, measured recall
    index: Mapping | None = None
    k: int | None = None
    candidates: int | None = None
    rescored: str | None = None
    boundary_ties_unresolved: int | None = None
    recall: Mapping | None = None
    # sharded counting (here or on Ray): shard count, how shards were scored, exactness of the scores
    shards: int | None = None
    scoring: str | None = None
    exact: bool | None = None  # the scores are the canonical float32 ones (not half precision, not TF32)
    precision: str | None = None
    shards_computed: int | None = None
    shards_reused: int | None = None
    address: str | None = None  # the Ray cluster (credentials redacted) or "local"
    # a reranking (rank.rerank): the first and second stage, K, the pairs scored and their seconds
    rerank: Mapping | None = None

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name != "approximate" and getattr(self, f.name) is not None}


@dataclass(frozen=True)
class Ranked:
    """A ranker's answer: the ranks of the relevant documents, how they were obtained (None: full
    score rows, nothing to record), and the head of the ranking, each query's top-K documents
    (``head.Head``; None where the path cannot give it). A reranking also gives its first stage's
    own answer (``first``), which the evaluation measures beside it (what the reranking gains)."""

    table: "RankTable"
    info: RankingInfo | None = None
    head: "Head | None" = None
    first: "Ranked | None" = None
    # what the ranker's own model encoded for the pool beyond the retriever (a reranking's second
    # stage: the texts it scored), a ``cache.cost.EncodeReport``; None where there is none or it is unknown
    encode: object | None = None


@runtime_checkable
class Ranker(Protocol):
    """How a pool's relevant documents get their ranks."""

    def supports(self, measures: Sequence) -> None:
        """Raise a one-line ClirbenchError for measures this ranker cannot give exactly."""

    def rank(self, retriever, seen: "Pool", pool: "Pool") -> Ranked:
        """Ranks over ``pool`` from ``retriever`` reading ``seen``."""
