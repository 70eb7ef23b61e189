"""trec_eval's text output: ``%-22s\t%s\t%6.4f`` lines (counts ``%ld``, relstring quoted), the
per-query lines (``-q``) query by query first, then the summary (``all``) unless ``-n``. With
bootstrap intervals (``--ci``) each averaged summary line gets two more tab-separated fields: the
interval's low and high ends. ``write`` prints them a block of queries at a time (a 50,000-query
``-q`` report is 7 million lines).
"""
from __future__ import annotations

import itertools
import math
from typing import IO, Iterator, Mapping

import numpy as np

from .engine import Column, Options, Report

__all__ = ["format_value", "lines", "write"]

_BLOCK = 2048  # queries per block of per-query lines


def format_value(kind: str, value) -> str:
    """One value as trec_eval prints it."""
    if kind == "runid":
        return str(value)
    if kind == "string":
        return f"'{value}'"
    if kind == "long":
        return str(math.trunc(value)) if math.isfinite(value) else _c_float(value)
    return _c_float(value)


def _c_float(value: float) -> str:
    """C's ``%6.4f`` (glibc): NaN keeps its sign bit (``-nan``: x86's 0/0), special values right-aligned in 6."""
    if math.isnan(value):
        return f"{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    if math.isinf(value):
        return f"{'inf' if value > 0 else '-inf':>6}"
    return f"{value:6.4f}"


def _formatted(col: Column, lo: int, hi: int) -> list[str]:
    """The printed values of queries lo..hi-1 of a column."""
    if col.kind in ("string", "runid"):
        return [format_value(col.kind, v) for v in col.values[lo:hi]]
    values = np.asarray(col.values[lo:hi], dtype=np.float64)
    if col.kind == "long":
        out = list(map("%d".__mod__, np.where(np.isfinite(values), values, 0).tolist()))
    else:
        out = list(map("%6.4f".__mod__, values.tolist()))
    for i in np.flatnonzero(~np.isfinite(values)).tolist():
        out[i] = _c_float(float(values[i]))
    return out


def _per_query_blocks(report: Report) -> Iterator[str]:
    """The ``-q`` lines, one string (lines joined) per block of queries."""
    shown = [c for c in report.columns if c.per_query_printed]
    if not shown:
        return
    prefixes = [f"{c.name:<22}\t" for c in shown]
    ids = report.query_ids
    for lo in range(0, len(ids), _BLOCK):
        hi = min(lo + _BLOCK, len(ids))
        tabs = [q + "\t" for q in ids[lo:hi]]
        per_col = [[pre + t + v for t, v in zip(tabs, _formatted(c, lo, hi))] for pre, c in zip(prefixes, shown)]
        yield "\n".join(itertools.chain.from_iterable(zip(*per_col)))


def _summary_lines(report: Report, intervals: Mapping[str, tuple[float, float]] | None) -> list[str]:
    out = []
    for col in report.columns:
        if col.summary_rule == "none" and col.kind != "runid":
            continue
        kind = "long" if col.summary_rule == "count" else col.kind
        line = f"{col.name:<22}\tall\t{format_value(kind, col.summary)}"
        if intervals and col.name in intervals:
            low, high = intervals[col.name]
            line += f"\t{_c_float(low)}\t{_c_float(high)}"
        out.append(line)
    return out


def _blocks(report: Report, options: Options, intervals) -> Iterator[str]:
    if options.per_query:
        yield from _per_query_blocks(report)
    if options.summary:
        summary = _summary_lines(report, intervals)
        if summary:
            yield "\n".join(summary)


def lines(report: Report, options: Options, intervals: Mapping[str, tuple[float, float]] | None = None) -> list[str]:
    """The output lines (no newlines)."""
    return [line for block in _blocks(report, options, intervals) for line in block.split("\n")]


def write(report: Report, options: Options, out: IO[str],
          intervals: Mapping[str, tuple[float, float]] | None = None) -> None:
    """Print the output lines to ``out``, each with its newline (nothing at all when there is none)."""
    for block in _blocks(report, options, intervals):
        out.write(block)
        out.write("\n")
