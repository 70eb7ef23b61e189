"""Result files (docs/results.md): one JSON per evaluated pool, per-query values in a TSV beside it.

A result ``<stem>.json`` names its per-query table ``<stem>.perquery.tsv`` (header
``query_id<TAB><measure>…``, one row per query, floats as Python ``repr``, NaN as ``nan``).
Beside them, when the ranks are known, the ranks table ``<stem>.ranks.tsv`` (header
``query_id<TAB>doc_id<TAB>doc_lang<TAB>grade<TAB>rank``, one row per relevant judgement; results
written by older versions have none). All are written atomically; the tables first, so a JSON on
disk always has its tables.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

from ..formats.jsonl import numbered_lines
from ..identity import PoolKey, SystemKey, check_path_fits, slug
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError, DataNotFoundError, MalformedDataError
from ..util.strict import check_id, first_duplicate, loads_json, shown
from .records import Result

__all__ = ["SIDE_SUFFIXES", "is_record_file", "PerQuery", "RankedDoc", "per_query_name", "ranks_name", "write_result", "read_result", "read_per_query",
           "read_ranks", "result_path"]

_PER_QUERY_SUFFIX = ".perquery.tsv"
_RANKS_SUFFIX = ".ranks.tsv"
_RANKS_HEADER = ("query_id", "doc_id", "doc_lang", "grade", "rank")


class PerQuery(NamedTuple):
    """Per-query values: ``query_ids`` and one float64 vector per measure, in that order."""

    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]


class RankedDoc(NamedTuple):
    """One relevant judgement of a query in a ranks table: the document, its language ("" when
    unknown), its grade and its rank under the tie rule (``inf``: not retrieved)."""

    doc_id: str
    doc_lang: str
    grade: float
    rank: float


#: the JSON files a run writes beside its records that are not records: query-language gaps
#: (``stats.paired``) and the consistency across query languages (``stats.consistency``)
SIDE_SUFFIXES = (".gap.json", ".consistency.json")


def is_record_file(path: str | os.PathLike) -> bool:
    """A ``*.json`` that is not one of the ``SIDE_SUFFIXES`` files."""
    name = Path(path).name
    return name.endswith(".json") and not name.endswith(SIDE_SUFFIXES)


def _stem(result_file: str | os.PathLike) -> str:
    name = Path(result_file).name
    return name[:-5] if name.endswith(".json") else name


def per_query_name(result_file: str | os.PathLike) -> str:
    """``x/en-zh.q-zh.json`` -> ``en-zh.q-zh.perquery.tsv`` (the name, relative to its folder)."""
    return _stem(result_file) + _PER_QUERY_SUFFIX


def ranks_name(result_file: str | os.PathLike) -> str:
    """``x/en-zh.q-zh.json`` -> ``en-zh.q-zh.ranks.tsv`` (the name, relative to its folder)."""
    return _stem(result_file) + _RANKS_SUFFIX


def _bad_field(text: str) -> bool:
    return not text or any(c in text for c in "\t\n\r")


def _per_query_text(per_query) -> tuple[str, int]:
    ids, values = per_query
    ids = [str(q) for q in ids]
    if len(set(ids)) != len(ids):
        raise ValueError(f"per-query query ids are not unique: {first_duplicate(ids)[0]!r} appears twice")
    bad = [q for q in ids if _bad_field(q)]
    if bad:
        raise ValueError(f"query id {bad[0]!r} is empty or contains a tab or newline")
    names = [str(n) for n in values]
    if any(_bad_field(n) or n == "query_id" for n in names):
        raise ValueError(f"bad measure name among {names}")
    cols = [np.asarray(values[n], dtype=np.float64) for n in values]
    for name, col in zip(names, cols):
        if col.shape != (len(ids),):
            raise ValueError(f"per-query {name}: {col.shape} values for {len(ids)} queries")
    rows = np.stack(cols, axis=1).tolist() if cols else [[] for _ in ids]
    lines = ["\t".join(["query_id", *names])]
    lines.extend("\t".join([q, *map(repr, row)]) for q, row in zip(ids, rows))
    return "\n".join(lines) + "\n", len(ids)


def _ranks_text(table) -> str:
    """The ranks table of a ``ranking.RankTable`` that carries its documents' ids."""
    ids = [str(d) for d in table.doc_id]
    bad = [d for d in ids if _bad_field(d)]
    if bad:
        raise ValueError(f"doc id {bad[0]!r} is empty or contains a tab or newline")
    langs = [""] * len(ids) if table.doc_lang is None else [str(l) for l in table.doc_lang]
    lines = ["\t".join(_RANKS_HEADER)]
    for t, d, lang, g, r in zip(table.qidx.tolist(), ids, langs, table.grade.tolist(), table.rank.tolist()):
        rank = str(int(r)) if np.isfinite(r) else "inf"
        lines.append("\t".join((table.query_ids[t], d, lang, repr(float(g)), rank)))
    return "\n".join(lines) + "\n"


def write_result(result: Result, per_query: PerQuery | tuple, path: str | os.PathLike, ranks=None) -> Result:
    """Write ``path`` (JSON) and its per-query table beside it, all atomically.

    ``per_query`` is ``(query_ids, {measure: vector})``; ``ranks`` (optional) a ``ranking.RankTable``
    with document ids, written as the ranks table (a stale one from an earlier write is removed when
    there is none). Returns the record as written (with ``per_query_file`` set).
    """
    path = Path(path)
    text, rows = _per_query_text(per_query)
    if rows != result.num_queries:
        raise ValueError(f"per-query table has {rows} rows but the result says num_queries={result.num_queries}")
    result = dataclasses.replace(result, per_query_file=per_query_name(path))
    body = json.dumps(result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    ranks_path = path.parent / ranks_name(path)
    if ranks is not None and getattr(ranks, "doc_id", None) is not None:
        write_text_atomic(ranks_path, _ranks_text(ranks))
    else:
        ranks_path.unlink(missing_ok=True)
    write_text_atomic(path.parent / result.per_query_file, text)
    write_text_atomic(path, body)
    return result


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def read_result(path: str | os.PathLike) -> Result:
    """Load a result JSON; a malformed file raises MalformedDataError (a ValueError), one line."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataNotFoundError(f"{path}: no such result file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MalformedDataError(f"{path}: cannot read result file: {_one_line(exc)}") from None
    data = loads_json(raw, f"{path}: malformed result file")  # duplicate keys and deep nesting refused
    try:
        return Result.from_dict(data)  # not an object: "not a result record: a JSON array, expected ..."
    except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
        raise MalformedDataError(f"{path}: malformed result file: {_one_line(exc)}") from None


def read_per_query(path: str | os.PathLike) -> PerQuery:
    """Read a per-query table (or the one named by a result JSON at ``path``)."""

    path = Path(path)
    if path.suffix == ".json":
        result = read_result(path)
        name = result.per_query_file
        if not name:
            raise MalformedDataError(f"{path}: result names no per-query table")
        if Path(name).name != name or name.startswith(".") or "\\" in name:  # never a file elsewhere
            raise MalformedDataError(f"{path}: per_query_file {shown(name)} must be a file name beside the result "
                                     f"(a path, '..' or a hidden file is never read)")
        path = path.parent / name
    if not path.exists():
        raise DataNotFoundError(f"{path}: no such per-query table")
    if not path.is_file():
        raise MalformedDataError(f"{path}: cannot read per-query table: not a file")
    try:
        lines = [line.rstrip("\r\n") for _, line in numbered_lines(path)]
    except OSError as exc:
        raise MalformedDataError(f"{path}: cannot read per-query table: {_one_line(exc)}") from None

    def bad(why: str) -> MalformedDataError:
        return MalformedDataError(f"{path}: malformed per-query table: {why}")

    if not lines or lines[0].split("\t")[0] != "query_id":
        raise bad("the header must start with query_id")
    names = lines[0].split("\t")[1:]
    if any(not n for n in names):
        raise bad(f"empty or duplicate measure names in the header: column {names.index('') + 2} has no name")
    dup = first_duplicate(names)
    if dup is not None:
        raise bad(f"empty or duplicate measure names in the header: {dup[0]!r} in columns {dup[1] + 2} "
                  f"and {dup[2] + 2}")
    ids, cells = [], []
    for lineno, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != len(names) + 1:
            raise bad(f"line {lineno} has {len(parts)} fields, the header {len(names) + 1}")
        ids.append(check_id(parts[0], f"{path}:{lineno}", "query id"))
        cells.append(parts[1:])
    dup = first_duplicate(ids)
    if dup is not None:
        raise bad(f"duplicate query ids: {dup[0]!r} on lines {dup[1] + 2} and {dup[2] + 2}")
    try:
        matrix = np.array(cells, dtype=np.float64).reshape(len(ids), len(names))
    except ValueError as exc:
        raise bad(f"a value is not a number ({_one_line(exc)})") from None
    return PerQuery(tuple(ids), {n: matrix[:, j].copy() for j, n in enumerate(names)})


def read_ranks(path: str | os.PathLike) -> dict[str, tuple[RankedDoc, ...]] | None:
    """The ranks table beside the result JSON ``path`` (or the table at ``path``): ``{query id:
    (RankedDoc, …) best rank first}``; None when a result has none (written before ranks tables)."""

    path = Path(path)
    if path.suffix == ".json":
        path = path.parent / ranks_name(path)
        if not path.exists():
            return None
    if not path.is_file():
        raise DataNotFoundError(f"{path}: no such ranks table")

    def bad(why: str) -> MalformedDataError:
        return MalformedDataError(f"{path}: malformed ranks table: {why}")

    out: dict[str, list[RankedDoc]] = {}
    try:
        for lineno, line in numbered_lines(path):
            parts = line.rstrip("\r\n").split("\t")
            if lineno == 1:
                if tuple(parts) != _RANKS_HEADER:
                    raise bad(f"the header must be {' '.join(_RANKS_HEADER)}")
                continue
            if len(parts) != len(_RANKS_HEADER):
                raise bad(f"line {lineno} has {len(parts)} fields, expected {len(_RANKS_HEADER)}")
            qid = check_id(parts[0], f"{path}:{lineno}", "query id")
            doc = check_id(parts[1], f"{path}:{lineno}", "doc id")
            try:
                grade, rank = float(parts[3]), float(parts[4])
            except ValueError:
                raise bad(f"line {lineno}: grade and rank must be numbers") from None
            if not (grade > 0 and rank >= 1):
                raise bad(f"line {lineno}: grade must be > 0 and rank >= 1")
            out.setdefault(qid, []).append(RankedDoc(doc, parts[2], grade, rank))
    except OSError as exc:
        raise MalformedDataError(f"{path}: cannot read ranks table: {_one_line(exc)}") from None
    return {q: tuple(sorted(docs, key=lambda d: (d.rank, d.doc_id))) for q, docs in out.items()}


def result_path(output_dir: str | os.PathLike, system, task: str | None = None, scenario: str | None = None,
                pool_mode: str | None = None, doc_langs: Sequence[str] | None = None, query_lang: str | None = None,
                subset: str = "") -> Path:
    """``<out>/<system slug>/<task>[/<subset>]/<scenario>/<pool_mode>/<L1>-<L2>.q-<Lq>.json``.

    ``system`` is an ``identity.SystemKey`` (its ``slug``) or a folder name; the pool is given by its
    fields, or ``task`` is an ``identity.PoolKey``. Names built from long ids, specs or many
    languages are shortened with a hash (``identity.fit_name``); an output folder whose own name is
    over the file system's limit is refused here, before any work.
    """

    folder = system.slug if isinstance(system, SystemKey) else slug(system)
    pool = task if isinstance(task, PoolKey) else PoolKey(task, subset, scenario, pool_mode, doc_langs, query_lang)
    try:
        check_path_fits(output_dir, "output folder (--output)")
    except ValueError as exc:
        raise ClirbenchError(str(exc)) from None
    return Path(output_dir, folder, *pool.path_parts())
