"""MTEB plugin: clirbench pools as MTEB retrieval tasks, MTEB results as clirbench records.

``import clirbench.mteb`` is cheap; mteb loads when a function here is called::

    import mteb, clirbench.mteb
    tasks = clirbench.mteb.get_tasks(["xquad"], langs="en,zh", scenarios="multi")
    res = mteb.evaluate(model, tasks=tasks, cache=mteb.ResultCache("mteb-cache"))
    paths = clirbench.mteb.to_results(res, "results", tasks=tasks)

MTEB's models as clirbench retrievers: the ``mteb:<model>`` family (``clirbench.mteb.model``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .names import score_key as _key

__all__ = ["get_tasks", "to_results", "score_key"]


def get_tasks(tasks: str | Sequence[str], langs=None, scenarios="all", query_langs=None,
              pool_mode: str = "unique", data_dir=None, measures: Sequence[str] | None = None,
              **task_options) -> list:
    """One MTEB task per (clirbench task, subset, scenario, pool mode); one MTEB subset per pool.

    Arguments are those of ``clirbench run``. ``measures`` (default: clirbench's defaults) are
    added to MTEB's scores under ``score_key`` names (``max_at_r``, ``complete_at_10``, ...).
    """
    from .tasks import get_tasks as _get  # lazy: mteb, numpy

    return _get(tasks, langs=langs, scenarios=scenarios, query_langs=query_langs, pool_mode=pool_mode,
                data_dir=data_dir, measures=measures, **task_options)


def to_results(mteb_result, output_dir, *, tasks: Sequence | None = None, data_dir=None,
               resamples: int = 1000, seed: int = 42, overwrite: bool = False, model=None) -> list[Path]:
    """Write one clirbench result record (+ per-query table) per pool that MTEB evaluated.

    ``model`` (a registry name or a local model folder) names the model when MTEB recorded none
    (a local model: ``no_model_name/available``); a folder is recorded by its weights hash and
    its results go to ``mteb__<folder>-<hash>``.
    """
    from .convert import to_results as _to  # lazy: mteb, numpy

    return _to(mteb_result, output_dir, tasks=tasks, data_dir=data_dir, resamples=resamples, seed=seed,
               overwrite=overwrite, model=model)


def score_key(measure) -> str:
    """The MTEB score name of a clirbench measure: ``MaxR`` -> ``max_at_r``, ``nDCG@10`` -> ``clirbench_ndcg_at_10``."""

    return _key(measure)
