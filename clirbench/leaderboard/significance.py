"""Ranked boards with significance groups, and query-language gaps, from a leaderboard's vectors.

A *board* is one (subset, scenario, pool mode, number of document languages, measure): pools of
two languages (``multi/en-zh``) and of twelve (``multi/en-ar-…``) are different boards, as their
values are not comparable (``best at 50`` vs ``best at 8.3``). A system's score on it is the macro
mean over the board's pools of its per-pool mean. Its interval is a percentile bootstrap in which
each pool's queries are resampled, the same indices for every system (paired); pools with the
same query ids (parallel data) share their indices, so a question is one unit across languages.

Pairwise tests: for every pair of ranked systems, the two-sided paired-bootstrap p-value of their
difference (``pair_p_values``: the difference over its bootstrap standard error, the same paired
resamples, against the normal; a count of resamples past 0 could not go below 1/B, which a
correction over many pairs would push above any level). The pairs of every main
measure of one (subset, scenario, pool mode) are one family, adjusted by Holm (default), BH or none
(``stats.correction``); those of its language exposure measures (``validate.EXPOSURE_COLUMNS``)
another (``correction_family``), so that a board gaining them keeps its groups.

Groups, as in the CLIRudit paper's appendix tables: systems sorted best first; the best starts
group ``a``; each next system stays in the current group while the adjusted p-value of its
difference with the group's leader is at least 1 − confidence, else it leads a new group.

Rank intervals: in every bootstrap resample (the same paired resamples as the scores' intervals)
each system gets a rank, 1 + the number of systems strictly better in that resample; a system's
interval is the (1 − confidence)/2 and (1 + confidence)/2 quantiles of its ranks, rounded outwards
to whole ranks ("rank 1–3": it could be first or third).

Overall rank intervals generalise over pools as well (``two_level``): each resample b draws the
board's pools with replacement (``numpy.random.default_rng(seed)``, P draws of P pools per resample),
and each drawn pool contributes its query-resampled mean of row b (the same paired query draws as
above); a system's overall value in resample b is the mean over the drawn pools, its interval the
quantiles of its ranks over those resamples.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..measures import parse
from ..stats import bootstrap_means, percentile_interval, quiet_float_warnings, resample_product
from ..stats.correction import adjust, describe, family_size
from ..tasks import get_task
from ..util.checks import CORRECTIONS, check_correction
from . import store

__all__ = ["Row", "Pair", "Board", "boards", "correction_family", "gaps", "group_letter", "rank_intervals", "pair_p_values",
           "board_target", "per_query_vector", "macro_means",
           "two_level", "headlines", "main_measures", "overall_table", "DEFAULT_CORRECTION", "where_title"]

DEFAULT_CORRECTION = CORRECTIONS[0]


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
    overall_low: int | None = None   # the rank's interval with pools resampled too (two_level)
    overall_high: int | None = None

    @property
    def rank_interval(self) -> str:
        """``rank 1–3`` (``rank 2`` when both ends agree); "" when not ranked."""
        return _span(self.rank_low, self.rank_high)

    @property
    def overall_interval(self) -> str:
        """The overall rank interval (pools and queries resampled), as ``rank 1–3``."""
        return _span(self.overall_low, self.overall_high)


def _span(low: int | None, high: int | None) -> str:
    if low is None:
        return ""
    return f"rank {low}" if low == high else f"rank {low}–{high}"


@dataclass(frozen=True)
class Pair:
    """One pairwise test of a board: ``better`` (ranked higher) against ``worse``."""

    better: str
    worse: str
    p_value: float
    p_adjusted: float


@dataclass(frozen=True)
class Board:
    subset: str
    scenario: str
    pool_mode: str
    measure: str
    pools: tuple[str, ...]
    rows: tuple[Row, ...]
    pairs: tuple[Pair, ...] = ()
    correction: str = DEFAULT_CORRECTION
    family_size: int = 0   # tests in the family the pairs were adjusted over
    num_langs: tuple[int, ...] = ()  # document languages of each pool (a target measure's best value)

    @property
    def correction_note(self) -> str:
        """One line: the test, the correction and the family it ran over."""

        scope = ("every pair of systems × every language exposure measure of this scenario"
                 if correction_family(self.measure) == "exposure" else
                 "every pair of systems × every main measure of this scenario")
        return "paired bootstrap, two-sided; " + describe(self.correction, self.family_size, scope)

    @property
    def target(self) -> float | None:
        """The best value of a "target" measure on this board: the mean over its pools of the
        family's ``target_for(k)`` (SameLangFirst: 100/k), as the board's value is the pools' mean."""
        return board_target(self.family, self.num_langs)

    def goodness(self, value):
        """The family's ranking key at this board's ``target``."""
        return self.family.goodness(value, self.target)

    @property
    def family(self):
        """The measure's family record (direction, target, labels)."""

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
    def langs(self) -> int:
        """The number of document languages of each of the board's pools."""
        return self.num_langs[0] if self.num_langs else 0

    @property
    def key(self) -> tuple:
        """(subset, scenario, pool mode, languages): the boards of one key share pools and a family of tests."""
        return (self.subset, self.scenario, self.pool_mode, self.langs)

    @property
    def where(self) -> str:
        """``multi``, ``sub/multi (per-query)``, ``multi (12 languages)``: the title without its measure."""
        return where_title(self.subset, self.scenario, self.pool_mode, self.langs)

    @property
    def title(self) -> str:
        return f"{self.where} · {self.measure}"


def where_title(subset: str, scenario: str, pool_mode: str, langs: int) -> str:
    """A board's place: ``[subset/]scenario[ (mode)][ (k languages)]``; pools of one or two
    document languages (the usual shapes) name no count."""
    head = f"{subset}/" if subset else ""
    mode = "" if pool_mode == "unique" else f" ({pool_mode})"
    count = f" ({langs} languages)" if langs > 2 else ""
    return f"{head}{scenario}{mode}{count}"


def group_letter(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


def board_target(family, num_langs: Sequence[int]) -> float | None:
    """A "target" measure's best value over pools of ``num_langs`` document languages each: the mean
    of the family's ``target_for(k)`` (SameLangFirst: 100/k); None for other measures."""
    if family.direction != "target":
        return None
    return float(np.mean([family.target_for(k) for k in num_langs])) if num_langs else family.target


def per_query_vector(leaderboard: Mapping, system: str, pid: str, measure: str) -> np.ndarray | None:
    """``system``'s per-query values of ``measure`` on pool ``pid`` (None where it has none)."""
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
    n = cols.shape[0]
    if n * resamples > _MAX_CACHED:
        return bootstrap_means(cols, resamples, seed)
    counts = _counts(n, resamples, seed)
    defined = ~np.isnan(cols)
    with quiet_float_warnings():
        return resample_product(counts, np.where(defined, cols, 0.0)) / resample_product(counts, defined.astype(np.float64))


def macro_means(leaderboard: Mapping, systems: list[str], pids: list[str], measure: str, resamples: int, seed: int):
    """Macro means over ``pids``: the point (systems,), the resamples (resamples × systems) and each
    pool's resampled means (pools × resamples × systems)."""

    point = np.zeros(len(systems))
    per_pool = np.empty((len(pids), resamples, len(systems)))
    for k, pid in enumerate(pids):
        cols = np.stack([per_query_vector(leaderboard, s, pid, measure) for s in systems], axis=1)
        with quiet_float_warnings():
            point += np.nanmean(cols, axis=0)
        per_pool[k] = _boot(cols, resamples, _seed(seed, leaderboard["pools"][pid]["query_ids_sha256"]))
    return point / len(pids), per_pool.sum(axis=0) / len(pids), per_pool


def two_level(per_pool: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """(resamples × systems) means over pools drawn with replacement: resample b draws P of the P
    pools (``default_rng(seed)``) and averages their query-resampled means of row b."""
    pools = per_pool.shape[0]
    rng = np.random.default_rng(seed)
    draws = np.empty((resamples, pools))
    for b in range(resamples):
        draws[b] = np.bincount(rng.integers(0, pools, size=pools), minlength=pools)
    undefined = np.isnan(per_pool)
    total = np.einsum("bp,pbs->bs", draws, np.where(undefined, 0.0, per_pool))
    missing = np.einsum("bp,pbs->bs", draws, undefined.astype(np.float64)) > 0
    return np.where(missing, np.nan, total / pools)


def pair_p_values(good: np.ndarray, good_boots: np.ndarray) -> np.ndarray:
    """(systems × systems) two-sided paired-bootstrap p-values of the differences of ``good``
    (systems, higher is better): ``erfc(|z| / sqrt 2)`` with ``z = (good_i - good_j) / se``, ``se`` the
    standard deviation of the difference over the paired resamples ``good_boots`` (resamples ×
    systems; resamples where either is NaN left out). NaN on the diagonal and where fewer than two
    resamples are defined; a difference that never varies has p 1 when it is 0, else 0."""
    k = good_boots.shape[1]
    d = good_boots[:, :, None] - good_boots[:, None, :]

    with quiet_float_warnings():
        se = np.nanstd(d, axis=0, ddof=1)
        diff = np.abs(good[:, None] - good[None, :])
        z = np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.where(diff > 0, np.inf, 0.0))
    p = np.array([[math.erfc(v / math.sqrt(2)) if not math.isnan(v) else math.nan for v in row] for row in z])
    p[(~np.isnan(d)).sum(axis=0) < 2] = np.nan
    p[np.arange(k), np.arange(k)] = np.nan
    return p


def _quantiles(x: np.ndarray, confidence: float) -> tuple:
    return percentile_interval(x, confidence)


def rank_intervals(good_boots: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Per system (column of ``good_boots``: resamples × systems, higher is better), the bootstrap
    interval of its rank: quantiles of 1 + #systems strictly better in each resample, outwards."""
    good = np.where(np.isnan(good_boots), -np.inf, good_boots)
    ranks = 1 + (good[:, None, :] > good[:, :, None]).sum(axis=2)  # [b, j]: systems better than j
    alpha = (1.0 - confidence) / 2
    return (np.quantile(ranks, alpha, axis=0, method="lower").astype(int),
            np.quantile(ranks, 1 - alpha, axis=0, method="higher").astype(int))


def _rank(board_systems: list[str], good: np.ndarray, adjusted: np.ndarray, alpha: float):
    """Order by goodness (the family's: x, -x or -|x - target|) and group against each leader:
    a system joins the leader's group while their adjusted p-value is >= ``alpha`` (or NaN)."""
    order = sorted(range(len(board_systems)), key=lambda j: (-good[j], board_systems[j]))
    groups, leader, g = {}, None, -1
    for j in order:
        if leader is not None:
            p = adjusted[leader, j]
            same = bool(math.isnan(p) or p >= alpha)
        else:
            same = False
        if not same:
            leader, g = j, g + 1
        groups[j] = group_letter(g)
    return order, groups


def _complete(leaderboard: Mapping, pids: list[str], measure: str) -> list[str]:
    return [s for s, sysd in sorted(leaderboard["systems"].items())
            if all(measure in sysd["results"].get(p, {}).get("per_query", {}).get("measures", {}) for p in pids)]


def _partial_rows(leaderboard: Mapping, complete: list[str], pids: list[str], measure: str) -> list[Row]:
    rows = []
    for s, sysd in sorted(leaderboard["systems"].items()):
        if s in complete:
            continue
        have = [p for p in pids if p in sysd["results"] and measure in sysd["results"][p]["measures"]]
        if have:
            vals = [sysd["results"][p]["measures"][measure]["value"] for p in have]
            vals = [v for v in vals if v is not None]
            mean = float(np.mean(vals)) if vals else math.nan
            rows.append(Row(s, mean, math.nan, math.nan, None, "", len(have)))
    return rows


def correction_family(measure: str) -> str:
    """The family of tests a board of ``measure`` joins within its scenario: ``exposure`` for the
    language exposure measures (which read the ranking's head: Share@10, AWRF@10, alpha_nDCG@20),
    ``main`` for the others; a board that gains exposure columns keeps its main groups as they were."""
    return "exposure" if parse(measure).record.needs_head else "main"


def _adjusted(measures: Sequence[str], raw: Sequence[np.ndarray], upper: Sequence, correction: str
              ) -> tuple[list[np.ndarray], list[int]]:
    """Per board (``measures[i]``'s raw pairwise p-values ``raw[i]``, their upper triangle
    ``upper[i]``): the p-values adjusted over its ``correction_family`` (symmetric, NaN on the diagonal), and
    that family's size."""
    out: list = [None] * len(raw)
    sizes = [0] * len(raw)
    for family in dict.fromkeys(map(correction_family, measures)):
        members = [i for i, m in enumerate(measures) if correction_family(m) == family]
        flat_raw = np.concatenate([raw[i][upper[i]] for i in members] or [np.zeros(0)])
        flat, size = adjust(flat_raw, correction), family_size(flat_raw)
        start = 0
        for i in members:
            u = upper[i]
            adjusted = np.full(raw[i].shape, math.nan)
            adjusted[u] = flat[start:start + len(u[0])]
            adjusted[(u[1], u[0])] = adjusted[u]
            start += len(u[0])
            out[i], sizes[i] = adjusted, size
    return out, sizes


def boards(leaderboard: Mapping, measures: Mapping[str, list[str]] | None = None,
           correction: str = DEFAULT_CORRECTION) -> list[Board]:
    """Every board of the leaderboard: one per (subset, scenario, pool mode, number of document
    languages) and ranking measure.

    Ranking measures are those with per-query vectors stored (the task card's main measures
    that have a per-query column), unless ``measures`` maps scenarios to other names. The pairwise
    p-values of the boards of one such key are one family, adjusted by
    ``correction`` (``holm``, ``bh`` or ``none``) before the groups are drawn.
    """

    check_correction(correction)
    sig = leaderboard["significance"]
    resamples, seed, confidence = sig["resamples"], sig["seed"], sig["confidence"]
    groups: dict[tuple, list[str]] = {}
    for pid, pool in leaderboard["pools"].items():
        groups.setdefault((pool["subset"], pool["scenario"], pool["pool_mode"], len(pool["doc_langs"])), []).append(pid)
    out = []
    for (subset, scenario, mode, _), pids in sorted(groups.items()):
        pids = sorted(pids)
        names: list[str] = []
        for system in leaderboard["systems"].values():
            for pid in pids:
                for m in system["results"].get(pid, {}).get("per_query", {}).get("measures", {}):
                    if m not in names:
                        names.append(m)
        if measures and scenario in measures:
            names = [m for m in measures[scenario] if m in names]
        names.sort(key=lambda m: correction_family(m) == "exposure")  # the language exposure columns last
        num_langs = tuple(len(leaderboard["pools"][p]["doc_langs"]) for p in pids)
        found = []  # (measure, complete systems, point, goodness of the resamples, overall resamples)
        for measure in names:
            complete = _complete(leaderboard, pids, measure)
            if complete:
                family = parse(measure).record
                target = board_target(family, num_langs)
                goodness = lambda x, family=family, target=target: family.goodness(x, target)  # noqa: E731
                point, boots, per_pool = macro_means(leaderboard, complete, pids, measure, resamples, seed)
                overall = two_level(per_pool, resamples, seed)
                found.append((measure, complete, goodness(point), point, boots, goodness(boots), goodness(overall)))
            else:
                found.append((measure, [], None, None, None, None, None))
        raw = [pair_p_values(f[2], f[5]) if f[1] else np.zeros((0, 0)) for f in found]
        upper = [np.triu_indices(len(f[1]), 1) for f in found]
        every_adjusted, sizes = _adjusted([f[0] for f in found], raw, upper, correction)
        for (measure, complete, good, point, boots, good_boots, good_overall), p, u, adjusted, size in zip(
                found, raw, upper, every_adjusted, sizes):
            rows, pairs = [], []
            if complete:
                low, high = _quantiles(boots, confidence)
                order, letters = _rank(complete, good, adjusted, 1.0 - confidence)
                rank_low, rank_high = rank_intervals(good_boots, confidence)
                all_low, all_high = rank_intervals(good_overall, confidence)
                finite = np.where(np.isnan(good), -np.inf, good)
                for j in order:  # tied systems share a rank (1 + the systems strictly better), as in the intervals
                    rank = 1 + int(np.count_nonzero(finite > finite[j]))
                    rows.append(Row(complete[j], float(point[j]), float(low[j]), float(high[j]), rank,
                                    letters[j], len(pids), int(rank_low[j]), int(rank_high[j]),
                                    int(all_low[j]), int(all_high[j])))
                position = {j: k for k, j in enumerate(order)}
                for i, j in zip(*u):
                    a, b = sorted((i, j), key=position.get)
                    pairs.append(Pair(complete[a], complete[b], float(p[a, b]), float(adjusted[a, b])))
            rows += _partial_rows(leaderboard, complete, pids, measure)
            if rows:
                out.append(Board(subset, scenario, mode, measure, tuple(pids), tuple(rows), tuple(pairs),
                                 correction, size, num_langs))
    return out


def main_measures(task: str) -> dict:
    """The task card's main measures per scenario ({} for a task this clirbench does not know)."""

    try:
        return {k: [str(m) for m in v] for k, v in get_task(task).card.main_measures.items()}
    except Exception:  # an unknown task: boards keep their stored order
        return {}


def headlines(items, main_measures: Mapping[str, Sequence[str]] | None = None) -> list[Board]:
    """One board per (subset, scenario, pool mode, languages): the one whose measure comes first in
    ``main_measures[scenario]`` (a task card's), else the first."""
    out: dict[tuple, Board] = {}
    for b in items:
        order = list((main_measures or {}).get(b.scenario, ()))
        key = b.key
        pos = order.index(b.measure) if b.measure in order else len(order)
        if key not in out or pos < (order.index(out[key].measure) if out[key].measure in order else len(order)):
            out[key] = b
    return list(out.values())


def overall_table(items) -> list[tuple[str, dict[str, Row]]]:
    """``[(system, {board title: row})]`` over ``items`` (headline boards), systems in order of their
    mean rank over the boards that rank them (unranked last)."""
    systems = sorted({r.system for b in items for r in b.rows})
    cells = {s: {b.title: r for b in items for r in b.rows if r.system == s} for s in systems}

    def key(s):
        ranks = [r.rank for r in cells[s].values() if r.rank is not None]
        return (not ranks, sum(ranks) / len(ranks) if ranks else 0.0, s)

    return [(s, cells[s]) for s in sorted(systems, key=key)]


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
            v1 = per_query_vector(leaderboard, system, pid, measure)
            v2 = per_query_vector(leaderboard, system, other, measure)
            if v1 is None or v2 is None:
                continue
            d = v2 - v1
            d = d[~np.isnan(d)]
            if d.size:
                row["-".join(langs)] = float(d.mean())
        if row:
            out[system] = row
    return out
