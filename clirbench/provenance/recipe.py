"""An entry's recipe run again: the retriever built as recorded (its spec, prompts, device), what this
machine lacks to build it named, the pool's data checked against the recorded hashes, then
``runner.run`` on that one pool, in memory."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from .. import runner
from ..cache.layout import embeddings_dir
from ..identity import PoolKey
from ..leaderboard.submit import identity_diff
from ..results import PoolResult, RetrieverRef
from ..retrievers import make_retriever
from ..retrievers.encoders import check_device
from ..util.errors import ClirbenchError
from ..util.optional import MissingDependencyError
from .entries import Entry, pool_langs, task_pool

__all__ = ["build_retrievers", "check_data", "rerun", "run_options"]


def _device(entry: Entry, device: str | None) -> str | None:
    """The device to re-run on: ``device`` when given, else the recorded one (a one-line error
    naming the GPU this machine lacks)."""
    if device is not None:
        return check_device(device)
    recorded = entry.retriever.get("device")
    if not isinstance(recorded, str) or recorded == "cpu":
        return recorded if isinstance(recorded, str) else None
    try:
        return check_device(recorded, "its recorded device")
    except ClirbenchError as exc:
        raise ClirbenchError(f"it ran on {recorded!r}, a GPU this machine lacks ({exc}); --device cpu re-runs it "
                             f"on the CPU") from None


def _spec(entry: Entry) -> str:
    """The spec to build: the recorded one, or, for an MTEB registry name run from a local folder
    (``mteb:<name>=<folder>``, recorded as ``mteb:<name>`` with ``path``), that folder again when it
    is on this machine (the revision check below still decides whether it holds the same weights)."""
    spec, path = entry.retriever["spec"], entry.retriever.get("path")
    if spec.startswith("mteb:") and "=" not in spec and isinstance(path, str) and Path(path).is_dir():
        return f"{spec}={path}"
    return spec


def _retriever(entry: Entry, cache_dir, device: str | None):
    """The entry's retriever built here, with its recorded prompts, checked to be the recorded system."""
    spec = _spec(entry)
    options = dict(cache_dir=Path(cache_dir) if cache_dir is not None else embeddings_dir(),
                   device=_device(entry, device))
    built = make_retriever(spec, **options)
    prompts = dict(entry.retriever.get("prompts") or {})
    if dict(built.describe().get("prompts") or {}) != prompts:  # prompts of its own, given on the command line
        built = make_retriever(spec, query_prompt=prompts.get("query"), doc_prompt=prompts.get("document"),
                               **options)
    here = RetrieverRef.described(built.spec, built.describe()).to_dict()
    diff = identity_diff(entry.retriever, here)
    if diff:
        shown = ", ".join(f"{k} {entry.retriever.get(k)!r} recorded, {here.get(k)!r} here" if k in here else k
                          for k in diff)
        raise ClirbenchError(f"the retriever built here is another system ({shown}); the model, its revision "
                             f"or the libraries the record names are not those of this machine")
    return built


def build_retrievers(entries: Sequence[Entry], cache_dir=None, device: str | None = None) -> dict[str, object]:
    """One retriever per system of ``entries`` (by label), built once. Everything this machine lacks
    (an extra, a model, a GPU, the same model revision) is named in one line, for every system."""
    out, lacks = {}, []
    for entry in entries:
        label = entry.system.label
        if label in out or any(item.startswith(f"{label}: ") for item in lacks):
            continue
        try:
            out[label] = _retriever(entry, cache_dir, device)
        except MissingDependencyError as exc:
            lacks.append(f"{label}: {exc}")
        except (ClirbenchError, OSError, ValueError, ImportError) as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            path = entry.retriever.get("path")
            if isinstance(path, str) and not Path(path).is_dir():
                message += f" (it was run from the folder {path}, which is not on this machine)"
            lacks.append(f"{label}: {message}")
    if lacks:
        raise ClirbenchError("this machine cannot re-run " + "; ".join(lacks))
    return out


def check_data(entry: Entry, data_dir=None):
    """The entry's pool built from the task's data here, refused in one line when its data (a file's
    SHA-256, else the data revision) or its relevance judgements are not the recorded ones."""
    pool = task_pool(entry, data_dir)
    source = pool.source or {}
    recorded, here = dict(entry.data.get("files_sha256") or {}), dict(source.get("files_sha256") or {})
    origin = source.get("origin", entry.data.get("source"))
    if recorded or here:
        common = sorted(set(recorded) & set(here))
        if not common:
            raise ClirbenchError(f"{entry.where}: cannot check the data: no file hashed both here ({origin}: "
                                 f"{', '.join(sorted(here)) or 'none'}) and in the record "
                                 f"({', '.join(sorted(recorded)) or 'none'})")
        changed = [name for name in common if recorded[name] != here[name]]
        if changed:
            name = changed[0]
            raise ClirbenchError(f"{entry.where}: the data differ from the recorded data: file {name!r} of {origin} "
                                 f"has SHA-256 {here[name][:12]}… here, {recorded[name][:12]}… in the record"
                                 + (f" ({len(changed) - 1} more file(s) differ)" if len(changed) > 1 else "")
                                 + "; reproduce needs the recorded data (--data-dir)")
    elif source.get("revision") != entry.data.get("revision"):
        raise ClirbenchError(f"{entry.where}: the data differ from the recorded data: revision "
                             f"{source.get('revision')!r} here, {entry.data.get('revision')!r} in the record")
    qrels = PoolKey.of(pool).qrels_sha256
    if entry.pool.qrels_sha256 and qrels != entry.pool.qrels_sha256:
        raise ClirbenchError(f"{entry.where}: the relevance judgements of pool {entry.pool.board_id} differ from the "
                             f"recorded ones (qrels SHA-256 {qrels[:12]}… here, {entry.pool.qrels_sha256[:12]}… "
                             f"in the record)")
    return pool


def run_options(entry: Entry, data_dir=None) -> dict:
    """``runner.run``'s options that rebuild the entry's one pool and measure it as recorded: its
    languages, scenario, query language and pool mode, its measures, bootstrap, translation,
    approximate index and second stage (``--rerank``); nothing written."""
    translation = None
    if entry.translation:
        translation = {"direction": entry.translation["direction"], "translator": entry.translation["translator"]}
    ranking = entry.system.ranking
    bootstrap: Mapping = entry.bootstrap
    rerank = None if entry.system.rerank is None else f"{entry.system.rerank[0]}@{entry.system.rerank[2]}"
    return dict(rerank=rerank, langs=pool_langs(entry), scenarios=entry.pool.scenario, query_langs=[entry.pool.query_lang],
                pool_mode=entry.pool.pool_mode, data_dir=data_dir, measures=list(entry.measures),
                resamples=int(bootstrap.get("resamples", 1000)), seed=int(bootstrap.get("seed", 42)),
                translation=translation, index=None if ranking is None else "faiss:" + ranking.split(":", 1)[1],
                progress=False, output_dir=None)


def rerun(entry: Entry, retriever, data_dir=None) -> PoolResult:
    """The entry's pool ranked and measured again by ``retriever``: in memory, or, for a record made
    with ``--save-run``, with its run saved as deep into a temporary folder (the depth decides the
    head that the exposure measures read), removed afterwards."""
    options = run_options(entry, data_dir)
    with tempfile.TemporaryDirectory(prefix="clirbench-reproduce-") as folder:
        if entry.run_depth is not None:
            options.update(output_dir=folder, save_run=True, depth=entry.run_depth)
        result = runner.run(retriever, task=entry.pool.task, **options)
    want = entry.pool.without_qrels
    for pool in result:
        if pool.record.pool_key.without_qrels == want:
            return pool
    raise ClirbenchError(f"{entry.where}: the re-run gave no result for pool {entry.pool.board_id}")
