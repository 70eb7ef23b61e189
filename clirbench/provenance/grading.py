"""Grading a re-run against the entry it reproduces (docs/results.md#reproduce).

Each reported measure is the *same* (value and interval equal up to a bootstrap's float sums),
*within* the entry's own 95% interval, or *outside* it. An entry is

- **identical**: every measure the same and every per-query value equal (a board keeps float32);
- **OKish**: not identical, but every value within its interval; the per-query differences are
  counted and tested (paired bootstrap and randomisation test, ``stats.paired``), and whether the
  hardware or the software differ is said;
- **FAIL**: a value outside its interval, a measure the re-run lacks, other queries, per-query
  values that do not give the entry's own mean, or per-query values that differ where every value
  is the same (a table that is not this run's). The queries that moved most are listed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from ..measures import parse
from ..stats.flips import Flip
from ..stats.paired import PairedDifference, paired_rows
from .entries import Entry, ids_hash

__all__ = ["IDENTICAL", "OKISH", "FAIL", "MeasureGrade", "QueryDiff", "Grade", "grade", "TOLERANCE"]

IDENTICAL, OKISH, FAIL = "identical", "OKish", "FAIL"
TOLERANCE = 1e-6  # an interval's ends, as the leaderboard reads them (leaderboard.validate.TOLERANCE)
_F32_ULP = 2.0 ** -23


@dataclass(frozen=True)
class MeasureGrade:
    """One reported measure: the entry's value and 95% interval, the re-run's value, and the verdict
    ``same``, ``within`` (the entry's interval) or ``outside``."""

    name: str
    recorded: float
    ci_low: float
    ci_high: float
    rerun: float
    verdict: str


@dataclass(frozen=True)
class QueryDiff:
    """One per-query measure: the queries whose value differs (ids), the largest |difference| and
    the paired test of re-run − entry over the queries (None when none differs)."""

    name: str
    differing: tuple[str, ...]
    largest: float
    paired: PairedDifference | None = None


@dataclass(frozen=True)
class Grade:
    """An entry's grade, the verdict of each measure and per-query measure, why it fails
    (``reasons``), what differs about the machine and software (``notes``), and the queries that
    moved most (``moved``, of the measure ``moved_measure``: A the entry, B the re-run)."""

    entry: Entry
    grade: str
    measures: tuple[MeasureGrade, ...]
    per_query: tuple[QueryDiff, ...]
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    moved_measure: str | None = None
    moved: tuple[Flip, ...] = ()

    @property
    def counts(self) -> dict[str, int]:
        out = {"same": 0, "within": 0, "outside": 0}
        for m in self.measures:
            out[m.verdict] += 1
        return out


def _num(x) -> float:
    return math.nan if x is None else float(x)


def _close(a: float, b: float) -> bool:
    """Equal, up to the last bits a bootstrap's float sums may differ by (NaN equals NaN)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _measure_grade(name: str, recorded: Mapping, rerun) -> MeasureGrade:
    va, lo, hi = (_num(recorded.get(k)) for k in ("value", "ci_low", "ci_high"))
    if rerun is None:
        return MeasureGrade(name, va, lo, hi, math.nan, "outside")
    vb = _num(rerun.value)
    same = (_close(va, vb) and _close(lo, _num(rerun.ci_low)) and _close(hi, _num(rerun.ci_high))
            and recorded.get("n") == rerun.n)
    if same:
        verdict = "same"
    elif math.isnan(va) or math.isnan(vb) or recorded.get("n") != rerun.n:
        verdict = "outside"
    else:
        verdict = "within" if lo - TOLERANCE <= vb <= hi + TOLERANCE else "outside"
    return MeasureGrade(name, va, lo, hi, vb, verdict)


def _aligned(entry: Entry, ids: Sequence[str], values: Mapping[str, np.ndarray]):
    """``(query ids, {measure: (entry's vector, re-run's vector)})`` in the entry's query order, or
    ``(None, why)`` when the re-run's queries are not the entry's. A board keeps float32: the
    re-run's values are rounded to float32 before they are compared."""
    ids = [str(q) for q in ids]
    if entry.sorted_ids:
        if ids_hash(ids) != entry.query_ids_sha256:
            return None, "the re-run's queries are not the board pool's (their ids' SHA-256 differs)"
        order = np.argsort(np.array(ids, dtype=object), kind="stable")
        names = [ids[i] for i in order]
        take = lambda v: np.asarray(v, dtype=np.float64)[order].astype("<f4").astype(np.float64)  # noqa: E731
    else:
        if set(ids) != set(entry.query_ids) or len(ids) != len(entry.query_ids):
            return None, (f"the re-run's queries are not the entry's ({len(set(entry.query_ids) - set(ids))} "
                          f"missing, {len(set(ids) - set(entry.query_ids))} others)")
        pos = {q: i for i, q in enumerate(ids)}
        names = list(entry.query_ids)
        index = np.fromiter((pos[q] for q in names), dtype=np.int64, count=len(names))
        take = lambda v: np.asarray(v, dtype=np.float64)[index]  # noqa: E731
    pairs = {m: (np.asarray(vec, dtype=np.float64), take(values[m])) for m, vec in entry.vectors.items()
             if m in values}
    return names, pairs


def _inconsistent(entry: Entry, name: str, vector: np.ndarray) -> str | None:
    """Why the entry's per-query ``name`` values do not give its own reported value (None: they do)."""
    recorded = entry.measures.get(name) or {}
    value = _num(recorded.get("value"))
    try:
        of_mean = parse(name).of_mean
    except ValueError:
        return None
    finite = vector[np.isfinite(vector)]
    if of_mean or math.isnan(value) or not finite.size:
        return None
    mean = float(finite.mean())
    scale = float(np.abs(finite).max())
    tol = (4 * _F32_ULP * scale if entry.sorted_ids else 1e-9 * max(1.0, abs(value))) + 1e-12
    if abs(mean - value) > tol or finite.size != recorded.get("n", finite.size):
        return (f"the entry's per-query {name} values do not give its own {name} (their mean {mean:.6g} over "
                f"{finite.size} queries, the entry says {value:.6g} over {recorded.get('n')}): an edited table?")
    return None


def _environment(entry: Entry, rerun_record) -> tuple[str, ...]:
    """What differs between the machine and software of the entry and of the re-run."""
    notes = []
    hw = entry.hardware or {}
    here = rerun_record.hardware
    was = (hw.get("cpu"), hw.get("cores"), hw.get("gpu"))
    now = (here.cpu, here.cores, here.gpu)
    if was != now:
        show = lambda cpu, cores, gpu: f"{cpu}, {cores} cores" + (f", {gpu}" if gpu else "")  # noqa: E731
        notes.append(f"other hardware: {show(*was)} recorded, {show(*now)} here")
    versions = entry.retriever.get("library_versions")
    now_versions = rerun_record.retriever.settings.get("library_versions")
    if entry.clirbench_version and entry.clirbench_version != rerun_record.clirbench_version:
        notes.append(f"other clirbench: {entry.clirbench_version} recorded, {rerun_record.clirbench_version} here")
    if isinstance(versions, Mapping) and isinstance(now_versions, Mapping) and dict(versions) != dict(now_versions):
        changed = sorted(k for k in set(versions) | set(now_versions) if versions.get(k) != now_versions.get(k))
        notes.append("other library versions: " + ", ".join(
            f"{k} {versions.get(k, '-')} recorded, {now_versions.get(k, '-')} here" for k in changed))
    return tuple(notes)


def _query_diffs(names, pairs, entry: Entry, permutations: int) -> tuple[QueryDiff, ...]:
    """Per per-query measure: the queries that differ and, where some do, the paired test."""
    out = []
    bootstrap = entry.bootstrap or {}
    for m, (a, b) in pairs.items():
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        if not differ.any():
            out.append(QueryDiff(m, (), 0.0))
            continue
        gap = np.abs(b - a)
        largest = float(np.nanmax(gap)) if np.isfinite(gap).any() else math.inf
        row = None
        if (~(np.isnan(a) | np.isnan(b))).sum() > 1:
            row = paired_rows(a[:, None], b[:, None], [m], int(bootstrap.get("resamples", 1000)),
                              int(bootstrap.get("seed", 42)), permutations)[m]
        out.append(QueryDiff(m, tuple(names[i] for i in np.flatnonzero(differ)), largest, row))
    return tuple(out)


def _moved(names, pairs, diffs: Sequence[QueryDiff], k: int, query_lang: str,
           texts: Callable[[], Mapping[str, str]] | None) -> tuple[str | None, tuple[Flip, ...]]:
    """The ``k`` queries whose value moved most, of the per-query measure with the most differing
    queries (A the entry, B the re-run), largest |B − A| first, with their texts."""
    worst = max(diffs, key=lambda d: len(d.differing), default=None)
    if worst is None or not worst.differing or k <= 0:
        return None, ()
    a, b = pairs[worst.name]
    gap = np.abs(b - a)
    gap = np.where(np.isnan(gap) & ~(np.isnan(a) & np.isnan(b)), np.inf, gap)
    top = sorted((i for i in range(len(names)) if gap[i] > 0), key=lambda i: (-gap[i], names[i]))[:k]
    shown = dict(texts() if texts is not None else {})
    return worst.name, tuple(Flip(names[i], query_lang, shown.get(names[i], ""), float(a[i]), float(b[i]))
                             for i in top)


def _outside(m: MeasureGrade) -> str:
    """Why a measure is ``outside``: a value beyond the entry's interval, or measured on one side only."""
    if math.isnan(m.recorded) or math.isnan(m.rerun):
        return f"{m.name}: {m.recorded:.6g} recorded, {m.rerun:.6g} re-run (a value on one side only)"
    return (f"{m.name}: {m.recorded:.6g} recorded, {m.rerun:.6g} re-run, outside its 95% interval "
            f"[{m.ci_low:.6g}, {m.ci_high:.6g}]")


def grade(entry: Entry, rerun, *, flips: int = 5, permutations: int = 10000,
          texts: Callable[[], Mapping[str, str]] | None = None) -> Grade:
    """Grade ``rerun`` (a ``PoolResult``: the entry's pool measured again) against ``entry``.
    ``flips``: how many of the queries that moved most a FAIL lists; ``texts`` gives their texts
    (``{query id: text}``, asked only when needed)."""
    record = rerun.record
    measures = tuple(_measure_grade(name, mv, record.measures.get(name)) for name, mv in entry.measures.items())
    reasons = [_outside(m) for m in measures if m.verdict == "outside"]
    names, pairs = _aligned(entry, *rerun.per_query)
    diffs: tuple[QueryDiff, ...] = ()
    if names is None:
        reasons.append(pairs)
        pairs = {}
    else:
        diffs = _query_diffs(names, pairs, entry, permutations)
        reasons.extend(why for m, (a, _) in pairs.items() for why in [_inconsistent(entry, m, a)] if why)
        differing = sum(len(d.differing) for d in diffs)
        if differing and all(m.verdict == "same" for m in measures):
            shown = sorted({q for d in diffs for q in d.differing})
            reasons.append(f"every value is the same, yet {len(shown)} quer{'y' if len(shown) == 1 else 'ies'}' "
                           f"per-query values differ ({', '.join(shown[:5])}{', …' if len(shown) > 5 else ''}): "
                           f"these are not this run's per-query values (an edited table?)")
    if reasons:
        verdict = FAIL
    elif all(m.verdict == "same" for m in measures) and not any(d.differing for d in diffs):
        verdict = IDENTICAL
    else:
        verdict = OKISH
    moved_measure, moved = None, ()
    if verdict == FAIL and names is not None:
        moved_measure, moved = _moved(names, pairs, diffs, flips, entry.pool.query_lang, texts)
    return Grade(entry, verdict, measures, diffs, tuple(reasons), _environment(entry, record), moved_measure, moved)
