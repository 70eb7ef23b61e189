"""MTEB results (``mteb.evaluate``'s ModelResult) -> clirbench result records (docs/results.md).

With the task objects that MTEB evaluated (``tasks=``), each record gets clirbench's per-query
values and bootstrap CIs, computed from MTEB's run. Without them the pools are rebuilt from
the task names and only the values MTEB stored are written (CIs null, per-query table of query
ids only).
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Mapping, Sequence

import numpy as np

from ..evaluation import evaluate_table
from ..identity import SystemKey
from ..results import MeasureValue, PerQuery, Result, ResultStore, RetrieverRef, hardware_info
from ..retrievers.encoders import weights_hash
from ..stats.preference import pool_preference
from ..tasks import get_task, list_tasks
from ..util.errors import ClirbenchError
from .names import parse_subset_name, parse_task_name, score_key
from .tasks import SPLIT, get_tasks

__all__ = ["to_results"]


def _task_results(mteb_result) -> tuple[list, str | None, str | None]:
    """(TaskResults, model name, model revision) from a ModelResult, a TaskResult or a list of them."""
    if hasattr(mteb_result, "task_results"):
        return list(mteb_result.task_results), mteb_result.model_name, mteb_result.model_revision
    items = list(mteb_result) if isinstance(mteb_result, (list, tuple)) else [mteb_result]
    return items, None, None


def _rebuild(name: str, subsets: Sequence[str], data_dir):
    """Pools and measures of MTEB task ``name`` (its subsets ``en-zh.q-zh``, ...), rebuilt from the data."""
    parsed = parse_task_name(name)
    if parsed is None:
        return None
    task_id, scenario, mode, _ = parsed
    if ":" in task_id or task_id not in {t.id for t in list_tasks()}:
        raise ClirbenchError(f"cannot rebuild the pools of MTEB task {name!r} from its name (the user's own "
                             f"data); pass tasks= (the task objects mteb.evaluate ran)")
    # retrieval tasks: the document languages of the subsets (clirudit's en side is not a default)
    parsed_subsets = _parsed_subsets(name, subsets)
    calls = [dict(langs=",".join(sorted({l for docs, _ in parsed_subsets for l in docs})))]
    if get_task(task_id).card.kind == "parallel":
        calls = _parallel_calls(parsed_subsets)
    pools, measures = {}, None
    for kwargs in calls:
        for t in get_tasks(task_id, scenarios=scenario, pool_mode=mode, data_dir=data_dir, **kwargs):
            if t.metadata.name == name:
                pools.update(t.pools)
                measures = t.measures
    return SimpleNamespace(pools=pools, measures=measures, per_query={}) if pools else None


def _parallel_calls(subsets: Sequence[tuple[tuple[str, ...], str]]) -> list[dict]:
    """The ``get_tasks`` options that rebuild a parallel task's pools of these (parsed) subsets."""
    calls: list[dict] = []
    named = sorted({l for docs, q in subsets for l in [*docs, q]})
    for docs, q in subsets:
        langs = list(docs)
        if len(langs) == 1 and langs[0] != q:
            langs = [q, langs[0]]
        if len(langs) == 1:  # mono-same: paired with another language of the result, not with every one
            langs = [q, next((l for l in named if l != q), q)]
        call = dict(langs=",".join(langs), query_langs=[q]) if len(set(langs)) >= 2 else dict()
        if call not in calls:
            calls.append(call)
    return calls


def _parsed_subsets(name: str, subsets: Sequence[str]) -> list[tuple[tuple[str, ...], str]]:
    """(document languages, query language) of each subset of MTEB task ``name``."""
    try:
        return [parse_subset_name(s) for s in subsets]
    except ValueError as exc:
        raise ClirbenchError(f"cannot rebuild the pools of MTEB task {name!r}: {exc}") from None


_NO_NAME = ("no_model_name/available", "no_model_name_available", "unknown", "")
_NO_REVISION = ("no_revision_available", "")


def _model_ref(name: str | None, revision: str | None, model) -> tuple[str, str | None, str | None]:
    """(spec, model id, revision) of the evaluated model. MTEB records a local model as
    ``no_model_name/available`` (revision ``no_revision_available``): ``model`` (its registry name
    or local folder) names it then; a local folder's revision is its weights hash."""

    revision = None if revision in _NO_REVISION else revision
    if model is not None:
        model = str(model)
        folder = os.path.expanduser(model)
        if os.path.isdir(folder):
            folder = os.path.abspath(folder).rstrip("/")
            return f"mteb:{folder}", folder, weights_hash(Path(folder))
        return f"mteb:{model}", model, revision
    if name is None or name in _NO_NAME:
        raise ClirbenchError("MTEB recorded no model name (a local model?): pass model=<registry name or local "
                             "folder> to to_results")
    return f"mteb:{name}", name, revision


def to_results(mteb_result, output_dir, *, tasks: Sequence | None = None, data_dir=None,
               resamples: int = 1000, seed: int = 42, overwrite: bool = False, model=None) -> list[Path]:
    """See ``clirbench.mteb.to_results``."""
    store = ResultStore(output_dir, overwrite)
    results, model_name, model_revision = _task_results(mteb_result)
    by_name = {t.metadata.name: t for t in (tasks or ())}
    written: list[Path] = []
    hardware = None  # probed once, at the first record
    for tr in results:
        entries = (tr.scores or {}).get(SPLIT) or []
        task = _task_of(tr.task_name, by_name, entries, data_dir)
        if task is None:
            continue  # not a clirbench task
        spec, model_id, revision = _model_ref(model_name or getattr(tr, "model_name", None),
                                              model_revision or getattr(tr, "model_revision", None), model)
        system = SystemKey.of_record({"retriever": {"spec": spec, "model_id": model_id, "revision": revision}})
        for entry in entries:
            subset = entry["hf_subset"]
            pool = task.pools.get(subset)
            if pool is None:
                raise ClirbenchError(f"MTEB task {tr.task_name!r} has no clirbench pool for subset {subset!r}")
            path = store.path(system, pool)
            store.check_new(path)
            summary, per_query, preference = _measured(task, pool, entry, resamples, seed)
            if hardware is None:
                hardware = hardware_info()
            mteb_scores = {k: v for k, v in entry.items()
                           if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
            retriever = RetrieverRef(spec=spec, model_id=model_id, revision=revision,
                                     settings={"route": "mteb.evaluate", "mteb_task": tr.task_name,
                                               "mteb_version": getattr(tr, "mteb_version", None),
                                               "mteb_scores": mteb_scores})
            result = Result.of(pool, retriever, summary, len(per_query.query_ids), resamples=resamples, seed=seed,
                               hardware=hardware, preference=preference)
            store.save(pool.name, result, per_query, path)
            written.append(path)
    return written


def _task_of(name: str, by_name: Mapping, entries: Sequence[Mapping], data_dir):
    """The task MTEB evaluated as ``name``: the object given (``tasks=``), else rebuilt from the
    name and its subsets; None when it is not a clirbench task."""
    task = by_name.get(name)
    if task is not None:
        return task
    if parse_task_name(name) is None:
        return None
    task = _rebuild(name, [e["hf_subset"] for e in entries], data_dir)
    if task is None:
        raise ClirbenchError(f"cannot rebuild the pools of MTEB task {name!r}")
    return task


def _measured(task, pool, entry: Mapping, resamples: int, seed: int) -> tuple[dict, PerQuery, Mapping | None]:
    """(summary, per-query values, preference row) of one subset: clirbench's own from MTEB's run
    when the task kept it, else the values MTEB stored (CIs null, per-query ids only)."""
    stash = getattr(task, "per_query", {}).get((entry["hf_subset"], SPLIT))
    measures = task.measures
    if stash is not None:
        evaluation = evaluate_table(stash[0], measures, resamples, seed)
        per_query = PerQuery(evaluation.query_ids, {k: np.asarray(v) for k, v in evaluation.columns().items()})
        return evaluation.summary, per_query, pool_preference(pool, stash[0], resamples, seed)
    query_ids = tuple(q.id for q in pool.queries if pool.qrels.get(q.id))
    n = int(entry.get("clirbench_num_queries", len(query_ids)))
    summary = {str(m): MeasureValue(float(entry.get(score_key(m), math.nan)), math.nan, math.nan, n)
               for m in measures}
    return summary, PerQuery(query_ids, {}), None
