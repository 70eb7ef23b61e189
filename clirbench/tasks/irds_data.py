"""``irds:<dataset id>``: an `ir_datasets <https://ir-datasets.com>`_ collection as a task.

Over 500 lines because ir_datasets' API has one reader per record kind (docs, queries, qrels,
languages), each with its own checks, and they only make sense together.

Docs, queries, qrels and languages come from the ir_datasets API (``docs_iter``, ``queries_iter``,
``qrels_iter``, ``docs_lang``, ``queries_lang``); downloading, verifying and locating the files is
ir_datasets' business (``$IR_DATASETS_HOME``, default ``~/.ir_datasets``; files already placed where
it expects them are read as they are, which is its way of working offline).

- ``irds:<id>`` (e.g. ``irds:neuclir/1/zh/trec-2022``, ``irds:miracl/sw/dev``): a ``retrieval``
  task, one pool per query language over all documents (SameLangFirst when the documents mix
  languages), as for ``beir:``. A document's text is ``title + " " + text`` when its record has a
  ``title`` (BEIR's convention), else its ``text``, else ir_datasets' ``default_text()``. A query's
  text is its ``text`` field when the record has one (MS MARCO, mMARCO, MIRACL), else its ``title``
  (TREC topics: NeuCLIR, HC4); ``--task-option query_field=description`` picks any other field.
  Languages are ``docs_lang()`` / ``queries_lang()``, else the records' own ``lang`` fields (a
  mixed collection), else ``und``. NeuCLIR / HC4 topics declare none: their original fields are
  English, their ``ht_*`` / ``mt_*`` fields (human / machine translations) in the record's
  ``translation_lang``. Judgements with grade > 0 are the relevant documents (a pair judged twice
  keeps its highest grade); queries with none are left out.
- ``irds:<prefix>{A,B}<suffix>`` (e.g. ``irds:mmarco/v2/{zh,fr}/dev``, or with whole ids
  ``irds:{msmarco-passage/dev,mmarco/v2/zh/dev}``): a *parallel* task over collections that share
  document and query ids (mMARCO, neuMARCO), each giving the documents of one language (its
  ``docs_lang``), with the four bilingual-pool scenarios of docs/scenarios.md. The queries (and qrels) of
  language L come from the dataset of L's documents when its queries are in L too, else from any
  dataset with queries in L: ``irds:{msmarco-passage/dev,neumarco/zh/dev}`` (neuMARCO: Chinese
  passages, English queries) gives the pools with English queries only. Document ids in a pool
  are ``<lang>/<doc id>``; a query is relevant to both language versions of every passage judged
  relevant for it; multi-1 excludes the query-language versions. Only pool mode ``unique`` exists.

The data record of a result is the dataset id(s), the ir_datasets version (``revision``: it pins the
MD5 that ir_datasets verifies each download against) and the SHA-256 of every file a dataset reads
from a local path (``ir_datasets.util.LocalDownload``, what ``ir_datasets.create_dataset`` uses);
files a user placed under ``$IR_DATASETS_HOME`` are not hashed (they may be gigabytes). When
ir_datasets cannot provide a file (absent, no network) the error is one line naming the paths where
it looks for the files. Datasets a user registers in Python (``ir_datasets.registry.register``) are
seen by ``clirbench.run(..., task="irds:<id>")`` in the same process.
"""
from __future__ import annotations

import dataclasses
import difflib
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from ..collection import ParallelCollection, Pool, Text
from ..formats.beir import UNDETERMINED, check_qrels, check_scenarios, no_options, pools_by_query_lang
from ..scenarios import RETRIEVAL, SCENARIOS, check_group, doc_id, parse_langs, parse_scenarios, pool_specs
from ..util.errors import DataNotFoundError, MalformedDataError, UnknownNameError
from ..util.optional import require
from ..util.strict import first_duplicate
from . import Task
from .card import TaskCard, parse_card
from .hub import sha256_file
from .loader import BaseLoader

__all__ = ["make_task", "pools", "load", "parse_ids", "bilingual_pools", "Side"]

_BRACE = re.compile(r"^([^{}]*)\{([^{}]*)\}([^{}]*)$")
_OPTIONS = ("query_field",)
_ENTITIES = ("docs", "queries", "qrels")
_TRANSLATED = re.compile(r"^(?:([a-z]{2,3})_)?(?:ht|mt)_")  # ht_title, mt_description, fa_mt_title
_EXTRACTED_CC = "ir_datasets.formats.extracted_cc"


def _irds():
    return require("ir_datasets", purpose="task irds:")


def parse_ids(argument: str) -> list[str]:
    """The dataset ids of ``argument``: one id, or one per alternative of a single ``{A,B,…}`` group."""
    if "{" not in argument and "}" not in argument:
        if not argument.strip():
            raise UnknownNameError("irds: needs an ir_datasets id, e.g. irds:mmarco/v2/zh/dev")
        return [argument.strip()]
    match = _BRACE.match(argument)
    alternatives = [a.strip() for a in match.group(2).split(",")] if match else []
    if not match or len(alternatives) < 2 or not all(alternatives) or len(set(alternatives)) != len(alternatives):
        raise UnknownNameError(f"irds:{argument}: a parallel collection is written with one brace group of "
                               f"two or more different alternatives, e.g. irds:mmarco/v2/{{zh,fr}}/dev")
    return [f"{match.group(1)}{alt}{match.group(3)}" for alt in alternatives]


def _dataset(irds, dataset_id: str):
    """The registered dataset, with docs, queries and qrels; one-line errors otherwise."""
    try:
        dataset = irds.load(dataset_id)
    except KeyError:
        close = difflib.get_close_matches(dataset_id, list(irds.registry), n=3, cutoff=0.6)
        hint = f"; close: {', '.join(close)}" if close else "; see https://ir-datasets.com for the ids"
        raise UnknownNameError(f"unknown ir_datasets id {dataset_id!r}{hint}") from None
    missing = [e for e in _ENTITIES if not getattr(dataset, f"has_{e}")()]
    if missing:
        has = [e for e in ("docs", "queries", "qrels", "scoreddocs", "docpairs") if getattr(dataset, f"has_{e}")()]
        raise MalformedDataError(f"ir_datasets id {dataset_id!r} has no {' and no '.join(missing)} (it provides "
                                 f"{', '.join(has) or 'nothing'}); an irds: task needs docs, queries and qrels")
    return dataset


def _read(dataset_id: str, what: str, fn, dataset=None):
    """``fn()`` (reading through ir_datasets) with its failures as one line naming the files to place.

    ir_datasets' own log lines (download attempts, retries) are muted meanwhile, so that a failure
    ends in this one line; its download progress bars still show.
    """

    muted = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        return fn()
    except (OSError, RuntimeError) as exc:
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        missing = _missing_files(dataset) if dataset is not None else []
        where = (f"place {', '.join(missing[:3])}{' …' if len(missing) > 3 else ''}" if missing
                 else "place its files under $IR_DATASETS_HOME")
        raise DataNotFoundError(f"irds:{dataset_id}: ir_datasets could not provide its {what} ({reason}); "
                                f"without network, {where}") from None
    finally:
        logging.disable(muted)


def _missing_files(dataset) -> list[str]:
    """Paths ir_datasets would read ``dataset``'s files from that do not exist (local files, downloads)."""

    found: dict = {}
    for entity in _ENTITIES:
        _downloads(getattr(dataset, f"{entity}_handler")(), found)
    paths = [d._path for d in found.get("local", ())] + [d._cache_path for d in found.get("remote", ())
                                                           if d._cache_path]
    return sorted({str(p) for p in paths if p and not Path(p).exists()})


def _str(value) -> str:
    return value if isinstance(value, str) else ""


def doc_text(record) -> str:
    """``title + " " + text`` when the record has both, its ``text``, else ir_datasets' ``default_text()``."""
    fields = record._fields
    if "text" in fields:
        text, title = _str(record.text).strip(), _str(getattr(record, "title", "")).strip()
        return f"{title} {text}" if title else text
    if hasattr(record, "default_text"):
        return _str(record.default_text()).strip()
    raise MalformedDataError(f"documents of type {type(record).__name__} have no text field "
                             f"(fields: {', '.join(fields)})")


def query_field(cls, wanted: str | None, dataset_id: str) -> str:
    """The query field used as text: ``wanted``, else ``text``, else ``title``, else ``default_text``."""
    fields = tuple(getattr(cls, "_fields", ()))
    if wanted:
        if wanted not in fields[1:]:
            raise UnknownNameError(f"irds:{dataset_id}: queries have no field {wanted!r}; "
                                   f"query_field is one of {', '.join(fields[1:])}")
        return wanted
    for name in ("text", "title"):
        if name in fields:
            return name
    if hasattr(cls, "default_text"):
        return "default_text"
    raise MalformedDataError(f"irds:{dataset_id}: queries of type {cls.__name__} have no text or title field; "
                             f"choose one with --task-option query_field=<{'|'.join(fields[1:])}>")


def _record_lang(record, default: str) -> str:
    """A record's own ``lang`` field (tweets, mixed collections) when it has one, else ``default``."""
    return (_str(record.lang) if "lang" in record._fields else "") or default


def declared_lang(dataset, entity: str) -> str | None:
    """``docs_lang()`` / ``queries_lang()``; for NeuCLIR / HC4 topics (ir_datasets' ``extracted_cc``
    query types, which declare none) ``en``: their untranslated fields are the English originals."""
    declared = getattr(dataset, f"{entity}_lang")()
    if not declared and entity == "queries" and dataset.queries_cls().__module__ == _EXTRACTED_CC:
        return "en"
    return declared or None


def _field_lang(field: str, record) -> str:
    """The language of a translated topic field (``ht_title``: the record's ``translation_lang``;
    ``fa_mt_title``: ``fa``), or "" for an untranslated field."""
    match = _TRANSLATED.match(field)
    if not match:
        return ""
    return match.group(1) or _str(getattr(record, "translation_lang", ""))


def languages(dataset, entity: str, dataset_id: str) -> set[str]:
    """The languages of ``docs`` or ``queries``: the declared one, else the records' ``lang`` fields
    (a scan, as ``beir:`` scans its corpus), else ``und``; for queries also the languages of their
    translated fields (``fa_mt_title``) and the documents' (``ht_title`` in ``translation_lang``)."""
    fields = getattr(getattr(dataset, f"{entity}_cls")(), "_fields", ())
    extra = set()
    if entity == "queries":
        found = [_TRANSLATED.match(f) for f in fields]
        extra = {m.group(1) for m in found if m and m.group(1)}
        if any(m and not m.group(1) for m in found) and "translation_lang" in fields and dataset.docs_lang():
            extra.add(dataset.docs_lang())
    declared = declared_lang(dataset, entity)
    if declared:
        return {declared} | extra
    if "lang" not in fields:
        return {UNDETERMINED} | extra
    records = getattr(dataset, f"{entity}_iter")
    return _read(dataset_id, entity, lambda: {_record_lang(r, UNDETERMINED) for r in records()}, dataset) | extra


def read_docs(dataset, dataset_id: str) -> list[Text]:
    lang = dataset.docs_lang() or UNDETERMINED

    def go():
        return [Text(id=str(d.doc_id), text=doc_text(d), lang=_record_lang(d, lang)) for d in dataset.docs_iter()]

    docs = _read(dataset_id, "docs", go, dataset)
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise MalformedDataError(f"irds:{dataset_id}: document id {d.id!r} appears twice")
        seen.add(d.id)
    return docs


def read_queries(dataset, dataset_id: str, wanted: str | None = None) -> list[Text]:
    field = query_field(dataset.queries_cls(), wanted, dataset_id)
    lang = declared_lang(dataset, "queries") or UNDETERMINED

    def go():
        out = []
        for q in dataset.queries_iter():
            text = q.default_text() if field == "default_text" else getattr(q, field)
            if not isinstance(text, str) or not text.strip():
                raise MalformedDataError(f"irds:{dataset_id}: query {q.query_id!r} has no {field} text")
            out.append(Text(id=str(q.query_id), text=text.strip(), lang=_field_lang(field, q) or _record_lang(q, lang),
                            meta=MappingProxyType({"field": field})))
        return out

    queries = _read(dataset_id, "queries", go, dataset)
    dup = first_duplicate(q.id for q in queries)
    if dup is not None:
        raise MalformedDataError(f"irds:{dataset_id}: query id {dup[0]!r} appears twice (queries {dup[1] + 1} "
                                 f"and {dup[2] + 1})")
    return queries


def read_qrels(dataset, dataset_id: str) -> dict[str, dict[str, int]]:
    """``{query id: {doc id: grade}}`` with grade > 0 only; a pair judged twice keeps its highest grade."""
    def go():
        qrels: dict[str, dict[str, int]] = {}
        for qrel in dataset.qrels_iter():
            grade = int(qrel.relevance)
            if grade > 0:
                judged = qrels.setdefault(str(qrel.query_id), {})
                judged[str(qrel.doc_id)] = max(grade, judged.get(str(qrel.doc_id), grade))
        return qrels

    return _read(dataset_id, "qrels", go, dataset)


def _downloads(obj, found: dict, depth: int = 0, seen: set | None = None) -> None:
    """Collect the ``LocalDownload`` / ``Download`` objects an ir_datasets handler reads from."""
    import ir_datasets.util as util

    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 6:
        return
    seen.add(id(obj))
    if isinstance(obj, util.LocalDownload):
        found.setdefault("local", []).append(obj)
    elif isinstance(obj, util.Download):
        found.setdefault("remote", []).append(obj)
    elif isinstance(obj, (list, tuple)) and len(obj) <= 64 and not hasattr(obj, "_fields"):  # not data records
        for item in obj:
            _downloads(item, found, depth + 1, seen)
    elif type(obj).__module__.startswith("ir_datasets") and hasattr(obj, "__dict__"):
        for value in vars(obj).values():
            _downloads(value, found, depth + 1, seen)


def source(irds, dataset_ids: Sequence[str], datasets: Sequence) -> dict:
    """The data record: dataset ids, ir_datasets version (which pins the MD5 of every download it
    verifies) and the SHA-256 of the local files (``LocalDownload``) the datasets read."""

    found: dict = {}
    for dataset in datasets:
        for entity in _ENTITIES:
            _downloads(getattr(dataset, f"{entity}_handler")(), found)
    paths = {Path(d.path()) for d in found.get("local", ())}
    files = {str(p): sha256_file(p) for p in sorted(paths) if p.is_file()}  # a folder is not hashed
    out = {"origin": "ir_datasets:" + ",".join(dataset_ids), "revision": f"ir_datasets=={irds.__version__}",
           "dataset_ids": list(dataset_ids), "ir_datasets_version": irds.__version__}
    if files:
        out["files_sha256"] = files
    return out


def _card(argument: str, data: Mapping) -> TaskCard:
    return parse_card(data, f"irds:{argument}")


def make_task(argument: str) -> Task:
    """The task ``irds:<argument>``: a retrieval task for one id, a parallel one for a brace group."""
    irds = _irds()
    ids = parse_ids(argument)
    datasets = [_dataset(irds, i) for i in ids]
    common = {"id": f"irds:{argument}", "license": "see the dataset's page on ir-datasets.com",
              "citation": "see the dataset's page on ir-datasets.com"}
    if len(ids) == 1:
        ds = datasets[0]
        doc_langs = languages(ds, "docs", ids[0])
        langs = sorted(doc_langs | languages(ds, "queries", ids[0]))
        main = ["nDCG@10", "R@100", "AP@1000"] + (["SameLangFirst"] if len(doc_langs) > 1 else [])
        card = _card(argument, {**common, "name": f"ir_datasets {ids[0]}", "kind": "retrieval",
                                "description": f"The ir_datasets collection {ids[0]} (docs, queries, qrels).",
                                "source": {"ir_datasets": ids[0]}, "languages": langs,
                                "scenarios": [RETRIEVAL], "main_measures": {RETRIEVAL: main}})
        return Task(card, LOADER)
    doc_ids: dict[str, str] = {}  # language -> the dataset of its documents
    for dataset_id, ds in zip(ids, datasets):
        dl = ds.docs_lang()
        if not dl:
            raise MalformedDataError(f"irds:{argument}: {dataset_id} declares no document language; each dataset "
                                     f"of a parallel collection holds the documents of one language")
        if dl in doc_ids:
            raise MalformedDataError(f"irds:{argument}: two datasets are in {dl}; a parallel collection needs one "
                                     f"dataset per language")
        doc_ids[dl] = dataset_id
    query_ids: dict[str, str] = {}  # language -> the dataset of its queries (and their qrels)
    for dataset_id, ds in zip(ids, datasets):
        ql = declared_lang(ds, "queries")
        if ql in doc_ids and (ql not in query_ids or doc_ids[ql] == dataset_id):
            query_ids[ql] = dataset_id  # the dataset whose documents are in that language comes first
    if not query_ids:
        qls = sorted({declared_lang(ds, "queries") or UNDETERMINED for ds in datasets})
        raise MalformedDataError(f"irds:{argument}: the queries are in {', '.join(qls)}, none of the document "
                                 f"languages ({', '.join(doc_ids)}); a bilingual pool's queries are in one of them")
    langs = list(doc_ids)
    card = _card(argument, {
        **common, "name": f"ir_datasets {argument}", "kind": "parallel",
        "description": f"Bilingual pools over {', '.join(ids)} (shared document and query ids).",
        "source": {"ir_datasets": doc_ids, "queries": query_ids}, "languages": langs,
        "scenarios": list(SCENARIOS),  # main measures: the scenarios' own (scenarios.MAIN_MEASURES)
        "pivot": "en" if "en" in query_ids else next(iter(query_ids)), "pool_modes": ["unique"]})
    return ParallelIrdsTask(card, LOADER)


def _no_data_dir(card: TaskCard, data_dir) -> None:
    if data_dir is not None:
        raise UnknownNameError(f"task {card.id} reads its files through ir_datasets ($IR_DATASETS_HOME); "
                               f"--data-dir is not used")


def pools(card: TaskCard, langs=None, scenarios="all", query_langs=None, data_dir=None, **options) -> list[Pool]:
    """One ``retrieval`` pool per query language (``langs`` is not used: the collection is fixed)."""
    check_scenarios(scenarios, card.id)
    _no_data_dir(card, data_dir)
    wanted = options.pop("query_field", None)
    no_options(options, card.id, _OPTIONS)
    irds = _irds()
    dataset_id = card.source["ir_datasets"]
    ds = _dataset(irds, dataset_id)
    docs = read_docs(ds, dataset_id)
    queries = read_queries(ds, dataset_id, wanted)
    qrels = read_qrels(ds, dataset_id)
    if not qrels:
        raise MalformedDataError(f"irds:{dataset_id}: its qrels hold no judgement with a grade above 0, "
                                 f"so no query can be evaluated")
    check_qrels(qrels, (q.id for q in queries), (d.id for d in docs), f"irds:{dataset_id} qrels")
    return pools_by_query_lang(card.id, docs, queries, qrels, source(irds, [dataset_id], [ds]), query_langs or None)


@dataclasses.dataclass(frozen=True)
class Side:
    """One language of a parallel collection: passages by id, queries, qrels (grade > 0)."""

    docs: Mapping[str, str]
    queries: tuple[Text, ...]
    qrels: Mapping[str, Mapping[str, int]]


def bilingual_pools(task: str, sides: Mapping[str, Side], pairs, scenarios: Sequence[str] = SCENARIOS,
                    query_langs: Sequence[str] | None = None, source: Mapping | None = None) -> list[Pool]:
    """The pools of docs/scenarios.md over collections with shared ids; several relevant passages per query allowed.

    ``pairs`` are language groups (``scenarios.parse_langs``): pairs, or k >= 3 languages. Query q
    in Lq (judged by Lq's qrels: passages P, grades g) against group G: multi — docs of every
    language of G, relevant L/p for every L in G and p in P; multi-1 — the same docs, relevant L/p
    for L ≠ Lq, excluded Lq/p; mono-same — docs of Lq, relevant Lq/p; mono-cross — one pool per
    other language Lo, docs of Lo, relevant Lo/p. Only queries with a relevant passage are kept; a
    language without queries (neuMARCO's translated passages come with English queries only) is a
    query language of no pool. Mono pools shared by groups appear once.
    """

    out: dict[str, Pool] = {}
    texts = {lang: tuple(Text(doc_id(lang, p), text, lang, p) for p, text in side.docs.items())
             for lang, side in sides.items()}  # made once, shared by every pool
    for group in map(tuple, pairs):
        check_group(group, scenarios)
        for scenario in scenarios:
            for lq in group:
                if (query_langs is not None and lq not in query_langs) or not sides[lq].queries:
                    continue  # not asked for, or no queries in that language (neuMARCO: English only)
                side = sides[lq]
                queries = tuple(q for q in side.queries if side.qrels.get(q.id))
                for lo in pool_specs(group, scenario, lq):
                    others = tuple(l for l in group if l != lq)
                    doc_langs, rel_langs = {"multi": (group, group), "multi-1": (group, others),
                                            "mono-same": ((lq,), (lq,)), "mono-cross": ((lo,), (lo,))}[scenario]
                    qrels, exclusions = {}, {}
                    for q in queries:
                        judged = side.qrels[q.id]
                        qrels[q.id] = {doc_id(lang, p): g for lang in rel_langs for p, g in judged.items()}
                        if scenario == "multi-1":
                            exclusions[q.id] = frozenset(doc_id(lq, p) for p in judged)
                    docs = tuple(d for lang in doc_langs for d in texts[lang])
                    pool = Pool(task=task, scenario=scenario, pool_mode="unique", doc_langs=doc_langs, query_lang=lq,
                                docs=docs, queries=queries, qrels=MappingProxyType(qrels),
                                exclusions=MappingProxyType(exclusions), source=dict(source or {}))
                    out.setdefault(pool.name, pool)
    return list(out.values())


def _sides(card: TaskCard, languages: Sequence[str], wanted: str | None) -> tuple[dict[str, Side], dict]:
    """Each language's passages, and its queries and qrels where a dataset has queries in it."""
    irds = _irds()
    doc_ids, query_ids = card.source["ir_datasets"], card.source["queries"]
    names = {doc_ids[l] for l in languages} | {query_ids[l] for l in languages if l in query_ids}
    datasets = {i: _dataset(irds, i) for i in sorted(names)}
    sides = {}
    for lang in languages:
        docs = {d.id: d.text for d in read_docs(datasets[doc_ids[lang]], doc_ids[lang])}
        queries, qrels = (), {}
        if lang in query_ids:
            ds = datasets[query_ids[lang]]
            queries = tuple(read_queries(ds, query_ids[lang], wanted))
            qrels = read_qrels(ds, query_ids[lang])
            check_qrels(qrels, (q.id for q in queries), docs, f"irds:{query_ids[lang]} qrels (documents of "
                                                              f"{doc_ids[lang]})")
        sides[lang] = Side(docs=docs, queries=queries, qrels=qrels)
    for lang, side in sides.items():  # shared ids: every judged passage exists in every language
        for other, other_side in sides.items():
            missing = next((p for judged in side.qrels.values() for p in judged if p not in other_side.docs), None)
            if missing is not None:
                raise MalformedDataError(f"irds:{query_ids[lang]} judges passage {missing!r}, which {doc_ids[other]} "
                                         f"lacks; a parallel collection needs shared document ids")
    return sides, source(irds, list(datasets), list(datasets.values()))


def load(card: TaskCard, languages: Sequence[str], data_dir=None, **options) -> ParallelCollection:
    """The parallel collection (for gold translation and comparisons with ``scenarios.build_pools``).

    A :class:`ParallelCollection` holds one gold passage per question, so a collection with a query
    judged relevant to several passages is refused here (its pools come from :func:`bilingual_pools`).
    """
    _no_data_dir(card, data_dir)
    sides, src = _sides(card, languages, options.pop("query_field", None))
    no_options(options, card.id, _OPTIONS)
    questions = {}
    for lang, side in sides.items():
        qs = []
        for q in side.queries:
            judged = side.qrels.get(q.id) or {}
            if len(judged) > 1:
                raise MalformedDataError(f"task {card.id}: query {q.id!r} has {len(judged)} relevant passages; "
                                         f"a ParallelCollection holds one (use its pools)")
            if judged:
                qs.append(dataclasses.replace(q, item=next(iter(judged))))
        questions[lang] = tuple(qs)
    return ParallelCollection(task=card.id, languages=tuple(languages),
                              passages={lang: dict(side.docs) for lang, side in sides.items()},
                              questions=questions, source=src)


class ParallelIrdsTask(Task):
    """A parallel ``irds:`` task: its pools allow several relevant passages per query."""

    def pools(self, langs=None, scenarios="all", query_langs=None, pool_mode="unique", data_dir=None,
              **options) -> list[Pool]:
        if pool_mode != "unique":
            raise UnknownNameError(f"task {self.id} has no pool mode {pool_mode!r}; available: unique")
        _no_data_dir(self.card, data_dir)
        wanted = options.pop("query_field", None)
        no_options(options, self.id, _OPTIONS)
        if query_langs:
            self.check_languages(query_langs)
            without = [l for l in query_langs if l not in self.card.source["queries"]]
            if without:
                raise UnknownNameError(f"task {self.id} has no queries in {', '.join(without)}; queries: "
                                       f"{', '.join(self.card.source['queries'])}")
        pairs = parse_langs(langs or f"{self.card.pivot}+all", self.card.languages)
        asked = [p for p in pairs if not set(p) & set(self.card.source["queries"])]
        if asked:
            what = "pair" if len(asked[0]) == 2 else "group"
            raise UnknownNameError(f"task {self.id} has queries in {', '.join(self.card.source['queries'])} only; "
                                   f"the {what} {','.join(asked[0])} has none")
        sides, src = _sides(self.card, sorted({l for pair in pairs for l in pair}), wanted)
        return bilingual_pools(self.id, sides, pairs, parse_scenarios(scenarios), query_langs, src)


class IrdsLoader(BaseLoader):
    """``irds:``: one collection's pools (retrieval), or the parallel collection of a brace group."""

    pools = staticmethod(pools)
    load = staticmethod(load)


LOADER = IrdsLoader()
