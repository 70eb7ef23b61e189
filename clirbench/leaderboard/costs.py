"""Cost per leaderboard system: the means of its results' ``cost`` sections, as text and as a table cell."""
from __future__ import annotations

import html
from typing import Mapping

__all__ = ["system_cost", "system_costs", "cost_text", "cost_cell", "COST_HEADER"]

COST_HEADER = '<th data-type="text">cost (docs/s, ms/query, index MB)</th>'
_FIELDS = ("docs_per_second", "search_ms_per_query", "index_bytes")


def system_cost(system: Mapping) -> dict[str, float] | None:
    """The mean of each of docs per second, search ms per query and index bytes over the system's
    results that record it (a leaderboard system object); None when no result records a cost."""
    costs = [r["cost"] for r in (system.get("results") or {}).values() if isinstance(r.get("cost"), Mapping)]
    if not costs:
        return None
    out = {}
    for name in _FIELDS:
        values = [float(c[name]) for c in costs if isinstance(c.get(name), (int, float))]
        out[name] = sum(values) / len(values) if values else None
    return out


def system_costs(data: Mapping) -> dict[str, dict[str, float]]:
    """``system_cost`` of every system of a parsed leaderboard that has one."""
    out = {}
    for name, system in (data.get("systems") or {}).items():
        cost = system_cost(system)
        if cost is not None:
            out[name] = cost
    return out


def _num(x: float | None, digits: int) -> str:
    if x is None:
        return "–"
    return f"{x:,.{digits}f}" if x >= 1 or digits == 0 else f"{x:.{digits}g}"


def cost_text(cost: Mapping | None) -> str:
    """``"6,152 docs/s · 0.052 ms/q · 0.61 MB"`` (– for a part not recorded; "" for no cost)."""
    if not cost:
        return ""
    mb = None if cost.get("index_bytes") is None else cost["index_bytes"] / 1e6
    return (f"{_num(cost.get('docs_per_second'), 0)} docs/s · {_num(cost.get('search_ms_per_query'), 2)} ms/q · "
            f"{_num(mb, 2)} MB")


def cost_cell(system: Mapping) -> str:
    """The Systems table's cost cell (``<td>``, escaped; sorted by docs per second)."""
    cost = system_cost(system)
    text = cost_text(cost)
    key = "" if not cost or cost.get("docs_per_second") is None else f"{cost['docs_per_second']:.6g}"
    return f'<td data-v="{html.escape(key)}">{html.escape(text or "–")}</td>'
