"""``clirbench reproduce``: re-run the recorded recipe of every entry (or a sample per system) of a
leaderboard, a result file or a results folder, and grade each value (``grading``): identical,
OKish (within its own 95% interval) or FAIL. Nothing is written; a re-run reads the embedding cache.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable, Sequence

from ..stats.flips import change, query_texts
from ..util.errors import ClirbenchError
from ..util.plural import plural
from ..util.table import format_table
from .entries import read_entries, select
from .grading import FAIL, IDENTICAL, OKISH, Grade, grade
from .recipe import build_retrievers, check_data, rerun

__all__ = ["Report", "reproduce", "format_report"]


@dataclass(frozen=True)
class Report:
    """The grades of a reproduction, one per entry re-run; ``failed``: any FAIL (a non-zero exit)."""

    target: str
    grades: tuple[Grade, ...]

    @property
    def failed(self) -> bool:
        return any(g.grade == FAIL for g in self.grades)

    def to_dict(self) -> dict:
        """The JSON form (``clirbench reproduce --json``)."""
        return {"target": self.target, "failed": self.failed,
                "summary": {k: sum(g.grade == k for g in self.grades) for k in (IDENTICAL, OKISH, FAIL)},
                "entries": [_grade_dict(g) for g in self.grades]}


def _json_num(x: float):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def _grade_dict(g: Grade) -> dict:
    return {"system": g.entry.system.label, "pool": g.entry.pool.board_id, "task": g.entry.pool.task,
            "where": g.entry.where, "grade": g.grade, "reasons": list(g.reasons), "notes": list(g.notes),
            "measures": {m.name: {"recorded": _json_num(m.recorded), "ci_low": _json_num(m.ci_low),
                                  "ci_high": _json_num(m.ci_high), "rerun": _json_num(m.rerun), "verdict": m.verdict}
                         for m in g.measures},
            "per_query": {d.name: {"differing": list(d.differing), "largest": _json_num(d.largest),
                                   "paired": None if d.paired is None else
                                   {k: _json_num(v) for k, v in d.paired.to_dict().items()}}
                          for d in g.per_query},
            "moved": {"measure": g.moved_measure,
                      "queries": [{"query_id": f.query_id, "query_lang": f.query_lang, "text": f.text,
                                   "recorded": _json_num(f.a), "rerun": _json_num(f.b)} for f in g.moved]}}


def reproduce(target: str | os.PathLike, *, sample: int | None = None, seed: int = 0,
              systems: Sequence[str] | None = None, langs: Sequence[str] | None = None, data_dir=None,
              cache_dir=None, device: str | None = None, flips: int = 5,
              log: Callable[[str], None] | None = None) -> Report:
    """Re-run the entries of ``target`` (a leaderboard, a result file or a results folder): those of
    ``systems`` whose languages lie in ``langs``, ``sample`` pools per system drawn with ``seed``
    (None: all). Before any run, the data of every entry is checked against its recorded hashes and
    every system is built (a one-line error names the file that differs, or what this machine lacks:
    an extra, a model, a GPU). ``log`` receives one line per entry as it starts."""
    entries = select(read_entries(target), systems, langs, sample, seed)
    if not entries:
        raise ClirbenchError(f"{target}: nothing to reproduce")
    for entry in entries:
        check_data(entry, data_dir)
    retrievers = build_retrievers(entries, cache_dir, device)
    grades = []
    for k, entry in enumerate(entries, start=1):
        if log is not None:
            log(f"re-running {entry.label} ({k}/{len(entries)})")
        result = rerun(entry, retrievers[entry.system.label], data_dir)
        texts = lambda record=result.record: query_texts(record, data_dir)  # noqa: E731
        grades.append(grade(entry, result, flips=flips, texts=texts))
    return Report(str(target), tuple(grades))


def _num(x: float) -> str:
    if x is None or math.isnan(x):
        return "–"
    return f"{x:.4f}" if abs(x) < 10 else f"{x:.2f}"


def _small(x: float) -> str:
    """A difference: 3 significant digits."""
    return "–" if x is None or math.isnan(x) else f"{x:.3g}"


def _per_query_cell(g: Grade) -> str:
    differing = [(d.name, len(d.differing)) for d in g.per_query if d.differing]
    if not differing:
        return "0"
    name, count = max(differing, key=lambda item: item[1])
    return f"{count} ({name})"


def _p_cell(g: Grade) -> str:
    ps = [d.paired.p_value for d in g.per_query if d.paired is not None]
    return "-" if not ps else f"{min(ps):.4f}"


def _differ(n: int) -> str:
    return f"{plural(n, 'query')} {'differs' if n == 1 else 'differ'}"


def _details(g: Grade) -> list[str]:
    """The lines under the table for an entry that is not identical."""
    head = f"{g.grade} {g.entry.label} ({g.entry.where})"
    lines = [head + (": every value within its 95% interval" if g.grade == OKISH else ":")]
    lines += [f"  - {why}" for why in g.reasons]
    lines += [f"  note: {note}" + ("; the differences lie inside the intervals, as a re-run on other hardware "
                                    "or libraries gives (floating-point order)" if g.grade == OKISH else "")
              for note in g.notes]
    if g.grade == OKISH and not g.notes:
        lines.append("  note: the machine and software are recorded alike here; the differences lie inside the "
                     "intervals (an encoder's floating-point path, or embeddings cached on another machine)")
    moved_values = [f"{m.name} {_num(m.recorded)} → {_num(m.rerun)} [{_num(m.ci_low)}, {_num(m.ci_high)}]"
                    for m in g.measures if m.verdict != "same"]
    if moved_values:
        lines.append("  values (recorded → re-run [recorded 95% CI]): " + "; ".join(moved_values))
    for d in g.per_query:
        if d.differing and d.paired is not None:
            p = d.paired
            lines.append(f"  per-query {d.name}: {_differ(len(d.differing))} (largest |difference| "
                         f"{_small(d.largest)}); re-run − recorded {_small(p.diff)} [{_small(p.ci_low)}, "
                         f"{_small(p.ci_high)}], paired randomisation p {p.p_value:.4f}")
        elif d.differing:
            lines.append(f"  per-query {d.name}: {_differ(len(d.differing))}")
    if g.moved:
        lines.append(f"  the queries that moved most ({g.moved_measure}; A the entry, B the re-run):")
        for k, f in enumerate(g.moved, start=1):
            how = change(g.moved_measure, f.a, f.b)
            lines.append(f"  {k:>3}. {f.query_id} [{f.query_lang}] {g.moved_measure} A {_num(f.a)} -> "
                         f"B {_num(f.b)}" + (f" ({how})" if how else ""))
            if f.text:
                lines.append(f"       {' '.join(f.text.split())}")
    return lines


def format_report(report: Report) -> str:
    """The summary table (one row per entry), the details of every entry that is not identical, and
    a closing line with the counts."""
    grades = report.grades
    systems = len({g.entry.system.label for g in grades})
    rows = [[g.entry.system.label, g.entry.pool.name, g.grade,
             "/".join(str(g.counts[k]) for k in ("same", "within", "outside")), _per_query_cell(g), _p_cell(g)]
            for g in grades]
    table = format_table(["system", "pool", "grade", "same/within/outside", "per-query differing", "paired p"],
                         rows, right=(4, 5), rule=False)
    out = [f"reproduce {report.target}: {plural(len(grades), 'entry')} of {plural(systems, 'system')}, each re-run "
           f"from its recorded recipe", *table]
    for g in grades:
        if g.grade != IDENTICAL:
            out += [""] + _details(g)
    counts = {k: sum(g.grade == k for g in grades) for k in (IDENTICAL, OKISH, FAIL)}
    verdict = "FAIL" if report.failed else "reproduced"
    out += ["", f"{verdict}: {counts[IDENTICAL]} identical, {counts[OKISH]} OKish (within the recorded 95% "
                f"intervals), {counts[FAIL]} FAIL"]
    return "\n".join(out)
