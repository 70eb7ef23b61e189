"""trec_eval's text output: ``%-22s\t%s\t%6.4f`` lines (counts ``%ld``, relstring quoted), the
per-query lines (``-q``) query by query first, then the summary (``all``) unless ``-n``. With
bootstrap intervals (``--ci``) each averaged summary line gets two more tab-separated fields: the
interval's low and high ends.
"""
from __future__ import annotations

import math
from typing import Mapping

from .engine import Options, Report

__all__ = ["format_value", "lines"]


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


def lines(report: Report, options: Options, intervals: Mapping[str, tuple[float, float]] | None = None) -> list[str]:
    """The output lines (no newlines)."""
    out = []
    if options.per_query:
        for i, qid in enumerate(report.query_ids):
            for col in report.columns:
                if col.per_query_printed:
                    out.append(f"{col.name:<22}\t{qid}\t{format_value(col.kind, col.values[i])}")
    if options.summary:
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
