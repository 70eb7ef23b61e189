"""BEIR-format files and the helpers every ``retrieval``-kind task shares.

BEIR layout (one folder): ``corpus.jsonl`` (``_id``, ``title``, ``text``, optional ``lang``, any
other field kept as metadata), ``queries.jsonl`` (``_id``, ``text``, optional ``lang``) and
``qrels/<split>.tsv`` (header ``query-id<TAB>corpus-id<TAB>score``), and clirbench's optional
``excluded/<split>.tsv`` (header ``query-id<TAB>corpus-id``: documents removed from that query's
ranking, as ``multi-1`` removes the query's own-language gold). Files are read line by line;
every error is one line naming ``file:line``. A document's text is ``title + " " + text`` (the
convention of BEIR's and MTEB's dense evaluation) when it has a title.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Iterator, Mapping, Sequence

from ..collection import Pool, Text
from ..scenarios import RETRIEVAL
from ..util.checks import MAX_COUNT
from ..util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from ..util.strict import MAX_GRADE, ascii_int, check_id, language_tag, shown
from .jsonl import json_objects, numbered_lines

__all__ = [
    "UNDETERMINED", "read_corpus", "read_queries", "read_qrels", "qrels_path", "read_exclusions",
    "exclusions_path", "check_scenarios",
    "parse_lang_list", "truncate_tokens", "local_dir", "check_qrels", "pools_by_query_lang",
    "parse_int_option", "split_option", "no_options",
]

UNDETERMINED = "und"  # BCP-47 tag for a record with no ``lang`` and no default
_QRELS_HEADER = ("query-id", "corpus-id", "score")
_EXCLUDED_HEADER = ("query-id", "corpus-id")
_SPLIT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _field(obj: dict, key: str, path: Path, lineno: int, required: bool = True, kinds=(str,)) -> object:
    if key not in obj or obj[key] is None:
        if required:
            raise MalformedDataError(f"{path}:{lineno}: missing field {key!r}")
        return None
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise MalformedDataError(f"{path}:{lineno}: field {key!r} must be {' or '.join(k.__name__ for k in kinds)}")
    return value


def _records(path: Path, fixed: Sequence[str], default_lang: str | None, role: str) -> Iterator[Text]:
    seen: dict[str, int] = {}  # id -> its line
    for lineno, obj in json_objects(path):
        rid = check_id(str(_field(obj, "_id", path, lineno, kinds=(str, int))), f"{path}:{lineno}", "_id")
        if rid in seen:
            raise MalformedDataError(f"{path}:{lineno}: duplicate _id {shown(rid)} (a {role} id first on line {seen[rid]})")
        seen[rid] = lineno
        text = _field(obj, "text", path, lineno)
        lang = _field(obj, "lang", path, lineno, required=False)
        lang = language_tag(lang, f"{path}:{lineno}") if lang else default_lang or UNDETERMINED
        meta = {k: v for k, v in obj.items() if k not in fixed}
        if role == "document":
            title = _field(obj, "title", path, lineno, required=False) or ""
            if title:
                meta["title"] = title
            text = f"{title.strip()} {text.strip()}" if title.strip() else text.strip()
        else:
            text = text.strip()
            if not text:
                raise MalformedDataError(f"{path}:{lineno}: query {rid!r} has no text")
        yield Text(id=rid, text=text, lang=lang, meta=MappingProxyType(meta) if meta else MappingProxyType({}))


def read_corpus(path: str | os.PathLike, default_lang: str | None = None) -> Iterator[Text]:
    """Documents of a BEIR ``corpus.jsonl``, streamed; extra fields go to ``Text.meta``."""
    return _records(Path(path), ("_id", "title", "text", "lang"), default_lang, "document")


def read_queries(path: str | os.PathLike, default_lang: str | None = None) -> Iterator[Text]:
    """Queries of a BEIR ``queries.jsonl``, streamed; extra fields go to ``Text.meta``."""
    return _records(Path(path), ("_id", "text", "lang"), default_lang, "query")


def qrels_path(folder: str | os.PathLike, split: str) -> Path:
    return Path(folder) / "qrels" / f"{split}.tsv"


def read_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """``{query id: {doc id: grade}}`` from a BEIR qrels TSV (header required, as BEIR skips it).

    A repeated (query, doc) pair with the same grade is read once; with another grade it is an error.
    """
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    lineno = 0
    for lineno, line in numbered_lines(path):
        parts = line.rstrip("\r\n").split("\t")
        if lineno == 1:
            if tuple(p.strip() for p in parts) != _QRELS_HEADER:
                raise MalformedDataError(
                    f"{path}:1: expected the header query-id<TAB>corpus-id<TAB>score, got {line.strip()[:60]!r}")
            continue
        if not line.strip():
            continue
        if len(parts) != 3:
            raise MalformedDataError(f"{path}:{lineno}: expected 3 tab-separated fields, got {len(parts)}")
        qid, did, score = (p.strip() for p in parts)
        if not qid or not did:
            raise MalformedDataError(f"{path}:{lineno}: empty query-id or corpus-id")
        check_id(qid, f"{path}:{lineno}", "query-id")
        check_id(did, f"{path}:{lineno}", "corpus-id")
        try:
            grade = ascii_int(score, -MAX_GRADE, MAX_GRADE)
        except ValueError as exc:
            if "not an ASCII integer" not in str(exc):
                raise MalformedDataError(f"{path}:{lineno}: score {exc}") from None
            raise MalformedDataError(f"{path}:{lineno}: score {score!r} is not an integer "
                                     f"(ASCII digits only)") from None
        judged = qrels.setdefault(qid, {})
        if judged.get(did, grade) != grade:
            raise MalformedDataError(f"{path}:{lineno}: ({qid}, {did}) judged twice with different scores")
        judged[did] = grade
    if lineno == 0:
        raise MalformedDataError(f"{path}: empty file (expected a header and judgements)")
    if not qrels:
        raise MalformedDataError(f"{path}: the qrels file has no judgement (only its header), "
                                 f"so no query can be evaluated")
    return qrels


def exclusions_path(folder: str | os.PathLike, split: str) -> Path:
    return Path(folder) / "excluded" / f"{split}.tsv"


def read_exclusions(path: str | os.PathLike) -> dict[str, frozenset[str]]:
    """``{query id: documents removed from its ranking}`` from an ``excluded/<split>.tsv`` (header
    ``query-id<TAB>corpus-id``, one pair a line)."""
    path = Path(path)
    out: dict[str, set[str]] = {}
    for lineno, line in numbered_lines(path):
        parts = tuple(p.strip() for p in line.rstrip("\r\n").split("\t"))
        if lineno == 1:
            if parts != _EXCLUDED_HEADER:
                raise MalformedDataError(f"{path}:1: expected the header query-id<TAB>corpus-id, got {line.strip()[:60]!r}")
            continue
        if not line.strip():
            continue
        if len(parts) != 2 or not all(parts):
            raise MalformedDataError(f"{path}:{lineno}: expected a query-id and a corpus-id, tab-separated")
        qid, did = (check_id(p, f"{path}:{lineno}", what) for p, what in zip(parts, _EXCLUDED_HEADER))
        out.setdefault(qid, set()).add(did)
    return {q: frozenset(ds) for q, ds in out.items()}


def check_qrels(qrels: Mapping[str, Mapping[str, object]], query_ids: Iterable[str], doc_ids: Iterable[str],
                where: str, what: str = "judged") -> None:
    """Every judged (or ``what``) query and document must exist; one line naming the first missing id."""
    queries, docs = set(query_ids), set(doc_ids)
    for qid, judged in qrels.items():
        if qid not in queries:
            raise MalformedDataError(f"{where}: {what} query {qid!r} is not among the queries")
        for did in judged:
            if did not in docs:
                raise MalformedDataError(f"{where}: {what} document {did!r} (query {qid!r}) is not in the corpus")


def pools_by_query_lang(task: str, docs: Sequence[Text], queries: Iterable[Text],
                        qrels: Mapping[str, Mapping[str, int]], source: Mapping[str, object],
                        query_langs: Sequence[str] | None = None, subset: str = "",
                        exclusions: Mapping[str, frozenset[str]] | None = None) -> list[Pool]:
    """One ``retrieval`` pool per query language: all documents, that language's judged queries
    (``exclusions[qid]``: documents removed from that query's ranking).

    ``doc_langs`` is the sorted set of document languages, so a mixed-language collection gets
    SameLangFirst (same-language relevant document ranked first) like the bilingual pools.
    """
    doc_langs = tuple(sorted({d.lang for d in docs}))
    exclusions = exclusions or {}
    by_lang: dict[str, list[Text]] = {}
    for q in queries:
        if qrels.get(q.id):
            by_lang.setdefault(q.lang, []).append(q)
    pools = []
    for lang in sorted(by_lang):
        if query_langs is not None and lang not in query_langs:
            continue
        qs = tuple(by_lang[lang])
        pools.append(Pool(task=task, scenario=RETRIEVAL, pool_mode="unique", doc_langs=doc_langs,
                          query_lang=lang, docs=tuple(docs), queries=qs,
                          qrels=MappingProxyType({q.id: qrels[q.id] for q in qs}), source=source, subset=subset,
                          exclusions={q.id: exclusions[q.id] for q in qs if q.id in exclusions}))
    return pools


def check_scenarios(scenarios: str | Sequence[str] | None, task: str) -> None:
    """A retrieval task has the one scenario ``retrieval`` (``all`` means it)."""
    names = scenarios.split(",") if isinstance(scenarios, str) else list(scenarios or ["all"])
    bad = [s for s in (n.strip() for n in names) if s not in ("all", RETRIEVAL, "")]
    if bad:
        raise UnknownNameError(f"task {task} has only the scenario {RETRIEVAL!r}; got {', '.join(bad)}")


def parse_lang_list(langs: str | Sequence[str] | None) -> list[str] | None:
    """``None``/``all``/empty -> None (everything); else the languages of ``en,fr``, ``en+fr`` or a list."""
    if langs is None:
        return None
    if isinstance(langs, str):
        langs = langs.replace("+", ",").split(",")
    out = [l.strip() for l in langs if l and l.strip()]
    return None if not out or out == ["all"] else out


def truncate_tokens(text: str, max_tokens: int | None) -> str:
    """The first ``max_tokens`` whitespace-separated tokens, joined by one space; unchanged if shorter."""
    if not max_tokens:
        return text
    tokens = text.split()
    return text if len(tokens) <= max_tokens else " ".join(tokens[:max_tokens])


def parse_int_option(options: dict, key: str, task: str) -> int | None:
    value = options.pop(key, None)
    if value is None or value == "":
        return None
    try:
        number = ascii_int(str(value).strip(), 1, MAX_COUNT)
    except ValueError:
        raise UnknownNameError(f"task {task}: option {key} must be a positive integer (at most {MAX_COUNT:,}), "
                               f"got {str(value)[:40]!r}") from None
    return number


def split_option(options: dict, task: str, default: str = "test") -> str:
    """The ``split`` task option: a plain name (``test``, ``dev``), never a path out of the data folder."""
    split = str(options.pop("split", default))
    if not _SPLIT.fullmatch(split) or ".." in split:
        raise UnknownNameError(f"task {task}: option split must be a name like test or dev, got {shown(split)} "
                               f"(letters, digits, '_', '.', '-': it names qrels/<split>.tsv, never a path "
                               f"out of the data folder)")
    return split


def no_options(options: Mapping[str, object], task: str, known: Sequence[str]) -> None:
    if options:
        raise UnknownNameError(f"task {task} takes no option(s) {', '.join(sorted(options))}; "
                               f"known: {', '.join(known) or 'none'}")


def local_dir(task: str, data_dir: str | os.PathLike | None, present, expected: str) -> Path | None:
    """``data_dir``, else ``$CLIRBENCH_DATA_DIR/<task>``, if ``present(folder)``; None when neither is set.

    A ``data_dir`` given but lacking the files raises DataNotFoundError naming ``expected``.
    """
    if data_dir is not None:
        folder = Path(data_dir)
        if present(folder):
            return folder
        raise DataNotFoundError(f"{task}: no data in {folder}; expected {expected}")
    env = os.environ.get("CLIRBENCH_DATA_DIR")
    if env and present(Path(env) / task):
        return Path(env) / task
    return None


