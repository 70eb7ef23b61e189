"""Ranks of relevant documents, the contract every measure is computed from (docs/architecture.md).

The public names load lazily (``from clirbench.rank import ShardedRanker`` imports only what it
needs): ``RankTable``, ``tie_keys``, ``rank_relevant``, ``rank_run``, ``RankingInfo``, ``Ranked``, ``Head``
(each query's top-K documents, ``Ranked.head``), ``HeadBuilder``, ``head_of_run``, ``DEFAULT_DEPTH``,
``Ranker``, ``choose_ranker``, the rankers (``ExactRanker``, ``ShardedRanker``, ``RayRanker``,
``AnnRanker``) and the capability protocols they ask a retriever (``ScoresRows``, ``Embeds``, ...).
"""
from __future__ import annotations

import importlib

_LAZY = {
    "RankTable": "table", "tie_keys": "table",
    "rank_relevant": "rows", "rank_blocks": "rows", "run_blocks": "rows",
    "rank_run": "runs", "rank_run_arrays": "runs",
    "RankingInfo": "ranked", "Ranked": "ranked", "Ranker": "ranked",
    "Head": "head", "HeadBuilder": "head", "head_of_run": "head", "DEFAULT_DEPTH": "head",
    "choose_ranker": "choose",
    "ExactRanker": "exact", "ShardedRanker": "sharded", "RayRanker": "distributed", "AnnRanker": "ann",
    "ScoresRows": "capabilities", "ScoresBoundedRows": "capabilities", "Embeds": "capabilities",
    "EmbedsIntoCache": "capabilities", "Rebuildable": "capabilities", "ScoresPairs": "capabilities",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'clirbench.rank' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
