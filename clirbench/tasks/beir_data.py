"""``beir:<dir>``: bring your own BEIR-format collection (``corpus.jsonl``, ``queries.jsonl``, ``qrels/``).

Optional ``lang`` fields on documents and queries make it multilingual: one pool per query
language over all documents, with ``doc_langs`` the sorted set of document languages, so a
mixed-language corpus gets SameLangFirst. An optional ``excluded/<split>.tsv``
(``query-id<TAB>corpus-id``, what ``clirbench export`` writes for ``multi-1``) removes documents
from a query's ranking. Options (``--task-option``): ``split`` (default ``test``), ``lang`` (the
tag of records without ``lang``; default ``und``).
"""
from __future__ import annotations

from pathlib import Path

from ..formats.beir import (
    UNDETERMINED,
    check_qrels,
    check_scenarios,
    exclusions_path,
    no_options,
    pools_by_query_lang,
    qrels_path,
    read_corpus,
    read_exclusions,
    read_qrels,
    read_queries,
    split_option,
)
from ..formats.jsonl import numbered_lines
from ..scenarios import RETRIEVAL
from ..util.errors import DataNotFoundError, MalformedDataError
from ..util.strict import language_tag, loads_json
from . import Task
from .card import TaskCard, parse_card
from .hub import is_dir, is_file, sha256_file
from .loader import BaseLoader

_FILES = "corpus.jsonl, queries.jsonl and qrels/<split>.tsv"


def _langs_in(path: Path) -> set[str]:
    """Language tags a JSON Lines file declares (``und`` for records without one), in BCP-47 case;
    a cheap scan (a malformed line is reported with its line number when the pools are read)."""
    langs: set[str] = set()
    for lineno, line in numbered_lines(path):
        if not line.strip():
            continue
        lang = None
        if '"lang"' in line:
            try:
                lang = loads_json(line, str(path)).get("lang")
            except (MalformedDataError, AttributeError):
                pass
        langs.add(language_tag(lang, f"{path}:{lineno}") if isinstance(lang, str) and lang else UNDETERMINED)
    return langs


def make_task(argument: str) -> Task:
    """A retrieval task over the BEIR folder ``argument`` (id ``beir-<folder name>``)."""
    folder = Path(argument).expanduser()
    missing = [name for name in ("corpus.jsonl", "queries.jsonl") if not is_dir(folder) or not is_file(folder / name)]
    if not is_dir(folder) or missing or not is_dir(folder / "qrels"):
        raise DataNotFoundError(f"beir:{argument}: expected {_FILES} in {folder}")
    doc_langs = _langs_in(folder / "corpus.jsonl")
    query_langs = _langs_in(folder / "queries.jsonl")
    main = ["nDCG@10", "R@100", "AP@1000"] + (["SameLangFirst"] if len(doc_langs) > 1 else [])
    card = parse_card({
        "id": f"beir-{folder.resolve().name}",
        "name": f"BEIR folder {folder}",
        "description": f"A BEIR-format collection brought by the user from {folder}.",
        "kind": "retrieval",
        "source": {"local_dir": str(folder.resolve()), "format": "beir"},
        "languages": sorted(doc_langs | query_langs),
        "scenarios": [RETRIEVAL],
        "main_measures": {RETRIEVAL: main},
        "license": "unknown (the user's data)",
        "citation": "",
    }, f"beir:{argument}")
    return Task(card, LOADER)


def pools(card: TaskCard, langs=None, scenarios="all", query_langs=None, data_dir=None, **options):
    """One pool per query language; ``query_langs`` picks some (``langs`` is not used: the corpus is fixed)."""
    check_scenarios(scenarios, card.id)
    split = split_option(options, card.id)
    default_lang = options.pop("lang", None) or None
    if default_lang is not None:
        default_lang = language_tag(default_lang, f"{card.id}: task option lang")
    no_options(options, card.id, ("split", "lang"))
    folder = Path(data_dir) if data_dir is not None else Path(card.source["local_dir"])
    qpath = qrels_path(folder, split)
    if not is_file(qpath):
        available = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
        raise DataNotFoundError(f"{card.id}: no {qpath}; splits present: {', '.join(available) or 'none'}")
    qrels = read_qrels(qpath)
    docs = tuple(read_corpus(folder / "corpus.jsonl", default_lang))
    queries = tuple(read_queries(folder / "queries.jsonl", default_lang))
    check_qrels(qrels, (q.id for q in queries), (d.id for d in docs), str(qpath))
    files = {name: sha256_file(folder / name) for name in ("corpus.jsonl", "queries.jsonl")}
    files[f"qrels/{split}.tsv"] = sha256_file(qpath)
    excluded, epath = None, exclusions_path(folder, split)
    if is_file(epath):
        excluded = read_exclusions(epath)
        check_qrels(excluded, (q.id for q in queries), (d.id for d in docs), str(epath), "excluded")
        files[f"excluded/{split}.tsv"] = sha256_file(epath)
    source = {"origin": str(folder), "revision": None, "files_sha256": files, "split": split}
    return pools_by_query_lang(card.id, docs, queries, qrels, source, query_langs or None, exclusions=excluded)


class BeirDataLoader(BaseLoader):
    """beir:<dir>: the user's BEIR-format folder."""

    pools = staticmethod(pools)


LOADER = BeirDataLoader()
