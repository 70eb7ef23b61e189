"""A results folder (docs/results.md): where each pool's record lies, whether a finished one is
reused, the atomic write of a record with its tables (and its saved run, ``--save-run``), and
reading records back.

``ResultStore(None)`` is a run in memory: no path, nothing reused, nothing written.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..identity import PoolKey, SystemKey
from ..util.atomic import write_bytes_atomic
from ..util.errors import ClirbenchError
from .files import PerQuery, is_record_file, read_per_query, read_result, result_path, write_result
from .records import Result
from .run import PoolResult
from .saved_run import RunFile, file_sha256, run_bytes, run_id_of, run_name

__all__ = ["ResultStore", "RunIdentity"]


@dataclass(frozen=True)
class RunIdentity:
    """What must match for a finished record to be reused: the retriever (``spec``, ``prompts``; its
    revision, translation and ranking in ``system``), the bootstrap (``resamples``, ``seed``) and
    the ``measures`` asked for. The pool brings the rest: its data (files' SHA-256, else revision)
    and its qrels."""

    spec: str
    system: SystemKey
    prompts: Mapping[str, Any]
    resamples: int
    seed: int
    measures: tuple[str, ...]

    def mismatch(self, result: Result, pool) -> str | None:
        """What differs between ``result`` and this run on ``pool`` (None: nothing, reuse it)."""
        have = result.system_key
        checks = {
            "retriever": (result.retriever.spec, self.spec),
            "model revision": (have.revision, self.system.revision),
            "translation": (have.translation, self.system.translation),
            "ranking": (have.ranking, self.system.ranking),
            "reranking": (have.rerank, self.system.rerank),
            "prompts": (dict(result.retriever.prompts), dict(self.prompts)),
            "bootstrap resamples": (result.bootstrap.resamples, self.resamples),
            "bootstrap seed": (result.bootstrap.seed, self.seed),
            "qrels": (result.qrels_sha256, PoolKey.of(pool).qrels_sha256),
        }
        data = data_mismatch(result.task, pool.source)
        if data is not None:
            return data
        for what, (was, now) in checks.items():
            if was != now:
                return what
        missing = [m for m in self.measures if m not in result.measures]
        return f"measures ({', '.join(missing)})" if missing else None


def data_mismatch(task_ref, source: Mapping) -> str | None:
    """Why the data a result was computed from is not the pool's data, or None when it is.

    Files hashed on both sides must agree (a pool may hash more files than an earlier run that
    loaded fewer languages); with no hashes on either side, the revisions must agree.
    """
    have = dict(task_ref.files_sha256 or {})
    need = dict(source.get("files_sha256") or {})
    if have or need:
        common = sorted(set(have) & set(need))
        if not common:
            return f"data (no common hashed file: {', '.join(sorted(have)) or 'none'} vs {', '.join(sorted(need)) or 'none'})"
        changed = [name for name in common if have[name] != need[name]]
        return f"data (SHA-256 of {', '.join(changed)})" if changed else None
    if task_ref.revision != source.get("revision"):
        return f"data revision ({task_ref.revision} vs {source.get('revision')})"
    return None


class ResultStore:
    """The results folder ``folder`` (None: in memory only). ``overwrite``: finished records are
    recomputed and replaced, never reused nor refused. ``save_run``: each record is written with
    its saved run (the head of its ranking, ``depth`` documents per query, as a gzipped TREC run
    beside it); a finished record without one (or whose run file is missing, changed or of another
    depth) is then ranked again, with a one-line note."""

    def __init__(self, folder: str | os.PathLike | None = None, overwrite: bool = False, save_run: bool = False,
                 depth: int | None = None):
        self.folder = folder
        self.overwrite = overwrite
        self.save_run = save_run
        self.depth = depth

    def path(self, system: SystemKey, pool) -> Path | None:
        """Where the record of ``system`` on ``pool`` lies (``results.files.result_path``); None in memory."""
        return None if self.folder is None else result_path(self.folder, system, PoolKey.of(pool))

    def reuse(self, pool, path: Path | None, identity: RunIdentity) -> PoolResult | None:
        """The finished record at ``path`` when ``identity`` on ``pool`` made it; None to compute
        (none there, half-written or damaged, ``overwrite``, or no saved run to keep when
        ``save_run``). A finished record made with other settings is refused, never overwritten
        silently."""
        if self.overwrite or path is None or not path.exists():
            return None
        try:
            result = read_result(path)
            per_query = read_per_query(path)
        except ValueError:
            return None  # half-written or damaged: recompute
        why = identity.mismatch(result, pool)
        if why is not None:
            raise ClirbenchError(f"{path} exists with different {why}; pass --overwrite to replace it "
                                 f"or --output to write elsewhere")
        missing = self._run_missing(result, path)
        if missing is not None:
            print(f"clirbench: note: {path}: {missing}; ranked again to save its run (--save-run)",
                  file=sys.stderr, flush=True)
            return None
        return PoolResult(pool.name, result, per_query, Path(path), True)

    def _run_missing(self, result: Result, path: Path) -> str | None:
        """Why the finished record at ``path`` lacks the run ``save_run`` asks for (None: it has it, or none is asked)."""
        if not self.save_run:
            return None
        run = result.run
        if run is None:
            return "no saved run"
        if self.depth is not None and run.depth != self.depth:
            return f"its saved run is {run.depth} deep, not {self.depth}"
        found = file_sha256(Path(path).parent / run.file)
        if found is None:
            return f"its run file {run.file} is missing"
        return None if found == run.sha256 else f"its run file {run.file} changed (SHA-256)"

    def check_new(self, path: Path) -> None:
        """Refuse to replace a record at ``path`` unless ``overwrite`` (for records converted from
        elsewhere, which are never reused)."""
        if path.exists() and not self.overwrite:
            raise ClirbenchError(f"{path} exists; pass overwrite=True to replace it")

    def save(self, name: str, result: Result, per_query: PerQuery, path: Path | None, ranks=None,
             head=None) -> PoolResult:
        """Write the record, its per-query table, its ranks table (a ``rank.table.RankTable`` with
        document ids; a stale one is removed when there is none) and, with ``save_run``, its saved
        run (``head``, a ``rank.head.Head``; a stale run file is removed otherwise) at ``path``,
        atomically, the files beside it first; in memory (``path`` None) nothing is written.
        Returns the pool's result as written."""
        if path is not None:
            result = self._save_run(result, path, head)
            result = write_result(result, per_query, path, ranks=ranks)
        return PoolResult(name, result, per_query, path, False)

    def _save_run(self, result: Result, path: Path, head) -> Result:
        """``result`` naming its run file, written beside ``path`` (``save_run``), or without one (a stale file removed)."""
        run_path = Path(path).parent / run_name(path)
        if not self.save_run:
            run_path.unlink(missing_ok=True)
            return dataclasses.replace(result, run=None)
        if head is None:
            raise ClirbenchError(f"{path}: the ranker gave no ranked list to save (--save-run)")
        run_id = run_id_of(result.system_key.label)
        data = run_bytes(head, run_id)
        write_bytes_atomic(run_path, data)
        depth = self.depth if self.depth is not None else head.depth
        return dataclasses.replace(result, run=RunFile(run_path.name, hashlib.sha256(data).hexdigest(), depth, run_id))

    def files(self) -> list[Path]:
        """The record files under the folder (gap and consistency files left out), sorted."""
        if self.folder is None:
            return []
        return [f for f in sorted(Path(self.folder).rglob("*.json")) if is_record_file(f)]

    @staticmethod
    def read(path: str | os.PathLike) -> PoolResult:
        """The pool result stored at ``path``: its record and per-query table, named by its pool."""
        record = read_result(path)
        return PoolResult.read(record.pool_key.name, path, record)
