"""The evaluation of ``trec_eval.c``, for all queries at once: the queries of the qrels (byte order of
ids), each selected measure over them (``rankings.Rankings`` in, one array per measure out), then
each measure's summary over the queries.

Queries: those with judgements and results; with ``complete`` (``-c``) every judged query, one
missing from the run scored on trec_eval's stand-in ranking (one unjudged document), its num_ret,
unj_*, and the plainly named utility, relstring and rbp_resid then set to 0 / empty, as trec_eval.
A judged query that the run lacks is otherwise skipped, as trec_eval documents (10.0's loop exits
with status 4 instead, a regression). Summaries: the mean over the queries, a sum for the counts
(num_rel with ``-c``: every judgement with a grade > 0), exp(mean log) for gm_map and gm_bpref; the
values are added in query order, as trec_eval accumulates them.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..util.errors import MalformedDataError
from .rankings import NOT_POOLED, STAND_IN_DOC, Judgements, Rankings, from_dicts, judgements
from .registry import Selected

__all__ = ["Options", "Column", "Report", "evaluate", "evaluate_rankings", "prepare", "STAND_IN_DOC"]


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
    """One printed measure name: its values per evaluated query (an array; a list for relstring and
    runid) and its summary."""

    name: str
    kind: str  # "long", "double", "string" or "runid"
    summary_rule: str
    per_query_printed: bool
    values: object = field(default_factory=list)
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


_ZERO_FOR_STAND_IN = ("num_ret", "utility", "rbp_resid")
_LEVEL = re.compile(r"[+-]?[0-9]+")  # a gain parameter's grade (trec_eval's valid_int)


def _stand_in_fix(col: Column, stand_in: np.ndarray) -> None:
    name = col.name
    if name in _ZERO_FOR_STAND_IN or name.startswith("unj"):
        col.values[stand_in] = 0.0
    elif name == "relstring":
        for i in np.flatnonzero(stand_in).tolist():
            col.values[i] = ""


def _scores_not_pooled(selected: Sequence[Selected]) -> bool:
    """Whether a measure gives the not-pooled documents a gain (a ``-1=gain`` parameter)."""
    return any(s.record.kind == "param_pair" and any(_LEVEL.fullmatch(name) and len(name.lstrip("+-")) <= 19 and int(name) == NOT_POOLED
                                                     for name, _ in s.params) for s in selected)


def prepare(rankings: Rankings, options: Options, selected: Sequence[Selected] = ()) -> Rankings:
    """The rankings as the measures see them: cut at ``-M``, judged only with ``-J``, at ``-l``,
    listing the not-pooled documents where a measure scores them."""
    if options.max_ret is not None and options.max_ret < 0:
        raise ValueError(f"-M {options.max_ret}: the number of documents must be >= 0")
    r = rankings.cut(options.max_ret)
    if options.judged_only:
        r = r.judged_only()
    r = r.with_level(options.rel_level)
    if options.rel_level <= NOT_POOLED or _scores_not_pooled(selected):
        r = r.densified()
    return r


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], runid: str,
             selected: Sequence[Selected], options: Options = Options()) -> Report:
    """Every selected measure per evaluated query and summarised, as trec_eval computes them."""
    if options.max_ret is not None and options.max_ret < 0:
        raise ValueError(f"-M {options.max_ret}: the number of documents must be >= 0")
    judg = judgements(qrels)
    return evaluate_rankings(from_dicts(judg, run, options.complete), judg, runid, selected, options)


def evaluate_rankings(rankings: Rankings, judg: Judgements, runid: str, selected: Sequence[Selected],
                      options: Options = Options()) -> Report:
    """``evaluate`` on rankings already formed (``rankings.from_table`` / ``from_dicts``, with the
    same ``complete``)."""
    r = prepare(rankings, options, selected)
    if not r.n:
        raise MalformedDataError("no queries with both results and relevance judgements")
    columns: list[Column] = []
    for s in selected:
        kind = {"runid": "runid", "long": "long", "string": "string"}.get(s.record.kind, "double")
        if s.record.kind == "runid":
            columns.append(Column(s.names[0], kind, s.record.summary, s.record.per_query, [runid] * r.n))
            continue
        value = s.record.func(r, s.params, options.num_docs)
        if isinstance(value, list):
            parts = [value]
        else:
            value = np.asarray(value, dtype=np.float64)
            parts = [value] if value.ndim == 1 else [np.ascontiguousarray(value[:, j]) for j in range(value.shape[1])]
        for name, values in zip(s.names, parts):
            col = Column(name, kind, s.record.summary, s.record.per_query, values)
            if r.stand_in.any():
                _stand_in_fix(col, r.stand_in)
            columns.append(col)
    for col in columns:
        col.summary = _summary(col, r.n, judg, options)
    return Report(r.query_ids, tuple(columns), runid)


def _summary(col: Column, n: int, judg: Judgements, options: Options):
    rule = col.summary_rule
    if rule == "none":
        return col.values[0] if col.kind == "runid" else None
    if rule == "count":
        return float(n)
    total = float(np.cumsum(np.r_[0.0, col.values])[-1])  # in query order, as trec_eval accumulates
    if rule == "sum":
        if col.name == "num_rel" and options.complete:
            return float(judg.positive)
        return total
    if rule == "gm":
        return math.exp(total / n)
    return total / n
