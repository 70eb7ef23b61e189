"""Document-language maps (``clirbench evaluate --doc-langs``): each document's language, for the
language exposure measures on a run.

Two forms, plain or gzip: ``docid lang`` lines (fields split at ASCII blanks as in TREC files;
blank lines and lines whose first field starts with ``#`` skipped; exactly two fields), or a BEIR
corpus (a folder holding ``corpus.jsonl`` or ``corpus.jsonl.gz``, or a file named ``*.jsonl`` /
``*.jsonl.gz``) whose every document has ``_id`` and ``lang`` (other fields ignored). Languages are
written in BCP-47 case (``ZH`` -> ``zh``). A document listed twice with one language is read once;
with two it is an error. Every problem is one ``MalformedDataError`` line naming ``file:line``.
"""
from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Collection, Iterator, Mapping

from ..util.errors import DataNotFoundError, MalformedDataError
from ..util.strict import check_id, language_tag, loads_json, shown
from .jsonl import decode_lines
from .trec import BLANKS, open_input

__all__ = ["read_doc_langs", "check_covered", "doc_langs_source", "MAX_SHOWN"]

MAX_SHOWN = 5  # document ids an error lists
_BLANK_RUN = re.compile("[ \t\n\v\f\r]+")


def doc_langs_source(path: str | os.PathLike) -> tuple[Path, str]:
    """The file to read and its form: ``"beir"`` (a corpus folder or ``*.jsonl[.gz]``) or ``"pairs"``."""
    if os.fspath(path) == "-":
        raise MalformedDataError("--doc-langs -: give the document-language map as a file (standard input "
                                 "may carry the qrels or the run)")
    path = Path(path)
    if path.is_dir():
        for name in ("corpus.jsonl", "corpus.jsonl.gz"):
            if (path / name).is_file():
                return path / name, "beir"
        raise DataNotFoundError(f"{path}: a folder without corpus.jsonl (a BEIR corpus with a lang field)")
    if not path.exists():
        raise DataNotFoundError(f"{path}: no such file")
    return path, "beir" if path.name.endswith((".jsonl", ".jsonl.gz")) else "pairs"


def read_doc_langs(path: str | os.PathLike) -> dict[str, str]:
    """``{docid: lang}`` from a ``docid lang`` file or a BEIR corpus (module docstring)."""
    source, form = doc_langs_source(path)
    records = _beir_records(source) if form == "beir" else _pair_records(source)
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for lineno, doc, lang in records:
        if out.setdefault(doc, lang) != lang:
            raise MalformedDataError(f"{source}:{lineno}: document {shown(doc)} has language {lang}, "
                                     f"{out[doc]} on line {first[doc]}")
        first.setdefault(doc, lineno)
    if not out:
        raise MalformedDataError(f"{source}: no document in the document-language map")
    return out


def _decoded(source: Path) -> Iterator[tuple[int, str]]:
    try:
        with open_input(source) as handle:
            yield from decode_lines(handle, source)
    except (OSError, EOFError, zlib.error) as exc:
        raise MalformedDataError(f"{source}: cannot read ({exc})") from None


def _pair_records(source: Path) -> Iterator[tuple[int, str, str]]:
    for lineno, line in _decoded(source):
        stripped = line.strip(BLANKS)
        fields = _BLANK_RUN.split(stripped) if stripped else []  # ASCII blanks only, as the TREC reader
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 2:
            raise MalformedDataError(f"{source}:{lineno}: expected 2 fields 'docid lang', got {len(fields)}")
        where = f"{source}:{lineno}"
        yield lineno, check_id(fields[0], where, "docid"), language_tag(fields[1], where)


def _beir_records(source: Path) -> Iterator[tuple[int, str, str]]:
    for lineno, line in _decoded(source):
        if not line.strip():
            continue
        where = f"{source}:{lineno}"
        obj = loads_json(line, where)
        if not isinstance(obj, dict):
            raise MalformedDataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        doc, lang = obj.get("_id"), obj.get("lang")
        if isinstance(doc, bool) or not isinstance(doc, (str, int)):
            raise MalformedDataError(f"{where}: missing or non-string field '_id'")
        if lang is None:
            raise MalformedDataError(f"{where}: document {shown(str(doc))} has no 'lang' field "
                                     f"(--doc-langs reads each document's language from it)")
        yield lineno, check_id(str(doc), where, "_id"), language_tag(lang, f"{where}: lang")


def check_covered(doc_langs: Mapping[str, str], doc_ids: Collection[str], where: str, map_name: str,
                  what: str = "of the run") -> None:
    """One line when documents of ``doc_ids`` (``what``: a run's) are missing from the map: their
    count and the first :data:`MAX_SHOWN` of them in byte order."""
    missing = sorted(d for d in set(doc_ids) if d not in doc_langs)
    if missing:
        first = ", ".join(shown(d, 40) for d in missing[:MAX_SHOWN])
        more = ", ..." if len(missing) > MAX_SHOWN else ""
        raise MalformedDataError(f"{where}: {len(missing):,} document(s) {what} are not in the "
                                 f"document-language map {map_name}: {first}{more}")
