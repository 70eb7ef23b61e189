"""``run_sweep``: every cell of a config through an executor, then the leaderboard."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .config import SweepConfig, cells
from .executors import CellOutcome, LocalExecutor, finished

__all__ = ["SweepReport", "run_sweep", "build_leaderboard"]


@dataclass(frozen=True)
class SweepReport:
    """Outcomes in cell order, what the leaderboard build returned (or why it did not run), wall time."""

    outcomes: tuple[CellOutcome, ...]
    leaderboard: Any = None
    leaderboard_note: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> tuple[CellOutcome, ...]:
        return tuple(o for o in self.outcomes if o.status == "failed")


def run_sweep(config: SweepConfig, executor=None, overwrite: bool = False, progress: bool = True,
              leaderboard: bool | None = None, command: str | None = None) -> SweepReport:
    """Run every unfinished cell of ``config`` (paths made absolute first); failed cells are reported,
    never raised. ``leaderboard`` (default: the config's) then builds the leaderboards from the output
    into ``config.leaderboard_dir``, recording ``command``."""
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
    board, note = None, "leaderboard not built (disabled)"
    if config.leaderboard if leaderboard is None else leaderboard:
        data_dirs = {t.data_dir for t in config.tasks if t.data_dir}
        board, note = build_leaderboard(config.output, leaderboard_dir=config.leaderboard_dir,
                                        data_dir=data_dirs.pop() if len(data_dirs) == 1 else None,
                                        command=command, replace=overwrite)
    return SweepReport(ordered, board, note, time.perf_counter() - t0)


def build_leaderboard(results_dir, **options) -> tuple[Any, str]:
    """``clirbench.leaderboard.build(results_dir, **options)`` when that module exists (options its
    signature lacks are left out); (its value, a note)."""
    import inspect

    try:
        from ..leaderboard import build
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
