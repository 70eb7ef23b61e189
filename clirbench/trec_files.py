"""``clirbench evaluate``'s front end: TREC qrels and run files -> ``results.Evaluation`` (the
kernel, ``evaluation.evaluate_ranked_run``, does the measuring; ``clirbench.trec_files`` scores runs
already in memory)."""
from __future__ import annotations

import dataclasses
import functools
import json
from typing import Mapping, Sequence

import numpy as np

from .evaluation import evaluate_ranked_run
from .formats.trec import check_inputs, is_stream, read_qrels, read_run, rereadable
from .measures import parse
from .rank.run_file import rank_run_file
from .rank.runs import rank_run
from .results.run_report import PerQuery
from .stats.summary import summarise
from .trec_eval.names import lookup
from .util.atomic import write_text_atomic
from .util.checks import check_resamples, check_seed
from .util.errors import UnknownNameError


def evaluate_files(qrels_path, run_path, measures=None, resamples: int = 1000, seed: int = 42,
                   per_query_path=None):
    """A typed ``results.Evaluation`` of TREC files; malformed lines give a one-line error naming file
    and line.

    The run is read by the pyarrow reader (``rank.run_file``) straight into ranks; a file it cannot
    vouch for, or no pyarrow, goes through the strict pure-Python reader (same result, slower); both
    follow ``formats.trec``'s rules. ``-`` is standard input; a stream (``-``, a pipe, a FIFO) is
    read once (the run into a temporary copy, deleted after). ``per_query_path`` (``.tsv`` or
    ``.jsonl``) also gets one ``query_id, measure, value`` record per evaluated query and measure
    (as ir_measures' ``-q``).
    """

    resamples, seed = check_resamples(resamples), check_seed(seed)  # before reading any file
    if per_query_path is not None and not str(per_query_path).endswith((".tsv", ".jsonl")):
        raise ValueError(f"--per-query {per_query_path}: the name must end in .tsv or .jsonl")
    kernel, by_trec = _split_measures(measures)
    check_inputs(qrels_path, run_path)
    read = functools.cache(lambda: read_qrels(qrels_path))
    if is_stream(run_path):
        read()  # the qrels first, as trec_eval: one writer may feed the qrels, then the run
    with rereadable(run_path) as run_file:  # the run itself, or a copy of a stream's bytes
        fast = rank_run_file(run_file, read)  # reads the qrels while its thread parses the run's first blocks
        qrels = read()  # read already; or (no fast path) read now, its errors before the run's
        run = read_run(run_file, name=run_path) if fast is None or by_trec else None
    if fast is None:
        fast = rank_run(run, qrels), list(run)

    kernel_names = kernel if measures is None or kernel else ["RR"]  # RR: a placeholder, dropped below
    evaluation = evaluate_ranked_run(fast[0], qrels, fast[1], kernel_names, resamples, seed)
    if by_trec:
        evaluation = _with_trec_eval_measures(evaluation, qrels, run, measures, kernel, by_trec)
    if per_query_path is not None:
        _write_per_query(per_query_path, *evaluation.per_query)
    return evaluation


def _split_measures(measures) -> tuple[list[str] | None, list[str]]:
    """The names the measure kernel gives, and the rest when trec_eval's measures give them (ir_measures'
    ``Bpref``, ``Judged@10``, ``P(rel=2)@5``; trec_eval's ``ndcg_cut_10``); unknown names raise."""
    if measures is None:
        return None, []

    kernel, by_trec = [], []
    for name in map(str, measures):
        try:
            kernel.append(str(parse(name)))
        except ValueError as exc:
            if lookup(name) is None:
                raise UnknownNameError(f"{exc}; or an ir_measures / trec_eval name such as Bpref, Judged@10, "
                                       f"P(rel=2)@5, ndcg_cut_10") from None
            by_trec.append(name)
    return kernel, by_trec


def _with_trec_eval_measures(evaluation, qrels, run, measures, kernel, by_trec):
    """``evaluation`` with the trec_eval-computed measures added, in the order asked, on the same queries."""

    from .trec_eval.names import lookup, per_query  # lazy: a local name

    ids, values = per_query(qrels, run.scores if hasattr(run, "scores") else run, by_trec)
    position = {q: i for i, q in enumerate(ids)}
    order = [position[q] for q in evaluation.per_query[0]]
    columns = {n: np.asarray(values[n], dtype=np.float64)[order] for n in by_trec}
    summary = summarise(by_trec, columns, evaluation.resamples, evaluation.seed,
                        transforms=_summary_rules(by_trec, columns))
    for n in by_trec:
        if lookup(n).summary == "gm":  # per query: max(value, 0.00001), whose geometric mean is reported
            columns[n] = np.exp(columns[n])
    all_columns = {**dict(evaluation.per_query[1]), **columns}
    names = [str(m) for m in measures]
    if not kernel:
        all_columns.pop("RR")
    kept = [n if n in all_columns else str(parse(n)) for n in names]
    merged = {**evaluation.measures, **summary}
    return dataclasses.replace(evaluation, measures={n: merged[n] for n in kept},
                               per_query=PerQuery(evaluation.per_query[0], {n: all_columns[n] for n in kept}))


def _summary_rules(names, columns) -> dict:
    """trec_eval's summary of each name that is not a mean, as a function of the bootstrap's mean
    (exact for the percentile interval, the functions being increasing): gm_map, gm_bpref: exp of
    the mean of the per-query logs; the counts (NumRet, num_rel, ...): the sum, n times the mean;
    NumQ, num_q: the number of queries."""

    out = {}
    for n in names:
        rule = lookup(n).summary
        count = int(np.count_nonzero(~np.isnan(columns[n])))
        if rule == "gm":
            out[n] = np.exp
        elif rule in ("sum", "count"):
            out[n] = lambda mean, count=count: mean * count
    return out


def _write_per_query(path, query_ids: Sequence[str], per_query: Mapping[str, np.ndarray]) -> None:
    """One record per (query, measure); NaN (undefined) and inf (needs the full ranking) as null."""

    jsonl = str(path).endswith(".jsonl")
    lines = []
    for name, values in per_query.items():
        for q, v in zip(query_ids, values.tolist()):
            finite = v == v and abs(v) != float("inf")
            if jsonl:
                lines.append(json.dumps({"query_id": q, "measure": name, "value": v if finite else None}))
            else:
                lines.append(f"{q}\t{name}\t{repr(v) if finite else 'null'}")
    write_text_atomic(path, ("" if jsonl else "query_id\tmeasure\tvalue\n") + "\n".join(lines) + "\n")
