"""Leaderboards: ``<dir>/<task>.json`` built from result files (a user's in ``./leaderboard/``, the
reference ones shipped in ``leaderboards/``), ranked with significance groups, rendered to a static
HTML page (schema: ``leaderboards/SCHEMA.md``)."""
from __future__ import annotations

import math
import os
from pathlib import Path

from ..display.precision import board_decimals, fmt
from ..util.errors import UnknownNameError
from ..util.table import format_table
from .costs import cost_text, system_costs
from .page import write_site
from .reranking import comparisons, first_stages, stage_names
from .reranking import format_text as format_reranking
from .significance import DEFAULT_CORRECTION, Board, boards, gaps, headlines, main_measures, overall_table
from .store import SCHEMA_VERSION, load, path_for, reproductions
from .submit import build, submit
from .validate import validate_result

__all__ = ["SCHEMA_VERSION", "build", "submit", "validate_result", "show", "format_boards", "format_overall",
           "html", "load", "boards", "gaps", "Board", "path_for", "main_measures", "reproductions",
           "format_reproductions"]


def _value(mv: dict) -> str:
    """A measure's value as the reproductions list shows it (4 decimals, 2 from 10 up; – for none)."""
    v = mv.get("value")
    return "–" if v is None else f"{v:.4f}" if abs(v) < 10 else f"{v:.2f}"


def format_boards(items: list[Board], costs: dict | None = None, first: dict | None = None) -> str:
    """Plain-text ranked tables, one per board (group letters: same letter = not significantly apart);
    a cost column when ``costs`` (``costs.system_costs``) has some of a board's systems; a reranked
    system named with its first stage on the board (``first``: ``reranking.first_stages``)."""

    costs = costs or {}
    named = stage_names(first)
    blocks = []
    for board in items:
        arrow = board.direction_label
        with_cost = any(r.system in costs for r in board.rows)
        places = board_decimals(board)  # value and interval alike (precision: one rule for every output)
        _num = lambda x: fmt(x, places)  # noqa: E731
        table = [("rank", "95% rank", "group", "system", f"{board.measure} {board.arrow}", "95% CI", "pools")
                 + (("cost (docs/s, ms/query, index MB)",) if with_cost else ())]
        for r in board.rows:
            table.append((str(r.rank) if r.rank else "-", r.rank_interval or "-", r.group or "-", named.get(r.system, r.system),
                          _num(r.value), f"[{_num(r.ci_low)}, {_num(r.ci_high)}]" if r.rank else "(incomplete)",
                          f"{r.pools}/{len(board.pools)}")
                         + ((cost_text(costs.get(r.system)) or "-",) if with_cost else ()))
        lines = format_table(list(table[0]), table[1:], right=(0, 4, 5, 6), rule=False)
        note = f"\ngroups: {board.correction_note}" if board.pairs else ""
        blocks.append(f"{board.title} ({arrow}, macro mean over {len(board.pools)} pools)\n" + "\n".join(lines) + note)
    return "\n\n".join(blocks)


def format_overall(items: list[Board]) -> str:
    """The overall table: per system, its 95% rank interval on each headline board with pools and
    queries resampled (two-level bootstrap); systems by mean rank."""

    if not items:
        return ""
    rows = overall_table(items)
    body = [[s] + [cells[b.title].overall_interval or "-" if b.title in cells else "-" for b in items] for s, cells in rows]
    lines = format_table(["system"] + [b.title for b in items], body, rule=False)
    return ("overall: 95% rank interval with pools and queries resampled (two-level bootstrap), "
            "one headline measure per scenario\n" + "\n".join(lines))


def show(task: str, leaderboard_dir: str | os.PathLike | None = None, scenario: str | None = None,
         measure: str | None = None, correction: str = DEFAULT_CORRECTION) -> str:
    """The ranked tables of ``<leaderboard_dir>/<task>.json`` as text (significance groups with
    pairwise p-values adjusted by ``correction``), then the overall table, then the reproductions
    kept beside entries. No folder: the user's board, else the reference one (``store.path_for``)."""

    path = path_for(task, leaderboard_dir)
    data = load(path)
    every = list(boards(data, correction=correction))
    for option, asked, have in (("--scenario", scenario, sorted({b.scenario for b in every})),
                                ("--measure", measure, sorted({b.measure for b in every if scenario in (None, b.scenario)}))):
        if asked is not None and asked not in have:
            raise UnknownNameError(f"{option} {asked[:60]!r}: not in {path}; available: {', '.join(have) or 'none'}")
    items = [b for b in every if (scenario is None or b.scenario == scenario)
             and (measure is None or b.measure == measure)]
    if not items:
        return f"{task}: no ranked results" + (" for that scenario/measure" if scenario or measure else "")
    tops = headlines(items, main_measures(task)) if measure is None else items
    text = format_boards(items, system_costs(data), first_stages(data)) + "\n\n" + format_overall(tops)
    reranked = format_reranking(data, comparisons(data, scenario, measure))
    text += "\n\n" + reranked if reranked else ""
    shown = {p for b in items for p in b.pools}
    reproduced = format_reproductions(data, shown, [b.measure for b in tops])
    return text + ("\n\n" + reproduced if reproduced else "")


def format_reproductions(data: dict, pools=None, measures=()) -> str:
    """Text: one line per reproduction (system, pool, machine, date, the headline measure's value
    against the board's), under a heading; "" when there is none."""
    items = reproductions(data, pools)
    if not items:
        return ""
    lines = [f"reproductions: {len(items)} run{'s' * (len(items) != 1)} of a system on a pool whose values lie "
             f"within the board entry's intervals, kept beside it (the ranking uses the entry)"]
    for system, pid, res, rep in items:
        name = next((m for m in measures if m in rep["measures"]), next(iter(sorted(rep["measures"])), None))
        value = ""
        if name is not None:
            value = (f"{name} {_value(rep['measures'][name])} "
                     f"(board {_value(res['measures'].get(name, {}))})")
        hw = rep.get("hardware", {})
        machine = f"{hw.get('cpu', '?')}, {hw.get('cores', '?')} cores"
        lines.append(f"  {system} on {pid}: {value}; {machine}; {rep['created_at'][:10]}"
                     + (f"; {rep['commands'][-1]}" if rep.get("commands") else ""))
    return "\n".join(lines)


def html(out_dir: str | os.PathLike, leaderboard_dir: str | os.PathLike | None = None,
         tasks: list[str] | None = None, correction: str = DEFAULT_CORRECTION) -> list[Path]:
    """Write ``<out_dir>/<task>.html`` for each leaderboard (and ``index.html``); returns the paths.
    No folder: the user's boards (``./leaderboard``), else the reference ones."""

    return write_site(out_dir, leaderboard_dir, tasks, correction)
