"""Score any TREC run against TREC qrels with clirbench's measures and bootstrap CIs."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .errors import MalformedDataError, UnknownNameError

# MaxR_norm needs |D|, which a TREC run does not give; MaxR needs every relevant doc retrieved.
STANDARD_MEASURES = ("nDCG@10", "nDCG@1", "RR", "AP@1000", "R@100", "P@10", "Success@10", "MaxR", "Complete@10")


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
             measures: Sequence[str] | None = None, resamples: int = 1000, seed: int = 42) -> dict:
    """All measures with 95% percentile-bootstrap CIs, as a JSON-able dict.

    Queries evaluated: those in the run with at least one judgement (as pytrec_eval). A measure
    that needs the full ranking (MaxR when a relevant document was not retrieved) is reported
    with value null and a note. ``evaluate_run`` gives the per-query values as well.
    """
    return report_dict(evaluate_run(qrels, run, measures, resamples, seed), qrels, list(run), resamples, seed)


def evaluate_run(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                 measures: Sequence[str] | None = None, resamples: int = 1000, seed: int = 42):
    """The ``evaluation.PoolEvaluation`` of a TREC-style run: ranks, per-query values, summary."""
    from .checks import check_resamples, check_seed
    from .ranking import rank_run

    resamples, seed = check_resamples(resamples), check_seed(seed)
    return _evaluation(rank_run(run, qrels), measures, resamples, seed)


def _evaluation(table, measures, resamples: int, seed: int):
    from .evaluation import evaluate_table
    from .measures import parse

    try:
        objs = tuple(parse(m) for m in (measures or STANDARD_MEASURES))
    except ValueError as exc:
        raise UnknownNameError(str(exc)) from None
    if not table.query_ids:
        raise MalformedDataError("no query of the run has judgements in the qrels: nothing to evaluate")
    return evaluate_table(table, objs, resamples, seed)


def report_dict(evaluation, qrels, run_queries: Sequence[str], resamples: int, seed: int) -> dict:
    """The JSON report of a run's PoolEvaluation (``run_queries``: the query ids the run holds)."""
    out_measures = {}
    for m in evaluation.measures:
        name = str(m)
        if name in evaluation.summary:
            out_measures[name] = evaluation.summary[name].to_dict()
        else:
            missing = int(np.isinf(evaluation.per_query[name]).sum())
            out_measures[name] = {"value": None, "ci_low": None, "ci_high": None, "n": 0,
                                  "note": f"needs the full ranking: {missing} queries have relevant "
                                          f"documents that the run does not contain"}
    in_run = set(run_queries)
    return {
        "num_queries": len(evaluation.query_ids),
        "queries_in_run_without_judgements": sum(1 for q in run_queries if not qrels.get(q)),
        "queries_judged_not_in_run": sum(1 for q in qrels if q not in in_run),
        "measures": out_measures,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": 0.95, "method": "percentile"},
        "tie_rule": "score descending, then doc id descending (byte-wise), as trec_eval",
    }


def evaluate_files(qrels_path, run_path, measures=None, resamples: int = 1000, seed: int = 42,
                   per_query_path=None) -> dict:
    """``evaluate`` on TREC files; malformed lines give a one-line error naming file and line.

    The run is read by the pyarrow reader (``trec_fast``) straight into ranks; a file it cannot
    vouch for, or no pyarrow, goes through the strict pure-Python reader (same result, slower).
    ``per_query_path`` (``.tsv`` or ``.jsonl``) also gets one ``query_id, measure, value`` record
    per evaluated query and measure (as ir_measures' ``-q``).
    """
    from .checks import check_resamples, check_seed
    from .ranking import rank_run
    from .formats.trec import read_qrels, read_run
    from .formats.trec_fast import rank_run_file

    resamples, seed = check_resamples(resamples), check_seed(seed)  # before reading any file
    if per_query_path is not None and not str(per_query_path).endswith((".tsv", ".jsonl")):
        raise ValueError(f"--per-query {per_query_path}: the name must end in .tsv or .jsonl")
    qrels = read_qrels(qrels_path)
    fast = rank_run_file(run_path, qrels)
    if fast is None:
        run = read_run(run_path)
        fast = rank_run(run, qrels), list(run)
    evaluation = _evaluation(fast[0], measures, resamples, seed)
    if per_query_path is not None:
        _write_per_query(per_query_path, evaluation.query_ids, evaluation.per_query)
    return {"qrels": str(qrels_path), "run": str(run_path), **report_dict(evaluation, qrels, fast[1], resamples, seed)}


def _write_per_query(path, query_ids: Sequence[str], per_query: Mapping[str, np.ndarray]) -> None:
    """One record per (query, measure); NaN (undefined) and inf (needs the full ranking) as null."""
    import json

    from .atomic import write_text_atomic

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
