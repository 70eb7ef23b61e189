"""``clirbench export``: a task's pools as files other tools read (docs/commands.md).

Each pool becomes, under the output folder and at its result path (``identity.PoolKey.path_parts``
without ``.json``: ``xquad/multi/unique/en-zh-ar.q-zh``), a BEIR folder (``corpus.jsonl`` with each
document's ``lang``, ``queries.jsonl`` with ``lang``, ``qrels/test.tsv``, and ``excluded/test.tsv``
when the pool removes documents from a query's ranking, as ``multi-1`` does) and TREC qrels
(``<stem>.qrels``). The BEIR folder reads back through ``--task beir:<folder>`` with the pool's
values. Every file is written atomically.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..collection import Pool
from ..formats.beir import exclusions_path, qrels_path
from ..formats.trec import write_qrels
from ..identity import PoolKey, check_path_fits
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError, UnknownNameError
from . import get_task

__all__ = ["ExportedPool", "export_pools", "export_pool", "EXPORT_FORMATS", "SPLIT"]

EXPORT_FORMATS = ("beir", "trec")
SPLIT = "test"  # the split the BEIR folder's qrels are written as (beir:'s default)


@dataclass(frozen=True)
class ExportedPool:
    """One pool written: its id (``Pool.name``), its BEIR folder and its TREC qrels (None: not written)."""

    pool: str
    beir: Path | None
    qrels: Path | None


def export_pools(task, out: str | os.PathLike, *, langs=None, scenarios="all", query_langs: Sequence[str] | None = None,
                 pool_modes: str | Sequence[str] = "unique", formats: Sequence[str] = EXPORT_FORMATS,
                 data_dir=None, task_options: Mapping | None = None) -> list[ExportedPool]:
    """Write every pool of ``task`` (an id, a task, or a sequence of ``Pool``) under ``out``.

    The pools are those ``clirbench run`` ranks with the same ``langs``, ``scenarios``,
    ``query_langs``, ``data_dir`` and ``task_options``, in each of ``pool_modes`` (a comma list,
    a sequence or ``all``); ``formats`` picks ``beir`` and/or ``trec``.
    """
    formats = _formats(formats)
    try:
        check_path_fits(out, "output folder (--out)")
    except ValueError as exc:
        raise ClirbenchError(str(exc)) from None
    if Path(out).exists() and not Path(out).is_dir():
        raise ClirbenchError(f"output folder {out}: a file, not a folder")
    return [export_pool(pool, out, formats) for pool in _pools(task, langs, scenarios, query_langs, pool_modes,
                                                               data_dir, dict(task_options or {}))]


def export_pool(pool: Pool, out: str | os.PathLike, formats: Sequence[str] = EXPORT_FORMATS) -> ExportedPool:
    """Write one pool under ``out`` (see the module docstring)."""
    *folders, name = PoolKey.of(pool).path_parts()
    base = Path(out, *folders)
    stem = name.removesuffix(".json")
    beir = _write_beir(pool, base / stem) if "beir" in formats else None
    qrels = None
    if "trec" in formats:
        qrels = base / f"{stem}.qrels"
        write_qrels(qrels, pool.qrels)
    return ExportedPool(pool.name, beir, qrels)


def _write_beir(pool: Pool, folder: Path) -> Path:
    write_text_atomic(folder / "corpus.jsonl", _jsonl(
        {"_id": d.id, "title": "", "text": d.text, "lang": d.lang} for d in pool.docs))
    write_text_atomic(folder / "queries.jsonl", _jsonl(
        {"_id": q.id, "text": q.text, "lang": q.lang} for q in pool.queries))
    judged = [f"{q}\t{d}\t{int(g)}" for q, docs in pool.qrels.items() for d, g in docs.items()]
    write_text_atomic(qrels_path(folder, SPLIT), "\n".join(["query-id\tcorpus-id\tscore", *judged]) + "\n")
    excluded = [f"{q}\t{d}" for q, docs in pool.exclusions.items() for d in sorted(docs)]
    epath = exclusions_path(folder, SPLIT)
    if excluded:
        write_text_atomic(epath, "\n".join(["query-id\tcorpus-id", *excluded]) + "\n")
    else:
        epath.unlink(missing_ok=True)  # left by an earlier export of another pool here
    return folder


def _jsonl(records: Iterable[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _formats(formats: str | Sequence[str]) -> tuple[str, ...]:
    names = formats.split(",") if isinstance(formats, str) else list(formats)
    unknown = [f for f in names if f not in EXPORT_FORMATS]
    if unknown or not names:
        raise UnknownNameError(f"unknown export format(s) {', '.join(unknown) or '(none)'}; "
                               f"available: {', '.join(EXPORT_FORMATS)}")
    return tuple(names)


def _pool_modes(task, pool_modes) -> list[str]:
    names = pool_modes.split(",") if isinstance(pool_modes, str) else list(pool_modes)
    if names == ["all"]:
        return list(task.card.pool_modes)
    return list(dict.fromkeys(names))


def _pools(task, langs, scenarios, query_langs, pool_modes, data_dir, options: dict) -> list[Pool]:
    """The pools of ``task`` in each pool mode (a sequence of Pool: as given); none is an error."""
    if not isinstance(task, str) and not callable(getattr(task, "pools", None)):
        pools = list(task)
        bad = [type(p).__name__ for p in pools if not isinstance(p, Pool)]
        if bad:
            raise TypeError(f"task must be a task id, a task or a sequence of Pool; got a {bad[0]}")
    else:
        task = get_task(task) if isinstance(task, str) else task
        pools = [p for mode in _pool_modes(task, pool_modes)
                 for p in task.pools(langs, scenarios, query_langs, mode, data_dir, **dict(options))]
    if not pools:
        raise ClirbenchError("nothing to export: no pool matches these languages and query languages")
    return pools
