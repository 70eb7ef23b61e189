"""The ranker of a run: chosen from its ``RankingOptions``, checked against its measures and its
retriever's capabilities (``capabilities.py``) before any work."""
from __future__ import annotations

import dataclasses
from typing import Sequence

from ..run_config import RankingOptions, split_rerank
from . import shards
from .ann import AnnRanker
from .distributed import RayRanker
from .exact import ExactRanker
from .ranked import Ranker
from .rerank import WHOLE_POOL, RerankRanker
from .sharded import ShardedRanker

__all__ = ["choose_ranker"]


def choose_ranker(ranking: RankingOptions | None = None, pool_sizes: Sequence[int] = (), measures: Sequence = (),
                  device: str | None = None, retriever=None, depth: int | None = None, second=None) -> Ranker:
    """The ranker of a run's ``RankingOptions`` (checked there): ``index`` (faiss, approximate
    top-k), else ``executor="ray"`` (exact, sharded counting on Ray), else ``shards`` (exact,
    sharded counting here), else sharded counting chosen by itself when a pool holds more than
    ``shards.AUTO_SHARD_DOCS`` documents, else ``ExactRanker`` (full rows). The ranker has checked
    ``measures``, the cluster's address and what ``retriever`` (when given) can do before it is
    returned: before any work. Every ranker can also give the head of its ranking, each query's top
    ``depth`` documents when asked (None, the default: no head, the ranks only; an ANN ranker's is its top-k, at most ``depth`` deep).
    With ``rerank`` (``SECOND@K``), a ``rerank.RerankRanker``: ``second`` (the retriever SECOND names,
    built by the caller) re-sorts the top K of the ranker chosen as above (its head kept K deep), or of
    the ``candidates`` run (``retriever`` is then a ``rerank.Candidates``)."""
    ranking = ranking or RankingOptions()
    if ranking.rerank is not None:
        if second is None:
            raise ValueError("a reranking needs its second stage (second=)")
        k = split_rerank(ranking.rerank)[1]
        first = None
        if ranking.candidates is None:
            first = choose_ranker(dataclasses.replace(ranking, rerank=None), pool_sizes, (), device, None,
                                  WHOLE_POOL if k is None else k)
        ranker = RerankRanker(second, k, first, depth)
        ranker.supports(measures)
        if retriever is not None:
            ranker.accepts(retriever)
        return ranker
    if ranking.executor == "ray":
        ranker = RayRanker(ranking.shards, ranking.address, ranking.workers, device, depth)
    elif ranking.index is not None:
        ranker = AnnRanker.for_measures(ranking.index, measures, device, depth)
    elif ranking.shards is not None or any(n > shards.AUTO_SHARD_DOCS for n in pool_sizes):
        ranker = ShardedRanker(ranking.shards, device, depth)
    else:
        ranker = ExactRanker(depth)
    ranker.supports(measures)
    if retriever is not None:
        ranker.accepts(retriever)
    return ranker
