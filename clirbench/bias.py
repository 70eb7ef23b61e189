"""Language-bias measures across results: the query-language gap on bilingual pools (DESIGN §4).

The same-language-first rate is a per-query measure (``SameLangFirst`` in clirbench.measures);
the gap needs two results — the same pool ranked for queries in L1 and in L2 — and is paired by
question id, which parallel tasks share across languages.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from .atomic import write_text_atomic
from .errors import ClirbenchError
from .results import read_per_query, read_result
from .stats import paired_bootstrap, randomization_test

BILINGUAL_SCENARIOS = ("multi", "multi-1")


def query_language_gap(path_l1: str | Path, path_l2: str | Path, measures: Sequence[str] | None = None,
                       resamples: int = 1000, seed: int = 42, permutations: int = 10000) -> dict:
    """Gap = measure with queries in L2 minus with queries in L1, for pool (L1, L2).

    ``path_l1``/``path_l2`` are the result files of one bilingual pool for the two query
    languages. Returns ``{pool fields, measures: {name: {diff, ci_low, ci_high, p_value, n}}}``.
    """
    r1, r2 = read_result(path_l1), read_result(path_l2)
    same = (r1.task.id, r1.subset, r1.scenario, r1.pool_mode, r1.doc_langs, r1.retriever.spec) == \
           (r2.task.id, r2.subset, r2.scenario, r2.pool_mode, r2.doc_langs, r2.retriever.spec)
    if not same or r1.scenario not in BILINGUAL_SCENARIOS or len(r1.doc_langs) != 2:
        raise ClirbenchError(f"{path_l1} and {path_l2} are not one bilingual pool with two query languages")
    l1, l2 = r1.doc_langs
    if (r1.query_lang, r2.query_lang) != (l1, l2):
        raise ClirbenchError(f"expected queries in {l1} then {l2}, got {r1.query_lang} and {r2.query_lang}")
    ids1, v1 = read_per_query(path_l1)
    ids2, v2 = read_per_query(path_l2)
    if set(ids1) != set(ids2):
        raise ClirbenchError(f"{path_l1} and {path_l2} have different question ids: not parallel")
    order = {qid: i for i, qid in enumerate(ids2)}
    align = np.array([order[qid] for qid in ids1])
    names = [m for m in (measures or v1) if m in v1 and m in v2]
    a = np.stack([v1[m] for m in names], axis=1)
    b = np.stack([v2[m][align] for m in names], axis=1)
    boot = paired_bootstrap(a, b, resamples=resamples, seed=seed)
    p = np.atleast_1d(randomization_test(a, b, resamples=permutations, seed=seed))
    out = {}
    for j, name in enumerate(names):
        out[name] = {"diff": float(np.atleast_1d(boot["diff"])[j]),
                     "ci_low": float(np.atleast_1d(boot["ci_low"])[j]),
                     "ci_high": float(np.atleast_1d(boot["ci_high"])[j]),
                     "p_value": float(p[j]), "n": int(np.atleast_1d(boot["n"])[j])}
    return {"task": r1.task.id, "subset": r1.subset, "scenario": r1.scenario, "pool_mode": r1.pool_mode,
            "doc_langs": [l1, l2], "retriever": r1.retriever.spec,
            "definition": f"mean with queries in {l2} minus mean with queries in {l1}, paired by question",
            "bootstrap": {"resamples": resamples, "seed": seed, "permutations": permutations},
            "measures": out}


def gap_path(result_l1: str | Path) -> Path:
    """``…/en-zh.q-en.json`` → ``…/en-zh.gap.json``."""
    path = Path(result_l1)
    return path.with_name(path.name.split(".q-")[0] + ".gap.json")


def write_gap(path_l1, path_l2, measures=None, resamples=1000, seed=42) -> tuple[Path, dict]:
    """Compute the gap and write it atomically beside the two results."""
    report = query_language_gap(path_l1, path_l2, measures, resamples, seed)
    target = gap_path(path_l1)
    write_text_atomic(target, json.dumps(report, indent=2) + "\n")
    return target, report
