"""The ECDF figure (``clirbench plot ecdf``): the distribution of a measure's per-query values
(default MaxR) over results, one curve per system and query language, each curve pooling the
per-query values of the given results of that system with queries in that language. A rank
measure (MaxR) is drawn on a log axis. A system's curves have its colour (``palette.series_colours``),
each query language its line style. Each curve is an SVG group with id ``ecdf-<k>``."""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from ..display import palette
from ..identity import labels
from ..measures import parse
from ..results import read_per_query
from ..util.errors import ClirbenchError
from .figure import check_output, distinct_results, plain, save, subplots

__all__ = ["ecdf_series", "plot_ecdf"]


def ecdf_series(results: Sequence[str | os.PathLike], measure: str = "MaxR") -> dict[str, np.ndarray]:
    """``{"<system> q-<lang>": sorted defined values}`` of ``measure``, in the order first met."""

    if not results:
        raise ClirbenchError("no result files to plot")
    given = [str(p) for p in results]
    results, records = distinct_results(results)
    if not results:  # folders without result files: no empty figure
        raise ClirbenchError(f"{', '.join(given)[:200]}: no result files")
    keys = list(dict.fromkeys(r.system_key for r in records))
    label_of = dict(zip(keys, labels(keys)))  # one label per system, told apart only from the others
    names = [label_of[r.system_key] for r in records]
    series: dict[str, list[np.ndarray]] = {}
    for path, record, name in zip(results, records, names):
        _, values = read_per_query(path)
        if measure not in values:
            raise ClirbenchError(f"{path}: no per-query {measure}; it has {', '.join(values) or 'none'}")
        v = np.asarray(values[measure], dtype=np.float64)
        series.setdefault(f"{name} q-{record.query_lang}", []).append(v[~np.isnan(v)])
    return {k: np.sort(np.concatenate(v)) for k, v in series.items()}


def plot_ecdf(results: Sequence[str | os.PathLike], out: str | os.PathLike, measure: str = "MaxR"):
    """Write the ECDF figure of ``results`` to ``out`` (.svg or .png); returns the path."""

    check_output(out)
    family = parse(measure).record
    series = ecdf_series(results, measure)
    fig, (ax,) = subplots()
    parts = {label: label.rsplit(" q-", 1) for label in series}
    colours = palette.series_colours(system for system, _ in parts.values())
    langs = list(dict.fromkeys(lang for _, lang in parts.values()))
    styles = ("-", "--", ":", "-.")
    for k, (label, values) in enumerate(series.items()):
        y = np.arange(1, len(values) + 1) / max(len(values), 1)
        system, lang = parts[label]
        (line,) = ax.step(values, y, where="post", label=plain(f"{label} (n={len(values)})"), color=colours[system],
                          linestyle=styles[langs.index(lang) % len(styles)])
        line.set_gid(f"ecdf-{k}")
    if family.unit == "rank":
        ax.set_xscale("log")
    ax.set_xlabel(plain(f"{measure} per query ({family.direction_label})"))
    ax.set_ylabel("fraction of queries ≤ x")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right", fontsize=8)
    return save(fig, out)
