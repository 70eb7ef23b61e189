"""``clirbench evaluate``'s front end: TREC qrels and run files -> ``results.Evaluation`` (the
kernel, ``evaluation.evaluate_ranked_run``, does the measuring; ``clirbench.evaluate`` scores runs
already in memory)."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


def evaluate_files(qrels_path, run_path, measures=None, resamples: int = 1000, seed: int = 42,
                   per_query_path=None):
    """A typed ``results.Evaluation`` of TREC files; malformed lines give a one-line error naming file
    and line.

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
    from .evaluation import evaluate_ranked_run

    evaluation = evaluate_ranked_run(fast[0], qrels, fast[1], measures, resamples, seed)
    if per_query_path is not None:
        _write_per_query(per_query_path, *evaluation.per_query)
    return evaluation


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
