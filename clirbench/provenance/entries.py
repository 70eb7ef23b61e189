"""What reproduce and the exports read: every (system, pool) result of a leaderboard, a result file
or a results folder, as one ``Entry`` holding its recipe (retriever, translation, ranking, data
hashes, measures, bootstrap) and its values (measures, per-query vectors, hardware, cost)."""
from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..identity import PoolKey, SystemKey
from ..leaderboard.store import MAX_LEADERBOARD_BYTES, decode_vector, load, strict_json
from ..results import ResultStore, read_per_query, read_result
from ..tasks import get_task
from ..util.errors import ClirbenchError, DataNotFoundError

__all__ = ["Entry", "read_entries", "select", "task_pool", "pool_langs", "ids_hash", "query_ids_of"]

BOARD_FORMAT = "clirbench-leaderboard"


@dataclass(frozen=True)
class Entry:
    """One system's result on one pool. ``where`` names it in messages (the result file, or the board
    with the system and pool). ``query_ids`` is None for a board entry: its per-query vectors are in
    sorted query-id order and only ``query_ids_sha256`` names the queries. ``data`` is the data the
    values were computed on: ``source``, ``revision``, ``files_sha256``."""

    where: str
    system: SystemKey
    retriever: Mapping[str, Any]
    translation: Mapping[str, Any] | None
    pool: PoolKey
    pool_size: int
    num_queries: int
    data: Mapping[str, Any]
    measures: Mapping[str, Mapping[str, Any]]
    bootstrap: Mapping[str, Any]
    vectors: Mapping[str, np.ndarray]
    query_ids: tuple[str, ...] | None = None
    query_ids_sha256: str | None = None
    hardware: Mapping[str, Any] = field(default_factory=dict)
    cost: Mapping[str, Any] | None = None
    seconds: float | None = None
    created_at: str = ""
    clirbench_version: str = ""
    commands: tuple[str, ...] = ()
    path: Path | None = None  # the result file (None: a board entry)
    run_file: Path | None = None  # the saved run beside it, when the record names one
    run_sha256: str | None = None  # the SHA-256 its record gives the saved run
    run_depth: int | None = None  # its depth (--save-run --depth): the head the exposure measures read

    @property
    def label(self) -> str:
        """``bm25 on multi/en-zh/q-zh``."""
        return f"{self.system.label} on {self.pool.board_id}"

    @property
    def sorted_ids(self) -> bool:
        """True when the vectors are in sorted query-id order with no ids (a board entry)."""
        return self.query_ids is None


def ids_hash(ids: Sequence[str]) -> str:
    """SHA-256 of the sorted query ids joined by newlines (a board pool's ``query_ids_sha256``)."""
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()


def read_entries(target: str | os.PathLike) -> list[Entry]:
    """The entries of a leaderboard file, a result file or a folder of result files (sorted by
    system, then pool). One-line errors for a missing or unreadable target."""
    path = Path(target)
    if path.is_dir():
        files = ResultStore(path).files()
        if not files:
            raise DataNotFoundError(f"{path}: no result files in this folder")
        return sorted((_record_entry(f) for f in files), key=_order)
    if not path.is_file():
        raise DataNotFoundError(f"{path}: no such leaderboard, result file or results folder")
    if _is_board(path):
        return sorted(_board_entries(path), key=_order)
    return [_record_entry(path)]


def _order(entry: Entry) -> tuple:
    return entry.system.label, entry.pool.name


def _is_board(path: Path) -> bool:
    """True when ``path`` is a clirbench leaderboard (read strictly and bounded)."""
    data = strict_json(path, MAX_LEADERBOARD_BYTES, "leaderboard or result file")
    return isinstance(data, dict) and data.get("format") == BOARD_FORMAT


def _board_entries(path: Path) -> list[Entry]:
    board = load(path)
    dataset = board["dataset"]
    data = {"source": dataset.get("source"), "revision": dataset.get("revision"),
            "files_sha256": dict(dataset.get("files_sha256") or {})}
    out = []
    for label, system in board["systems"].items():
        key = SystemKey.of_dict(system["key"]) if "key" in system else SystemKey.of_record(system)
        for pid, res in system["results"].items():
            pool = board["pools"][pid]
            n = pool["num_queries"]
            where = f"{path}: {label} on {pid}"
            vectors = {m: decode_vector(text, n, f"{where} {m}")
                       for m, text in (res.get("per_query") or {}).get("measures", {}).items()}
            retriever, entry_key = dict(system["retriever"]), key
            if res.get("revision") is not None:  # an entry made by another revision than the row's
                retriever["revision"] = res["revision"]
                entry_key = SystemKey(key.retriever, res["revision"], key.translation, key.ranking)
            out.append(Entry(
                where=where, system=entry_key, retriever=retriever, translation=res.get("translation"),
                pool=PoolKey(board["task"], pool["subset"], pool["scenario"], pool["pool_mode"],
                             tuple(pool["doc_langs"]), pool["query_lang"], pool["qrels_sha256"]),
                pool_size=pool["pool_size"], num_queries=n, data=data, measures=res["measures"],
                bootstrap=res.get("bootstrap") or {}, vectors=vectors, query_ids=None,
                query_ids_sha256=pool["query_ids_sha256"], hardware=res.get("hardware") or {},
                cost=res.get("cost"), seconds=res.get("seconds"), created_at=res.get("created_at", ""),
                clirbench_version=res.get("clirbench_version", ""), commands=tuple(system.get("commands") or ())))
    return out


def _record_entry(path: Path) -> Entry:
    record = read_result(path)
    ids, values = read_per_query(path)
    data = {"source": record.task.source, "revision": record.task.revision,
            "files_sha256": dict(record.task.files_sha256 or {})}
    run = None if record.run is None else path.parent / record.run.file
    return Entry(
        where=str(path), system=record.system_key, retriever=record.retriever.to_dict(),
        translation=record.to_dict()["translation"],
        pool=record.pool_key, pool_size=record.pool_size, num_queries=record.num_queries, data=data,
        measures={k: v.to_dict() for k, v in record.measures.items()}, bootstrap=record.bootstrap.to_dict(),
        vectors={k: np.asarray(v, dtype=np.float64) for k, v in values.items()}, query_ids=tuple(ids),
        query_ids_sha256=ids_hash(ids), hardware=record.hardware.to_dict(),
        cost=None if record.cost is None else record.cost.to_dict(), seconds=record.timings_s.total,
        created_at=record.created_at, clirbench_version=record.clirbench_version, path=path, run_file=run,
        run_sha256=None if record.run is None else record.run.sha256,
        run_depth=None if record.run is None else record.run.depth)


def select(entries: Sequence[Entry], systems: Sequence[str] | None = None, langs: Sequence[str] | None = None,
           sample: int | None = None, seed: int = 0) -> list[Entry]:
    """The entries of ``systems`` (labels; None: all) whose languages all lie in ``langs`` (None:
    any), then ``sample`` pools per system drawn at random with ``seed`` (None: every pool). A
    system or language that matches nothing is a one-line error naming what there is."""
    have = sorted({e.system.label for e in entries})
    unknown = sorted(set(systems or ()) - set(have))
    if unknown:
        raise ClirbenchError(f"--system {', '.join(unknown)}: not in the results; systems: {', '.join(have)}")
    chosen = [e for e in entries if systems is None or e.system.label in systems]
    if langs is not None:
        chosen = [e for e in chosen if set(e.pool.doc_langs) | {e.pool.query_lang} <= set(langs)]
        if not chosen:
            raise ClirbenchError(f"--langs {','.join(langs)}: no pool of the results has only these languages")
    if sample is None:
        return chosen
    rng = random.Random(seed)
    out = []
    for label in sorted({e.system.label for e in chosen}):
        mine = [e for e in chosen if e.system.label == label]
        out.extend(sorted(rng.sample(mine, min(sample, len(mine))), key=_order))
    return out


def pool_langs(entry: Entry) -> str | None:
    """The ``--langs`` that give the entry's pool (its task's pools are then filtered to it): the
    document languages of a ``multi`` pool, the document and query languages otherwise (a mono-same
    pool paired with the pivot); None for a task that is not parallel (its own default pools)."""
    card = get_task(entry.pool.task).card
    if card.kind != "parallel":
        return None
    if entry.pool.scenario in ("multi", "multi-1"):
        return ",".join(entry.pool.doc_langs)
    langs = list(dict.fromkeys([*entry.pool.doc_langs, entry.pool.query_lang]))
    if len(langs) == 1:
        langs.append(card.pivot if card.pivot and card.pivot != langs[0]
                     else next(lang for lang in card.languages if lang != langs[0]))
    return ",".join(langs)


def task_pool(entry: Entry, data_dir=None):
    """The entry's pool built again from its task's data (``data_dir``, else where the task finds
    it); a one-line error when the task has no such pool."""
    task = get_task(entry.pool.task)
    pools = task.pools(pool_langs(entry), entry.pool.scenario, [entry.pool.query_lang], entry.pool.pool_mode,
                       data_dir)
    want = entry.pool.without_qrels
    for pool in pools:
        if PoolKey.of(pool).without_qrels == want:
            return pool
    raise ClirbenchError(f"{entry.where}: the task {entry.pool.task} has no pool {entry.pool.board_id} "
                         f"in its data here")


def query_ids_of(entry: Entry, data_dir=None) -> tuple[str, ...] | None:
    """The entry's query ids in the order of its vectors: its own for a result file; for a board
    entry, the judged queries of its pool built from the task's data, sorted, when their SHA-256 is
    the board's (None otherwise: the data are not here, or not the board's)."""
    if not entry.sorted_ids:
        return entry.query_ids
    try:
        pool = task_pool(entry, data_dir)
    except (ClirbenchError, OSError, ValueError):
        return None
    ids = sorted(q.id for q in pool.queries if pool.qrels.get(q.id))
    return tuple(ids) if ids_hash(ids) == entry.query_ids_sha256 else None
