"""A reranked system on a board: the reranking's description (the system's, in its ``retriever``)
apart from each pool's numbers (the result's ``rerank``: recall ceiling, pairs, seconds), and the
checks of both (on submit and on load)."""
from __future__ import annotations

import math
import re
from typing import Any, Mapping

from ..util.errors import MalformedDataError

__all__ = ["split", "check_description", "check_part", "description_of", "POOL_KEYS"]

#: what a result's ``rerank`` part may hold (``recall_ceiling``, ``pairs``, ``seconds``, ``short_lists`` required)
POOL_KEYS = ("recall_ceiling", "pairs", "seconds", "pairs_per_s", "short_lists", "depth", "pairs_computed")
_REQUIRED = ("recall_ceiling", "pairs", "seconds", "short_lists")
_CEILING = re.compile(r"R@[1-9][0-9]*")


def description_of(retriever: Mapping) -> Mapping | None:
    """The ``ranking.rerank`` object of a retriever description (None when it is not a reranking)."""
    ranking = retriever.get("ranking")
    rerank = ranking.get("rerank") if isinstance(ranking, Mapping) else None
    return rerank if isinstance(rerank, Mapping) else None


def split(retriever: Mapping) -> tuple[dict, dict | None]:
    """``(retriever, part)``: the retriever with its reranking's description only (first stage's spec
    and ranking path/index, second stage, K, and the depth when K is a number), and the pool's part
    (recall ceiling, pairs, seconds, pairs/s, short lists, depth); ``(retriever, None)`` when not reranked."""
    rerank = description_of(retriever)
    if rerank is None:
        return dict(retriever), None
    first = rerank.get("first_stage") if isinstance(rerank.get("first_stage"), Mapping) else {}
    stage = {"spec": first.get("spec")}
    if isinstance(first.get("ranking"), Mapping):
        stage["ranking"] = {k: first["ranking"][k] for k in ("path", "index") if k in first["ranking"]}
    desc = {"first_stage": stage, "second_stage": rerank.get("second_stage"), "k": rerank.get("k")}
    if rerank.get("k") != "all" and "depth" in rerank:  # @all: each pool's own size, kept per pool
        desc["depth"] = rerank["depth"]
    part = {k: rerank[k] for k in POOL_KEYS if k in rerank}
    if isinstance(part.get("recall_ceiling"), Mapping):
        part["recall_ceiling"] = {k: part["recall_ceiling"][k] for k in ("measure", "value", "ci_low", "ci_high", "n")
                                  if k in part["recall_ceiling"]}
    ranking = {**retriever["ranking"], "rerank": desc}
    return {**retriever, "ranking": ranking}, part


def _bad(where: str, what: str) -> MalformedDataError:
    return MalformedDataError(f"{where}: {what}")


def _count(value: Any, where: str, low: int = 0, high: float = math.inf, none: bool = False) -> None:
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad(where, f"expected a whole number in [{low}, {high:g}], got {str(value)[:40]}")


def _number(value: Any, where: str, high: float = math.inf) -> None:
    """A finite number in [0, high], or None."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and 0 <= value <= high):
        raise _bad(where, f"expected a finite number in [0, {high:g}], got {str(value)[:40]}")


def check_description(rerank: Any, where: str) -> None:
    """A system's reranking description: first and second stage objects with a spec, K a whole number
    from 1 or ``all``, the depth (if any) a whole number from 1. Other keys (a board written before the
    pools' numbers moved into each result) are allowed."""
    if not isinstance(rerank, Mapping):
        raise _bad(where, "expected an object")
    for stage in ("first_stage", "second_stage"):
        value = rerank.get(stage)
        if not isinstance(value, Mapping) or not isinstance(value.get("spec"), str) or not value["spec"]:
            raise _bad(f"{where}.{stage}", "expected an object with a spec")
    if rerank.get("k") != "all":
        _count(rerank.get("k"), f"{where}.k", 1)
    if "depth" in rerank:
        _count(rerank["depth"], f"{where}.depth", 1)


def check_part(part: Any, num_queries: int, pool_size: int, where: str) -> None:
    """A result's ``rerank`` part: known keys, the recall ceiling an ``R@K`` value and interval in
    [0, 1] over at most the pool's queries, pairs at most queries × pool size, seconds and pairs/s
    finite and non-negative, short lists at most the queries."""
    if not isinstance(part, Mapping):
        raise _bad(where, "expected an object")
    unknown = sorted(set(part) - set(POOL_KEYS))
    missing = [k for k in _REQUIRED if k not in part]
    if unknown or missing:
        raise _bad(where, f"unknown key(s) {', '.join(map(repr, unknown))}" if unknown
                   else f"missing key(s) {', '.join(missing)}")
    ceiling = part["recall_ceiling"]
    if not isinstance(ceiling, Mapping) or not isinstance(ceiling.get("measure"), str) \
            or not _CEILING.fullmatch(ceiling["measure"]):
        raise _bad(f"{where}.recall_ceiling", "expected {measure: R@K, value, ci_low, ci_high, n}")
    for key in ("value", "ci_low", "ci_high"):
        _number(ceiling.get(key), f"{where}.recall_ceiling.{key}", 1.0 + 1e-9)
    if ceiling.get("ci_low") is not None and ceiling.get("ci_high") is not None \
            and ceiling["ci_low"] > ceiling["ci_high"] + 1e-9:
        raise _bad(f"{where}.recall_ceiling", "ci_low above ci_high")
    _count(ceiling.get("n"), f"{where}.recall_ceiling.n", 0, num_queries)
    _count(part["pairs"], f"{where}.pairs", 0, num_queries * pool_size)
    _count(part["short_lists"], f"{where}.short_lists", 0, num_queries)
    _count(part.get("pairs_computed"), f"{where}.pairs_computed", 0, num_queries * pool_size, none=True)
    _count(part.get("depth"), f"{where}.depth", 1, none=True)
    for key in ("seconds", "pairs_per_s"):
        _number(part.get(key), f"{where}.{key}")
