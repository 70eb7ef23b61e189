"""Entries in MTEB's results-repository layout, as ``mteb.ResultCache`` reads it back:
``results/<model>/<revision>/<task>.json`` (a ``TaskResult``: one score entry per pool, its MTEB
subset) and ``model_meta.json`` beside it (a ``ModelMeta``); saved runs as MTEB's prediction files
``predictions/<model>/<revision>/<task>_predictions.json``. Task, subset and score names are those of
clirbench's MTEB plugin (``clirbench.mteb.names``), so ``clirbench.mteb.to_results`` reads them back.
"""
from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import math
from pathlib import Path
from typing import Mapping, Sequence

from ..identity import SystemKey, slug
from ..measures import MAIN_MEASURES, parse
from ..mteb.names import mteb_language, score_key, subset_name, task_name
from ..results.saved_run import file_sha256
from ..tasks import get_task
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError
from ..util.optional import require
from .entries import Entry

__all__ = ["SPLIT", "model_name", "write_mteb"]

SPLIT = "test"  # the split clirbench's MTEB tasks evaluate (clirbench.mteb.tasks.SPLIT)
_NO_REVISION = "no_revision_available"
_MODEL_TYPE = {"bm25": "sparse", "psq": "sparse", "splade": "sparse", "colbert": "late-interaction", "fusion": "hybrid"}


def model_name(system: SystemKey) -> str:
    """MTEB's model name of a clirbench system: ``clirbench/<system folder>`` (``clirbench/bm25``,
    ``clirbench/bm25+qt-gold``); MTEB wants ``organisation/name``."""
    return f"clirbench/{system.slug}"


def _dataset_revision(entry: Entry) -> str:
    """The data's revision, else the first 16 hex digits of the SHA-256 of its files' hashes (as the
    MTEB plugin's tasks name local data), else ``unpinned``."""
    if entry.data.get("revision"):
        return str(entry.data["revision"])
    files = entry.data.get("files_sha256") or {}
    if files:
        return hashlib.sha256(json.dumps(dict(files), sort_keys=True).encode()).hexdigest()[:16]
    return "unpinned"


def _main_score(entry: Entry) -> str | None:
    """The MTEB key of the entry's main score: the first higher-is-better main measure of its
    scenario with a value, else its first higher-is-better measure with one."""
    card = get_task(entry.pool.task).card
    main = [str(m) for m in card.main_measures.get(entry.pool.scenario, MAIN_MEASURES.get(entry.pool.scenario, ()))]
    for name in [*main, *entry.measures]:
        mv = entry.measures.get(name) or {}
        if mv.get("value") is not None and parse(name).higher_is_better:
            return score_key(name)
    return None


def _scores(entry: Entry) -> dict:
    """One MTEB score entry: the subset, its languages, clirbench's measures under the plugin's keys,
    their 95% intervals (``clirbench_ci``), the numbers of queries and documents."""
    pool = entry.pool
    scores: dict = {"hf_subset": subset_name(pool.doc_langs, pool.query_lang),
                    "languages": [mteb_language(pool.query_lang)] + [mteb_language(lang) for lang in pool.doc_langs]}
    intervals = {}
    for name, mv in entry.measures.items():
        value = mv.get("value")
        if value is None or not math.isfinite(value):
            continue
        key = score_key(name)
        scores[key] = value
        if mv.get("ci_low") is not None and mv.get("ci_high") is not None:
            intervals[key] = [mv["ci_low"], mv["ci_high"]]
    main = _main_score(entry)
    if main is None:
        raise ClirbenchError(f"{entry.where}: no higher-is-better measure with a value for MTEB's main score")
    scores["main_score"] = scores[main]
    scores["clirbench_ci"] = intervals
    scores["clirbench_num_queries"] = entry.num_queries
    scores["clirbench_pool_size"] = entry.pool_size
    return scores


def _date(entries: Sequence[Entry]) -> float | None:
    stamps = [_dt.datetime.fromisoformat(e.created_at.replace("Z", "+00:00")).timestamp()
              for e in entries if e.created_at]
    return max(stamps) if stamps else None


def _model_meta(name: str, revision: str, entries: Sequence[Entry]) -> dict:
    """``model_meta.json``: a ``ModelMeta`` of the system (what clirbench knows; the rest null)."""
    first = entries[0]
    family = str(first.retriever.get("family") or first.retriever.get("spec", "")).split(":")[0]
    langs = sorted({mteb_language(lang) for e in entries for lang in (*e.pool.doc_langs, e.pool.query_lang)})
    model_id = first.retriever.get("model_id")
    reference = f"https://huggingface.co/{model_id}" if isinstance(model_id, str) and model_id.count("/") == 1 else None
    return {"name": name, "revision": revision, "release_date": None, "languages": langs, "n_parameters": None,
            "memory_usage_mb": None, "max_tokens": None, "embed_dim": None, "license": None, "open_weights": None,
            "public_training_code": None, "public_training_data": None, "framework": [], "reference": reference,
            "similarity_fn_name": None, "use_instructions": None, "training_datasets": None, "adapted_from": None,
            "superseded_by": None, "modalities": ["text"], "model_type": [_MODEL_TYPE.get(family, "dense")],
            "citation": None, "contacts": None, "loader": None,
            "loader_kwargs": {"clirbench_spec": first.retriever.get("spec"), "clirbench_system": first.system.label}}


def _predictions(name: str, revision: str, entries: Sequence[Entry]) -> dict | None:
    """MTEB's prediction file of the entries that have a saved run (``{subset: {split: {query:
    {document: score}}}}``); None when none has. A run file whose SHA-256 is not its record's is refused."""
    out: dict = {"mteb_model_meta": {"model_name": name, "revision": revision}}
    for entry in entries:
        if entry.run_file is None:
            continue
        if file_sha256(entry.run_file) != entry.run_sha256:
            raise ClirbenchError(f"{entry.run_file}: missing, or not the run its record names (SHA-256)")
        run: dict = {}
        with gzip.open(entry.run_file, "rt", encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 6 and not fields[0].startswith("#"):
                    run.setdefault(fields[0], {})[fields[2]] = float(fields[4])
        out[subset_name(entry.pool.doc_langs, entry.pool.query_lang)] = {SPLIT: run}
    return out if len(out) > 1 else None


def write_mteb(entries: Sequence[Entry], out: Path) -> list[Path]:
    """Write the entries in MTEB's results layout under ``out``; returns the files written."""
    mteb = require("mteb", purpose="export-results --format mteb")
    version = getattr(mteb, "__version__", None)
    groups: dict[tuple[str, str], dict[str, list[Entry]]] = {}
    for entry in entries:
        revision = entry.system.revision or _NO_REVISION
        task = task_name(entry.pool.task, entry.pool.scenario, entry.pool.pool_mode, entry.pool.subset)
        groups.setdefault((model_name(entry.system), revision), {}).setdefault(task, []).append(entry)
    written = []
    for (name, revision), tasks in groups.items():
        folder = out / "results" / name.replace("/", "__").replace(" ", "_") / slug(revision)
        for task, items in tasks.items():
            seconds = [e.seconds for e in items if e.seconds is not None]
            result = {"dataset_revision": _dataset_revision(items[0]), "task_name": task, "mteb_version": version,
                      "scores": {SPLIT: [_scores(e) for e in items]},
                      "evaluation_time": sum(seconds) if seconds else None, "kg_co2_emissions": None,
                      "date": _date(items)}
            written.append(_write(folder / f"{task}.json", result))
            predictions = _predictions(name, revision, items)
            if predictions is not None:
                target = out / "predictions" / folder.relative_to(out / "results") / f"{task}_predictions.json"
                written.append(_write(target, predictions))
        members = [e for items in tasks.values() for e in items]
        written.append(_write(folder / "model_meta.json", _model_meta(name, revision, members)))
    return written


def _write(path: Path, data: Mapping) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return path
