"""Effectiveness against cost, one point per system, with the Pareto front (docs/results.md#cost).

A system's effectiveness is a measure macro-averaged over its pools, its cost the mean over the same
pools of one of ``COSTS`` (read from the records' ``cost`` sections; default the cold cost,
``cold_seconds``: encoding the pool's texts, building the index, searching and translating). The front is the set of
systems no other system beats on both axes (as cheap or cheaper and as good or better, one of them
strictly); it is drawn as a step line. A system without results on every pool the others cover is
not comparable: it is drawn hollow, labelled ``(incomplete, k/n pools)`` and kept off the front. SVG output is deterministic (fixed hash salt, no date).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ..display.palette import MUTED, SERIES
from ..identity import PoolKey
from ..util.errors import ClirbenchError, UnknownNameError
from ..util.optional import require
from .figure import check_distinct, check_output, plain, result_paths, save

__all__ = ["COSTS", "DEFAULT_COST", "SystemPoint", "system_points", "pareto_front", "pareto_figure", "write_pareto",
           "read_records"]


@dataclass(frozen=True)
class _CostAxis:
    label: str
    value: Callable  # Cost -> float or None (lower is cheaper)


def _per_1k(cost):
    return None if not cost.docs_per_second else 1000.0 / cost.docs_per_second


def _mb(cost):
    return None if cost.index_bytes is None else cost.index_bytes / 1e6


DEFAULT_COST = "cold_seconds"
COSTS: Mapping[str, _CostAxis] = {
    "cold_seconds": _CostAxis("cold cost: seconds to encode, index and search a pool (mean over pools)",
                              lambda c: c.cold_seconds),
    "search_ms_per_query": _CostAxis("search ms per query", lambda c: c.search_ms_per_query),
    "encode_s_per_1k_docs": _CostAxis("encoding seconds per 1,000 documents", _per_1k),
    "index_mb": _CostAxis("index MB", _mb),
    "index_bytes": _CostAxis("index bytes", lambda c: None if c.index_bytes is None else float(c.index_bytes)),
    "translation_seconds": _CostAxis("translation seconds", lambda c: c.translation_seconds),
}


@dataclass(frozen=True)
class SystemPoint:
    """One system: its label, effectiveness (macro mean over ``pools``), cost, how many pools, and
    whether it has every one of the ``of_pools`` pools of the figure (``complete``)."""

    system: str
    effectiveness: float
    cost: float
    pools: int
    complete: bool = True
    of_pools: int | None = None


def read_records(source) -> list:
    """Result records from ``source``: a results folder (every result JSON under it), result files,
    ``Result`` objects, their dicts, or ``PoolResult``s / a ``RunResult``."""
    from ..results import Result, read_result  # lazy: numpy

    out, places = [], []
    for item in [source] if isinstance(source, (str, os.PathLike)) else source:
        item = getattr(item, "record", item)
        if isinstance(item, (str, os.PathLike)):
            paths = result_paths([item])
            out.extend(read_result(p) for p in paths)
            places.extend(paths)
            continue
        if isinstance(item, Mapping):
            item = Result.from_dict(item)
        if not isinstance(item, Result):
            raise TypeError(f"expected result records, got a {type(item).__name__}")
        out.append(item)
        places.append(f"record {len(out)}")
    check_distinct(out, places)
    return out


def _measure(measure: str):
    from ..measures import parse  # lazy: numpy

    try:
        m = parse(measure)
    except ValueError as exc:
        raise ClirbenchError(str(exc)) from None
    if m.direction not in ("up", "down"):
        raise ClirbenchError(f"{m} is best at a target value: a Pareto front needs a measure that is "
                             "better higher or lower")
    return m


def _cost_axis(cost: str) -> _CostAxis:
    if cost not in COSTS:
        raise UnknownNameError(f"unknown cost {cost!r}; expected one of {', '.join(COSTS)}")
    return COSTS[cost]


def system_points(records: Iterable, measure: str = "nDCG@10",
                  cost: str = DEFAULT_COST, scenario: str | None = None) -> list[SystemPoint]:
    """One point per system (``SystemKey.label``) over the records (``read_records``' sources) that
    report ``measure`` and ``cost``, in ``scenario`` when given; sorted by system."""

    name, axis = str(_measure(measure)), _cost_axis(cost)

    values: dict[str, tuple[list, list]] = {}
    pools: dict[str, set] = {}
    for r in read_records(records):
        if scenario is not None and r.scenario != scenario:
            continue
        mv, c = r.measures.get(name), None if r.cost is None else axis.value(r.cost)
        if mv is None or c is None or mv.value != mv.value:
            continue
        eff, costs = values.setdefault(r.system_key.label, ([], []))
        eff.append(mv.value)
        costs.append(c)
        pools.setdefault(r.system_key.label, set()).add(PoolKey.of(r))
    if not values:
        hint = "; results written before it was recorded have none: rerun them, or pass another --cost" \
            if cost == DEFAULT_COST else ""
        raise ClirbenchError(f"no result reports both {name} and the cost {cost}"
                             + (f" in scenario {scenario}" if scenario else "") + hint)
    every = set().union(*pools.values())
    return [SystemPoint(s, sum(e) / len(e), sum(c) / len(c), len(e), pools[s] == every, len(every))
            for s, (e, c) in sorted(values.items())]


def pareto_front(points: Sequence[SystemPoint], higher_is_better: bool = True) -> list[SystemPoint]:
    """The points no other point dominates (cost <= and effectiveness at least as good, one strictly),
    by increasing cost."""
    sign = 1.0 if higher_is_better else -1.0

    def dominated(p: SystemPoint) -> bool:
        return any(q.cost <= p.cost and sign * q.effectiveness >= sign * p.effectiveness
                   and (q.cost < p.cost or sign * q.effectiveness > sign * p.effectiveness) for q in points)

    return sorted((p for p in points if not dominated(p)), key=lambda p: (p.cost, -sign * p.effectiveness, p.system))


def pareto_figure(records: Iterable, measure: str = "nDCG@10", cost: str = DEFAULT_COST,
                  scenario: str | None = None, log_cost: bool | None = None):
    """A matplotlib ``Figure``: effectiveness (y) against cost (x), points labelled by system, the
    Pareto front as a step line. ``log_cost`` (default: when the costs span over 100x) sets a log x axis."""

    require("matplotlib", extra="plot", purpose="Pareto plots")
    from matplotlib.figure import Figure

    m, axis = _measure(measure), _cost_axis(cost)
    points = system_points(records, measure, cost, scenario)
    front = pareto_front([p for p in points if p.complete], m.higher_is_better)
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    xs, ys = [p.cost for p in points], [p.effectiveness for p in points]
    on_front = {p.system for p in front}
    ax.scatter(xs, ys, c=[SERIES[0] if p.system in on_front else MUTED if p.complete else "none"
                          for p in points], edgecolors=["none" if p.complete else MUTED for p in points],
               zorder=3, gid="pareto-points")
    for p in points:
        label = p.system if p.complete else f"{p.system} (incomplete, {p.pools}/{p.of_pools} pools)"
        ax.annotate(plain(label), (p.cost, p.effectiveness), textcoords="offset points", xytext=(5, 5), fontsize=8,
                    gid=f"label-{p.system}")
    fx, fy = [p.cost for p in front], [p.effectiveness for p in front]
    ax.step(fx, fy, where="post", color=SERIES[0], alpha=0.6, label="Pareto front", gid="pareto-front")
    positive = [x for x in xs if x > 0]
    if log_cost is None:
        log_cost = len(positive) == len(xs) and len(xs) > 1 and max(xs) > 100 * min(xs)
    if log_cost:
        ax.set_xscale("log")
    ax.set_xlabel(plain(axis.label + (" (log)" if log_cost else "")))
    ax.set_ylabel(plain(f"{m} ({'higher' if m.higher_is_better else 'lower'} is better), macro mean over pools"))
    ax.margins(x=0.15, y=0.08)  # room for the labels
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def write_pareto(records: Iterable, out_path: str | os.PathLike, measure: str = "nDCG@10",
                 cost: str = DEFAULT_COST, scenario: str | None = None) -> Path:
    """Write ``pareto_figure`` to ``out_path`` (SVG or PNG by its suffix; SVG deterministic); returns the path."""

    check_output(out_path)  # before any work
    return save(pareto_figure(records, measure, cost, scenario), out_path)
