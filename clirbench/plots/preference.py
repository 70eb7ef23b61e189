"""The language-preference matrix as a matplotlib figure (``pip install clirbench[plot]``).

The same view as the leaderboard page's heatmap (``leaderboard.preference.preference_svg``): rows
are query languages, columns document languages, colour the share of queries whose best-ranked
relevant passage is in the column's language, text that share and the mean rank there.
"""
from __future__ import annotations

from typing import Mapping

__all__ = ["preference_figure"]


def preference_figure(matrix: Mapping, system: str = "", ax=None):
    """A matplotlib ``Figure`` of ``matrix`` (``stats.preference.preference_matrix``); draws into
    ``ax`` when given."""
    import numpy as np

    from ..optional import require

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
    ax.set_xticks(range(len(docs)), docs)
    ax.set_yticks(range(len(queries)), [f"q {q}" for q in queries])
    ax.set_xlabel("document language")
    for i in range(len(queries)):
        for j in range(len(docs)):
            if not np.isnan(share[i, j]):
                ax.text(j, i, f"{share[i, j]:.1f}%\nrank {rank[i, j]:.1f}", ha="center", va="center", fontsize=7,
                        color="white" if share[i, j] > 55 else "black")
    ax.set_title(str(matrix["pool"]) + (f" · {system}" if system else ""), fontsize=9)
    fig.colorbar(image, ax=ax, label="% of queries: best-ranked relevant passage")
    return fig
