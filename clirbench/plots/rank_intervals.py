"""The rank-interval figure (``clirbench plot ranks``): per leaderboard board, each ranked system's
rank (dot) and its 95% bootstrap rank interval (bar), best first; one panel per board. Each
system's mark is an SVG group with id ``rank-<board>-<row>``. Systems without results on every pool
of a board are not ranked there: the panel's axis label names them, with their pools."""
from __future__ import annotations

import os

from ..display.palette import SERIES
from ..util.errors import ClirbenchError
from .figure import check_output, plain, save, subplots

__all__ = ["plot_rank_intervals"]


def plot_rank_intervals(task: str, out: str | os.PathLike, leaderboard_dir: str | os.PathLike | None = None,
                        scenario: str | None = None, measure: str | None = None):
    """Write the rank intervals of ``<leaderboard_dir>/<task>.json``'s boards to ``out``."""
    from ..leaderboard import store  # lazy: numpy
    from ..leaderboard.tables import select

    check_output(out)
    path = store.path_for(task, leaderboard_dir)
    items = [b for b in select(store.load(path), path, scenario, measure) if any(r.rank for r in b.rows)]
    if not items:
        raise ClirbenchError(f"{path}: no ranked board to plot")
    height = max(1.2, 0.3 * max(len(b.rows) for b in items) + 0.9)
    fig, axes = subplots(len(items), width=6.0, height=height)
    for i, (ax, board) in enumerate(zip(axes, items)):
        rows = [r for r in board.rows if r.rank is not None]
        for j, r in enumerate(rows):
            (line,) = ax.plot([r.rank_low, r.rank_high], [j, j], color=SERIES[0], linewidth=4, alpha=0.45,
                              solid_capstyle="butt")
            (dot,) = ax.plot([r.rank], [j], "o", color=SERIES[0])
            line.set_gid(f"rank-{i}-{j}")
            dot.set_gid(f"rank-dot-{i}-{j}")
        ax.set_yticks(range(len(rows)), [plain(r.system) for r in rows])
        ax.invert_yaxis()
        ax.set_xlim(0.5, len(rows) + 0.5)
        ax.set_xticks(range(1, len(rows) + 1))
        left_out = [f"{r.system} ({r.pools}/{len(board.pools)} pools)" for r in board.rows if r.rank is None]
        ax.set_xlabel(plain("rank (dot) and 95% bootstrap rank interval" + (
            f"\nnot ranked (incomplete): {', '.join(left_out)}" if left_out else "")))
        ax.set_title(plain(f"{task}: {board.title} ({board.direction_label})"), fontsize=9)
    fig.tight_layout()
    return save(fig, out)
