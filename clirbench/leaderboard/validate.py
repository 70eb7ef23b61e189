"""Validate a result file against its registered task: fields, dataset and qrels hashes, measure
ranges, per-query tables and breakdowns, before anything is merged into a leaderboard."""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..identity import TRANSLATION_DIRECTIONS, PoolKey
from ..measures import MAIN_MEASURES, parse
from ..results import SCHEMA_VERSION, Result, read_per_query
from ..tasks import get_task
from ..util.errors import ClirbenchError, MalformedDataError, UnknownNameError
from ..util.strict import json_kind
from . import rerank_parts, store

__all__ = ["MAX_RESULT_BYTES", "MAX_PER_QUERY_BYTES", "Submission", "validate_result", "value_range", "refuse",
           "TOLERANCE", "EXPOSURE_COLUMNS"]

MAX_RESULT_BYTES = 1 << 20
MAX_PER_QUERY_BYTES = 32 << 20
MAX_QUERIES = 200_000
MAX_GROUPS = 200
MAX_POOL_SIZE = 100_000_000
_HEX64 = re.compile(r"[0-9a-f]{64}")
_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*([.+-]?[A-Za-z0-9.+-]*)?")
TOLERANCE = 1e-6
#: language exposure measures a board keeps per-query vectors of (so ranks, as columns) on pools of two
#: or more document languages, beside the task card's main measures; their tests are a family of their
#: own (``significance.boards``); records made before them lack them ("–" on the board)
EXPOSURE_COLUMNS = ("Share@10", "AWRF@10", "alpha_nDCG@20")


def value_range(measure, pool_size: int) -> tuple[float, float]:
    """The values a measure can take on a pool of ``pool_size`` documents (from the measure's family)."""
    return measure.value_range(pool_size)


@dataclass(frozen=True)
class Submission:
    """One validated result, ready to merge: its pool, its system and what the leaderboard keeps.

    ``system`` is the row id (``identity.SystemKey.id``), ``key`` the SystemKey itself; ``changes``
    (set by ``submit`` with ``replace``) lists ``(measure, old value, new value)`` of a replaced entry.
    """

    path: Path
    task: str
    system: str
    pool_id: str
    pool: dict
    retriever: dict
    record: dict
    meta: dict = field(default_factory=dict)
    key: Any = None
    changes: tuple = ()
    merged: bool = True  # False: the same entry was already on the leaderboard
    reproduced: tuple = ()  # (measure, board value, this run's value): kept as a reproduction


def refuse(path, why: str) -> ClirbenchError:
    return ClirbenchError(f"{path}: {why}")


def _parse_measure(name: str, path):

    try:
        measure = parse(name)
    except ValueError:
        raise UnknownNameError(f"{path}: unknown measure {store._show(name)}") from None
    if str(measure) != name:
        raise UnknownNameError(f"{path}: measure {store._show(name)} is not in canonical form ({measure})")
    return measure


def _check_fields(result, path) -> None:
    """Domains of the record's fields that its reader (``Result.from_dict``) does not already check.

    The reader checks types, unknown keys, bootstrap settings, hardware, timings and a non-empty
    retriever spec; here: hashes, versions, identity strings, sizes, translation and time stamps.
    """
    def need(ok: bool, what: str, value) -> None:
        if not ok:
            raise refuse(path, f"{what} {store._show(str(value))} is not valid")

    need(bool(_VERSION.fullmatch(result.clirbench_version)), "clirbench_version", result.clirbench_version)
    need(bool(_HEX64.fullmatch(result.qrels_sha256)), "qrels_sha256", result.qrels_sha256)
    need(bool(result.task.source.strip()), "task.source", result.task.source)
    need(result.task.revision is None or bool(result.task.revision.strip()), "task.revision", result.task.revision)
    for name, digest in (result.task.files_sha256 or {}).items():
        need(bool(name.strip()) and bool(_HEX64.fullmatch(digest)), f"task.files_sha256.{name}", digest)
    need(bool(result.query_lang.strip()), "query_lang", result.query_lang)
    need(len(set(result.doc_langs)) == len(result.doc_langs), "doc_langs", list(result.doc_langs))
    need(1 <= result.pool_size <= MAX_POOL_SIZE, "pool_size", result.pool_size)
    ref = result.retriever
    for key in ("model_id", "revision"):
        value = getattr(ref, key)
        need(value is None or bool(value.strip()), f"retriever.{key}", value)
    for role in ref.prompts:
        need(role in ("query", "document"), "retriever.prompts role", role)
    if not result.measures:
        raise refuse(path, "result reports no measure")
    if result.translation is not None:
        tr = result.translation
        need(tr.get("direction") in TRANSLATION_DIRECTIONS, "translation.direction", tr.get("direction"))
        translator = tr.get("translator")
        need(isinstance(translator, str) and bool(translator.strip()), "translation.translator", translator)
    created = _dt.datetime.fromisoformat(result.created_at.replace("Z", "+00:00"))
    if created.tzinfo is None:
        raise refuse(path, f"created_at {store._show(result.created_at)} has no time zone")
    need(created <= _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(days=1), "created_at (in the future)",
         result.created_at)


def _ids_hash(ids: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()


def _check_dataset(result, dataset: Mapping, path) -> None:
    want = dataset.get("files_sha256") or {}
    have = dict(result.task.files_sha256 or {})
    if want:
        if not have:
            raise refuse(path, "result records no dataset file hashes; the leaderboard requires them")
        for key, digest in have.items():
            if key in want and want[key] != digest:
                raise refuse(path, f"dataset file {store._show(key)} hash {digest[:12]}… does not match the "
                                  f"registered {want[key][:12]}…")
        langs = {*result.doc_langs, result.query_lang}
        missing = sorted(l for l in langs if l in want and l not in have)
        if missing:
            raise refuse(path, f"result records no dataset hash for {', '.join(missing)}")
    revision = dataset.get("revision")
    if revision is not None and result.task.revision != revision:
        raise refuse(path, f"dataset revision {store._show(str(result.task.revision))} does not match the "
                          f"registered {store._show(revision)}")


def _expected_qrels(task_obj, result, data_dir) -> str:
    """Build the same pool from the task's local data and hash its qrels."""
    card = task_obj.card
    pid = result.pool_key.board_id
    if card.kind == "parallel":
        langs = list(dict.fromkeys([*result.doc_langs, result.query_lang]))
        if len(langs) == 1:
            langs.append(card.pivot if card.pivot and card.pivot != langs[0]
                         else next(l for l in card.languages if l != langs[0]))
        spec = ",".join(langs)
    else:
        spec = None  # a retrieval task's default pools (its loader's own choice of languages)
    hashes = _pool_hashes(card.id, spec, result.pool_mode, None if data_dir is None else str(data_dir))
    if result.pool_key.without_qrels in hashes:
        return hashes[result.pool_key.without_qrels]
    raise ClirbenchError(f"{card.id} has no pool {pid} in its local data: cannot check the result's qrels")


@functools.lru_cache(maxsize=64)
def _pool_hashes(task: str, langs: str | None, pool_mode: str, data_dir: str | None) -> dict:
    """``{PoolKey (without qrels): qrels hash}`` of the task's pools built from its local data."""

    task_obj = get_task(task)
    mode = {} if task_obj.card.kind != "parallel" else {"pool_mode": pool_mode}
    pools = task_obj.pools(langs, "all", None, data_dir=data_dir, **mode)
    keys = [PoolKey.of(p) for p in pools]
    return {k.without_qrels: k.qrels_sha256 for k in keys}


def validate_result(path: str | os.PathLike, leaderboard: Mapping, data_dir=None) -> Submission:
    """Check one result file (and its per-query table) against ``leaderboard`` and its task.

    One-line ClirbenchError for: a file over the size limits, a schema version this clirbench does
    not write, another task, a dataset or qrels hash that does not match, an unknown measure, a
    value out of range, per-query values that do not give the reported means, a hostile string.
    """
    path = Path(path)
    result = _read_result(path)
    _check_fields(result, path)
    task_obj = _check_task(result, leaderboard, path)
    pid, registered = _check_qrels(result, leaderboard, task_obj, data_dir, path)
    measures = _checked_measures(result, path)
    ids_hash, vectors = _checked_per_query(result, path, registered, pid, task_obj.card)
    breakdown = _checked_breakdown(result, path)
    pool = {"subset": result.subset, "scenario": result.scenario, "pool_mode": result.pool_mode,
            "doc_langs": list(result.doc_langs), "query_lang": result.query_lang, "pool_size": result.pool_size,
            "num_queries": result.num_queries, "qrels_sha256": result.qrels_sha256, "query_ids_sha256": ids_hash}
    record = _board_record(result, measures, vectors, breakdown)
    retriever = _reranking_apart(result, record, path)
    key = result.system_key
    return Submission(path, leaderboard["task"], key.id, pid, pool, retriever, record, {}, key)


def _reranking_apart(result, record: dict, path) -> dict:
    """The retriever as the board's system keeps it: a reranking's description only, its pool's
    numbers (recall ceiling, pairs, seconds) moved into ``record["rerank"]``; both checked."""
    retriever, part = rerank_parts.split(result.retriever.to_dict())
    if part is not None:
        try:
            rerank_parts.check_description(rerank_parts.description_of(retriever), "retriever.ranking.rerank")
            rerank_parts.check_part(part, result.num_queries, result.pool_size, "retriever.ranking.rerank")
        except MalformedDataError as exc:
            raise refuse(path, str(exc)) from None
        record["rerank"] = part
    return retriever


def _read_result(path: Path):
    """The result record of ``path``: bounded, of this schema version, its strings checked."""

    raw = store.strict_json(path, MAX_RESULT_BYTES, "result file")
    if not isinstance(raw, dict):
        raise refuse(path, f"malformed result file: not a result record: {json_kind(raw)}, expected a JSON object")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise refuse(path, f"result schema_version {store._show(str(version))}; the leaderboard takes {SCHEMA_VERSION}")
    store.check_strings(raw, "result")
    try:
        return Result.from_dict(raw)
    except (ValueError, TypeError) as exc:
        raise MalformedDataError(f"{path}: malformed result file: {' '.join(str(exc).split())[:200]}") from None


def _check_task(result, leaderboard: Mapping, path):
    """The leaderboard's registered task (its dataset, scenarios, pool modes, languages match the result)."""

    task = leaderboard["task"]
    if result.task.id != task:
        raise refuse(path, f"result is for task {store._show(result.task.id)}, the leaderboard for {task}")
    if ":" in task:
        raise refuse(path, "only registered tasks have leaderboards")
    task_obj = get_task(task)
    card = task_obj.card
    _check_dataset(result, leaderboard["dataset"], path)
    if result.scenario not in (*card.scenarios, "retrieval"):
        raise refuse(path, f"unknown scenario {store._show(result.scenario)} for {task}")
    if result.pool_mode not in card.pool_modes:
        raise refuse(path, f"unknown pool mode {store._show(result.pool_mode)} for {task}")
    unknown = sorted({*result.doc_langs, result.query_lang} - set(card.languages))
    if unknown and card.languages:
        raise refuse(path, f"language(s) {', '.join(map(store._show, unknown))} not in {task}")
    if not 0 < result.num_queries <= MAX_QUERIES or result.pool_size < 1:
        raise refuse(path, f"num_queries {result.num_queries} / pool_size {result.pool_size} out of range")
    return task_obj


def _check_qrels(result, leaderboard: Mapping, task_obj, data_dir, path) -> tuple[str, Any]:
    """(pool id, its registered entry or None): the result's qrels are the pool's (registered, or
    built from the task's local data)."""
    pid = result.pool_key.board_id
    registered = leaderboard["pools"].get(pid)
    expected = registered["qrels_sha256"] if registered else _expected_qrels(task_obj, result, data_dir)
    if result.qrels_sha256 != expected:
        raise refuse(path, f"qrels hash {store._show(result.qrels_sha256[:16])}… does not match pool {pid} "
                          f"({expected[:16]}…): not the registered relevance judgements")
    return pid, registered


def _checked_measures(result, path) -> dict:
    """The reported measures (as dicts), each canonical, in its range, over at most the pool's queries."""
    measures = {}
    for name, mv in result.measures.items():
        measure = _parse_measure(name, path)
        lo, hi = value_range(measure, result.pool_size)
        nums = (mv.value, mv.ci_low, mv.ci_high)
        if any(math.isnan(x) for x in nums):
            if mv.n != 0:
                raise refuse(path, f"{name}: missing value over {mv.n} queries")
        elif not all(lo - TOLERANCE <= x <= hi + TOLERANCE for x in nums) or mv.ci_low > mv.ci_high + TOLERANCE:
            raise refuse(path, f"{name} value {mv.value!r} [{mv.ci_low!r}, {mv.ci_high!r}] out of range [{lo:g}, {hi:g}]")
        if mv.n > result.num_queries:
            raise refuse(path, f"{name}: n={mv.n} is more than the {result.num_queries} queries")
        measures[name] = mv.to_dict()
    return measures


def _per_query_table(result, path):
    """(query ids, {measure: values}) of the result's per-query table: a plain file name beside the
    result, bounded, one row per query."""

    name = result.per_query_file
    if not name or Path(name).name != name or name.startswith("."):
        raise refuse(path, f"per_query_file {store._show(name)} must be a file name beside the result")
    table = path.parent / name
    if not table.is_file() or table.stat().st_size > MAX_PER_QUERY_BYTES:
        raise refuse(path, f"per-query table {name} is missing or over {MAX_PER_QUERY_BYTES} bytes")
    ids, values = read_per_query(table)
    if len(ids) != result.num_queries:
        raise refuse(path, f"per-query table has {len(ids)} rows, the result says {result.num_queries} queries")
    store.check_texts(ids, "query id")
    return ids, values


def _check_per_query_column(result, col: str, vec, path) -> None:
    """One per-query column: in range, as many values as the reported n, giving the reported mean."""
    measure = _parse_measure(col, path)
    lo, hi = value_range(measure, result.pool_size)
    finite = vec[~np.isnan(vec)]
    if np.isinf(vec).any() or (finite.size and (finite.min() < lo - TOLERANCE or finite.max() > hi + TOLERANCE)):
        raise refuse(path, f"per-query {col} values out of range [{lo:g}, {hi:g}]")
    reported = result.measures.get(col)
    if reported is not None and reported.value is not None and finite.size != reported.n:  # nan: no value
        raise refuse(path, f"per-query {col} has {finite.size} values (nan: no value), the result says n={reported.n}")
    if reported is not None and not measure.of_mean and finite.size:
        mean = float(finite.mean())
        if not math.isclose(mean, reported.value, rel_tol=1e-6, abs_tol=1e-9):
            raise refuse(path, f"{col}: per-query mean {mean!r} is not the reported value {reported.value!r}")


def _checked_per_query(result, path, registered, pid: str, card) -> tuple[str, dict]:
    """(hash of the sorted query ids, the per-query vectors encoded in id order of the main measures,
    and of ``EXPOSURE_COLUMNS`` on a pool of two or more document languages), the table consistent
    with the means (and with the registered pool's query ids)."""

    ids, values = _per_query_table(result, path)
    order = np.argsort(np.array(ids, dtype=object), kind="stable")
    sorted_ids = [ids[i] for i in order]
    ids_hash = _ids_hash(sorted_ids)
    if registered and registered["query_ids_sha256"] != ids_hash:
        raise refuse(path, f"query ids do not match pool {pid}")
    main = [str(m) for m in card.main_measures.get(result.scenario, MAIN_MEASURES.get(result.scenario, ()))]
    if len(set(result.doc_langs)) >= 2:
        main += [m for m in EXPOSURE_COLUMNS if m not in main]
    vectors = {}
    for col, vec in values.items():
        _check_per_query_column(result, col, vec, path)
        if col in main:
            vectors[col] = store.encode_vector(vec[order])
    return ids_hash, vectors


def _checked_breakdown(result, path) -> dict | None:
    """The result's breakdown as plain data (None without one): bounded groups, counts and values in range."""
    if result.breakdown is None:
        return None
    breakdown = _plain(result.breakdown)
    if sum(len(g) for g in breakdown.values()) > MAX_GROUPS:
        raise refuse(path, f"breakdown has more than {MAX_GROUPS} groups")
    for fld, groups in breakdown.items():
        for group, cell in groups.items():
            if not 0 <= cell["n"] <= result.num_queries:
                raise refuse(path, f"breakdown.{fld}.{group}.n {cell['n']} out of [0, {result.num_queries}]")
            _check_breakdown_cell(result, f"breakdown.{fld}.{group}", cell, path)
    return breakdown


def _check_breakdown_cell(result, where: str, cell: Mapping, path) -> None:
    for m, v in cell.items():
        if m != "n":
            lo, hi = value_range(_parse_measure(m, path), result.pool_size)
            if v is not None and not lo - TOLERANCE <= v <= hi + TOLERANCE:
                raise refuse(path, f"{where}.{m} value {v!r} out of range [{lo:g}, {hi:g}]")


def _board_record(result, measures: dict, vectors: dict, breakdown: dict | None) -> dict:
    """What the leaderboard keeps of a validated result besides its pool and retriever."""
    record = {"created_at": result.created_at, "measures": measures,
              "per_query": {"encoding": store.VECTOR_ENCODING, "measures": vectors},
              "bootstrap": result.bootstrap.to_dict(), "seconds": result.timings_s.total}
    if result.translation is not None:
        record["translation"] = _plain(result.translation)
    if breakdown is not None:
        record["breakdown"] = breakdown
    if result.preference is not None:  # validated by Result.from_dict (languages, ranges)
        record["preference"] = {part: {lang: mv.to_dict() for lang, mv in row.items()}
                                for part, row in result.preference.items()}
    record["hardware"] = result.hardware.to_dict()  # per result: another machine never rewrites the others
    if result.cost is not None:
        record["cost"] = result.cost.to_dict()
    record["clirbench_version"] = result.clirbench_version
    return record


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
