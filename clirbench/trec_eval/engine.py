"""The evaluation loop of ``trec_eval.c``: per query of the qrels (byte order of ids), the measures;
then each measure's summary over the queries.

Queries: those with judgements and results; with ``complete`` (``-c``) every judged query, one
missing from the run scored on trec_eval's stand-in ranking (one unjudged document), its num_ret,
unj_*, and the plainly named utility, relstring and rbp_resid then set to 0 / empty, as trec_eval.
A judged query that the run lacks is otherwise skipped, as trec_eval documents (10.0's loop exits
with status 4 instead, a regression). Summaries: the mean over the queries, a sum for the counts
(num_rel with ``-c``: every judgement with a grade > 0), exp(mean log) for gm_map and gm_bpref.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..util.errors import MalformedDataError
from .ranked import rank_query
from .registry import Selected

__all__ = ["Options", "Column", "Report", "evaluate", "STAND_IN_DOC"]

STAND_IN_DOC = "ceci_nest_pas_un_docno"  # trec_eval's ranking for a judged query missing from the run


@dataclass(frozen=True)
class Options:
    """trec_eval's command-line switches: -q, -c, -n (summary=False), -l, -M, -J, -N."""

    per_query: bool = False
    complete: bool = False
    summary: bool = True
    rel_level: int = 1
    max_ret: int | None = None
    judged_only: bool = False
    num_docs: int = 0


@dataclass
class Column:
    """One printed measure name: its values per evaluated query and its summary."""

    name: str
    kind: str  # "long", "double", "string" or "runid"
    summary_rule: str
    per_query_printed: bool
    values: list = field(default_factory=list)
    summary: object = None


@dataclass(frozen=True)
class Report:
    """Query ids in evaluation order and the columns in print order."""

    query_ids: tuple[str, ...]
    columns: tuple[Column, ...]
    runid: str

    def per_query(self, name: str) -> np.ndarray:
        """(n,) float64 values of a numeric column."""
        for c in self.columns:
            if c.name == name:
                return np.asarray(c.values, dtype=np.float64)
        raise KeyError(name)


def _columns(selected: Sequence[Selected]) -> list[tuple[Selected, list[Column]]]:
    out = []
    for s in selected:
        kind = {"runid": "runid", "long": "long", "string": "string"}.get(s.record.kind, "double")
        out.append((s, [Column(n, kind, s.record.summary, s.record.per_query) for n in s.names]))
    return out


def _stand_in_fixes(col: Column) -> None:
    name = col.name
    if name in ("num_ret", "utility", "rbp_resid") or name.startswith("unj"):
        col.values[-1] = 0.0
    elif name == "relstring":
        col.values[-1] = ""


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], runid: str,
             selected: Sequence[Selected], options: Options = Options()) -> Report:
    """Every selected measure per evaluated query and summarised, as trec_eval computes them."""
    if options.max_ret is not None and options.max_ret < 0:
        raise ValueError(f"-M {options.max_ret}: the number of documents must be >= 0")
    cols = _columns(selected)
    ids = []
    for qid in sorted(qrels):
        stand_in = qid not in run
        if stand_in and not options.complete:
            continue
        scores = {STAND_IN_DOC: 1.0} if stand_in else run[qid]
        r = rank_query(qrels[qid], scores, options.rel_level, options.max_ret, options.judged_only)
        ids.append(qid)
        for s, columns in cols:
            if s.record.kind == "runid":
                columns[0].values.append(runid)
                continue
            value = s.record.func(r, s.params, options.num_docs)
            for col, v in zip(columns, value if isinstance(value, list) else [value]):
                col.values.append(v)
                if stand_in:
                    _stand_in_fixes(col)
    if not ids:
        raise MalformedDataError("no queries with both results and relevance judgements")
    n = len(ids)
    for _, columns in cols:
        for col in columns:
            col.summary = _summary(col, n, qrels, options)
    return Report(tuple(ids), tuple(c for _, columns in cols for c in columns), runid)


def _summary(col: Column, n: int, qrels, options: Options):
    rule = col.summary_rule
    if rule == "none":
        return col.values[0] if col.kind == "runid" else None
    if rule == "count":
        return float(n)
    total = 0.0
    for v in col.values:  # in query order, as trec_eval accumulates
        total += v
    if rule == "sum":
        if col.name == "num_rel" and options.complete:
            return float(sum(1 for docs in qrels.values() for g in docs.values() if g > 0))
        return total
    if rule == "gm":
        return math.exp(total / n)
    return total / n
