"""Merge validated result files into a task's leaderboard, under its lock (``validate.py`` checks them first)."""
from __future__ import annotations

import contextlib
import math
import os
import re
from dataclasses import replace as _replace
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..identity import SystemKey
from ..results.files import is_record_file
from ..util.errors import ClirbenchError
from ..util.redact import redact_command
from ..util.strict import json_kind
from . import store
from .rerank_parts import description_of

__all__ = ["merge", "submit", "build", "identity_diff", "within_intervals", "added", "describe_changes",
           "result_files"]

from .validate import MAX_RESULT_BYTES, TOLERANCE, Submission, refuse, validate_result

_IDENTITY = ("spec", "model_id", "revision", "prompts")
_DESCRIPTION = {"first_stage", "second_stage", "k", "depth"}  # a reranking's description (rerank_parts.split)
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
    """``(what, old, new)`` for each measure (or other value) that differs between two entries. A
    measure, per-query vector or preference part that only ``new`` has (one added to clirbench after
    the entry was made: ``added``) is no change; one that only ``old`` has is."""
    out = []
    om, nm = old.get("measures", {}), new.get("measures", {})
    for name in sorted(om):
        a, b = om.get(name) or {}, nm.get(name) or {}
        if not _close(a.get("value"), b.get("value")) or not a or not b:
            out.append((name, a.get("value"), b.get("value")))
        elif not (_close(a.get("ci_low"), b.get("ci_low")) and _close(a.get("ci_high"), b.get("ci_high"))):
            out.append((f"{name} CI", f"[{_fmt(a.get('ci_low'))}, {_fmt(a.get('ci_high'))}]",
                        f"[{_fmt(b.get('ci_low'))}, {_fmt(b.get('ci_high'))}]"))
        elif a.get("n") != b.get("n"):
            out.append((f"{name} n", a.get("n"), b.get("n")))
    for part in _VALUES[1:]:  # a part one side lacks (a board made before preferences were kept) is no change
        if part in old and part in new and not _close_tree(old[part], _as_old(part, old[part], new[part])) \
                and not (part == "per_query" and out):
            out.append((part, "…", "…"))
    return out


def _as_old(part: str, old: Any, new: Any) -> Any:
    """``new``'s ``part`` without what only it has: the per-query vectors and preference parts of
    measures added after ``old`` was made (both compared as far as ``old`` goes)."""
    if part == "per_query" and isinstance(old, Mapping) and isinstance(new, Mapping) \
            and isinstance(old.get("measures"), Mapping) and isinstance(new.get("measures"), Mapping):
        kept = {k: v for k, v in new["measures"].items() if k in old["measures"]}
        return {**new, "measures": kept}
    if part == "preference" and isinstance(old, Mapping) and isinstance(new, Mapping):
        return {k: v for k, v in new.items() if k in old}
    return new


def added(old: Mapping, new: Mapping) -> list[tuple[str, Any, Any]]:
    """``(measure, None, new value)`` for each measure ``new`` has and the entry ``old`` lacks (made
    by a clirbench before it), and ``(preference.<part>, None, "…")`` for each such preference part."""
    om, nm = old.get("measures", {}), new.get("measures", {})
    out = [(name, None, (nm[name] or {}).get("value")) for name in sorted(set(nm) - set(om))]
    before, after = old.get("preference") or {}, new.get("preference") or {}
    out += [(f"preference.{part}", None, "…") for part in sorted(set(after) - set(before)) if before]
    if "rerank" in new and "rerank" not in old:  # a reranking's pool numbers, kept per result since
        out.append(("rerank", None, "…"))
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
    """True when ``new`` (a result entry) reproduces ``board``'s: every measure of the board's entry
    (``new`` may have more: measures added to clirbench since), the same bootstrap settings and
    numbers of queries, and each value inside the other's confidence interval (both ways).
    Per-query values, breakdowns and preferences may differ (another machine's float order)."""
    if board.get("bootstrap") != new.get("bootstrap"):
        return False
    om, nm = board.get("measures", {}), new.get("measures", {})
    if not set(om) <= set(nm) or not om:
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
        if not (la - TOLERANCE <= vb <= ha + TOLERANCE and lb - TOLERANCE <= va <= hb + TOLERANCE):
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
    identifies an analyzer). Merging the same values twice changes nothing; the same values with
    measures the entry lacks (``added``: made before clirbench computed them) replace the entry, which
    so gains them (``changes`` receives ``(measure, None, value)``). A run of the same
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
        raise refuse(sub.path, f"pool {sub.pool_id} differs from the registered one")


def _merged_system(system: Mapping | None, sub: Submission, key, replace: bool) -> dict:
    """A copy of the board's row for the submission's system (a new row when none); another model
    id, revision or prompts is refused unless ``replace``, then the other pools keep their revision."""
    if system is None:
        return {"key": key.to_dict(), "retriever": sub.retriever, "commands": [], "results": {}}
    system = {**system, "commands": list(system.get("commands") or []), "results": dict(system["results"])}
    diff = identity_diff(system["retriever"], sub.retriever)
    if diff and not replace:
        raise refuse(sub.path, f"system {store._show(sub.system)} is on the leaderboard with another "
                              f"{', '.join(diff)}; pass --replace to replace its entry on pool {sub.pool_id} "
                              f"(its other pools are kept)")
    described = description_of(system["retriever"])
    if not diff and described is not None and set(described) - _DESCRIPTION and description_of(sub.retriever):
        # a board written when the system kept one pool's reranking numbers: the description only
        system["retriever"] = {**system["retriever"], "ranking": sub.retriever["ranking"]}
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
    a reproduction (kept in the entry); for the same values and measures the entry lacks (``added``:
    an entry made before clirbench computed them gains them; ``changes`` then gets them as ``– →
    value``); with ``replace`` (``changes`` then gets the differences); other values are refused."""
    diff = _changes(before, record) if any(before.get(k) != record.get(k) for k in _VALUES) else []
    if not diff:
        gained = added(before, record)
        if not gained:
            return False  # the same values: the entry stays as it was
        if changes is not None:
            changes.extend(gained)
        if before.get("reproductions"):
            record["reproductions"] = before["reproductions"]
        return True
    if within_intervals(before, record) and not replace:
        _keep_reproduction(before, record, sub, system, commands, diff, reproduced)
        return False
    if not replace:
        confidence = (before.get("bootstrap") or {}).get("confidence", 0.95)
        raise refuse(sub.path, f"{store._show(sub.system)} on pool {sub.pool_id} is on the leaderboard with "
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
                raise refuse(sub.path, f"per-query {measure} has no value (nan) for other queries than "
                                      f"{store._show(other)} on pool {sub.pool_id}; one pool's undefined queries "
                                      f"are the same for every system")
            break


def _key_of(sub: Submission):
    return SystemKey.of_record({"retriever": sub.retriever, "translation": sub.record.get("translation")})


def _load_or_new(task: str, leaderboard_dir) -> tuple[Path, dict]:
    path = store.path_for(task, leaderboard_dir)
    return path, (store.load(path) if path.exists() else store.empty(task))


def _task_of(path: Path) -> str:
    raw = store.strict_json(path, MAX_RESULT_BYTES, "result file")
    if not isinstance(raw, dict):
        raise refuse(path, f"malformed result file: not a result record: {json_kind(raw)}, expected a JSON object")
    task = raw.get("task", {}).get("id") if isinstance(raw, dict) and isinstance(raw.get("task"), dict) else None
    if not isinstance(task, str):
        raise refuse(path, "result names no task id")
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
    """Result JSONs under ``results_dir`` (gap and consistency files left out), sorted."""
    root = Path(results_dir)
    if not root.is_dir():
        raise ClirbenchError(f"{root}: no such results directory")
    return sorted(p for p in root.rglob("*.json") if is_record_file(p) and p.is_file())


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
