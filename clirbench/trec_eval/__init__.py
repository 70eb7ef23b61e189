"""A drop-in for NIST trec_eval (``clirbench trec_eval``, docs/commands.md): its measures, options,
input rules and text output.

``inputs`` reads the files (the run through the pyarrow reader of ``clirbench evaluate``),
``rankings`` holds every query's ranked judgements at once (trec_eval's tie rule, ``-M``, ``-J``),
``segments`` the per-query sums in trec_eval's order, ``whole`` / ``cutoffs`` / ``gains`` the
measures (vectorised over the queries), ``registry`` names them (parameters, nicknames, print
order), ``engine`` computes them and their summaries, ``report`` prints, ``names`` maps
ir_measures' names (``nDCG@10``, ``P(rel=2)@5``) onto these measures.
"""
from __future__ import annotations

import math

from ..stats import bootstrap_ci
from .engine import Options, Report, evaluate, evaluate_rankings
from .inputs import read_rankings
from .registry import MEASURES, NICKNAMES, select

__all__ = ["Options", "Report", "evaluate", "evaluate_files", "intervals", "select", "MEASURES", "NICKNAMES"]


def evaluate_files(qrels_path, run_path, measures=("official",), options: Options = Options()) -> Report:
    """``trec_eval [options] -m ... qrels run`` as a ``Report`` (values per query and summaries)."""

    selected = select(list(measures))  # unknown names fail before any file is read
    judg, rankings, runid = read_rankings(qrels_path, run_path, options.complete)
    return evaluate_rankings(rankings, judg, runid, selected, options)


def intervals(report: Report, resamples: int = 1000, seed: int = 42) -> dict[str, tuple[float, float]]:
    """95% percentile bootstrap interval of each averaged summary (gm_*: exp of the log-mean's interval)."""

    import numpy as np

    cols = [c for c in report.columns if c.summary_rule in ("mean", "gm") and c.kind == "double"]
    if not cols or resamples == 0:
        return {}
    values = np.column_stack([np.asarray(c.values, dtype=np.float64) for c in cols])
    low, high = bootstrap_ci(values, resamples, seed)
    out = {}
    for c, lo, hi in zip(cols, np.atleast_1d(low).tolist(), np.atleast_1d(high).tolist()):
        out[c.name] = (math.exp(lo), math.exp(hi)) if c.summary_rule == "gm" else (lo, hi)
    return out
