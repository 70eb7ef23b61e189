"""The language-preference matrix as a matplotlib figure (``pip install clirbench[plot]``).

The same view as the leaderboard page's heatmap (``leaderboard.preference.preference_svg``): rows
are query languages, columns document languages, colour the share of queries whose best-ranked
relevant passage is in the column's language, text that share and the mean rank there.
"""
from __future__ import annotations

from typing import Mapping

from ..identity import labels
from ..util.errors import ClirbenchError
from ..util.optional import require
from .figure import check_output, distinct_results, plain, save, subplots

__all__ = ["preference_figure", "plot_preference"]


def preference_figure(matrix: Mapping, system: str = "", ax=None):
    """A matplotlib ``Figure`` of ``matrix`` (``stats.preference.preference_matrix``); draws into
    ``ax`` when given."""
    import numpy as np

    require("matplotlib.figure", "plot")
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no backend switch

    docs, queries = list(matrix["doc_langs"]), list(matrix["query_langs"])

    def grid(part: str):
        return np.array([[np.nan if c is None or c.get("value") is None else float(c["value"]) for c in row]
                         for row in matrix[part]], dtype=float).reshape(len(queries), len(docs))

    share, rank = grid("best_share"), grid("mean_rank")
    if ax is None:
        fig = Figure(figsize=(2.0 + 0.9 * len(docs), 1.0 + 0.6 * len(queries)), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    image = ax.imshow(share, cmap="Blues", vmin=0.0, vmax=100.0, aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(len(docs)), [plain(d) for d in docs])
    ax.set_yticks(range(len(queries)), [plain(f"q {q}") for q in queries])
    ax.set_xlabel("document language")
    for i in range(len(queries)):
        for j in range(len(docs)):
            if not np.isnan(share[i, j]):
                ax.text(j, i, f"{share[i, j]:.1f}%\nrank {rank[i, j]:.1f}", ha="center", va="center", fontsize=7,
                        color="white" if share[i, j] > 55 else "black")
    ax.set_title(plain(str(matrix["pool"]) + (f" · {system}" if system else "")), fontsize=9)
    fig.colorbar(image, ax=ax, label="% of queries: best-ranked relevant passage")
    return fig


def plot_preference(results, out):
    """Write the preference matrices of ``results`` (result files of ``multi`` pools: one matrix per
    system and set of documents, stacked) to ``out`` (.svg or .png); returns the path."""
    from ..stats.preference import preference_matrix  # lazy: numpy

    check_output(out)
    _, records = distinct_results(results)
    keys = list(dict.fromkeys(r.system_key for r in records))
    label_of = dict(zip(keys, labels(keys)))
    panels = [(label_of[key], m) for key in keys
              for m in preference_matrix([r for r in records if r.system_key == key])]
    if not panels:
        raise ClirbenchError("no preference matrix in these results: run a 'multi' scenario of two or more "
                             "document languages (e.g. --langs en,zh,ar --scenario multi)")
    width = max(2.0 + 0.9 * len(m["doc_langs"]) for _, m in panels)
    height = max(1.0 + 0.6 * len(m["query_langs"]) for _, m in panels)
    fig, axes = subplots(rows=len(panels), width=width + 1.5, height=height)
    for ax, (system, matrix) in zip(axes, panels):
        preference_figure(matrix, system, ax=ax)
    return save(fig, out)
