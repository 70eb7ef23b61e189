"""Parallel-pool scenarios (docs/scenarios.md): pure functions from a parallel collection to pools of
two languages (bilingual) or of k >= 3 languages, and the one-language group of ``mono-same``."""
from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

from .collection import ParallelCollection, Pool, Text
from .util.errors import UnknownNameError
from .util.strict import first_duplicate

SCENARIOS = ("multi", "multi-1", "mono-same", "mono-cross")
ONE_LANGUAGE = ("mono-same",)  # the scenarios a group of one language has (the others compare languages)
RETRIEVAL = "retrieval"  # the one scenario of a non-parallel (BEIR-style) task: its own qrels
POOL_MODES = ("unique", "per-query")
# Main measures of the parallel scenarios (names; clirbench.measures parses them), declared only
# here; a card may override one where its task differs. The retrieval scenario has none: each
# retrieval task names its own (CLIRudit AP@1000 and R@100, Ko-En nDCG@10).
MAIN_MEASURES: dict[str, tuple[str, ...]] = {
    "multi": ("MaxR", "MaxR_norm", "MaxR_norm_of_mean", "Complete@10", "SameLangFirst"),
    "multi-1": ("nDCG@1", "RR"),
    "mono-same": ("nDCG@1", "RR"),
    "mono-cross": ("nDCG@1", "RR"),
}


def doc_id(lang: str, item: str, question_id: str | None = None) -> str:
    """``en/p017`` for a unique passage; ``en/p017/<question id>`` for a per-query copy."""
    return f"{lang}/{item}" if question_id is None else f"{lang}/{item}/{question_id}"


def _documents(collection: ParallelCollection, lang: str, pool_mode: str) -> list[Text]:
    passages = collection.passages[lang]
    if pool_mode == "unique":
        return [Text(doc_id(lang, item), text, lang, item) for item, text in passages.items()]
    return [Text(doc_id(lang, q.item, q.id), passages[q.item], lang, q.item)
            for q in collection.questions[lang]]


def _gold(lang: str, query: Text, pool_mode: str) -> str:
    return doc_id(lang, query.item, query.id if pool_mode == "per-query" else None)


def build_pool(collection: ParallelCollection, langs: Sequence[str], scenario: str,
               query_lang: str, pool_mode: str = "unique", doc_lang: str | None = None) -> Pool:
    """The pool of ``scenario`` for the languages ``langs`` (a pair (L1, L2), k >= 3 languages, or one
    language for ``mono-same``) and queries in ``query_lang``.

    ``mono-cross`` ranks one other language: ``doc_lang`` (default: the first of ``langs`` that is
    not ``query_lang``; with two languages, the other one).
    """
    langs = tuple(langs)
    if scenario not in SCENARIOS:
        raise UnknownNameError(f"unknown scenario {scenario!r}; available: {', '.join(SCENARIOS)}")
    if pool_mode not in POOL_MODES:
        raise UnknownNameError(f"unknown pool mode {pool_mode!r}; available: {', '.join(POOL_MODES)}")
    check_group(langs, (scenario,))
    if query_lang not in langs:
        raise UnknownNameError(f"query language {query_lang!r} is not among {','.join(langs)}")
    others = tuple(l for l in langs if l != query_lang)
    other = (others[0] if others else None) if doc_lang is None else doc_lang
    if scenario == "mono-cross" and other not in others:
        raise UnknownNameError(f"mono-cross document language {other!r} is not another language of {','.join(langs)}")
    doc_langs = {"multi": langs, "multi-1": langs, "mono-same": (query_lang,), "mono-cross": (other,)}[scenario]
    docs = tuple(d for lang in doc_langs for d in _documents(collection, lang, pool_mode))
    queries = collection.questions[query_lang]
    qrels, exclusions = {}, {}
    for q in queries:
        same = _gold(query_lang, q, pool_mode)
        if scenario == "multi":
            qrels[q.id] = {_gold(lang, q, pool_mode): 1 for lang in langs}
        elif scenario == "multi-1":
            qrels[q.id] = {_gold(lang, q, pool_mode): 1 for lang in others}
            exclusions[q.id] = frozenset((same,))
        elif scenario == "mono-same":
            qrels[q.id] = {same: 1}
        else:
            qrels[q.id] = {_gold(other, q, pool_mode): 1}
    return Pool(task=collection.task, scenario=scenario, pool_mode=pool_mode, doc_langs=doc_langs,
                query_lang=query_lang, docs=docs, queries=tuple(queries), qrels=qrels,
                exclusions=exclusions)


def check_group(langs: Sequence[str], scenarios: Sequence[str] = SCENARIOS) -> None:
    """A pool group's languages: all different, two or more unless every scenario asked is one a
    single language has (``mono-same``); the refusal says why the others need two."""
    if not langs or len(set(langs)) != len(langs):
        raise UnknownNameError(f"a pool needs different languages, got {','.join(langs)}")
    if len(langs) == 1:
        (lang,) = langs
        need = [s for s in scenarios if s not in ONE_LANGUAGE]
        if need:
            raise UnknownNameError(
                f"one language ({lang}) gives only the mono-same pool (queries and passages in {lang}); "
                f"{', '.join(need)} compare{'s' * (len(need) == 1)} languages (multi and multi-1 rank the passages "
                f"of two or more, mono-cross ranks another language's): pass --scenario mono-same, or two "
                f"languages such as {lang},zh")


def pool_specs(group: Sequence[str], scenario: str, query_lang: str) -> list[str | None]:
    """The ``doc_lang`` arguments of ``build_pool`` for one (group, scenario, query language):
    every other language for ``mono-cross`` (one pool each), else ``[None]`` (one pool)."""
    if scenario != "mono-cross":
        return [None]
    return [l for l in group if l != query_lang]


def build_pools(collection: ParallelCollection, groups: Iterable[Sequence[str]],
                scenarios: Sequence[str] = SCENARIOS, query_langs: Sequence[str] | None = None,
                pool_mode: str = "unique") -> list[Pool]:
    """Every distinct pool of a sweep; mono pools shared by several groups appear once.

    ``groups`` are language pairs or groups of k >= 3 languages (``parse_langs``); ``query_langs``
    restricts the query languages (default: every language of each group).
    """
    pools: dict[str, Pool] = {}
    for group in groups:
        for scenario in scenarios:
            for query_lang in group:
                if query_langs is not None and query_lang not in query_langs:
                    continue
                for doc_lang in pool_specs(group, scenario, query_lang):
                    pool = build_pool(collection, group, scenario, query_lang, pool_mode, doc_lang)
                    pool = dataclasses.replace(pool, source=collection.source)
                    pools.setdefault(pool.name, pool)
    return list(pools.values())


def parse_langs(spec: str | Sequence[str], available: Sequence[str]) -> list[tuple[str, ...]]:
    """The language groups of ``--langs``: ``en,zh`` (one pair), ``en+all`` (en paired with every
    other), ``en+de,zh`` (pairs), ``en,zh,ar`` (one pool group of three or more languages), ``all``
    (one group of every available language) or ``en`` (one language: ``mono-same`` only, see
    ``check_group``)."""
    if not isinstance(spec, str):
        spec = ",".join(spec)
    spec = spec.replace(" ", "")
    shown = repr(spec[:60]) + ("…" if len(spec) > 60 else "")  # a 30,000-character list is not echoed whole
    if spec == "all":
        groups = [tuple(available)]
    elif "+" in spec:
        first, rest = spec.split("+", 1)
        others = [l for l in available if l != first] if rest == "all" else rest.split(",")
        groups = [(first, other) for other in others]
    else:
        groups = [tuple(spec.split(","))]
        if "," not in spec and spec and spec not in available:  # en-zh, english: most likely a list mistyped
            raise UnknownNameError(f"--langs {shown}: expected two or more languages like en,zh or en,zh,ar, en+all "
                                   f"or all, or one language for mono-same; available: {', '.join(available)}")
    if any(not l for group in groups for l in group):  # en+, +all, en,,zh
        raise UnknownNameError(f"--langs {shown}: an empty language in the list")
    unknown = sorted({l for group in groups for l in group if l not in available})
    if unknown:
        listed = ", ".join(unknown)
        raise UnknownNameError(f"unknown language(s) {listed[:200]}{'…' if len(listed) > 200 else ''}; "
                               f"available: {', '.join(available)}")

    for g in groups:
        dup = first_duplicate(g)
        if dup is not None:
            raise UnknownNameError(f"--langs {shown}: a pool's languages must all differ; "
                                   f"{dup[0]!r} is listed twice")
    dup = first_duplicate(groups)
    if dup is not None:  # en+de,de: the same pair twice
        raise UnknownNameError(f"--langs {shown}: a language is listed twice: {dup[0][-1]!r} "
                               f"(the pool {'+'.join(dup[0])} twice)")
    return groups


def parse_scenarios(spec: str | Sequence[str]) -> tuple[str, ...]:
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    if names in (["all"], []):
        return SCENARIOS
    unknown = [s for s in names if s not in SCENARIOS]
    if unknown:
        raise UnknownNameError(f"unknown scenario(s) {', '.join(unknown)}; available: all, {', '.join(SCENARIOS)}")

    dup = first_duplicate(names)
    if dup is not None:
        raise UnknownNameError(f"scenarios {','.join(names)}: a scenario is listed twice: {dup[0]!r}")
    return tuple(names)
