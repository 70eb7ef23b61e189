"""Where a sweep's cells run: in this process (``LocalExecutor``) or as Ray tasks (``RayExecutor``).

A cell is one ``runner.run`` call. When it finishes, a marker ``<output>/_sweep/<key>.done`` lists
its result files; a later sweep skips the cell while the marker and those files exist (and the
runner itself reuses every finished pool of a cell interrupted half way). A failed cell leaves
``<output>/_sweep/<key>.failed`` with the traceback and never stops the other cells.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import time
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterator, Sequence

from ..rank.ray_cluster import ray_session
from ..translate.spec import TranslationOptions
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError
from ..util.optional import require
from ..util.redact import redact, redact_data
from .config import Cell, SweepConfig, Translation

__all__ = ["CellOutcome", "LocalExecutor", "RayExecutor", "run_cell", "finished", "translation_kwargs", "cell_config",
           "STATE_DIR"]

STATE_DIR = "_sweep"  # under the output folder; its files end in .done/.failed, never .json
_FORWARDED_ENV = ("CLIRBENCH_", "HF_", "TRANSFORMERS_", "OMP_NUM_THREADS")


@dataclass(frozen=True)
class CellOutcome:
    """What became of one cell: ``done`` (ran now), ``skipped`` (finished before) or ``failed``."""

    label: str
    key: str
    status: str
    results: tuple[str, ...] = ()  # result files, relative to the output folder
    computed: int = 0  # pools evaluated now
    reused: int = 0  # pools whose finished result the runner reused
    seconds: float = 0.0
    error: str | None = None  # one line, for failed cells
    worker: str = ""  # host:pid that ran the cell


def _state(config: SweepConfig, cell: Cell, suffix: str) -> Path:
    return Path(config.output) / STATE_DIR / f"{cell.key(config)}.{suffix}"


def finished(cell: Cell, config: SweepConfig) -> CellOutcome | None:
    """The ``skipped`` outcome of a cell finished by an earlier sweep; None when it must run."""
    marker = _state(config, cell, "done")
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
        results = tuple(str(p) for p in data["results"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # a damaged marker: run the cell
        return None
    out = Path(config.output)
    if not results or not all((out / p).is_file() for p in results):
        return None
    return CellOutcome(cell.label(), cell.key(config), "skipped", results, reused=len(results))


def translation_kwargs(translation: Translation, cache_dir: str | None = None) -> dict:
    """``{"translation": TranslationOptions(...)}`` for ``runner.run`` (empty for no translation)."""
    if translation.direction is None:
        return {}

    return {"translation": TranslationOptions(translation.direction, translation.translator, cache_dir,
                                              translation.quality)}


def cell_config(cell, config, overwrite: bool = False, progress: bool = True):
    """The ``RunConfig`` of one sweep cell: the sweep's ``RunConfig`` with the cell's task entry as
    its data, the cell's translation and reranking, and this sweep's ``overwrite`` and ``progress``."""
    run = config.run
    translation = translation_kwargs(cell.translation, config.translation_cache_dir)
    return replace(run, data=cell.entry.data_options(), retrieval=replace(run.retrieval, **translation),
                   ranking=replace(run.ranking, rerank=getattr(cell, "rerank", None)),
                   output=replace(run.output, overwrite=overwrite, progress=progress))


def run_cell(cell: Cell, config: SweepConfig, overwrite: bool = False, progress: bool = False) -> CellOutcome:
    """Run one cell (unless finished before), write its marker; failures come back as an outcome."""
    if not overwrite:
        done = finished(cell, config)
        if done is not None:
            return done
    from ..runner import run  # lazy: numpy

    key, t0 = cell.key(config), time.perf_counter()
    state = Path(config.output) / STATE_DIR
    entry = cell.entry
    try:
        report = run(cell.model, task=entry.task, config=cell_config(cell, config, overwrite, progress))
    except Exception as exc:  # one cell's failure must not lose the others
        message = redact(str(exc).strip().splitlines()[0]) if str(exc).strip() else ""
        error = message if isinstance(exc, ClirbenchError) else f"{type(exc).__name__}: {message}".rstrip(": ")
        try:
            write_text_atomic(state / f"{key}.failed", redact(f"{cell.label()}\n\n{traceback.format_exc()}"))
        except OSError:
            pass
        return CellOutcome(cell.label(), key, "failed", seconds=time.perf_counter() - t0, error=error,
                           worker=_worker())
    out = Path(config.output).resolve()
    results = tuple(str(Path(o.path).resolve().relative_to(out)) for o in report.pools)
    computed = sum(not o.reused for o in report.pools)
    _write_marker(state / f"{key}.done", cell, results)
    (state / f"{key}.failed").unlink(missing_ok=True)
    return CellOutcome(cell.label(), key, "done", results, computed=computed,
                       reused=len(results) - computed, seconds=time.perf_counter() - t0, worker=_worker())


def _worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _write_marker(path: Path, cell: Cell, results: Sequence[str]) -> None:
    # a translator URL's key, a task option's token: never in the output folder
    data = {**redact_data({"cell": cell.label(), "model": cell.model, "task": asdict(cell.entry),
                           "translation": asdict(cell.translation),
                           **({"rerank": cell.rerank} if cell.rerank is not None else {})}),
            "results": list(results), "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    write_text_atomic(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def _bar(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="cells", unit="cell")


class LocalExecutor:
    """Cells one after another in this process (the runner shows a progress bar per cell's pools)."""

    name = "local"

    def map(self, cells: Sequence[Cell], config: SweepConfig, overwrite: bool = False,
            progress: bool = True) -> Iterator[CellOutcome]:
        bar = _bar(len(cells), progress)
        try:
            for cell in cells:
                if bar is not None:
                    bar.set_postfix_str(cell.label(), refresh=True)
                yield run_cell(cell, config, overwrite=overwrite, progress=progress)
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()


def _ray_cell(cell: Cell, config: SweepConfig, overwrite: bool) -> CellOutcome:
    return run_cell(cell, config, overwrite=overwrite, progress=False)


class RayExecutor:
    """One Ray task per cell; results go to ``config.output``, which every node must see at that path.

    Uses the Ray connection this process already has; else connects to ``address`` (``auto``,
    ``HOST:6379``, ``ray://HOST:10001``), else starts a local Ray (and shuts it down at the end).
    """

    name = "ray"

    def __init__(self, address: str | None = None, cpus_per_cell: float = 1.0, gpus_per_cell: float = 0.0,
                 init_kwargs: dict | None = None):
        if cpus_per_cell <= 0 or gpus_per_cell < 0:
            raise ClirbenchError("--cpus-per-cell must be > 0 and --gpus-per-cell >= 0")

        require("ray", purpose="--executor ray", load=False)  # before any cell is considered
        self.address, self.cpus_per_cell, self.gpus_per_cell = address, cpus_per_cell, gpus_per_cell
        self.init_kwargs = dict(init_kwargs or {})

    def map(self, cells: Sequence[Cell], config: SweepConfig, overwrite: bool = False,
            progress: bool = True) -> Iterator[CellOutcome]:

        # one line when ray is missing or the cluster unreachable; a Ray this executor starts is shut down
        with ray_session(self.address, purpose="--executor ray", init_kwargs=self.init_kwargs) as ray:
            yield from self._map(ray, cells, config, overwrite, progress)

    def _map(self, ray, cells, config, overwrite, progress) -> Iterator[CellOutcome]:
        bar = _bar(len(cells), progress)
        try:
            env = {k: v for k, v in os.environ.items() if k.startswith(_FORWARDED_ENV)}
            options = {"num_cpus": self.cpus_per_cell, "num_gpus": self.gpus_per_cell, "max_retries": 0}
            if env:
                options["runtime_env"] = {"env_vars": env}
            remote = ray.remote(_ray_cell).options(**options)
            pending = {remote.remote(cell, config, overwrite): cell for cell in cells}
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    cell = pending.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except Exception as exc:  # the worker died, or Ray could not run the task
                        text = " ".join(str(exc).split())[:300]
                        outcome = CellOutcome(cell.label(), cell.key(config), "failed",
                                              error=f"Ray task failed: {type(exc).__name__}: {text}")
                    yield outcome
                    if bar is not None:
                        bar.update(1)
        finally:
            if bar is not None:
                bar.close()


def make_executor(name: str, address: str | None = None, cpus_per_cell: float = 1.0,
                  gpus_per_cell: float = 0.0):
    """``local`` or ``ray``; an ``address`` implies Ray."""
    if name == "local":
        if address:
            raise ClirbenchError("--address needs --executor ray")
        return LocalExecutor()
    if name == "ray":
        return RayExecutor(address, cpus_per_cell, gpus_per_cell)
    raise ClirbenchError(f"unknown executor {name!r}; expected local or ray")

