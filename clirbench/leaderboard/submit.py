"""Validate result files against a registered task and merge them into its leaderboard."""
from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import hashlib
import math
import os
import re
from dataclasses import dataclass, field, replace as _replace
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..identity import TRANSLATION_DIRECTIONS
from ..util.errors import ClirbenchError, MalformedDataError, UnknownNameError
from ..util.strict import json_kind
from . import store

__all__ = ["MAX_RESULT_BYTES", "MAX_PER_QUERY_BYTES", "Submission", "validate_result", "merge", "submit", "build",
           "value_range", "identity_diff", "within_intervals"]

MAX_RESULT_BYTES = 1 << 20
MAX_PER_QUERY_BYTES = 32 << 20
MAX_QUERIES = 200_000
MAX_GROUPS = 200
MAX_POOL_SIZE = 100_000_000
_HEX64 = re.compile(r"[0-9a-f]{64}")
_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*([.+-]?[A-Za-z0-9.+-]*)?")
_TOL = 1e-6


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


def _fail(path, why: str) -> ClirbenchError:
    return ClirbenchError(f"{path}: {why}")


def _parse_measure(name: str, path):
    from ..measures import parse

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
            raise _fail(path, f"{what} {store._show(str(value))} is not valid")

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
        raise _fail(path, "result reports no measure")
    if result.translation is not None:
        tr = result.translation
        need(tr.get("direction") in TRANSLATION_DIRECTIONS, "translation.direction", tr.get("direction"))
        translator = tr.get("translator")
        need(isinstance(translator, str) and bool(translator.strip()), "translation.translator", translator)
    created = _dt.datetime.fromisoformat(result.created_at.replace("Z", "+00:00"))
    if created.tzinfo is None:
        raise _fail(path, f"created_at {store._show(result.created_at)} has no time zone")
    need(created <= _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(days=1), "created_at (in the future)",
         result.created_at)


def _ids_hash(ids: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()


def _check_dataset(result, dataset: Mapping, path) -> None:
    want = dataset.get("files_sha256") or {}
    have = dict(result.task.files_sha256 or {})
    if want:
        if not have:
            raise _fail(path, "result records no dataset file hashes; the leaderboard requires them")
        for key, digest in have.items():
            if key in want and want[key] != digest:
                raise _fail(path, f"dataset file {store._show(key)} hash {digest[:12]}… does not match the "
                                  f"registered {want[key][:12]}…")
        langs = {*result.doc_langs, result.query_lang}
        missing = sorted(l for l in langs if l in want and l not in have)
        if missing:
            raise _fail(path, f"result records no dataset hash for {', '.join(missing)}")
    revision = dataset.get("revision")
    if revision is not None and result.task.revision != revision:
        raise _fail(path, f"dataset revision {store._show(str(result.task.revision))} does not match the "
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
    from ..identity import PoolKey
    from ..tasks import get_task

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
    key = result.system_key
    return Submission(path, leaderboard["task"], key.id, pid, pool, result.retriever.to_dict(), record, {}, key)


def _read_result(path: Path):
    """The result record of ``path``: bounded, of this schema version, its strings checked."""
    from ..results import SCHEMA_VERSION, Result

    raw = store.strict_json(path, MAX_RESULT_BYTES, "result file")
    if not isinstance(raw, dict):
        raise _fail(path, f"malformed result file: not a result record: {json_kind(raw)}, expected a JSON object")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise _fail(path, f"result schema_version {store._show(str(version))}; the leaderboard takes {SCHEMA_VERSION}")
    store.check_strings(raw, "result")
    try:
        return Result.from_dict(raw)
    except (ValueError, TypeError) as exc:
        raise MalformedDataError(f"{path}: malformed result file: {' '.join(str(exc).split())[:200]}") from None


def _check_task(result, leaderboard: Mapping, path):
    """The leaderboard's registered task (its dataset, scenarios, pool modes, languages match the result)."""
    from ..tasks import get_task

    task = leaderboard["task"]
    if result.task.id != task:
        raise _fail(path, f"result is for task {store._show(result.task.id)}, the leaderboard for {task}")
    if ":" in task:
        raise _fail(path, "only registered tasks have leaderboards")
    task_obj = get_task(task)
    card = task_obj.card
    _check_dataset(result, leaderboard["dataset"], path)
    if result.scenario not in (*card.scenarios, "retrieval"):
        raise _fail(path, f"unknown scenario {store._show(result.scenario)} for {task}")
    if result.pool_mode not in card.pool_modes:
        raise _fail(path, f"unknown pool mode {store._show(result.pool_mode)} for {task}")
    unknown = sorted({*result.doc_langs, result.query_lang} - set(card.languages))
    if unknown and card.languages:
        raise _fail(path, f"language(s) {', '.join(map(store._show, unknown))} not in {task}")
    if not 0 < result.num_queries <= MAX_QUERIES or result.pool_size < 1:
        raise _fail(path, f"num_queries {result.num_queries} / pool_size {result.pool_size} out of range")
    return task_obj


def _check_qrels(result, leaderboard: Mapping, task_obj, data_dir, path) -> tuple[str, Any]:
    """(pool id, its registered entry or None): the result's qrels are the pool's (registered, or
    built from the task's local data)."""
    pid = result.pool_key.board_id
    registered = leaderboard["pools"].get(pid)
    expected = registered["qrels_sha256"] if registered else _expected_qrels(task_obj, result, data_dir)
    if result.qrels_sha256 != expected:
        raise _fail(path, f"qrels hash {store._show(result.qrels_sha256[:16])}… does not match pool {pid} "
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
                raise _fail(path, f"{name}: missing value over {mv.n} queries")
        elif not all(lo - _TOL <= x <= hi + _TOL for x in nums) or mv.ci_low > mv.ci_high + _TOL:
            raise _fail(path, f"{name} value {mv.value!r} [{mv.ci_low!r}, {mv.ci_high!r}] out of range [{lo:g}, {hi:g}]")
        if mv.n > result.num_queries:
            raise _fail(path, f"{name}: n={mv.n} is more than the {result.num_queries} queries")
        measures[name] = mv.to_dict()
    return measures


def _per_query_table(result, path):
    """(query ids, {measure: values}) of the result's per-query table: a plain file name beside the
    result, bounded, one row per query."""
    from ..results import read_per_query

    name = result.per_query_file
    if not name or Path(name).name != name or name.startswith("."):
        raise _fail(path, f"per_query_file {store._show(name)} must be a file name beside the result")
    table = path.parent / name
    if not table.is_file() or table.stat().st_size > MAX_PER_QUERY_BYTES:
        raise _fail(path, f"per-query table {name} is missing or over {MAX_PER_QUERY_BYTES} bytes")
    ids, values = read_per_query(table)
    if len(ids) != result.num_queries:
        raise _fail(path, f"per-query table has {len(ids)} rows, the result says {result.num_queries} queries")
    store.check_texts(ids, "query id")
    return ids, values


def _check_per_query_column(result, col: str, vec, path) -> None:
    """One per-query column: in range, as many values as the reported n, giving the reported mean."""
    measure = _parse_measure(col, path)
    lo, hi = value_range(measure, result.pool_size)
    finite = vec[~np.isnan(vec)]
    if np.isinf(vec).any() or (finite.size and (finite.min() < lo - _TOL or finite.max() > hi + _TOL)):
        raise _fail(path, f"per-query {col} values out of range [{lo:g}, {hi:g}]")
    reported = result.measures.get(col)
    if reported is not None and reported.value is not None and finite.size != reported.n:  # nan: no value
        raise _fail(path, f"per-query {col} has {finite.size} values (nan: no value), the result says n={reported.n}")
    if reported is not None and not measure.of_mean and finite.size:
        mean = float(finite.mean())
        if not math.isclose(mean, reported.value, rel_tol=1e-6, abs_tol=1e-9):
            raise _fail(path, f"{col}: per-query mean {mean!r} is not the reported value {reported.value!r}")


def _checked_per_query(result, path, registered, pid: str, card) -> tuple[str, dict]:
    """(hash of the sorted query ids, the main measures' per-query vectors encoded in id order),
    the table consistent with the means (and with the registered pool's query ids)."""
    from ..measures import MAIN_MEASURES

    ids, values = _per_query_table(result, path)
    order = np.argsort(np.array(ids, dtype=object), kind="stable")
    sorted_ids = [ids[i] for i in order]
    ids_hash = _ids_hash(sorted_ids)
    if registered and registered["query_ids_sha256"] != ids_hash:
        raise _fail(path, f"query ids do not match pool {pid}")
    main = [str(m) for m in card.main_measures.get(result.scenario, MAIN_MEASURES.get(result.scenario, ()))]
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
        raise _fail(path, f"breakdown has more than {MAX_GROUPS} groups")
    for fld, groups in breakdown.items():
        for group, cell in groups.items():
            if not 0 <= cell["n"] <= result.num_queries:
                raise _fail(path, f"breakdown.{fld}.{group}.n {cell['n']} out of [0, {result.num_queries}]")
            _check_breakdown_cell(result, f"breakdown.{fld}.{group}", cell, path)
    return breakdown


def _check_breakdown_cell(result, where: str, cell: Mapping, path) -> None:
    for m, v in cell.items():
        if m != "n":
            lo, hi = value_range(_parse_measure(m, path), result.pool_size)
            if v is not None and not lo - _TOL <= v <= hi + _TOL:
                raise _fail(path, f"{where}.{m} value {v!r} out of range [{lo:g}, {hi:g}]")


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


_IDENTITY = ("spec", "model_id", "revision", "prompts")
_VALUES = ("measures", "per_query", "bootstrap", "breakdown", "preference")
# a revision made of library versions (``bm25s==0.3.16,regex==…``): what records written before
# retrievers were fingerprinted carry; it says nothing about what the retriever does
_VERSIONS = re.compile(r"[A-Za-z0-9_.\-]+==[^,\s]+(,[A-Za-z0-9_.\-]+==[^,\s]+)*")
_PROVENANCE = ("revision", "library_versions")  # settings that record versions, not behaviour


def _by_versions(revision: Any) -> bool:
    return isinstance(revision, str) and bool(_VERSIONS.fullmatch(revision))


def _fingerprinted(revision: Any) -> bool:
    return isinstance(revision, str) and revision.startswith("fingerprint:")


def identity_diff(board: Mapping, new: Mapping) -> list[str]:
    """The fields by which a submission's retriever (``new``) is another system than the board's.

    Spec, model id and prompts must be equal. Revisions are compared as they are, except a
    revision of library versions (an old record) against a ``fingerprint:`` revision: versions
    say nothing about behaviour, so the two are the same system when every other setting the
    retriever records (analyzers, k1, b, ...) is equal; the values on each pool then decide
    (the same, a reproduction within the intervals, or a conflict)."""
    diff = [k for k in ("spec", "model_id", "prompts") if board.get(k) != new.get(k)]
    a, b = board.get("revision"), new.get("revision")
    if a != b:
        if not ((_by_versions(a) and _fingerprinted(b)) or (_fingerprinted(a) and _by_versions(b))):
            diff.append("revision")
        else:
            keys = (set(board) | set(new)) - set(_PROVENANCE) - set(_IDENTITY)
            other = sorted(k for k in keys if board.get(k) != new.get(k))
            diff.extend(f"setting {k}" for k in other)
    return diff


def _changes(old: Mapping, new: Mapping) -> list[tuple[str, Any, Any]]:
    """``(what, old, new)`` for each measure (or other value) that differs between two entries."""
    out = []
    om, nm = old.get("measures", {}), new.get("measures", {})
    for name in sorted(set(om) | set(nm)):
        a, b = om.get(name) or {}, nm.get(name) or {}
        if not _close(a.get("value"), b.get("value")) or not a or not b:
            out.append((name, a.get("value"), b.get("value")))
        elif not (_close(a.get("ci_low"), b.get("ci_low")) and _close(a.get("ci_high"), b.get("ci_high"))):
            out.append((f"{name} CI", f"[{_fmt(a.get('ci_low'))}, {_fmt(a.get('ci_high'))}]",
                        f"[{_fmt(b.get('ci_low'))}, {_fmt(b.get('ci_high'))}]"))
        elif a.get("n") != b.get("n"):
            out.append((f"{name} n", a.get("n"), b.get("n")))
    for part in _VALUES[1:]:  # a part one side lacks (a board made before preferences were kept) is no change
        if part in old and part in new and not _close_tree(old[part], new[part]) and not (part == "per_query" and out):
            out.append((part, "…", "…"))
    return out


def _close_tree(a: Any, b: Any) -> bool:
    """:func:`_close` over nested objects and lists (breakdowns, preferences); other values equal."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(_close_tree(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close_tree(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and _close(a, b)
    return a == b


def _close(a: Any, b: Any) -> bool:
    """Equal numbers, up to the last bits a bootstrap's float sums may differ by on another CPU."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def within_intervals(board: Mapping, new: Mapping) -> bool:
    """True when ``new`` (a result entry) reproduces ``board``'s: the same measures, bootstrap
    settings and numbers of queries, and each value inside the other's confidence interval (both
    ways). Per-query values, breakdowns and preferences may differ (another machine's float order)."""
    if board.get("bootstrap") != new.get("bootstrap"):
        return False
    om, nm = board.get("measures", {}), new.get("measures", {})
    if set(om) != set(nm) or not om:
        return False
    for name, a in om.items():
        b = nm[name]
        if a.get("n") != b.get("n"):
            return False
        nums = [a.get(k) for k in ("value", "ci_low", "ci_high")] + [b.get(k) for k in ("value", "ci_low", "ci_high")]
        if any(x is None for x in nums):
            if any(x is not None for x in nums):
                return False
            continue
        va, la, ha, vb, lb, hb = nums
        if not (la - _TOL <= vb <= ha + _TOL and lb - _TOL <= va <= hb + _TOL):
            return False
    return True


def _reproduction(sub: Submission, commands: list[str]) -> dict:
    """What a reproduction keeps: when, where, which versions, the values, the commands."""
    rec = sub.record
    out = {"created_at": rec["created_at"], "hardware": rec["hardware"], "clirbench_version": rec["clirbench_version"],
           "measures": rec["measures"], "revision": sub.retriever.get("revision"), "commands": list(commands)}
    versions = sub.retriever.get("library_versions")
    if isinstance(versions, Mapping):
        out["library_versions"] = dict(versions)
    return out


def _fmt(x: Any) -> str:
    return "–" if x is None else (f"{x:.4g}" if isinstance(x, float) else str(x))


def describe_changes(changes) -> str:
    """``RR 0.15 → 0.9568, nDCG@10 0.1 → 0.9`` (at most 6 named)."""
    text = ", ".join(f"{what} {_fmt(a)} → {_fmt(b)}" for what, a, b in changes[:6])
    return text + (f", … ({len(changes)} changed)" if len(changes) > 6 else "")


def _clean_commands(commands: Iterable[str]) -> list[str]:
    from ..util.redact import redact_command

    out = []
    for command in commands:
        command = re.sub(r"[ \t]*\\?\r?\n[ \t]*|[\t\v\f\r]", " ", redact_command(command)).strip()
        store.check_text(command, "--command", command=True)
        if command and command not in out:
            out.append(command)
    return out


def merge(leaderboard: Mapping, sub: Submission, commands: Iterable[str] = (), replace: bool = False,
          changes: list | None = None, reproduced: list | None = None) -> dict:
    """A new leaderboard with ``sub`` merged in (the input is not modified).

    Rows are keyed by the submission's ``SystemKey`` (a translated or approximate run is its own
    row); the system must be the board's (``identity_diff``: a fingerprint, not library versions,
    identifies an analyzer). Merging the same values twice changes nothing. A run of the same
    system and pool whose values lie within the entry's intervals (and the entry's within its own)
    is a *reproduction*: kept in the entry's ``reproductions`` (machine, date, versions, values,
    commands), the entry unchanged; ``reproduced`` then receives its ``(measure, old, new)``.
    Refused unless ``replace``: a system listed with another model id, revision or prompts, and an
    entry with values outside those intervals. ``replace`` replaces the entry of this pool and
    nothing else (the system's other pools stay, each marked with the revision it was made with;
    ``changes`` receives ``(measure, old, new)``). Commands are redacted (``clirbench.util.redact``),
    then kept on one line (line breaks and tabs as blanks; shell syntax as it is), with a new or
    replaced entry (the system's ``commands``) or in a reproduction; the same values change nothing.
    """
    # copy on write along the path this merge changes (top, pools, systems, the one system, its
    # commands and results): the input is untouched, and a build of many files stays linear
    out = dict(leaderboard)
    out["pools"], out["systems"] = dict(out["pools"]), dict(out["systems"])
    _merge_pool(out["pools"], sub)
    key = sub.key if sub.key is not None else _key_of(sub)
    commands = _clean_commands(commands)
    system = _merged_system(out["systems"].get(sub.system), sub, key, replace)
    out["systems"][sub.system] = system
    before = system["results"].get(sub.pool_id)
    record = dict(sub.record)
    if system["retriever"].get("revision") != sub.retriever.get("revision"):
        record["revision"] = sub.retriever.get("revision")  # the same system, recorded under another revision
    if before is not None and not _replaces_entry(before, record, sub, system, commands, replace, changes, reproduced):
        return out
    _check_undefined(out, sub)
    system["results"][sub.pool_id] = record
    for command in commands:  # how the board's entries were made: recorded with a new or replaced entry
        if command not in system["commands"]:
            system["commands"].append(command)
    return out


def _merge_pool(pools: dict, sub: Submission) -> None:
    """Register the submission's pool in ``pools`` (a copy), or check it is the registered one."""
    registered = pools.get(sub.pool_id)
    if registered is None:
        pools[sub.pool_id] = dict(sub.pool)
    elif registered != sub.pool:
        raise _fail(sub.path, f"pool {sub.pool_id} differs from the registered one")


def _merged_system(system: Mapping | None, sub: Submission, key, replace: bool) -> dict:
    """A copy of the board's row for the submission's system (a new row when none); another model
    id, revision or prompts is refused unless ``replace``, then the other pools keep their revision."""
    if system is None:
        return {"key": key.to_dict(), "retriever": sub.retriever, "commands": [], "results": {}}
    system = {**system, "commands": list(system.get("commands") or []), "results": dict(system["results"])}
    diff = identity_diff(system["retriever"], sub.retriever)
    if diff and not replace:
        raise _fail(sub.path, f"system {store._show(sub.system)} is on the leaderboard with another "
                              f"{', '.join(diff)}; pass --replace to replace its entry on pool {sub.pool_id} "
                              f"(its other pools are kept)")
    if diff:  # the other pools keep their results, each marked with the revision that made it
        previous = system["retriever"].get("revision")
        for pid, res in system["results"].items():
            if pid != sub.pool_id and "revision" not in res:
                system["results"][pid] = {**res, "revision": previous}
        system["key"], system["retriever"] = key.to_dict(), sub.retriever
    return system


def _replaces_entry(before: Mapping, record: dict, sub: Submission, system: dict, commands: list[str],
                    replace: bool, changes: list | None, reproduced: list | None) -> bool:
    """Whether ``record`` replaces the entry ``before`` on its pool: not for the same values, nor for
    a reproduction (kept in the entry); with ``replace`` (``changes`` then gets the differences);
    other values are refused."""
    diff = _changes(before, record) if any(before.get(k) != record.get(k) for k in _VALUES) else []
    if not diff:
        return False  # the same values: the entry stays as it was
    if within_intervals(before, record) and not replace:
        _keep_reproduction(before, record, sub, system, commands, diff, reproduced)
        return False
    if not replace:
        confidence = (before.get("bootstrap") or {}).get("confidence", 0.95)
        raise _fail(sub.path, f"{store._show(sub.system)} on pool {sub.pool_id} is on the leaderboard with "
                              f"other values, not within their {100 * confidence:g}% intervals "
                              f"({describe_changes(diff)}); pass --replace to replace it")
    if changes is not None:
        changes.extend(diff)
    if before.get("reproductions"):
        record["reproductions"] = before["reproductions"]
    return True


def _keep_reproduction(before: Mapping, record: dict, sub: Submission, system: dict, commands: list[str],
                       diff: list, reproduced: list | None) -> None:
    """Add the submission to the entry's ``reproductions`` (unless already there)."""
    entry = _reproduction(sub, commands)
    kept = [{**r, "commands": list(r.get("commands") or [])} for r in before.get("reproductions") or []]
    same = [r for r in kept if {k: v for k, v in r.items() if k != "commands"}
            == {k: v for k, v in entry.items() if k != "commands"}]
    if same:  # this reproduction is already there: nothing changes
        return
    kept.append(entry)
    if reproduced is not None:
        reproduced.extend(d for d in diff if d[0] in record["measures"] or d[0].endswith(" CI"))
    system["results"][sub.pool_id] = {**before, "reproductions": kept}


def _check_undefined(leaderboard: Mapping, sub: Submission) -> None:
    """Refuse per-query vectors whose undefined queries (nan) differ from those of a system already
    on the pool: the qrels decide which queries a measure is undefined for (docs/measures.md)."""
    n = sub.pool["num_queries"]
    for measure, text in sub.record["per_query"]["measures"].items():
        mask = np.isnan(store.decode_vector(text, n, f"{sub.path} {measure}"))
        for other, sysd in sorted(leaderboard["systems"].items()):
            theirs = sysd["results"].get(sub.pool_id, {}).get("per_query", {}).get("measures", {}).get(measure)
            if other == sub.system or theirs is None:
                continue
            if not np.array_equal(mask, np.isnan(store.decode_vector(theirs, n, f"{other} {measure}"))):
                raise _fail(sub.path, f"per-query {measure} has no value (nan) for other queries than "
                                      f"{store._show(other)} on pool {sub.pool_id}; one pool's undefined queries "
                                      f"are the same for every system")
            break


def _key_of(sub: Submission):
    from ..identity import SystemKey

    return SystemKey.of_record({"retriever": sub.retriever, "translation": sub.record.get("translation")})


def _load_or_new(task: str, leaderboard_dir) -> tuple[Path, dict]:
    path = store.path_for(task, leaderboard_dir)
    return path, (store.load(path) if path.exists() else store.empty(task))


def _task_of(path: Path) -> str:
    raw = store.strict_json(path, MAX_RESULT_BYTES, "result file")
    if not isinstance(raw, dict):
        raise _fail(path, f"malformed result file: not a result record: {json_kind(raw)}, expected a JSON object")
    task = raw.get("task", {}).get("id") if isinstance(raw, dict) and isinstance(raw.get("task"), dict) else None
    if not isinstance(task, str):
        raise _fail(path, "result names no task id")
    return store.check_text(task, "task.id")


def submit(result_file: str | os.PathLike, leaderboard_dir: str | os.PathLike = "leaderboard", data_dir=None,
           command: str | None = None, replace: bool = False) -> tuple[Path, Submission]:
    """Validate ``result_file`` and merge it into ``<leaderboard_dir>/<task>.json`` (idempotent).

    The read-merge-write runs under an exclusive lock beside the leaderboard and replaces the file
    atomically, so concurrent submissions are all kept. The returned submission's ``changes`` list
    what ``replace`` changed, ``reproduced`` the values of a run kept as a reproduction (``merge``);
    ``merged`` is False when the same entry (or reproduction) was already there.
    """
    path = Path(result_file)
    task = _task_of(path)
    lb_path = store.path_for(task, leaderboard_dir)
    with store.locked(lb_path):
        board = store.load(lb_path) if lb_path.exists() else store.empty(task)
        sub = validate_result(path, board, data_dir)
        changes: list = []
        reproduced: list = []
        merged = merge(board, sub, [command] if command else (), replace, changes, reproduced)
        same = merged == board and lb_path.exists()
        if not same:
            store.save(merged, lb_path)
    return lb_path, _replace(sub, changes=tuple(changes), merged=not same, reproduced=tuple(reproduced))


def result_files(results_dir: str | os.PathLike) -> list[Path]:
    """Result JSONs under ``results_dir`` (gap files ``*.gap.json`` left out), sorted."""
    root = Path(results_dir)
    if not root.is_dir():
        raise ClirbenchError(f"{root}: no such results directory")
    return sorted(p for p in root.rglob("*.json") if not p.name.endswith(".gap.json") and p.is_file())


def build(results_dir: str | os.PathLike, leaderboard_dir: str | os.PathLike = "leaderboard", data_dir=None,
          command: str | None = None, replace: bool = False, changes: list | None = None,
          reproduced: list | None = None, unchanged: dict | None = None) -> dict[Path, int]:
    """Validate and merge every result under ``results_dir``; each leaderboard is written once,
    under its lock (taken in path order), after every file has been checked.

    Returns ``{leaderboard path: results merged}``. Any invalid file stops the build (nothing
    written). ``changes`` receives ``(system, pool id, measure, old, new)`` of replaced entries,
    ``reproduced`` ``(system, pool id, [(measure, old, new)])`` of runs kept as reproductions,
    ``unchanged`` ``{leaderboard path: results already there}``.
    """
    files = result_files(results_dir)
    if not files:
        raise ClirbenchError(f"{results_dir}: no result files")
    by_task: dict[str, list[Path]] = {}
    for file in files:
        by_task.setdefault(_task_of(file), []).append(file)
    paths = {task: store.path_for(task, leaderboard_dir) for task in by_task}
    with contextlib.ExitStack() as stack:
        for task in sorted(by_task, key=lambda t: str(paths[t])):
            stack.enter_context(store.locked(paths[task]))
        boards: dict[str, tuple[Path, dict, dict, int]] = {}
        for task, task_files in by_task.items():
            lb_path, board = _load_or_new(task, leaderboard_dir)
            start, count = board, 0
            for file in task_files:
                sub = validate_result(file, board, data_dir)
                found: list = []
                again: list = []
                merged = merge(board, sub, [command] if command else (), replace, found, again)
                if unchanged is not None and merged == board:
                    unchanged[lb_path] = unchanged.get(lb_path, 0) + 1
                board = merged
                if changes is not None:
                    changes.extend((sub.system, sub.pool_id, *c) for c in found)
                if reproduced is not None and again:
                    reproduced.append((sub.system, sub.pool_id, again))
                count += 1
            boards[task] = (lb_path, start, board, count)
        for lb_path, start, board, _ in boards.values():
            if board != start or not lb_path.exists():
                store.save(board, lb_path)
    return {lb_path: count for lb_path, _, _, count in boards.values()}
