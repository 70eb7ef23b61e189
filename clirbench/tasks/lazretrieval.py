"""LazRetrieval: e-commerce retrieval in seven locales, one pool per locale, nDCG@10 and its average.

Local files only (the data set is not published). Per split, in ``<dir>/lazretrieval/<split>/``
(as other tasks, ``<dir>`` is ``--data-dir`` or ``$CLIRBENCH_DATA_DIR``), ``<dir>/<split>/`` or
directly in ``<dir>``::

    query.json        ID, nation, text
    item.json         nation, item_id, text
    pairs_info.json   nation, query_id, query, item_id, item, rscore

Each file may be a JSON array of records (what the ``.json`` name says) or JSON Lines (one record
per line); both are read. ``rscore`` is the graded relevance (an integer; 0 = judged non-relevant).
Locales map to languages BD bn, ID id, MY ms, PK ur, TH th, PH tl, VN vi; ``langs`` picks locales
by language or locale code. Option ``split`` (default ``test``).
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Iterator, Mapping

from ..collection import Pool, Text
from ..formats.beir import check_scenarios, no_options, parse_lang_list, split_option
from ..formats.jsonl import json_objects
from ..util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from ..util.strict import MAX_GRADE, check_id, loads_json
from .card import TaskCard
from .hub import is_file, sha256_file
from .loader import BaseLoader

__all__ = ["pools", "locate", "read_records", "summary_table", "LOCALES", "FILES"]

LOCALES = {"BD": "bn", "ID": "id", "MY": "ms", "PK": "ur", "TH": "th", "PH": "tl", "VN": "vi"}
FILES = ("query.json", "item.json", "pairs_info.json")
_ASCII_GRADE = re.compile(r"[+-]?[0-9]+(\.0*)?")
_FIELDS = {"query.json": ("ID", "nation", "text"), "item.json": ("nation", "item_id", "text"),
           "pairs_info.json": ("nation", "query_id", "item_id", "rscore")}


def _folder(data_dir, split: str) -> Path | None:
    env = os.environ.get("CLIRBENCH_DATA_DIR")
    if data_dir is not None:
        roots = [Path(data_dir) / "lazretrieval", Path(data_dir)]
    else:
        roots = [Path(env) / "lazretrieval"] if env else []
    for root in roots:
        for folder in (root / split, root):
            if all(is_file(folder / name) for name in FILES):
                return folder
    return None


def _missing(data_dir, split: str) -> DataNotFoundError:
    where = (f"{Path(data_dir) / 'lazretrieval' / split}/ (or {Path(data_dir) / split}/)" if data_dir is not None
             else f"DIR/lazretrieval/{split}/ and pass --data-dir DIR (or set $CLIRBENCH_DATA_DIR=DIR)")
    return DataNotFoundError(f"lazretrieval is not public: put {', '.join(FILES)} (split {split}) in {where}")


def locate(card: TaskCard, data_dir=None) -> str:
    folder = _folder(data_dir, "test")
    return str(folder) if folder is not None else f"not found ({_missing(data_dir, 'test')})"


def read_records(path: str | os.PathLike) -> Iterator[tuple[str, dict]]:
    """``(where, record)`` from a JSON array file or a JSON Lines file; ``where`` is ``file:line`` or ``file[i]``."""
    path = Path(path)
    with open(path, encoding="utf-8-sig") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith("["):
        data = loads_json(path.read_text(encoding="utf-8-sig"), str(path))
        for i, obj in enumerate(data):
            yield f"{path}[{i}]", obj
        return
    for n, obj in json_objects(path):
        yield f"{path}:{n}", obj


def _rows(path: Path) -> Iterator[tuple[str, dict]]:
    for where, obj in read_records(path):
        if not isinstance(obj, dict):
            raise MalformedDataError(f"{where}: expected a JSON object")
        missing = [f for f in _FIELDS[path.name] if obj.get(f) is None]
        if missing:
            raise MalformedDataError(f"{where}: missing field(s) {', '.join(missing)}")
        if obj["nation"] not in LOCALES:
            raise MalformedDataError(f"{where}: unknown nation {obj['nation']!r} (expected {', '.join(LOCALES)})")
        yield where, obj


def _grade(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise MalformedDataError(f"{where}: rscore must be an integer grade, got {value!r}")
    if isinstance(value, str) and not _ASCII_GRADE.fullmatch(value.strip()):
        raise MalformedDataError(f"{where}: rscore must be an integer grade (ASCII digits), got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number != int(number):
        raise MalformedDataError(f"{where}: rscore must be an integer grade, got {value!r}")
    if abs(number) > MAX_GRADE:
        raise MalformedDataError(f"{where}: rscore {str(value)[:20]!r} is out of range "
                                 f"[{-MAX_GRADE:,}, {MAX_GRADE:,}]")
    return int(number)


def _select(langs) -> list[str]:
    wanted = parse_lang_list(langs)
    if wanted is None:
        return list(LOCALES)
    by_lang = {lang: loc for loc, lang in LOCALES.items()}
    out = []
    for code in wanted:
        loc = code.upper() if code.upper() in LOCALES else by_lang.get(code)
        if loc is None:
            raise UnknownNameError(f"task lazretrieval: unknown locale or language {code!r}; available: "
                                   + ", ".join(f"{l} ({g})" for l, g in LOCALES.items()))
        out.append(loc)
    return out


def pools(card: TaskCard, langs=None, scenarios="all", query_langs=None, data_dir=None, **options) -> list[Pool]:
    """One pool per locale (subset = locale code): its items, its judged queries, graded qrels."""
    check_scenarios(scenarios, card.id)
    options = dict(options)
    split = split_option(options, card.id)
    no_options(options, card.id, ("split",))
    locales = [l for l in _select(langs) if not query_langs or LOCALES[l] in query_langs]
    folder = _folder(data_dir, split)
    if folder is None:
        raise _missing(data_dir, split)
    queries: dict[str, dict[str, Text]] = {l: {} for l in LOCALES}
    items: dict[str, dict[str, Text]] = {l: {} for l in LOCALES}
    for where, r in _rows(folder / "query.json"):
        qid = check_id(str(r["ID"]), where, "query ID")
        if not str(r["text"]).strip():
            raise MalformedDataError(f"{where}: query {qid!r} has no text")
        if qid in queries[r["nation"]]:
            raise MalformedDataError(f"{where}: duplicate query ID {qid!r} in {r['nation']}")
        queries[r["nation"]][qid] = Text(qid, str(r["text"]).strip(), LOCALES[r["nation"]])
    for where, r in _rows(folder / "item.json"):
        iid = check_id(str(r["item_id"]), where, "item_id")
        if iid in items[r["nation"]]:
            raise MalformedDataError(f"{where}: duplicate item_id {iid!r} in {r['nation']}")
        items[r["nation"]][iid] = Text(iid, str(r["text"]).strip(), LOCALES[r["nation"]])
    qrels: dict[str, dict[str, dict[str, int]]] = {l: {} for l in LOCALES}
    for where, r in _rows(folder / "pairs_info.json"):
        nation, qid, iid = r["nation"], str(r["query_id"]), str(r["item_id"])
        if qid not in queries[nation]:
            raise MalformedDataError(f"{where}: query_id {qid!r} is not in query.json for {nation}")
        if iid not in items[nation]:
            raise MalformedDataError(f"{where}: item_id {iid!r} is not in item.json for {nation}")
        grade = _grade(r["rscore"], where)
        judged = qrels[nation].setdefault(qid, {})
        if judged.get(iid, grade) != grade:
            raise MalformedDataError(f"{where}: ({qid}, {iid}) judged twice with different rscore")
        judged[iid] = grade
    hashes = {f"{split}/{name}": sha256_file(folder / name) for name in FILES}
    counts = {loc: {"queries": len(qrels[loc]), "items": len(items[loc]),
                    "pairs": sum(len(v) for v in qrels[loc].values())} for loc in LOCALES}
    source = {"origin": str(folder), "revision": None, "files_sha256": hashes, "split": split, "counts": counts}
    out = []
    for loc in locales:
        lang = LOCALES[loc]
        judged_queries = tuple(q for qid, q in queries[loc].items() if qid in qrels[loc])
        if not judged_queries:
            continue
        out.append(Pool(task=card.id, scenario="retrieval", pool_mode="unique", doc_langs=(lang,), query_lang=lang,
                        docs=tuple(items[loc].values()), queries=judged_queries,
                        qrels=MappingProxyType(qrels[loc]), source=source, subset=loc))
    return out


def summary_table(records: Iterable[Mapping], measure: str = "nDCG@10") -> str:
    """Per-locale ``measure`` and their unweighted average over the locales present; empty if none."""
    values = {}
    for r in records:
        if r.get("task", {}).get("id") == "lazretrieval":
            v = (r.get("measures", {}).get(measure) or {}).get("value")
            if v is not None:
                values[r.get("subset", "")] = v
    if not values:
        return ""
    order = [l for l in LOCALES if l in values] + sorted(set(values) - set(LOCALES))
    cells = [f"{l} {values[l]:.4f}" for l in order]
    mean = sum(values.values()) / len(values)
    return f"lazretrieval {measure}: " + "  ".join(cells) + f"  | average over {len(values)} locales {mean:.4f}"


class LazRetrievalLoader(BaseLoader):
    """LazRetrieval: one pool per locale."""

    pools = staticmethod(pools)
    locate = staticmethod(locate)
    summary_table = staticmethod(summary_table)


LOADER = LazRetrievalLoader()
