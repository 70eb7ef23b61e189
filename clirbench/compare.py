"""Paired comparison of two results on the same pool (DESIGN §4 last paragraph, §6).

Differences are **B − A** throughout (positive: B scores higher), as in ``clirbench.stats``.
Only measures with a per-query column in both tables are compared: a paired test needs
per-query values, so a value reported from a mean (``MaxR_norm_of_mean``) is compared through
its per-query source column, not directly.
"""
from __future__ import annotations

import math
import os
from typing import Sequence

import numpy as np

from .checks import check_float, check_resamples, check_seed
from .errors import ClirbenchError
from .results import read_per_query, read_result
from .stats import paired_bootstrap, randomization_test

__all__ = ["compare", "format_comparison"]

_POOL_FIELDS = ("task", "subset", "scenario", "pool_mode", "pool_size", "doc_langs", "query_lang", "qrels_sha256")


def _pool_of(result) -> dict:
    return {"task": result.task.id, "subset": result.subset, "scenario": result.scenario, "pool_mode": result.pool_mode,
            "pool_size": result.pool_size, "doc_langs": list(result.doc_langs), "query_lang": result.query_lang,
            "qrels_sha256": result.qrels_sha256}


def compare(a_path: str | os.PathLike, b_path: str | os.PathLike, measures: Sequence | None = None,
            resamples: int = 1000, seed: int = 42, permutations: int = 10000,
            confidence: float = 0.95) -> dict:
    """Compare result B with result A query by query.

    Refuses (ClirbenchError, a ValueError) results on different pools or query sets. For each
    measure (``measures``, default: every column both per-query tables share, in A's order):
    means of A and B over the queries where both are defined, their difference B − A, its
    paired-bootstrap interval and the paired randomisation-test p-value. All measures share one
    set of bootstrap indices and one set of sign flips. Measures undefined for every query of both
    results (SameLangFirst on a one-language pool) are left out and listed under ``undefined``.
    """
    resamples, permutations = check_resamples(resamples), check_resamples(permutations, "permutations")
    seed = check_seed(seed)
    if not 0.0 < check_float(confidence, "confidence") < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    ra, rb = read_result(a_path), read_result(b_path)
    pa, pb = _pool_of(ra), _pool_of(rb)
    for key in _POOL_FIELDS:
        if pa[key] != pb[key]:
            raise ClirbenchError(f"cannot compare {a_path} and {b_path}: not the same pool "
                                 f"({key} {pa[key]!r} vs {pb[key]!r})")
    ids_a, va = read_per_query(a_path)
    ids_b, vb = read_per_query(b_path)
    if set(ids_a) != set(ids_b):
        only_a, only_b = len(set(ids_a) - set(ids_b)), len(set(ids_b) - set(ids_a))
        raise ClirbenchError(f"cannot compare {a_path} and {b_path}: different query sets "
                             f"({only_a} queries only in A, {only_b} only in B)")
    common = [m for m in va if m in vb]
    if measures is None:
        names = common
    else:
        names = [str(m) for m in measures]
        missing = [m for m in names if m not in common]
        if missing:
            raise ClirbenchError(f"no per-query values in both results for {', '.join(missing)}; "
                                 f"shared: {', '.join(common) or 'none'}")
    if not names:
        raise ClirbenchError(f"{a_path} and {b_path} share no per-query measure")
    order = {q: i for i, q in enumerate(ids_b)}
    take = np.fromiter((order[q] for q in ids_a), dtype=np.int64, count=len(ids_a))
    a = np.stack([va[m] for m in names], axis=1)
    b = np.stack([vb[m][take] for m in names], axis=1)
    # undefined for every query of both results (SameLangFirst on a one-language pool): nothing to compare
    undefined = np.isnan(a).all(axis=0) & np.isnan(b).all(axis=0)
    skipped = [m for m, u in zip(names, undefined) if u]
    if skipped:
        names = [m for m, u in zip(names, undefined) if not u]
        if not names:
            raise ClirbenchError(f"{', '.join(skipped)}: undefined on this pool for both results; nothing to compare")
        a, b = a[:, ~undefined], b[:, ~undefined]
    both = ~(np.isnan(a) | np.isnan(b))
    boot = paired_bootstrap(a, b, resamples=resamples, seed=seed, confidence=confidence)
    p = randomization_test(a, b, resamples=permutations, seed=seed, name="permutations")
    rows = {}
    for j, name in enumerate(names):
        n = int(both[:, j].sum())
        mean_a = float(a[both[:, j], j].mean()) if n else math.nan
        mean_b = float(b[both[:, j], j].mean()) if n else math.nan
        rows[name] = {"mean_a": mean_a, "mean_b": mean_b, "diff": float(boot["diff"][j]),
                      "ci_low": float(boot["ci_low"][j]), "ci_high": float(boot["ci_high"][j]),
                      "p_value": float(p[j]), "n": n}
    return {
        "a": {"path": str(a_path), "retriever": ra.retriever.spec},
        "b": {"path": str(b_path), "retriever": rb.retriever.spec},
        "pool": pa,
        "num_queries": len(ids_a),
        "direction": "B - A",
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": confidence, "method": "percentile"},
        "permutations": permutations,
        "measures": rows,
        "undefined": skipped,
    }


def _num(x: float, digits: int = 4) -> str:
    return "nan" if math.isnan(x) else f"{x:.{digits}f}"


def _p(x: float) -> str:
    return "nan" if math.isnan(x) else (f"{x:.4f}" if x >= 1e-3 else f"{x:.1e}")


def format_comparison(report: dict) -> str:
    """A compact aligned text table of a ``compare`` report."""
    pool = report["pool"]
    conf = report["bootstrap"]["confidence"]
    head = [f"A: {report['a']['retriever']}  ({report['a']['path']})",
            f"B: {report['b']['retriever']}  ({report['b']['path']})",
            f"pool: {pool['task']}/{pool['scenario']}/{pool['pool_mode']} docs {'-'.join(pool['doc_langs'])}"
            f" queries {pool['query_lang']}, {report['num_queries']} queries; "
            f"diff = B - A, {conf:.0%} paired bootstrap CI ({report['bootstrap']['resamples']} resamples), "
            f"randomisation p ({report['permutations']} sign flips)"]
    table = [("measure", "A", "B", "B-A", f"{conf:.0%} CI", "p", "n")]
    for name, row in report["measures"].items():
        table.append((name, _num(row["mean_a"]), _num(row["mean_b"]), _num(row["diff"]),
                      f"[{_num(row['ci_low'])}, {_num(row['ci_high'])}]", _p(row["p_value"]), str(row["n"])))
    from .report import format_table

    lines = format_table(list(table[0]), table[1:], right=tuple(range(1, len(table[0]))), rule=False)
    skipped = report.get("undefined") or []
    note = [f"not compared (undefined on this pool for both results): {', '.join(skipped)}"] if skipped else []
    return "\n".join(head + [""] + lines + note)
