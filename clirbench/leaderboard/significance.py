"""Ranked boards with significance groups, and query-language gaps, from a leaderboard's vectors.

A *board* is one (subset, scenario, pool mode, measure). A system's score on it is the macro
mean over the board's pools of its per-pool mean. Its interval is a percentile bootstrap in which
each pool's queries are resampled, the same indices for every system (paired); pools with the
same query ids (parallel data) share their indices, so a question is one unit across languages.

Groups, as in the CLIRudit paper's appendix tables: systems sorted best first; the best starts
group ``a``; each next system stays in the current group while the paired-bootstrap interval of
its difference with the group's leader contains 0, else it leads a new group.

Rank intervals: in every bootstrap resample (the same paired resamples as the scores' intervals)
each system gets a rank, 1 + the number of systems strictly better in that resample; a system's
interval is the (1 − confidence)/2 and (1 + confidence)/2 quantiles of its ranks, rounded outwards
to whole ranks ("rank 1–3": it could be first or third).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from . import store

__all__ = ["Row", "Board", "boards", "gaps", "group_letter", "rank_intervals"]


@dataclass(frozen=True)
class Row:
    system: str
    value: float
    ci_low: float
    ci_high: float
    rank: int | None      # None: the system lacks some of the board's pools (not ranked)
    group: str            # "a", "b", ...; "" when not ranked
    pools: int
    rank_low: int | None = None   # the rank's bootstrap interval (None when not ranked)
    rank_high: int | None = None

    @property
    def rank_interval(self) -> str:
        """``rank 1–3`` (``rank 2`` when both ends agree); "" when not ranked."""
        if self.rank_low is None:
            return ""
        return f"rank {self.rank_low}" if self.rank_low == self.rank_high else f"rank {self.rank_low}–{self.rank_high}"


@dataclass(frozen=True)
class Board:
    subset: str
    scenario: str
    pool_mode: str
    measure: str
    pools: tuple[str, ...]
    rows: tuple[Row, ...]
    num_langs: tuple[int, ...] = ()  # document languages of each pool (a target measure's best value)

    @property
    def target(self) -> float | None:
        """The best value of a "target" measure on this board: the mean over its pools of the
        family's ``target_for(k)`` (SameLangFirst: 100/k), as the board's value is the pools' mean."""
        f = self.family
        if f.direction != "target":
            return None
        return float(np.mean([f.target_for(k) for k in self.num_langs])) if self.num_langs else f.target

    def goodness(self, value):
        """The family's ranking key at this board's ``target``."""
        return self.family.goodness(value, self.target)

    @property
    def family(self):
        """The measure's family record (direction, target, labels)."""
        from ..measures import parse

        return parse(self.measure).record

    @property
    def higher_is_better(self) -> bool:
        return self.family.direction == "up"

    @property
    def direction_label(self) -> str:
        """``higher is better``, ``lower is better`` or ``best at 50`` (``best at 33.3``: three languages)."""
        target = self.target
        if target is None or target == self.family.target:
            return self.family.direction_label
        return f"best at {round(target, 1):g}"

    @property
    def arrow(self) -> str:
        """Column marker: ↑, ↓ or ``best at <target>`` (this board's)."""
        return self.family.arrow if self.family.direction != "target" else self.direction_label

    @property
    def title(self) -> str:
        head = f"{self.subset}/" if self.subset else ""
        mode = "" if self.pool_mode == "unique" else f" ({self.pool_mode})"
        return f"{head}{self.scenario}{mode} · {self.measure}"


def group_letter(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


def _vector(leaderboard: Mapping, system: str, pid: str, measure: str) -> np.ndarray | None:
    res = leaderboard["systems"][system]["results"].get(pid)
    if res is None:
        return None
    text = res["per_query"].get("measures", {}).get(measure)
    if text is None:
        return None
    n = leaderboard["pools"][pid]["num_queries"]
    return store.decode_vector(text, n, f"{system} {pid} {measure}")


def _seed(base: int, ids_hash: str) -> int:
    return (int(base) ^ int(ids_hash[:12], 16)) & (2**63 - 1)


_COUNTS: dict[tuple[int, int, int], np.ndarray] = {}
_MAX_CACHED = 1 << 24  # numbers in one cached (resamples × queries) count matrix


def _counts(n: int, resamples: int, seed: int) -> np.ndarray:
    """How often each query is drawn in each resample: the draws of ``stats.bootstrap_means``."""
    key = (n, resamples, seed)
    if key not in _COUNTS:
        rng = np.random.default_rng(seed)
        counts = np.empty((resamples, n))
        for row in range(resamples):
            counts[row] = np.bincount(rng.integers(0, n, size=n), minlength=n)
        if len(_COUNTS) > 8:
            _COUNTS.clear()
        _COUNTS[key] = counts
    return _COUNTS[key]


def _boot(cols: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    from ..stats import bootstrap_means, quiet_float_warnings, resample_product

    n = cols.shape[0]
    if n * resamples > _MAX_CACHED:
        return bootstrap_means(cols, resamples, seed)
    counts = _counts(n, resamples, seed)
    defined = ~np.isnan(cols)
    with quiet_float_warnings():
        return resample_product(counts, np.where(defined, cols, 0.0)) / resample_product(counts, defined.astype(np.float64))


def _macro(leaderboard: Mapping, systems: list[str], pids: list[str], measure: str, resamples: int, seed: int):
    from ..stats import quiet_float_warnings

    point = np.zeros(len(systems))
    boots = np.zeros((resamples, len(systems)))
    for pid in pids:
        cols = np.stack([_vector(leaderboard, s, pid, measure) for s in systems], axis=1)
        with quiet_float_warnings():
            point += np.nanmean(cols, axis=0)
        boots += _boot(cols, resamples, _seed(seed, leaderboard["pools"][pid]["query_ids_sha256"]))
    return point / len(pids), boots / len(pids)


def _quantiles(x: np.ndarray, confidence: float) -> tuple:
    from ..stats import percentile_interval

    return percentile_interval(x, confidence)


def rank_intervals(good_boots: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Per system (column of ``good_boots``: resamples × systems, higher is better), the bootstrap
    interval of its rank: quantiles of 1 + #systems strictly better in each resample, outwards."""
    good = np.where(np.isnan(good_boots), -np.inf, good_boots)
    ranks = 1 + (good[:, None, :] > good[:, :, None]).sum(axis=2)  # [b, j]: systems better than j
    alpha = (1.0 - confidence) / 2
    return (np.quantile(ranks, alpha, axis=0, method="lower").astype(int),
            np.quantile(ranks, 1 - alpha, axis=0, method="higher").astype(int))


def _rank(board_systems: list[str], point: np.ndarray, boots: np.ndarray, goodness, confidence: float):
    """Order by ``goodness`` (the family's: x, -x or -|x - target|) and group against each leader."""
    good, good_boots = goodness(point), goodness(boots)
    order = sorted(range(len(board_systems)), key=lambda j: (-good[j], board_systems[j]))
    groups, leader, g = {}, None, -1
    for j in order:
        if leader is not None:
            lo, hi = _quantiles(good_boots[:, leader] - good_boots[:, j], confidence)
            same = not (lo > 0 or hi < 0) or (math.isnan(lo) and math.isnan(hi))
        else:
            same = False
        if not same:
            leader, g = j, g + 1
        groups[j] = group_letter(g)
    return order, groups


def boards(leaderboard: Mapping, measures: Mapping[str, list[str]] | None = None) -> list[Board]:
    """Every board of the leaderboard: one per (subset, scenario, pool mode) and ranking measure.

    Ranking measures are those with per-query vectors stored (the task card's main measures
    that have a per-query column), unless ``measures`` maps scenarios to other names.
    """
    from ..measures import parse

    sig = leaderboard["significance"]
    resamples, seed, confidence = sig["resamples"], sig["seed"], sig["confidence"]
    groups: dict[tuple, list[str]] = {}
    for pid, pool in leaderboard["pools"].items():
        groups.setdefault((pool["subset"], pool["scenario"], pool["pool_mode"]), []).append(pid)
    out = []
    for (subset, scenario, mode), pids in sorted(groups.items()):
        pids = sorted(pids)
        names: list[str] = []
        for system in leaderboard["systems"].values():
            for pid in pids:
                for m in system["results"].get(pid, {}).get("per_query", {}).get("measures", {}):
                    if m not in names:
                        names.append(m)
        if measures and scenario in measures:
            names = [m for m in measures[scenario] if m in names]
        for measure in names:
            complete = [s for s, sysd in sorted(leaderboard["systems"].items())
                        if all(measure in sysd["results"].get(p, {}).get("per_query", {}).get("measures", {})
                               for p in pids)]
            family = parse(measure).record
            num_langs = tuple(len(leaderboard["pools"][p]["doc_langs"]) for p in pids)
            target = float(np.mean([family.target_for(k) for k in num_langs])) if family.direction == "target" else None
            goodness = lambda x, family=family, target=target: family.goodness(x, target)  # noqa: E731
            rows = []
            if complete:
                point, boots = _macro(leaderboard, complete, pids, measure, resamples, seed)
                low, high = _quantiles(boots, confidence)
                order, letters = _rank(complete, point, boots, goodness, confidence)
                rank_low, rank_high = rank_intervals(goodness(boots), confidence)
                for rank, j in enumerate(order, start=1):
                    rows.append(Row(complete[j], float(point[j]), float(low[j]), float(high[j]), rank,
                                    letters[j], len(pids), int(rank_low[j]), int(rank_high[j])))
            for s, sysd in sorted(leaderboard["systems"].items()):
                if s in complete:
                    continue
                have = [p for p in pids if p in sysd["results"] and measure in sysd["results"][p]["measures"]]
                if have:
                    vals = [sysd["results"][p]["measures"][measure]["value"] for p in have]
                    vals = [v for v in vals if v is not None]
                    mean = float(np.mean(vals)) if vals else math.nan
                    rows.append(Row(s, mean, math.nan, math.nan, None, "", len(have)))
            if rows:
                out.append(Board(subset, scenario, mode, measure, tuple(pids), tuple(rows), num_langs))
    return out


def gaps(leaderboard: Mapping, scenario: str, measure: str, subset: str = "", pool_mode: str = "unique"
         ) -> dict[str, dict[str, float]]:
    """Query-language gap per system and bilingual pool ``L1-L2``: mean with queries in L2 minus in L1.

    Paired by question (both pools must have the same query ids); pairs without both are left out.
    """
    out: dict[str, dict[str, float]] = {}
    pools = leaderboard["pools"]
    for system in sorted(leaderboard["systems"]):
        row = {}
        for pid, pool in sorted(pools.items()):
            langs = pool["doc_langs"]
            if (pool["scenario"], pool["subset"], pool["pool_mode"]) != (scenario, subset, pool_mode) \
                    or len(langs) != 2 or pool["query_lang"] != langs[0]:
                continue
            other = store.pool_id(subset, scenario, pool_mode, langs, langs[1])
            if other not in pools or pools[other]["query_ids_sha256"] != pool["query_ids_sha256"]:
                continue
            v1 = _vector(leaderboard, system, pid, measure)
            v2 = _vector(leaderboard, system, other, measure)
            if v1 is None or v2 is None:
                continue
            d = v2 - v1
            d = d[~np.isnan(d)]
            if d.size:
                row["-".join(langs)] = float(d.mean())
        if row:
            out[system] = row
    return out
