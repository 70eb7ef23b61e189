"""Entries as Hugging Face ``.eval_results/*.yaml`` files (the Hub's evaluation results of a model
repository, https://huggingface.co/docs/hub/eval-results): a YAML list of results, each with
``dataset`` (``id``, ``task_id``, ``revision``), ``value``, ``date`` and ``notes``; one file per task,
scenario and pool mode, one result per pool and main measure, under ``<system folder>/.eval_results/``
(a folder per system: each is its own model repository)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import yaml

from ..measures import MAIN_MEASURES, parse
from ..tasks import get_task
from ..util.atomic import write_text_atomic
from .entries import Entry

__all__ = ["FOLDER", "results_of", "file_name", "write_hf"]

FOLDER = ".eval_results"
_DIRECTION = {"up": "higher is better", "down": "lower is better"}


def _dataset_id(entry: Entry) -> str:
    """The task's hub data set (``google/xquad``), else its recorded source when it is a hub id, else
    ``clirbench/<task>``."""
    card = get_task(entry.pool.task).card
    hub = card.source.get("hub")
    if isinstance(hub, str) and hub.count("/") == 1:
        return hub
    source = str(entry.data.get("source") or "")
    source = source[len("hub:"):] if source.startswith("hub:") else source
    return source if source.count("/") == 1 and not source.startswith((".", "/")) else f"clirbench/{entry.pool.task}"


def _notes(entry: Entry, name: str, mv) -> str:
    direction = parse(name).direction
    way = _DIRECTION.get(direction) or f"best at {parse(name).record.target:g}"
    revision = f" (revision {entry.system.revision})" if entry.system.revision else ""
    interval = ""
    if mv.get("ci_low") is not None and mv.get("ci_high") is not None:
        interval = f", 95% CI [{mv['ci_low']:.6g}, {mv['ci_high']:.6g}]"
    return (f"clirbench {entry.clirbench_version or '?'}: {entry.system.label}{revision} on pool "
            f"{entry.pool.name}, {name}{interval}, n={mv.get('n')} queries, {way}")


def results_of(entry: Entry) -> list[dict]:
    """The entry's results: one per main measure of its scenario that has a value."""
    card = get_task(entry.pool.task).card
    main = [str(m) for m in card.main_measures.get(entry.pool.scenario, MAIN_MEASURES.get(entry.pool.scenario, ()))]
    out = []
    for name in main or list(entry.measures):
        mv = entry.measures.get(name)
        if not mv or mv.get("value") is None:
            continue
        dataset = {"id": _dataset_id(entry), "task_id": f"{entry.pool.board_id}/{name}"}
        if entry.data.get("revision"):
            dataset["revision"] = str(entry.data["revision"])
        item = {"dataset": dataset, "value": float(mv["value"])}
        if entry.created_at:
            item["date"] = entry.created_at
        item["notes"] = _notes(entry, name, mv)
        out.append(item)
    return out


def file_name(entry: Entry) -> str:
    """``clirbench-<task>-<scenario>[-<pool mode>][-<subset>].yaml`` (characters a file name takes)."""
    pool = entry.pool
    parts = ["clirbench", pool.task, pool.scenario] + ([pool.pool_mode] if pool.pool_mode != "unique" else [])
    parts += [pool.subset] if pool.subset else []
    stem = "-".join(parts)
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem) + ".yaml"


def write_hf(entries: Sequence[Entry], out: Path) -> list[Path]:
    """Write ``<out>/<system folder>/.eval_results/<file>.yaml`` for the entries; returns the files."""
    files: dict[Path, list[dict]] = {}
    for entry in entries:
        path = out / entry.system.slug / FOLDER / file_name(entry)
        files.setdefault(path, []).extend(results_of(entry))
    for path, items in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, yaml.safe_dump(items, sort_keys=False, allow_unicode=True, width=100))
    return sorted(files)
