"""Each reranked system of a board against its first stage, per scenario: the values before and
after, their paired difference with a bootstrap interval over queries (the board's own resamples:
``significance.macro_means``, so the same draws as its tables), the recall ceiling and the cost.

A reranked system's first stage is the board's system of the same retriever, revision (a library
versions revision and a fingerprint are the same system when every other setting is equal, as on
merge: ``submit.identity_diff``) and translation, neither approximate nor reranked. The comparison
runs over the pools both have in each scenario (the macro mean over them, as the tables average).
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..display.precision import fmt, measure_decimals
from ..identity import SystemKey
from ..measures import parse
from ..stats import percentile_interval
from ..util.table import format_table
from .significance import board_target, correction_family, macro_means, main_measures, where_title
from .submit import identity_diff

__all__ = ["Difference", "ScenarioComparison", "Comparison", "first_stages", "stage_names", "comparisons", "format_text",
           "reranking_html"]

_ORDER = ("multi", "multi-1", "mono-same", "mono-cross", "retrieval")


@dataclass(frozen=True)
class Difference:
    """One measure of one scenario: first stage and reranked macro means, reranked − first stage and
    its interval."""

    measure: str
    arrow: str
    first: float
    reranked: float
    diff: float
    ci_low: float
    ci_high: float

    @property
    def places(self) -> int:
        half = (self.ci_high - self.ci_low) / 2
        return measure_decimals(self.measure, [half] if math.isfinite(half) and half > 0 else [])


@dataclass(frozen=True)
class ScenarioComparison:
    """One scenario (subset, scenario, pool mode, languages) of a comparison."""

    where: str
    pools: int          # pools both systems have (the comparison's)
    board_pools: int    # the scenario's pools on the board
    differences: tuple[Difference, ...]
    ceiling_measure: str | None = None   # R@K (names joined when pools differ: @all)
    ceiling: float | None = None          # macro mean over the pools that record it
    ceiling_min: float | None = None
    ceiling_max: float | None = None
    ceiling_pools: int = 0
    pairs: int | None = None
    seconds: float | None = None

    @property
    def pairs_per_s(self) -> float | None:
        if self.pairs is None or not self.seconds:
            return None
        return self.pairs / self.seconds


@dataclass(frozen=True)
class Comparison:
    system: str
    first_stage: str | None  # None: not on the board
    first_name: str          # the first stage as the reranked key names it
    second: str
    k: str
    scenarios: tuple[ScenarioComparison, ...] = ()


def _key(system: Mapping) -> SystemKey:
    if isinstance(system.get("key"), Mapping):
        return SystemKey.of_dict(system["key"])
    return SystemKey.of_record({"retriever": system.get("retriever") or {}})


def first_stages(data: Mapping) -> dict[str, str | None]:
    """``{reranked system: its first stage's system id on the board, or None}``."""
    systems = data["systems"]
    keys = {name: _key(s) for name, s in systems.items()}
    out: dict[str, str | None] = {}
    for name, key in sorted(keys.items()):
        if key.rerank is None:
            continue
        described = {k: v for k, v in (systems[name].get("retriever") or {}).items() if k != "ranking"}
        found = [other for other, k in sorted(keys.items())
                 if k.rerank is None and k.ranking is None and k.retriever == key.retriever
                 and k.translation == key.translation
                 and not identity_diff(systems[other].get("retriever") or {}, described)]
        out[name] = found[0] if found else None
    return out


def _groups(data: Mapping) -> list[tuple[tuple, list[str]]]:
    groups: dict[tuple, list[str]] = {}
    for pid, pool in data["pools"].items():
        groups.setdefault((pool["subset"], pool["scenario"], pool["pool_mode"], len(pool["doc_langs"])), []).append(pid)

    def order(item):
        (subset, scenario, mode, langs), _ = item
        return (subset, _ORDER.index(scenario) if scenario in _ORDER else len(_ORDER), scenario, mode, langs)

    return [(key, sorted(pids)) for key, pids in sorted(groups.items(), key=order)]


def _measures(data: Mapping, systems: Sequence[str], pids: Sequence[str], scenario: str) -> list[str]:
    """Measures with per-query vectors for every one of ``systems`` on every pool: the task card's main
    measures first (its order), then the others by name, the language exposure measures last."""
    have = None
    for s in systems:
        for p in pids:
            names = set(data["systems"][s]["results"][p].get("per_query", {}).get("measures", {}))
            have = names if have is None else have & names
    main = main_measures(str(data.get("task")))
    order = list(main.get(scenario, ()))
    names = sorted(have or (), key=lambda m: (order.index(m) if m in order else len(order), m))
    return sorted(names, key=lambda m: correction_family(m) == "exposure")


def _arrow(measure: str, num_langs: Sequence[int]) -> str:
    family = parse(measure).record
    if family.direction != "target":
        return family.arrow
    return f"best at {round(board_target(family, num_langs), 1):g}"


def _ceiling_and_cost(results: Mapping, pids: Sequence[str]) -> dict:
    parts = [results[p].get("rerank") for p in pids]
    parts = [p for p in parts if isinstance(p, Mapping)]
    ceilings = [p["recall_ceiling"] for p in parts if p["recall_ceiling"].get("value") is not None]
    out: dict = {"ceiling_pools": len(ceilings)}
    if ceilings:
        values = [c["value"] for c in ceilings]
        out.update(ceiling_measure=", ".join(sorted({c["measure"] for c in ceilings}, key=lambda m: int(m[2:]))),
                   ceiling=float(np.mean(values)), ceiling_min=min(values), ceiling_max=max(values))
    if parts and len(parts) == len(pids):
        out["pairs"] = sum(p["pairs"] for p in parts)
        if all(p.get("seconds") is not None for p in parts):
            out["seconds"] = float(sum(p["seconds"] for p in parts))
    return out


def _scenario(data: Mapping, first: str, system: str, key: tuple, pids: list[str],
              measure: str | None = None) -> ScenarioComparison | None:
    subset, scenario, mode, langs = key
    res_a, res_b = data["systems"][first]["results"], data["systems"][system]["results"]
    common = [p for p in pids if p in res_a and p in res_b]
    if not common:
        return None
    sig = data["significance"]
    num_langs = [len(data["pools"][p]["doc_langs"]) for p in common]
    diffs = []
    for name in _measures(data, [first, system], common, scenario):
        if measure is not None and name != measure:
            continue
        point, boots, _ = macro_means(data, [first, system], common, name, sig["resamples"], sig["seed"])
        if np.isnan(point).any():
            continue  # undefined on these pools (SameLangFirst of a one-language pool)
        low, high = percentile_interval(boots[:, 1] - boots[:, 0], sig["confidence"])
        diffs.append(Difference(name, _arrow(name, num_langs), float(point[0]), float(point[1]),
                                float(point[1] - point[0]), float(low), float(high)))
    if measure is not None and not diffs:
        return None  # --measure names another scenario's measure
    return ScenarioComparison(where_title(subset, scenario, mode, langs), len(common), len(pids), tuple(diffs),
                              **_ceiling_and_cost(res_b, common))


def stage_names(first: Mapping[str, str | None] | None) -> dict[str, str]:
    """``{reranked system: "<system> (first stage: <its first stage>)"}``, the name the ranked tables
    show (``first``: ``first_stages``; a system whose first stage is not on the board keeps its name)."""
    return {s: f"{s} (first stage: {f})" for s, f in (first or {}).items() if f is not None}


def comparisons(data: Mapping, scenario: str | None = None, measure: str | None = None) -> list[Comparison]:
    """Every reranked system of the board (a parsed leaderboard) against its first stage, per scenario
    (``scenario``, ``measure``: that one only); a first stage not on the board gives a comparison
    without scenarios."""
    out = []
    groups = _groups(data)
    for system, first in first_stages(data).items():
        key = _key(data["systems"][system])
        second, _, k = key.rerank
        items = []
        if first is not None:
            for group, pids in groups:
                if scenario is None or group[1] == scenario:
                    item = _scenario(data, first, system, group, pids, measure)
                    if item is not None:
                        items.append(item)
        first_name = SystemKey(key.retriever, key.revision, key.translation).label
        out.append(Comparison(system, first, first_name, second, k, tuple(items)))
    return out


def _ceiling_text(sc: ScenarioComparison) -> str:
    if sc.ceiling is None:
        return "–"
    spread = "" if sc.ceiling_pools == 1 else f" (pools {sc.ceiling_min:.3f}–{sc.ceiling_max:.3f})"
    some = "" if sc.ceiling_pools == sc.pools else f" [{sc.ceiling_pools}/{sc.pools} pools]"
    return f"{sc.ceiling_measure} {sc.ceiling:.3f}{spread}{some}"


def _cost_text(sc: ScenarioComparison) -> tuple[str, str, str]:
    pairs = "–" if sc.pairs is None else f"{sc.pairs:,}"
    seconds = "–" if sc.seconds is None else f"{sc.seconds:.3g}"
    rate = "–" if sc.pairs_per_s is None else f"{sc.pairs_per_s:,.0f}"
    return pairs, seconds, rate


def _heading(c: Comparison) -> str:
    return f"{c.system}: {c.second} reranks {c.first_stage}'s top {c.k}"


def _missing(c: Comparison) -> str:
    return (f"{c.system}: its first stage {c.first_name} (same revision and translation, not reranked) "
            f"is not on this board; no comparison")


def _intro(data: Mapping) -> str:
    sig = data["significance"]
    return (f"reranking: each reranked system against its first stage over the pools both have; Δ = reranked − "
            f"first stage (macro means over a scenario's pools, as the tables), its {float(sig['confidence']):.0%} "
            f"paired bootstrap interval ({sig['resamples']} resamples of each pool's queries, seed {sig['seed']}: "
            f"the boards' draws); recall ceiling: the first stage's R@K on the same pools (mean, min–max over "
            f"pools); cost: pairs scored, their seconds and pairs/s (summed over the pools)")


def format_text(data: Mapping, items: Sequence[Comparison]) -> str:
    """The comparisons as plain text under a heading; "" when the board has no reranked system."""
    if not items:
        return ""
    blocks = [_intro(data)]
    for c in items:
        if c.first_stage is None:
            blocks.append(_missing(c))
            continue
        rows = []
        for sc in c.scenarios:
            for i, d in enumerate(sc.differences):
                p = d.places
                rows.append((f"{sc.where} ({sc.pools}/{sc.board_pools} pools)" if i == 0 else "",
                             f"{d.measure} {d.arrow}", fmt(d.first, p), fmt(d.reranked, p), fmt(d.diff, p, sign=True),
                             f"[{fmt(d.ci_low, p, sign=True)}, {fmt(d.ci_high, p, sign=True)}]"))
        table = format_table(["scenario", "measure", "first stage", "reranked", "Δ", "95% CI of Δ"], rows,
                             right=(2, 3, 4, 5), rule=False)
        cost = format_table(["scenario", "recall ceiling", "pairs", "seconds", "pairs/s"],
                            [(sc.where, _ceiling_text(sc), *_cost_text(sc)) for sc in c.scenarios],
                            right=(2, 3, 4), rule=False)
        blocks.append(_heading(c) + "\n" + "\n".join(table) + "\n" + "\n".join(cost))
    return "\n\n".join(blocks)


def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _num(x: float) -> str:
    return "" if x is None or not math.isfinite(x) else repr(float(x))


def _table_html(c: Comparison, k: int) -> str:
    head = "".join(f'<th data-type="{t}">{_esc(h)}</th>' for h, t in (
        ("scenario", "text"), ("measure", "text"), ("first stage", "num"), ("reranked", "num"),
        ("Δ reranked − first stage", "num"), ("95% CI of Δ", "num")))
    body = []
    for sc in c.scenarios:
        for d in sc.differences:
            p = d.places
            diff = fmt(d.diff, p, sign=True)
            apart = diff if d.ci_low <= 0 <= d.ci_high else f'<b class="apart">{diff}</b>'
            body.append(f'<tr class="rerank-row" data-scenario="{_esc(sc.where)}" data-measure="{_esc(d.measure)}">'
                        f'<td data-v="{_esc(sc.where)}">{_esc(sc.where)} <span class="ci">({sc.pools}/{sc.board_pools} '
                        f'pools)</span></td><td data-v="{_esc(d.measure)}"><span class="dir">{_esc(d.measure)} '
                        f'{_esc(d.arrow)}</span></td><td data-v="{_num(d.first)}">{fmt(d.first, p)}</td>'
                        f'<td data-v="{_num(d.reranked)}">{fmt(d.reranked, p)}</td>'
                        f'<td data-v="{_num(d.diff)}">{apart}</td>'
                        f'<td data-v="{_num(d.ci_low)}" class="ci">[{fmt(d.ci_low, p, sign=True)}, '
                        f'{fmt(d.ci_high, p, sign=True)}]</td></tr>')
    cost = []
    for sc in c.scenarios:
        pairs, seconds, rate = _cost_text(sc)
        cost.append(f'<tr class="rerank-cost" data-scenario="{_esc(sc.where)}"><td data-v="{_esc(sc.where)}">'
                    f'{_esc(sc.where)}</td><td data-v="{_num(sc.ceiling)}">{_esc(_ceiling_text(sc))}</td>'
                    f'<td data-v="{sc.pairs if sc.pairs is not None else ""}">{_esc(pairs)}</td>'
                    f'<td data-v="{_num(sc.seconds)}">{_esc(seconds)}</td>'
                    f'<td data-v="{_num(sc.pairs_per_s)}">{_esc(rate)}</td></tr>')
    cost_head = "".join(f'<th data-type="{t}">{_esc(h)}</th>' for h, t in (
        ("scenario", "text"), ("recall ceiling", "num"), ("pairs", "num"), ("seconds", "num"), ("pairs/s", "num")))
    return (f'<div class="scroll"><table class="sortable" id="rerank-{k}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            f'<div class="scroll"><table class="sortable" id="rerank-cost-{k}"><thead><tr>{cost_head}</tr></thead>'
            f'<tbody>{"".join(cost)}</tbody></table></div>')


def reranking_html(data: Mapping) -> str:
    """The page's Reranking section (every string escaped); "" when the board has no reranked system."""
    items = comparisons(data)
    if not items:
        return ""
    out = [f'<section id="reranking"><h2>Reranking</h2><p class="note">{_esc(_intro(data)[len("reranking: "):])}; '
           f'a Δ in bold: its interval excludes 0.</p>']
    for k, c in enumerate(items):
        if c.first_stage is None:
            out.append(f'<p class="note rerank-missing">{_esc(_missing(c))}.</p>')
            continue
        out.append(f'<h3>{_esc(_heading(c))}</h3>' + _table_html(c, k))
    out.append("</section>")
    return "".join(out)
