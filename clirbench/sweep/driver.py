"""``run_sweep``: every cell of a config through an executor, then the leaderboard."""
from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..util.atomic import write_text_atomic
from ..util.checks import check_correction
from ..util.errors import MalformedDataError
from ..util.strict import expect_json, loads_json
from .config import SweepConfig, cells
from .executors import STATE_DIR, CellOutcome, LocalExecutor, finished

__all__ = ["SweepReport", "run_sweep", "build_leaderboard", "sweep_gaps", "GAPS_FILE"]

GAPS_FILE = "sweep.gap.json"  # under <output>/_sweep; ends in .gap.json so no result reader takes it


@dataclass(frozen=True)
class SweepReport:
    """Outcomes in cell order, what the leaderboard build returned (or why it did not run), wall time."""

    outcomes: tuple[CellOutcome, ...]
    leaderboard: Any = None
    leaderboard_note: str = ""
    seconds: float = 0.0
    gaps: tuple = ()          # the sweep's query-language gaps (stats.paired.Gap), adjusted as one family
    gap_family: str = ""      # which correction, over how many tests
    gaps_path: Any = None     # where they were written (None: no gap)

    @property
    def failed(self) -> tuple[CellOutcome, ...]:
        return tuple(o for o in self.outcomes if o.status == "failed")


def _read_gap(path: Path):
    """A ``*.gap.json`` beside the results; one line naming the file when it is not one."""
    from ..stats.paired import Gap  # lazy: numpy

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MalformedDataError(f"{path}: cannot read the gap file ({exc.strerror or exc})") from None
    data = expect_json(loads_json(raw, f"{path}: malformed gap file"), dict, str(path), "a query-language gap file")
    try:
        return Gap.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MalformedDataError(f"{path}: malformed gap file ({type(exc).__name__}: {exc})") from None


def run_sweep(config: SweepConfig, executor=None, overwrite: bool = False, progress: bool = True,
              leaderboard: bool | None = None, command: str | None = None,
              correction: str | None = None) -> SweepReport:
    """Run every unfinished cell of ``config`` (paths made absolute first); failed cells are reported,
    never raised. The query-language gaps of every finished cell are then adjusted as one family by
    ``correction`` (default: the config's, holm) and written to ``<output>/_sweep/sweep.gap.json``
    (``sweep_gaps``). ``leaderboard`` (default: the config's) then builds the leaderboards from the
    output into ``config.leaderboard_dir``, recording ``command``."""

    correction = check_correction(config.run.statistics.correction if correction is None else correction)
    t0 = time.perf_counter()
    config = config.resolved()
    todo, outcomes = [], {}
    for cell in cells(config):
        done = None if overwrite else finished(cell, config)
        if done is not None:
            outcomes[cell.index] = done
        else:
            todo.append(cell)
    executor = executor or LocalExecutor()
    by_key = {c.key(config): c for c in todo}
    for outcome in executor.map(todo, config, overwrite=overwrite, progress=progress):
        outcomes[by_key[outcome.key].index] = outcome
    ordered = tuple(outcomes[i] for i in sorted(outcomes))
    gaps, family, gaps_path = sweep_gaps(config.output, ordered, correction)
    board, note = None, "leaderboard not built (disabled)"
    if config.leaderboard if leaderboard is None else leaderboard:
        data_dirs = {t.data_dir for t in config.tasks if t.data_dir}
        board, note = build_leaderboard(config.output, leaderboard_dir=config.leaderboard_dir,
                                        data_dir=data_dirs.pop() if len(data_dirs) == 1 else None,
                                        command=command, replace=overwrite)
    return SweepReport(ordered, board, note, time.perf_counter() - t0, tuple(gaps), family, gaps_path)


def sweep_gaps(output, outcomes, correction: str = "holm"):
    """The gap files beside the results of ``outcomes`` (each written by its cell's run), their
    p-values adjusted as one family (every measure of every gap of the sweep: ``correct_gaps``, as
    ``run`` does for one run), written to ``<output>/_sweep/sweep.gap.json``: ``(gaps, family line,
    path)``; no gap: ``((), "", None)``."""

    from ..stats.correction import describe, family_size  # lazy: numpy
    from ..stats.paired import correct_gaps

    out = Path(output)
    files = sorted({p for o in outcomes for rel in o.results for p in (out / rel).parent.glob("*.gap.json")})
    if not files:
        return (), "", None
    gaps = correct_gaps([_read_gap(f) for f in files], correction)
    size = family_size([row.p_value for g in gaps for row in g.measures.values()])
    family = describe(correction, size, "every measure of every query-language gap of this sweep")
    body = {"correction": {"method": correction, "family": family, "size": size},
            "gaps": [{"file": str(f.relative_to(out)), **g.to_dict()} for f, g in zip(files, gaps)]}
    path = out / STATE_DIR / GAPS_FILE
    text = json.dumps(body, indent=1) + "\n"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:  # a resumed sweep rewrites nothing
        write_text_atomic(path, text)
    return gaps, family, path


def build_leaderboard(results_dir, **options) -> tuple[Any, str]:
    """``clirbench.leaderboard.build(results_dir, **options)`` when that module exists (options its
    signature lacks are left out); (its value, a note)."""

    try:
        from ..leaderboard import (
            build,  # lazy: looked up when called (a build without the leaderboard package skips it)
        )
    except ImportError:
        return None, "leaderboard not built: clirbench.leaderboard is not available"
    try:
        params = inspect.signature(build).parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
        value = build(results_dir, **{k: v for k, v in options.items()
                                      if v is not None and (takes_all or k in params)})
    except Exception as exc:  # results are already on disk: report, do not lose them
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, f"leaderboard build failed: {text}"
    return value, "leaderboard built"
