"""MTEB results (``mteb.evaluate``'s ModelResult) -> clirbench result records (docs/results.md).

With the task objects that MTEB evaluated (``tasks=``), each record gets clirbench's per-query
values and bootstrap CIs, computed from MTEB's run. Without them the pools are rebuilt from
the task names and only the values MTEB stored are written (CIs null, per-query table of query
ids only).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from ..util.errors import ClirbenchError
from .names import parse_task_name, score_key
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
    from types import SimpleNamespace

    from ..tasks import get_task, list_tasks

    if ":" in task_id or task_id not in {t.id for t in list_tasks()}:
        raise ClirbenchError(f"cannot rebuild the pools of MTEB task {name!r} from its name (the user's own "
                             f"data); pass tasks= (the task objects mteb.evaluate ran)")
    # retrieval tasks: the document languages of the subsets (clirudit's en side is not a default)
    calls = [dict(langs=",".join(sorted({l for s in subsets for l in s.partition(".q-")[0].split("-")})))]
    if get_task(task_id).card.kind == "parallel":
        calls = []
        named = sorted({l for s in subsets for l in [*s.partition(".q-")[0].split("-"), s.partition(".q-")[2]]})
        for s in subsets:
            docs, _, q = s.partition(".q-")
            langs = docs.split("-")
            if len(langs) == 1 and langs[0] != q:
                langs = [q, langs[0]]
            if len(langs) == 1:  # mono-same: paired with another language of the result, not with every one
                langs = [q, next((l for l in named if l != q), q)]
            call = dict(langs=",".join(langs), query_langs=[q]) if len(set(langs)) >= 2 else dict()
            if call not in calls:
                calls.append(call)
    pools, measures = {}, None
    for kwargs in calls:
        for t in get_tasks(task_id, scenarios=scenario, pool_mode=mode, data_dir=data_dir, **kwargs):
            if t.metadata.name == name:
                pools.update(t.pools)
                measures = t.measures
    return SimpleNamespace(pools=pools, measures=measures, per_query={}) if pools else None


_NO_NAME = ("no_model_name/available", "no_model_name_available", "unknown", "")
_NO_REVISION = ("no_revision_available", "")


def _model_ref(name: str | None, revision: str | None, model) -> tuple[str, str | None, str | None]:
    """(spec, model id, revision) of the evaluated model. MTEB records a local model as
    ``no_model_name/available`` (revision ``no_revision_available``): ``model`` (its registry name
    or local folder) names it then; a local folder's revision is its weights hash."""
    import os

    revision = None if revision in _NO_REVISION else revision
    if model is not None:
        model = str(model)
        folder = os.path.expanduser(model)
        if os.path.isdir(folder):
            from ..retrievers.encoders import weights_hash

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
    from ..evaluation import evaluate_table
    from ..identity import PoolKey, SystemKey
    from ..results import (BootstrapSettings, MeasureValue, Result, RetrieverRef, TaskRef, hardware_info,
                           result_path, write_result)

    results, model_name, model_revision = _task_results(mteb_result)
    by_name = {t.metadata.name: t for t in (tasks or ())}
    written: list[Path] = []
    hardware = None  # probed once, at the first record
    for tr in results:
        entries = (tr.scores or {}).get(SPLIT) or []
        task = by_name.get(tr.task_name)
        if task is None:
            if parse_task_name(tr.task_name) is None:
                continue  # not a clirbench task
            task = _rebuild(tr.task_name, [e["hf_subset"] for e in entries], data_dir)
            if task is None:
                raise ClirbenchError(f"cannot rebuild the pools of MTEB task {tr.task_name!r}")
        spec, model_id, revision = _model_ref(model_name or getattr(tr, "model_name", None),
                                              model_revision or getattr(tr, "model_revision", None), model)
        system = SystemKey.of_record({"retriever": {"spec": spec, "model_id": model_id, "revision": revision}})
        for entry in entries:
            subset = entry["hf_subset"]
            pool = task.pools.get(subset)
            if pool is None:
                raise ClirbenchError(f"MTEB task {tr.task_name!r} has no clirbench pool for subset {subset!r}")
            path = result_path(output_dir, system, PoolKey.of(pool))
            if path.exists() and not overwrite:
                raise ClirbenchError(f"{path} exists; pass overwrite=True to replace it")
            stash = getattr(task, "per_query", {}).get((subset, SPLIT))
            measures = task.measures
            preference = None
            if stash is not None:
                from ..stats.preference import pool_preference

                evaluation = evaluate_table(stash[0], measures, resamples, seed)
                summary, query_ids, columns = evaluation.summary, evaluation.query_ids, evaluation.columns()
                preference = pool_preference(pool, stash[0], resamples, seed)
            else:
                query_ids = tuple(q.id for q in pool.queries if pool.qrels.get(q.id))
                n = int(entry.get("clirbench_num_queries", len(query_ids)))
                summary = {str(m): MeasureValue(float(entry.get(score_key(m), math.nan)), math.nan, math.nan, n)
                           for m in measures}
                columns = {}
            if hardware is None:
                hardware = hardware_info()
            mteb_scores = {k: v for k, v in entry.items()
                           if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
            result = Result(
                task=TaskRef(id=pool.task, source=str(pool.source.get("origin")),
                             revision=pool.source.get("revision"),
                             files_sha256=pool.source.get("files_sha256") or None),
                subset=pool.subset, qrels_sha256=pool.qrels_hash(), scenario=pool.scenario,
                pool_mode=pool.pool_mode, pool_size=len(pool.docs), doc_langs=pool.doc_langs,
                query_lang=pool.query_lang, num_queries=len(query_ids),
                retriever=RetrieverRef(spec=spec, model_id=model_id, revision=revision,
                                       settings={"route": "mteb.evaluate", "mteb_task": tr.task_name,
                                                 "mteb_version": getattr(tr, "mteb_version", None),
                                                 "mteb_scores": mteb_scores}),
                measures=summary, bootstrap=BootstrapSettings(resamples=resamples, seed=seed),
                hardware=hardware, preference=preference)
            write_result(result, (query_ids, {k: np.asarray(v) for k, v in columns.items()}), path)
            written.append(path)
    return written
