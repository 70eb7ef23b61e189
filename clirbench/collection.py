"""Collections and pools: the data that scenarios produce and retrievers consume."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .identity import PoolKey

ROLES = ("query", "document")  # what a text is to a retriever: its prompt and cache space


def check_role(role: str) -> str:
    """``role`` if it is one of ROLES; a ValueError otherwise."""
    if role not in ROLES:
        raise ValueError(f"role must be 'query' or 'document', not {role!r}")
    return role


def texts_of(items) -> list[str]:
    """The strings of ``items`` (``Text`` objects or strings)."""
    return [t if isinstance(t, str) else t.text for t in items]


@dataclass(frozen=True)
class Text:
    """A document or a query: stable id, text, language tag (ISO 639-1 where one exists)."""

    id: str
    text: str
    lang: str
    item: str = ""  # ties the translations of one passage (or question) together
    meta: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}), compare=False)


@dataclass(frozen=True)
class ParallelCollection:
    """A parallel data set: per language, one passage per item and aligned questions.

    ``passages[lang][item]`` is the passage text of ``item`` in ``lang``;
    ``questions[lang]`` lists the questions (``Text.item`` is the question's gold passage item,
    ``Text.id`` the question id shared across languages).
    """

    task: str
    languages: tuple[str, ...]
    passages: Mapping[str, Mapping[str, str]]
    questions: Mapping[str, tuple[Text, ...]]
    source: Mapping[str, object] = field(default_factory=dict)  # where it was read from, file hashes


def pool_name(task: str, subset: str, scenario: str, pool_mode: str, doc_langs, query_lang: str) -> str:
    """A pool's hierarchical id (``Pool.name``) from its fields, e.g. of a result record."""

    return PoolKey(task, subset, scenario, pool_mode, tuple(doc_langs), query_lang).name


@dataclass(frozen=True)
class Pool:
    """What one retrieval run ranks: documents, queries of one language, qrels, exclusions.

    ``exclusions[qid]`` are documents removed from that query's ranking (multi-1).
    """

    task: str
    scenario: str
    pool_mode: str
    doc_langs: tuple[str, ...]
    query_lang: str
    docs: tuple[Text, ...]
    queries: tuple[Text, ...]
    qrels: Mapping[str, Mapping[str, int]]
    exclusions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    source: Mapping[str, object] = field(default_factory=dict, compare=False)  # origin, revision, file hashes
    subset: str = ""  # e.g. a data set inside a task (ko-en: belebele, strategyqa) or a locale

    @property
    def name(self) -> str:
        """Hierarchical id, e.g. ``xquad/multi/en-zh/q-zh`` (``+per-query`` for that pool mode)."""
        return pool_name(self.task, self.subset, self.scenario, self.pool_mode, self.doc_langs, self.query_lang)

    @property
    def key(self):
        """The pool's ``identity.PoolKey`` (with its qrels hash)."""

        return PoolKey.of(self)

    @property
    def num_docs(self) -> int:
        return len(self.docs)

    def qrels_hash(self) -> str:
        """SHA-256 over the sorted qrels and exclusions: identifies what was judged."""
        h = hashlib.sha256()
        for qid in sorted(self.qrels):
            for did in sorted(self.qrels[qid]):
                h.update(f"{qid}\t{did}\t{self.qrels[qid][did]}\n".encode())
            for did in sorted(self.exclusions.get(qid, ())):
                h.update(f"{qid}\t{did}\tX\n".encode())
        return h.hexdigest()
