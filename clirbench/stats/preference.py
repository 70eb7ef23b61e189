"""The language-preference matrix of ``multi`` pools (docs/measures.md#the-language-preference-matrix).

On a ``multi`` pool of k document languages with queries in Lq, every query has a relevant passage
in each language. Per query and document language L: ``mean_rank:L`` is the rank of its best-ranked
relevant passage in L, ``best_share:L`` is 100 when its best-ranked relevant passage (over every
language) is in L, else 0. Their means over the queries, with percentile bootstrap intervals (one
shared resampling, the run's resamples and seed), are one *row* of the matrix; a pool's record
holds its row (``Result.preference``), and ``preference_matrix`` stacks the rows of the pools that
share documents (one per query language) into the matrix: query languages × document languages.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..identity import PoolKey
from ..rank.table import RankTable
from .summary import summarise

__all__ = ["PARTS", "preference_columns", "preference_row", "pool_preference", "preference_matrix"]

#: the two quantities of a matrix cell, in the order a record writes them
PARTS = ("mean_rank", "best_share")


def preference_columns(table: RankTable, doc_langs: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-query ``mean_rank:<L>`` (rank of the best-ranked relevant passage in L; NaN when the
    query has none in L) and ``best_share:<L>`` (100 or 0; NaN for a query with no relevant
    passage) for every L of ``doc_langs``, aligned with ``table.query_ids``."""
    if table.doc_lang is None:
        raise ValueError("the rank table has no document languages: no preference matrix")
    n = len(table.query_ids)
    best = np.full((n, len(doc_langs)), np.inf)
    for j, lang in enumerate(doc_langs):
        mask = table.doc_lang == lang
        np.minimum.at(best[:, j], table.qidx[mask], table.rank[mask])
    has = np.isfinite(best).any(axis=1)
    winner = np.argmin(best, axis=1)
    out: dict[str, np.ndarray] = {}
    for j, lang in enumerate(doc_langs):
        out[f"mean_rank:{lang}"] = np.where(np.isfinite(best[:, j]), best[:, j], np.nan)
    for j, lang in enumerate(doc_langs):
        out[f"best_share:{lang}"] = np.where(has, 100.0 * (winner == j), np.nan)
    return out


def preference_row(table: RankTable, doc_langs: Sequence[str], resamples: int = 1000,
                   seed: int = 42) -> dict[str, dict[str, Any]]:
    """``{"mean_rank": {L: MeasureValue}, "best_share": {L: MeasureValue}}``: one row of the matrix,
    each cell the mean over queries with a percentile bootstrap interval (``stats.summary``)."""

    columns = preference_columns(table, doc_langs)
    summary = summarise(list(columns), columns, resamples, seed)
    return {part: {lang: summary[f"{part}:{lang}"] for lang in doc_langs} for part in PARTS}


def pool_preference(pool, table: RankTable, resamples: int = 1000, seed: int = 42) -> dict | None:
    """The preference row of ``pool`` (a ``Pool``) from its exact ``table``: for ``multi`` pools of two
    or more document languages whose table knows the languages of its documents; None otherwise."""
    if pool.scenario != "multi" or len(pool.doc_langs) < 2 or table.doc_lang is None or not len(table.qidx):
        return None
    return preference_row(table, pool.doc_langs, resamples, seed)


def _plain(record: Any) -> Mapping:
    return record.to_dict() if callable(getattr(record, "to_dict", None)) else record


def preference_matrix(records: Iterable[Any]) -> list[dict]:
    """The matrices of ``records`` (``Result`` objects or their dicts) that hold a ``preference``
    row: one per set of documents (task, subset, pool mode, document languages), rows the query
    languages in document-language order. Each matrix is ``{"pool", "doc_langs", "query_langs",
    "mean_rank", "best_share"}``, the last two lists of rows of ``{value, ci_low, ci_high, n}``."""

    groups: dict[PoolKey, dict[str, Mapping]] = {}
    for record in map(_plain, records):
        if record.get("preference"):
            groups.setdefault(PoolKey.of(record).documents, {})[record["query_lang"]] = record["preference"]
    out = []
    for key, rows in groups.items():
        langs = list(key.doc_langs)
        query_langs = [l for l in langs if l in rows] + sorted(l for l in rows if l not in langs)
        matrix = {"pool": "/".join(key.parts[:-1]), "doc_langs": langs, "query_langs": query_langs}
        for part in PARTS:
            matrix[part] = [[_cell(rows[q][part].get(d)) for d in langs] for q in query_langs]
        out.append(matrix)
    return out


def _cell(value: Any) -> dict | None:
    if value is None:
        return None
    value = _plain(value)
    return {k: value.get(k) for k in ("value", "ci_low", "ci_high", "n")}
