"""The query-language gap heatmap (``clirbench plot gaps``): per system (row) and language pair
L1-L2 (column) of a leaderboard's bilingual boards, the mean with queries in L2 minus the mean with
queries in L1, paired by question (``leaderboard.significance.gaps``); a diverging colour scale
centred on 0 coloured by what the gap means for the measure (``palette``: blue where L2 queries do
better, red where worse, by the measure's direction; the page's colours, cell for cell), the value
written in each cell with the measure's decimals (``precision``). Each cell is an SVG group with id ``gap-<row>-<col>``;
a missing pair is left blank."""
from __future__ import annotations

import math
import os

from ..display import palette
from ..display.precision import fmt, measure_decimals
from ..util.errors import ClirbenchError
from .figure import check_output, plain, pyplot, save, subplots

__all__ = ["gap_matrix", "plot_gap_heatmap"]


def gap_matrix(task: str, leaderboard_dir: str | os.PathLike | None = None, scenario: str = "multi",
               measure: str | None = None) -> tuple[str, list[str], list[str], list[list[float]]]:
    """``(measure, systems, pairs, values)`` (NaN where a system lacks a pair). The default measure
    is the scenario's first board whose measure is higher-is-better, as on the HTML page."""
    from ..leaderboard import gaps, store  # lazy: numpy
    from ..leaderboard.tables import select

    path = store.path_for(task, leaderboard_dir)
    data = store.load(path)
    items = select(data, path, scenario, measure)
    if not items:
        raise ClirbenchError(f"{path}: no board for scenario {scenario}")
    board = items[0] if measure else next((b for b in items if b.higher_is_better), items[0])
    gap = gaps(data, scenario, board.measure, board.subset, board.pool_mode)
    if not gap:
        raise ClirbenchError(f"{path}: no query-language gap for {scenario} (it needs bilingual pools with "
                             f"results for both query languages)")
    systems = sorted(gap)
    pairs = sorted({p for row in gap.values() for p in row})
    return board.measure, systems, pairs, [[gap[s].get(p, math.nan) for p in pairs] for s in systems]


def plot_gap_heatmap(task: str, out: str | os.PathLike, leaderboard_dir: str | os.PathLike | None = None,
                     scenario: str = "multi", measure: str | None = None):
    """Write the gap heatmap of ``<leaderboard_dir>/<task>.json`` to ``out``."""
    from ..measures import parse  # lazy: numpy

    check_output(out)
    measure, systems, pairs, values = gap_matrix(task, leaderboard_dir, scenario, measure)
    plt = pyplot()
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import FuncFormatter

    direction, places = parse(measure).direction, measure_decimals(measure)
    fig, (ax,) = subplots(width=max(4.0, 0.7 * len(pairs) + 2.5), height=max(1.5, 0.4 * len(systems) + 1.2))
    finite = [abs(v) for row in values for v in row if not math.isnan(v)]
    scale = max(max(finite), 5 * 10 ** -places)  # as on the page: near-zero gaps stay pale
    low, high = palette.ends(direction)
    cmap, norm = LinearSegmentedColormap.from_list("gap", [low, palette.NEUTRAL, high]), plt.Normalize(-scale, scale)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            if math.isnan(v):
                continue
            text = fmt(v, places, sign=True)
            fill = palette.diverging(float(text), scale, direction)  # what the cell prints is what its colour says
            cell = Rectangle((j, i), 1, 1, facecolor=fill, edgecolor="white")
            cell.set_gid(f"gap-{i}-{j}")
            ax.add_patch(cell)
            ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=7,
                    color="white" if palette.light_text(fill) else "black")
    ax.set_xlim(0, len(pairs))
    ax.set_ylim(len(systems), 0)
    ax.set_xticks([j + 0.5 for j in range(len(pairs))], [plain(p) for p in pairs], rotation=90 if len(pairs) > 8 else 0)
    ax.set_yticks([i + 0.5 for i in range(len(systems))], [plain(s) for s in systems])
    ax.grid(False)
    ax.set_title(plain(f"{task} {scenario}: gap in {measure} (queries in L2 minus in L1)"), fontsize=9)
    words = palette.meaning(direction, -1.0), palette.meaning(direction, 1.0)
    bar = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, fraction=0.05,
                       format=FuncFormatter(lambda x, _: fmt(x, places, sign=True)))
    bar.set_label(f"L2 queries: {words[0]} ← → {words[1]}", fontsize=8)
    return save(fig, out)
