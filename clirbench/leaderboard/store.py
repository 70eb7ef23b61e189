"""The leaderboard file ``<dir>/<task>.json`` (schema in ``leaderboards/SCHEMA.md``), and which one a command uses.

Over 500 lines because the board's schema checks on load (ranges, pools, systems, significance)
belong with the one reader and writer of board files.

A user's boards live in ``./leaderboard/`` (``DEFAULT_DIR``, where ``build`` and ``submit`` write
unless given ``--dir``); the *reference* boards are those shipped with clirbench
(``leaderboards/`` of its source tree, :func:`reference_dir`), written only when named with
``--dir``. ``show``, ``html`` and the plots read the user's board when it exists, else the
reference one (:func:`path_for` with no folder), and say which (:func:`board_note`).

Reading is strict and bounded: a size cap before parsing, plain ``json`` with duplicate keys,
``NaN``/``Infinity`` and deep nesting refused, every string checked by :func:`check_text`.
Nothing in a file is executed, imported or evaluated.
"""
from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import re
import unicodedata
import zlib
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..identity import PoolKey, SystemKey
from ..measures import parse
from ..results.cost import Cost
from ..results.records import check_preference
from ..tasks import get_task
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError, DataNotFoundError, MalformedDataError
from ..util.redact import redact, redact_command
from ..util.strict import expect_json, loads_json
from .rerank_parts import check_description, check_part, description_of

__all__ = [
    "FORMAT", "SCHEMA_VERSION", "MAX_LEADERBOARD_BYTES", "MAX_TEXT", "check_text", "check_texts", "check_strings",
    "strict_json", "encode_vector", "decode_vector", "empty", "load", "save", "dumps", "path_for",
    "pool_id", "check_task_id", "locked", "page_names", "upgrade", "DEFAULT_DIR", "reference_dir", "read_dir",
    "board_note", "reproductions",
]

FORMAT = "clirbench-leaderboard"
SCHEMA_VERSION = 2  # 2: systems keyed by identity.SystemKey, hardware per result; 1 is upgraded on read
MAX_LEADERBOARD_BYTES = 32 << 20
MAX_TEXT = 300          # characters in a name, spec, id, language, group
MAX_LONG_TEXT = 2000    # characters in a prompt or a command
MAX_DEPTH = 10  # a result's reproductions are 9 levels deep
VECTOR_ENCODING = "f32le-zlib-base64"

# '<', '>' and '&' would be markup, backticks and quotes are kept out of names too; control
# and bidirectional-override characters could hide or reorder text on a terminal or page.
_MARKUP = re.compile(r"[<>&`\"\\]")
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_LONG_KEYS = {"query", "document", "command", "commands", "note", "notes", "source", "definition"}


def _show(text: str, limit: int = 60) -> str:
    """Harmless one-line rendering of an untrusted string for an error message."""
    shown = ascii(text[:limit]).replace("<", "\\x3c").replace(">", "\\x3e").replace("&", "\\x26")
    return shown + ("…" if len(text) > limit else "")


def check_text(value: Any, where: str, long: bool = False, command: bool = False) -> str:
    """``value`` if it is a safe string for a leaderboard, else a one-line ClirbenchError. A
    ``command`` (redacted, kept as text and escaped where shown) may hold any printable character."""
    if not isinstance(value, str):
        raise ClirbenchError(f"{where}: expected a string, got {type(value).__name__}")
    limit = MAX_LONG_TEXT if long or command else MAX_TEXT
    if len(value) > limit:
        raise ClirbenchError(f"{where}: string of {len(value)} characters, at most {limit} allowed")
    bad_char = any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co") or c in _BIDI for c in value)
    # prompts may hold quotes and backslashes, commands shell syntax too; never control characters
    markup = None if command else re.search(r"[<>&`]", value) if long else _MARKUP.search(value)
    if bad_char or markup:
        raise ClirbenchError(f"{where}: refusing a string with markup or control characters: {_show(redact(value))}")
    return value


def check_texts(values: Sequence[str], where: str) -> None:
    """:func:`check_text` on every one of ``values`` (short texts such as query ids): one pass over
    them all when they are printable ASCII without markup, else one by one (the first bad one named)."""
    if all(isinstance(v, str) for v in values):
        joined = " ".join(values)
        if (joined.isascii() and joined.isprintable() and not _MARKUP.search(joined)
                and max(map(len, values), default=0) <= MAX_TEXT):
            return
    for value in values:
        check_text(value, where)


def check_strings(value: Any, where: str, depth: int = 0) -> Any:
    """Check every key and string inside a JSON value (recursively, bounded depth)."""
    if depth > MAX_DEPTH:
        raise ClirbenchError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        if ".per_query.measures." in where:  # an encoded vector: base64 only
            if len(value) > MAX_LEADERBOARD_BYTES or not _BASE64.fullmatch(value):
                raise ClirbenchError(f"{where}: not a base64 vector")
            return value
        key = where.rsplit(".", 1)[-1].split("[")[0]
        return check_text(value, where, long=key in _LONG_KEYS, command=key in ("command", "commands"))
    if isinstance(value, Mapping):
        for key, item in value.items():
            check_text(key, f"{where} key")
            check_strings(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_strings(item, f"{where}[{i}]", depth + 1)
    elif not (value is None or isinstance(value, (bool, int, float))):
        raise ClirbenchError(f"{where}: unexpected value of type {type(value).__name__}")
    return value


def strict_json(path: str | os.PathLike, max_bytes: int, what: str) -> Any:
    """Parse a JSON file of at most ``max_bytes``: no NaN/Infinity, no duplicate keys."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DataNotFoundError(f"{path}: no such {what}") from None
    except OSError as exc:
        raise MalformedDataError(f"{path}: cannot read {what}: {' '.join(str(exc).split())}") from None
    if size > max_bytes:
        raise ClirbenchError(f"{path}: {what} of {size} bytes is over the {max_bytes}-byte limit")
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise ClirbenchError(f"{path}: {what} is over the {max_bytes}-byte limit")
        text = raw.decode("utf-8-sig")  # a byte-order mark at the start is dropped, as every reader does
    except UnicodeDecodeError as exc:
        raise MalformedDataError(f"{path}: malformed {what}: {' '.join(str(exc).split())[:200]}") from None
    return loads_json(text, f"{path}: malformed {what}", constants=False)


# ---------------------------------------------------------------------------------------------
# per-query vectors


def encode_vector(values: np.ndarray) -> str:
    """float32 little-endian, zlib, base64 (NaN kept)."""
    raw = np.asarray(values, dtype="<f4").tobytes()
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def decode_vector(text: str, n: int, where: str) -> np.ndarray:
    """Inverse of :func:`encode_vector`; ``n`` values expected (bounded decompression)."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, 4 * n + 1)
        if len(data) != 4 * n or inflater.unconsumed_tail or not inflater.eof:
            raise ValueError(f"expected {n} float32 values")
    except (ValueError, zlib.error, UnicodeEncodeError) as exc:
        raise MalformedDataError(f"{where}: bad per-query vector ({' '.join(str(exc).split())})") from None
    out = np.frombuffer(data, dtype="<f4").astype(np.float64)
    if np.isinf(out).any():
        raise MalformedDataError(f"{where}: per-query vector holds infinite values")
    return out


# ---------------------------------------------------------------------------------------------
# the file


def pool_id(subset: str, scenario: str, pool_mode: str, doc_langs, query_lang: str) -> str:
    """``[subset/]scenario[+mode]/L1-L2/q-Lq``, the pool's name without the task."""

    return PoolKey("", subset, scenario, pool_mode, tuple(doc_langs), query_lang).board_id


_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_task_id(task: Any, where: str = "task") -> str:
    """``task`` if it can name a leaderboard file and a page link (no path, scheme or markup)."""
    check_text(task, where)
    if not _TASK_ID.fullmatch(task) or len(task) > 100:
        raise ClirbenchError(f"{where}: task id {_show(task)} cannot name a leaderboard file "
                             f"(letters, digits, '.', '_', '-')")
    return task


DEFAULT_DIR = "leaderboard"  # a user's boards, in the current folder


def reference_dir() -> Path | None:
    """The reference boards shipped with clirbench: ``leaderboards/`` beside the package in its
    source tree (a clone, an editable install); None where it is not there."""
    folder = Path(__file__).resolve().parents[2] / "leaderboards"
    return folder if folder.is_dir() and any(folder.glob("*.json")) else None


def read_dir(task: str | None = None) -> Path:
    """The folder ``show``, ``html`` and the plots read when no ``--dir`` is given: ``./leaderboard``
    when it holds ``<task>.json`` (any board when ``task`` is None), else the reference boards."""
    mine = Path(DEFAULT_DIR)
    if (mine / f"{task}.json").is_file() if task else any(mine.glob("*.json")):
        return mine
    reference = reference_dir()
    if reference is None:
        what = f"{DEFAULT_DIR}/{task}.json" if task else f"{DEFAULT_DIR}/"
        raise DataNotFoundError(f"no leaderboard: {what} does not exist here and this installation ships no "
                                f"reference board; make yours with clirbench leaderboard build RESULTS_DIR")
    return reference


def is_reference(path: str | os.PathLike) -> bool:
    """True when ``path`` (a board or a folder of boards) is the reference one shipped with clirbench."""
    reference = reference_dir()
    if reference is None:
        return False
    path = Path(path).resolve()
    return reference.resolve() in (path, path.parent)


def board_note(path: str | os.PathLike) -> str:
    """One line naming the board (or, for a folder, the boards) a command read."""
    what = "boards" if Path(path).is_dir() else "board"
    if is_reference(path):
        return (f"{what}: the reference {what} shipped with clirbench ({path}); yours, from clirbench "
                f"leaderboard build, go to {DEFAULT_DIR}/")
    return f"{what}: {path}"


def path_for(task: str, leaderboard_dir: str | os.PathLike | None = DEFAULT_DIR) -> Path:
    """``<leaderboard_dir>/<task>.json``; with ``leaderboard_dir`` None, the board a read uses (:func:`read_dir`)."""
    check_task_id(task)
    return (read_dir(task) if leaderboard_dir is None else Path(leaderboard_dir)) / f"{task}.json"


_RESERVED_PAGES = {"index"}


def page_names(tasks) -> dict[str, str]:
    """``{task: page file name}``: ``<task>.html``, distinct from ``index.html`` and from each other
    even on a case-insensitive file system (``index`` -> ``index-board.html``, a clash gets ``-2``)."""
    out, taken = {}, {f"{r}.html" for r in _RESERVED_PAGES}
    for task in tasks:
        stem = f"{task}-board" if task.lower() in _RESERVED_PAGES else task
        name, k = f"{stem}.html", 2
        while name.lower() in taken:
            name, k = f"{stem}-{k}.html", k + 1
        taken.add(name.lower())
        out[task] = name
    return out


@contextlib.contextmanager
def locked(path: str | os.PathLike):
    """Hold an exclusive lock on ``.<name>.lock`` beside ``path`` (a leaderboard) for a read-merge-write.

    POSIX: ``fcntl.flock`` (released when the process dies); elsewhere ``msvcrt.locking``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path.parent / f".{path.name}.lock", "a+b")
    try:
        try:
            import fcntl
        except ImportError:  # Windows
            import msvcrt
            import time

            while True:
                try:
                    handle.seek(0)
                    msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    time.sleep(0.05)
            try:
                yield path
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield path
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def empty(task: str) -> dict:
    """A new leaderboard: the task card's dataset identity, no pools, no systems."""

    card = get_task(task).card
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "task": card.id,
        "dataset": {"source": card.source.get("hub") or card.id,
                    "revision": card.source.get("hub_revision"),
                    "files_sha256": dict(card.files_sha256) or None},
        "significance": {"method": "paired bootstrap, queries resampled within each pool, macro mean over pools",
                         "resamples": 1000, "seed": 42, "confidence": 0.95},
        "pools": {},
        "systems": {},
    }


def _need(data: Mapping, key: str, types: tuple, where: str) -> Any:
    if key not in data:
        raise MalformedDataError(f"{where}: missing key {key}")
    value = data[key]
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise MalformedDataError(f"{where}.{key}: wrong type {type(value).__name__}")
    return value


def validate(data: Any, where: str = "leaderboard") -> dict:
    """Check a parsed leaderboard's structure and strings; returns it."""
    data = _current(data, where)
    extra = set(data) - {"format", "schema_version", "task", "dataset", "significance", "pools", "systems", "notes"}
    if extra:
        raise MalformedDataError(f"{where}: unknown key(s) {', '.join(sorted(map(_show, extra)))}")
    check_strings(data, where)
    check_task_id(_need(data, "task", (str,), where), f"{where}.task")
    _need(data, "dataset", (dict,), where)
    _check_significance(_need(data, "significance", (dict,), where), f"{where}.significance")
    pools = _need(data, "pools", (dict,), where)
    for pid, pool in pools.items():
        _check_pool(pid, pool, f"{where}.pools.{pid}")
    systems = _need(data, "systems", (dict,), where)
    for name, system in systems.items():
        _check_system(name, system, pools, f"{where}.systems.{name}")
    return data


def _current(data: Any, where: str) -> dict:
    """``data`` as a leaderboard of this clirbench's schema (a version 1 board upgraded)."""
    if not isinstance(data, dict):
        expect_json(data, dict, where, "a clirbench leaderboard")
    if data.get("format") != FORMAT:
        raise MalformedDataError(f"{where}: not a clirbench leaderboard (format {_show(str(data.get('format')))})")
    version = _need(data, "schema_version", (int,), where)
    if version == 1:
        check_strings(data, where)
        data = upgrade(data, where)
        version = data["schema_version"]
    if version != SCHEMA_VERSION:
        raise ClirbenchError(f"{where}: leaderboard schema_version {version}, this clirbench reads {SCHEMA_VERSION}")
    return data


def _check_significance(sig: Mapping, where: str) -> None:
    for key, lo, hi in (("resamples", 10, 100000), ("seed", 0, 2**63 - 1)):
        v = _need(sig, key, (int,), where)
        if not lo <= v <= hi:
            raise MalformedDataError(f"{where}.{key} out of range")
    conf = _need(sig, "confidence", (float,), where)
    if not 0.5 <= conf < 1.0:
        raise MalformedDataError(f"{where}.confidence out of range")


def _check_pool(pid: str, pool: Any, w: str) -> None:
    if not isinstance(pool, dict):
        raise MalformedDataError(f"{w}: expected an object")
    for key, types in (("subset", (str,)), ("scenario", (str,)), ("pool_mode", (str,)), ("doc_langs", (list,)),
                       ("query_lang", (str,)), ("pool_size", (int,)), ("num_queries", (int,)),
                       ("qrels_sha256", (str,)), ("query_ids_sha256", (str,))):
        _need(pool, key, types, w)
    if pid != pool_id(pool["subset"], pool["scenario"], pool["pool_mode"], pool["doc_langs"], pool["query_lang"]):
        raise MalformedDataError(f"{w}: pool id does not match its fields")


def _check_system(name: str, system: Any, pools: Mapping, w: str) -> None:
    """One row: its retriever, its key (when written) naming it, and each result on a known pool."""
    if not isinstance(system, dict):
        raise MalformedDataError(f"{w}: expected an object")
    if description_of(_need(system, "retriever", (dict,), w)) is not None:
        check_description(description_of(system["retriever"]), f"{w}.retriever.ranking.rerank")
    if "key" in system:  # written by submit; a hand-made board may leave it out
        _check_system_key(name, _need(system, "key", (dict,), w), w)
    results = _need(system, "results", (dict,), w)
    for pid, res in results.items():
        if pid not in pools:
            raise MalformedDataError(f"{w}.results.{pid}: pool not in the leaderboard's pools")
        _check_result(res, pools[pid], f"{w}.results.{pid}")


def _check_system_key(name: str, key: Mapping, w: str) -> None:
    try:
        key_id = SystemKey.of_dict(key).id
    except (KeyError, TypeError, ValueError):
        raise MalformedDataError(f"{w}.key: expected retriever, revision, translation, ranking") from None
    if key_id != name:
        raise MalformedDataError(f"{w}: system id does not match its key ({_show(key_id)})")


def _check_result(res: Any, pool: Mapping, w: str) -> None:
    """One result of a row: measures in range, preference, hardware, reproductions, cost, per-query encoding."""
    if not isinstance(res, dict):
        raise MalformedDataError(f"{w}: expected an object")
    measures = _need(res, "measures", (dict,), w)
    for m, mv in measures.items():
        if not isinstance(mv, dict) or not all(
                isinstance(mv.get(k), (int, float, type(None))) and not isinstance(mv.get(k), bool)
                for k in ("value", "ci_low", "ci_high")):
            raise MalformedDataError(f"{w}.measures.{m}: expected value, ci_low, ci_high")
        _check_range(m, mv, pool["pool_size"], f"{w}.measures.{m}")
    if "preference" in res:
        try:
            check_preference(res["preference"], pool["doc_langs"], pool["pool_size"])
        except ValueError as exc:
            raise MalformedDataError(f"{w}: {exc}") from None
    if "hardware" in res and not isinstance(res["hardware"], dict):
        raise MalformedDataError(f"{w}.hardware: expected an object")
    _check_reproductions(res.get("reproductions", []), pool["pool_size"], w)
    if "rerank" in res:  # a reranked system's numbers on this pool (recall ceiling, pairs, seconds)
        check_part(res["rerank"], pool["num_queries"], pool["pool_size"], f"{w}.rerank")
    _check_cost(res, w)
    pq = _need(res, "per_query", (dict,), w)
    if pq and pq.get("encoding") != VECTOR_ENCODING:
        raise MalformedDataError(f"{w}.per_query: encoding must be {VECTOR_ENCODING}")


def _check_cost(res: Mapping, w: str) -> None:
    if "cost" in res:
        try:
            Cost.from_dict(res["cost"])
        except ValueError as exc:
            raise MalformedDataError(f"{w}: {exc}") from None


_TOL = 1e-6


def _check_reproductions(items: Any, pool_size: int, where: str) -> None:
    """A result's ``reproductions``: a list of {created_at, hardware, measures, ...}, measures in range."""
    if not isinstance(items, list):
        raise MalformedDataError(f"{where}.reproductions: expected a list")
    for i, rep in enumerate(items):
        w = f"{where}.reproductions[{i}]"
        if not isinstance(rep, dict):
            raise MalformedDataError(f"{w}: expected an object")
        _need(rep, "created_at", (str,), w)
        _need(rep, "hardware", (dict,), w)
        if not isinstance(rep.get("commands", []), list):
            raise MalformedDataError(f"{w}.commands: expected a list")
        for m, mv in _need(rep, "measures", (dict,), w).items():
            if not isinstance(mv, dict) or not all(
                    isinstance(mv.get(k), (int, float, type(None))) and not isinstance(mv.get(k), bool)
                    for k in ("value", "ci_low", "ci_high")):
                raise MalformedDataError(f"{w}.measures.{m}: expected value, ci_low, ci_high")
            _check_range(m, mv, pool_size, f"{w}.measures.{m}")


def _check_range(name: str, mv: Mapping, pool_size: int, where: str) -> None:
    """A stored measure must be a known measure with value and CI inside its family's range."""

    try:
        lo, hi = parse(name).value_range(pool_size)
    except ValueError:
        raise MalformedDataError(f"{where}: unknown measure") from None
    nums = [mv.get(k) for k in ("value", "ci_low", "ci_high")]
    for k, x in zip(("value", "ci_low", "ci_high"), nums):
        if x is not None and not (math.isfinite(x) and lo - _TOL <= x <= hi + _TOL):
            raise MalformedDataError(f"{where}.{k} {x!r} out of the measure's range [{lo:g}, {hi:g}]")
    if nums[1] is not None and nums[2] is not None and nums[1] > nums[2] + _TOL:
        raise MalformedDataError(f"{where}: ci_low {nums[1]!r} above ci_high {nums[2]!r}")


def upgrade(data: Mapping, where: str = "leaderboard") -> dict:
    """A schema-1 leaderboard in the schema-2 form: one system per ``SystemKey`` (a translated
    result becomes its own system), hardware and clirbench version moved into each result,
    commands redacted. Values are not touched."""

    out = {k: v for k, v in data.items() if k != "systems"}
    out["schema_version"] = SCHEMA_VERSION
    systems: dict[str, dict] = {}
    old = data.get("systems")
    if not isinstance(old, Mapping):
        raise MalformedDataError(f"{where}: systems must be an object")
    for name, sysd in old.items():
        if not isinstance(sysd, Mapping) or not isinstance(sysd.get("retriever"), Mapping) \
                or not isinstance(sysd.get("results"), Mapping):
            raise MalformedDataError(f"{where}.systems.{name}: expected retriever and results")
        extra = {k: sysd[k] for k in ("hardware", "clirbench_version") if k in sysd}
        for pid, res in sysd["results"].items():
            if not isinstance(res, Mapping):
                raise MalformedDataError(f"{where}.systems.{name}.results.{pid}: expected an object")
            key = SystemKey.of_record({"retriever": sysd["retriever"], "translation": res.get("translation")})
            system = systems.setdefault(key.id, {"key": key.to_dict(), "retriever": dict(sysd["retriever"]),
                                                 "commands": [], "results": {}})
            for command in sysd.get("commands") or []:
                command = redact_command(command)
                if command not in system["commands"]:
                    system["commands"].append(command)
            if pid in system["results"]:
                raise MalformedDataError(f"{where}: two results of {_show(key.id)} on pool {_show(pid)}")
            system["results"][pid] = {**extra, **res}
    out["systems"] = systems
    return out


def load(path: str | os.PathLike) -> dict:
    """Read and validate a leaderboard file."""
    return validate(strict_json(path, MAX_LEADERBOARD_BYTES, "leaderboard"), str(path))


def dumps(data: Mapping) -> str:
    """Canonical text: sorted keys, one-space indent (so merges are idempotent byte for byte)."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def save(data: Mapping, path: str | os.PathLike) -> Path:
    """Validate and write atomically; refuses a file over the size cap."""
    text = dumps(validate(json.loads(dumps(data)), str(path)))
    if len(text.encode("utf-8")) > MAX_LEADERBOARD_BYTES:
        raise ClirbenchError(f"{path}: leaderboard would be over {MAX_LEADERBOARD_BYTES} bytes; not written")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    return path


def reproductions(data: dict, pools=None) -> list[tuple[str, str, dict, dict]]:
    """``[(system, pool id, board entry, reproduction)]`` of every reproduction kept on the board
    (``pools``: only these), by system, pool and date."""
    out = []
    for system, sysd in sorted(data["systems"].items()):
        for pid, res in sorted(sysd["results"].items()):
            if pools is None or pid in pools:
                out.extend((system, pid, res, rep) for rep in sorted(res.get("reproductions") or [],
                                                                     key=lambda r: r["created_at"]))
    return out
