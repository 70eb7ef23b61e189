"""trec_eval's text output: ``%-22s\t%s\t%6.4f`` lines (counts ``%ld``, relstring quoted), the
per-query lines (``-q``) query by query first, then the summary (``all``) unless ``-n``. With
bootstrap intervals (``--ci``) each averaged summary line gets two more tab-separated fields: the
interval's low and high ends. ``write`` prints them a block of queries at a time (a 50,000-query
``-q`` report is 7 million lines).
"""
from __future__ import annotations

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


def _fixed4(values: np.ndarray) -> np.ndarray:
    """``%6.4f`` of each value, as bytes: digits computed with numpy where that is exact (0 <= v <
    9.99995, v * 10000 not within 1e-6 of a half: the product's rounding error, under 1e-11, cannot
    cross one), C's formatting (Python's, the same) for the others."""
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = values * 10000.0
        r = np.floor(scaled + 0.5)
        fast = ((values >= 0) & ~np.signbit(values) & (r < 100000)
                & (np.abs(scaled - np.floor(scaled) - 0.5) > 1e-6))
    digits = r[fast].astype(np.int64)
    chars = np.empty((len(digits), 6), dtype=np.uint8)
    chars[:, 1] = ord(".")
    for col, unit in ((0, 10000), (2, 1000), (3, 100), (4, 10), (5, 1)):
        chars[:, col] = (digits // unit) % 10 + ord("0")
    quick = chars.view("S6").reshape(-1)
    if len(quick) == len(values):
        return quick
    slow = np.asarray([_c_float(v).encode("ascii") for v in values[~fast].tolist()], dtype=np.bytes_)
    out = np.empty(len(values), dtype=f"S{max(6, slow.dtype.itemsize)}")
    out[fast] = quick
    out[~fast] = slow
    return out


def _printed(col: Column, lo: int, hi: int) -> np.ndarray:
    """(hi - lo,) bytes: the printed values of queries lo..hi-1 of a column."""
    if col.kind in ("string", "runid"):
        return np.asarray([format_value(col.kind, v).encode("utf-8") for v in col.values[lo:hi]], dtype=np.bytes_)
    values = np.asarray(col.values[lo:hi], dtype=np.float64)
    if col.kind != "long":
        return _fixed4(values)
    whole = np.isfinite(values) & (np.abs(values) < 2.0 ** 62)
    if whole.all():
        return values.astype(np.int64).astype(np.bytes_)  # %ld of a count
    return np.asarray([format_value("long", v).encode("ascii") for v in values.tolist()], dtype=np.bytes_)


def _per_query_blocks(report: Report) -> Iterator[str]:
    """The ``-q`` lines, one string (lines joined) per block of queries: each line assembled by numpy
    as fixed-width bytes (name, query id, value, newline), the padding dropped."""
    shown = [c for c in report.columns if c.per_query_printed]
    if not shown:
        return
    prefixes = np.asarray([f"{c.name:<22}\t".encode("utf-8") for c in shown], dtype=np.bytes_)
    ids = report.query_ids
    for lo in range(0, len(ids), _BLOCK):
        hi = min(lo + _BLOCK, len(ids))
        tabs = np.asarray([(q + "\t").encode("utf-8") for q in ids[lo:hi]], dtype=np.bytes_)
        columns = [_printed(c, lo, hi) for c in shown]
        values = np.empty((hi - lo, len(shown)), dtype=f"S{max(c.dtype.itemsize for c in columns)}")
        for j, column in enumerate(columns):
            values[:, j] = column
        lines = np.strings.add(np.strings.add(np.strings.add(prefixes[None, :], tabs[:, None]), values), b"\n")
        yield lines.tobytes().replace(b"\0", b"")[:-1].decode("utf-8")  # no NUL in an id or a value


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
