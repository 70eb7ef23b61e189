"""Bilingual-pool scenarios (docs/scenarios.md): pure functions from a parallel collection to pools."""
from __future__ import annotations

import dataclasses

from typing import Iterable, Sequence

from .collection import ParallelCollection, Pool, Text
from .errors import UnknownNameError

SCENARIOS = ("multi", "multi-1", "mono-same", "mono-cross")
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


def build_pool(collection: ParallelCollection, pair: Sequence[str], scenario: str,
               query_lang: str, pool_mode: str = "unique") -> Pool:
    """The pool of ``scenario`` for language pair (L1, L2) and queries in ``query_lang``."""
    l1, l2 = pair
    if scenario not in SCENARIOS:
        raise UnknownNameError(f"unknown scenario {scenario!r}; available: {', '.join(SCENARIOS)}")
    if pool_mode not in POOL_MODES:
        raise UnknownNameError(f"unknown pool mode {pool_mode!r}; available: {', '.join(POOL_MODES)}")
    if l1 == l2:
        raise UnknownNameError(f"a bilingual pool needs two different languages, got {l1},{l2}")
    if query_lang not in (l1, l2):
        raise UnknownNameError(f"query language {query_lang!r} is not in the pair {l1},{l2}")
    other = l2 if query_lang == l1 else l1
    doc_langs = {"multi": (l1, l2), "multi-1": (l1, l2), "mono-same": (query_lang,),
                 "mono-cross": (other,)}[scenario]
    docs = tuple(d for lang in doc_langs for d in _documents(collection, lang, pool_mode))
    queries = collection.questions[query_lang]
    qrels, exclusions = {}, {}
    for q in queries:
        same, cross = _gold(query_lang, q, pool_mode), _gold(other, q, pool_mode)
        if scenario == "multi":
            qrels[q.id] = {same: 1, cross: 1}
        elif scenario == "multi-1":
            qrels[q.id] = {cross: 1}
            exclusions[q.id] = frozenset((same,))
        elif scenario == "mono-same":
            qrels[q.id] = {same: 1}
        else:
            qrels[q.id] = {cross: 1}
    return Pool(task=collection.task, scenario=scenario, pool_mode=pool_mode, doc_langs=doc_langs,
                query_lang=query_lang, docs=docs, queries=tuple(queries), qrels=qrels,
                exclusions=exclusions)


def build_pools(collection: ParallelCollection, pairs: Iterable[Sequence[str]],
                scenarios: Sequence[str] = SCENARIOS, query_langs: Sequence[str] | None = None,
                pool_mode: str = "unique") -> list[Pool]:
    """Every distinct pool of a sweep; mono pools shared by several pairs appear once.

    ``query_langs`` restricts the query languages (default: both languages of each pair).
    """
    pools: dict[str, Pool] = {}
    for pair in pairs:
        for scenario in scenarios:
            for query_lang in pair:
                if query_langs is not None and query_lang not in query_langs:
                    continue
                pool = build_pool(collection, pair, scenario, query_lang, pool_mode)
                pool = dataclasses.replace(pool, source=collection.source)
                pools.setdefault(pool.name, pool)
    return list(pools.values())


def parse_langs(spec: str | Sequence[str], available: Sequence[str]) -> list[tuple[str, str]]:
    """Language pairs from ``en,zh`` (one pair), ``en+all`` (en with every other) or ``en+de,zh``."""
    if not isinstance(spec, str):
        spec = ",".join(spec)
    spec = spec.replace(" ", "")
    if "+" in spec:
        first, rest = spec.split("+", 1)
        others = [l for l in available if l != first] if rest == "all" else rest.split(",")
        pairs = [(first, other) for other in others]
    else:
        parts = spec.split(",")
        if len(parts) != 2:
            raise UnknownNameError(f"--langs {spec!r}: expected two languages like en,zh or en+all")
        pairs = [(parts[0], parts[1])]
    unknown = sorted({l for pair in pairs for l in pair if l not in available})
    if unknown:
        raise UnknownNameError(f"unknown language(s) {', '.join(unknown)}; available: {', '.join(available)}")
    if any(a == b for a, b in pairs):
        raise UnknownNameError(f"--langs {spec!r}: a pair needs two different languages")
    return pairs


def parse_scenarios(spec: str | Sequence[str]) -> tuple[str, ...]:
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    if names in (["all"], []):
        return SCENARIOS
    unknown = [s for s in names if s not in SCENARIOS]
    if unknown:
        raise UnknownNameError(f"unknown scenario(s) {', '.join(unknown)}; available: all, {', '.join(SCENARIOS)}")
    return tuple(names)
