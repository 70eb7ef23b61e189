"""The Python API a researcher uses in a notebook: ``run``, ``evaluate``, ``load_results`` and the
typed results they return (``RunResult`` of ``PoolResult``s, ``Evaluation``), each with
``.to_pandas()``. Everything works in memory; files are written only where asked.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, NamedTuple, Sequence

from .results import MeasureValue, PerQuery, PoolResult, Result, RunResult

__all__ = ["run", "evaluate", "load_results", "RunResult", "PoolResult", "Evaluation", "Metric"]


class Metric(NamedTuple):
    """One per-query value, as ir_measures' ``Metric``."""

    query_id: str
    measure: str
    value: float


def run(model, task="xquad", config=None, **options) -> RunResult:
    """Evaluate ``model`` (a spec string such as ``"bm25"`` or a Retriever object) on a task.

    ``task`` is a task id, the object ``get_task(id)`` returns, or a sequence of ``Pool``s you
    built. The settings are a ``RunConfig`` and/or its options by name (``clirbench.run_config``):
    ``langs``, ``scenarios``, ``query_langs``, ``pool_mode``, ``data_dir``, ``task_options``;
    ``cache_dir``, ``query_prompt``, ``doc_prompt``, ``batch_size``, ``device``, ``translation``;
    ``shards``, ``index``, ``executor``, ``address``, ``workers``; ``measures``, ``resamples``,
    ``seed``; ``output_dir``, ``overwrite``, ``progress``. Here ``output_dir`` defaults to None:
    nothing is written; with a folder, results are written there and finished ones reused, as
    ``clirbench run`` does.
    """
    from . import runner

    if config is None:
        options.setdefault("output_dir", None)
    return runner.run(model, task=task, config=config, **options)


def load_results(paths) -> RunResult:
    """Result files (paths, or folders searched recursively; ``*.gap.json`` skipped) as a
    ``RunResult``, for ``.to_pandas()`` and ``compare``."""
    from .results import read_result

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = []
    for p in map(Path, paths):
        found = sorted(p.rglob("*.json")) if p.is_dir() else [p]
        files.extend(f for f in found if not f.name.endswith(".gap.json"))
    pools = []
    for f in files:
        r = read_result(f)
        pools.append(PoolResult.read(r.pool_key.name, f, r))
    return RunResult(tuple(pools), (), {}, 0.0)


@dataclass(frozen=True)
class Evaluation:
    """What ``evaluate`` returns: aggregates with CIs (``measures``, ``aggregate``) and per-query
    values (``per_query``, ``iter_calc()``), as ir_measures' ``calc_aggregate`` and ``iter_calc``.
    A measure that needs the full ranking (MaxR with a relevant document missing from the run) has
    no aggregate (None) and per-query ``inf`` where it is unknown."""

    report: Mapping
    per_query: PerQuery

    @property
    def measures(self) -> dict[str, MeasureValue | None]:
        nan = float("nan")
        return {name: None if "note" in m else MeasureValue(*(nan if m[k] is None else m[k] for k in
                                                               ("value", "ci_low", "ci_high")), m["n"])
                for name, m in self.report["measures"].items()}

    @property
    def aggregate(self) -> dict[str, float | None]:
        """``{measure: mean}``, as ``ir_measures.calc_aggregate``."""
        return {name: m["value"] for name, m in self.report["measures"].items()}

    def __getitem__(self, measure) -> float | None:
        return self.aggregate[str(measure)]

    def iter_calc(self) -> Iterator[Metric]:
        """``Metric(query_id, measure, value)`` per evaluated query and measure."""
        ids, values = self.per_query
        for name, column in values.items():
            for qid, value in zip(ids, column.tolist()):
                yield Metric(qid, name, value)

    def to_dict(self) -> dict:
        """The JSON report (what ``clirbench evaluate`` prints, less the file names)."""
        import copy

        return copy.deepcopy(dict(self.report))

    def to_pandas(self, per_query: bool = False):
        """One row per measure (measure, value, ci_low, ci_high, n), or per query and measure."""
        from .results.frames import measures_frame, per_query_frame

        if per_query:
            return per_query_frame([("", *self.per_query)]).drop(columns="pool")
        return measures_frame(self.measures)


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
             measures: Sequence | None = None, resamples: int = 1000, seed: int = 42) -> Evaluation:
    """Score a run ``{query_id: {doc_id: score}}`` against qrels ``{query_id: {doc_id: grade}}``:
    every measure's mean with its 95% percentile-bootstrap CI, and the per-query values.

    Queries evaluated: those in the run with at least one judgement (as pytrec_eval).
    """
    from .evaluate import evaluate_run, report_dict

    names = None if measures is None else [str(m) for m in measures]
    evaluation = evaluate_run(qrels, run, names, resamples, seed)
    report = report_dict(evaluation, qrels, list(run), resamples, seed)
    return Evaluation(report, PerQuery(evaluation.query_ids, dict(evaluation.per_query)))
