"""The Python API a researcher uses in a notebook: ``run``, ``evaluate``, ``load_results`` and the
typed results they return (``RunResult`` of ``PoolResult``s, ``Evaluation``), each with
``.to_pandas()``. Everything works in memory; files are written only where asked.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

from . import runner
from .evaluation import evaluate_run
from .results import Evaluation, Metric, PoolResult, ResultStore, RunResult
from .results.files import is_record_file

__all__ = ["run", "evaluate", "load_results", "RunResult", "PoolResult", "Evaluation", "Metric"]


def run(model, task="xquad", config=None, *, ranker=None, **options) -> RunResult:
    """Evaluate ``model`` (a spec string such as ``"bm25"`` or a Retriever object) on a task.

    ``task`` is a task id, the object ``get_task(id)`` returns, or a sequence of ``Pool``s you
    built. The settings are a ``RunConfig`` and/or its options by name (``clirbench.run_config``):
    ``langs``, ``scenarios``, ``query_langs``, ``pool_mode``, ``data_dir``, ``task_options``;
    ``cache_dir``, ``query_prompt``, ``doc_prompt``, ``batch_size``, ``device``, ``translation``;
    ``shards``, ``index``, ``executor``, ``address``, ``workers``, ``depth``; ``measures``, ``resamples``,
    ``seed``; ``output_dir``, ``overwrite``, ``progress``, ``save_run``.

    Output: ``output_dir`` (an option, or ``RunConfig``'s ``output.output_dir``) defaults to None:
    nothing is written, nothing reused. With a folder (``output_dir="results"``), records are
    written there and finished ones reused, as ``clirbench run --output results`` does: the CLI
    passes its ``--output`` (default ``results``) by the same rule.

    ``ranker`` (any object with ``supports(measures)`` and ``rank(retriever, seen_pool, pool) ->
    Ranked``) ranks every pool instead of the one the ranking options choose.
    """

    return runner.run(model, task=task, config=config, ranker=ranker, **options)


def load_results(paths) -> RunResult:
    """Result files (paths, or folders searched recursively; gap and consistency files skipped) as a
    ``RunResult``, for ``.to_pandas()`` and ``compare``."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = []
    for p in map(Path, paths):
        found = ResultStore(p).files() if p.is_dir() else [p]
        files.extend(f for f in found if is_record_file(f))
    return RunResult(tuple(ResultStore.read(f) for f in files), (), {}, 0.0)


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
             measures: Sequence | None = None, resamples: int = 1000, seed: int = 42) -> Evaluation:
    """Score a run ``{query_id: {doc_id: score}}`` against qrels ``{query_id: {doc_id: grade}}``:
    every measure's mean with its 95% percentile-bootstrap CI, and the per-query values.

    Queries evaluated: those in the run with at least one judgement (as pytrec_eval).
    """

    return evaluate_run(qrels, run, None if measures is None else [str(m) for m in measures], resamples, seed)
