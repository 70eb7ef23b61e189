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
    with value null and a note.
    """
    from .checks import check_resamples, check_seed
    from .measures import compute, parse
    from .ranking import rank_run
    from .results import summarise

    resamples, seed = check_resamples(resamples), check_seed(seed)
    try:
        objs = tuple(parse(m) for m in (measures or STANDARD_MEASURES))
    except ValueError as exc:
        raise UnknownNameError(str(exc)) from None
    table = rank_run(run, qrels)
    if not table.query_ids:
        raise MalformedDataError("no query of the run has judgements in the qrels: nothing to evaluate")
    per_query = compute(objs, table)
    finite, notes = {}, {}
    for m in objs:
        values = per_query[str(m)]
        if np.isinf(values).any():
            notes[str(m)] = (f"needs the full ranking: {int(np.isinf(values).sum())} queries have "
                             f"relevant documents that the run does not contain")
        else:
            finite[str(m)] = values
    kept = [m for m in objs if str(m) in finite]
    transforms = {str(m): (lambda x, m=m: m.from_mean(x, table)) for m in kept if m.of_mean}
    summary = summarise(kept, finite, resamples, seed, transforms=transforms)
    out_measures = {}
    for m in objs:
        name = str(m)
        if name in summary:
            out_measures[name] = summary[name].to_dict()
        else:
            out_measures[name] = {"value": None, "ci_low": None, "ci_high": None, "n": 0, "note": notes[name]}
    return {
        "num_queries": len(table.query_ids),
        "queries_in_run_without_judgements": sum(1 for q in run if not qrels.get(q)),
        "queries_judged_not_in_run": sum(1 for q in qrels if q not in run),
        "measures": out_measures,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": 0.95, "method": "percentile"},
        "tie_rule": "score descending, then doc id descending (byte-wise), as trec_eval",
    }


def evaluate_files(qrels_path, run_path, measures=None, resamples: int = 1000, seed: int = 42) -> dict:
    """``evaluate`` on TREC files; malformed lines give a one-line error naming file and line."""
    from .checks import check_resamples, check_seed
    from .trec import read_qrels, read_run

    resamples, seed = check_resamples(resamples), check_seed(seed)  # before reading any file
    report = evaluate(read_qrels(qrels_path), read_run(run_path), measures, resamples, seed)
    return {"qrels": str(qrels_path), "run": str(run_path), **report}
