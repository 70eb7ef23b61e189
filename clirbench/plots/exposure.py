"""Which languages fill each query's top 10, as a matplotlib figure (``pip install clirbench[plot]``).

One panel per system (columns, side by side) and set of multi documents (rows): a stacked horizontal
bar per query language, its segments the mean % of each query's top 10 in each document language
(the records' ``preference.top10_share``, ``stats.preference.SHARE_PART``), the query's own language
first and hatched, one colour per document language in every panel (``display.palette``). Dotted
lines mark the neutral mix: on a parallel pool of k languages every language holds the same
passages, so a ranking blind to language gives each 100/k (Share's neutral value, ``target_for(k)``);
preference rows exist only for ``multi`` pools, which are parallel. Right of each bar: the own
language's share with its 95% interval.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..display import palette
from ..identity import labels
from ..measures import Share
from ..stats.preference import SHARE_PART
from ..util.errors import ClirbenchError
from ..util.optional import require
from .figure import STYLE, check_output, distinct_results, plain, save

__all__ = ["exposure_panels", "exposure_figure", "plot_exposure", "share_rows"]

_LABEL_AT = 7.0  # a segment this wide (%) or wider prints its share


def share_rows(matrix: Mapping) -> list[tuple[str, list[tuple[str, Mapping]]]]:
    """``[(query language, [(document language, cell)])]`` of ``matrix``'s top-10 shares, the query's
    own language first, then the others in document order; query languages without shares left out."""
    docs = list(matrix["doc_langs"])
    out = []
    for q, row in zip(matrix["query_langs"], matrix.get(SHARE_PART) or ()):
        cells = {d: c for d, c in zip(docs, row) if c is not None and c.get("value") is not None}
        if cells:
            order = ([q] if q in cells else []) + [d for d in docs if d != q and d in cells]
            out.append((q, [(d, cells[d]) for d in order]))
    return out


def exposure_panels(records) -> list[tuple[str, dict]]:
    """``[(system label, matrix)]`` of every system's matrices (``stats.preference.preference_matrix``)
    that hold top-10 shares, systems in the order first met."""
    from ..stats.preference import preference_matrix  # lazy: numpy

    keys = list(dict.fromkeys(r.system_key for r in records))
    label_of = dict(zip(keys, labels(keys)))
    return [(label_of[key], m) for key in keys
            for m in preference_matrix([r for r in records if r.system_key == key]) if share_rows(m)]


def _draw(ax, matrix: Mapping, system: str, colours: Mapping[str, str], tag: str) -> None:
    """One panel: ``matrix``'s bars in ``ax``; each segment's SVG id is ``share_<tag>_<query language
    index>_<document language index>`` (indices in ``matrix``), ``_own`` appended for the query's language."""
    rows = share_rows(matrix)
    docs, queries = list(matrix["doc_langs"]), list(matrix["query_langs"])
    k = len(docs)
    for i, (q, cells) in enumerate(rows):
        left = 0.0
        for d, cell in cells:
            value = float(cell["value"])
            own = d == q
            gid = f"share_{tag}_{queries.index(q)}_{docs.index(d)}" + ("_own" if own else "")
            ax.barh(i, value, left=left, height=0.62, color=colours[d], edgecolor="black" if own else "white",
                    linewidth=1.2 if own else 0.5, hatch="//" if own else None, label=plain(d), gid=gid)
            if value >= _LABEL_AT and not own:  # the own language's share is printed right of the bar
                ink = "white" if palette.light_text(colours[d]) else "black"
                ax.text(left + value / 2, i, f"{value:.1f}", ha="center", va="center", fontsize=7, color=ink)
            left += value
        own_cell = dict(cells).get(q)
        if own_cell is not None:
            low, high = own_cell.get("ci_low"), own_cell.get("ci_high")
            interval = f" [{low:.1f}, {high:.1f}]" if low is not None and high is not None else ""
            ax.text(101.5, i, plain(f"{q}: {float(own_cell['value']):.1f}%{interval}"), va="center", fontsize=7,
                    clip_on=False)
    neutral = Share.record.target_for(k)
    for j in range(1, k):
        ax.axvline(j * neutral, color=palette.TARGET, linestyle=":", linewidth=1.0, gid=f"neutral_{tag}_{j}")
    ax.set_xlim(0, 100)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), [plain(f"q {q}") for q, _ in rows])
    ax.set_xlabel("% of each query's top 10 (mean over queries)")
    ax.grid(False)
    ax.set_title(plain(f"{matrix['pool']} · {system}"), fontsize=9)


def exposure_figure(panels: Sequence[tuple[str, Mapping]]):
    """A matplotlib ``Figure`` of ``panels`` (``exposure_panels``): systems as columns, sets of
    documents as rows, one legend (document languages, the own-language hatch, the neutral lines)."""
    require("matplotlib.figure", "plot")
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no backend switch
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    systems = list(dict.fromkeys(s for s, _ in panels))
    pools = list(dict.fromkeys(m["pool"] for _, m in panels))
    langs = list(dict.fromkeys(d for _, m in panels for d in m["doc_langs"]))
    colours = palette.series_colours(langs)
    height = max(len(share_rows(m)) for _, m in panels)
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(4.6 * len(systems), (1.3 + 0.42 * height) * len(pools) + 0.5), layout="constrained")
        axes = fig.subplots(len(pools), len(systems), squeeze=False)
        drawn = set()
        for system, matrix in panels:
            r, c = pools.index(matrix["pool"]), systems.index(system)
            _draw(axes[r][c], matrix, system, colours, f"{r}_{c}")
            drawn.add((r, c))
        for r, row in enumerate(axes):
            for c, ax in enumerate(row):
                if (r, c) not in drawn:
                    ax.set_axis_off()
        handles = [Patch(facecolor=colours[d], edgecolor="white", label=plain(d)) for d in langs]
        handles += [Patch(facecolor="white", edgecolor="black", hatch="//", label="the query's language"),
                    Line2D([], [], color=palette.TARGET, linestyle=":", label="neutral mix (100/k each)")]
        fig.legend(handles=handles, loc="outside upper center", ncols=min(len(handles), 6), fontsize=8,
                   title="document language", title_fontsize=8)
    return fig


def plot_exposure(results, out):
    """Write the top-10 language shares of ``results`` (result files of ``multi`` pools) to ``out``
    (.svg or .png); returns the path."""
    check_output(out)
    _, records = distinct_results(results)
    panels = exposure_panels(records)
    if not panels:
        raise ClirbenchError("no top-10 language share in these results: run a 'multi' scenario of two or more "
                             "document languages with this clirbench (e.g. --langs en,zh,ar --scenario multi)")
    return save(exposure_figure(panels), out)
