"""The language-preference matrix of ``multi`` pools (docs/measures.md#the-language-preference-matrix).

On a ``multi`` pool of k document languages with queries in Lq, every query has a relevant passage
in each language. Per query and document language L: ``mean_rank:L`` is the rank of its best-ranked
relevant passage in L, ``best_share:L`` is 100 when its best-ranked relevant passage (over every
language) is in L, else 0 -- both under uniformly random tie-breaking (the expected rank; the
expected share over the tie, so that equal scores never make a preference), and ``tie_share:L`` is
100 when that passage in L shares its score with another document (a tie decided its rank under
trec_eval's rule), else 0. Their means over the queries, with percentile bootstrap intervals (one
shared resampling, the run's resamples and seed), are one *row* of the matrix; a pool's record
holds its row (``Result.preference``), and ``preference_matrix`` stacks the rows of the pools that
share documents (one per query language) into the matrix: query languages × document languages.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..identity import PoolKey
from ..measures.compute import best_tie_group, expected_best_rank, first_share
from ..measures.exposure import lang_shares
from ..rank.table import RankTable
from .summary import summarise

__all__ = ["PARTS", "TIE_PART", "SHARE_PART", "MLRS_PART", "preference_columns", "preference_row", "pool_preference", "preference_matrix",
           "tie_note"]

#: the two quantities of a matrix cell, in the order a record writes them
PARTS = ("mean_rank", "best_share")
#: the optional third: the % of queries whose cell a tie decided (records made before it lack it)
TIE_PART = "tie_share"
#: the optional fourth, from the ranking's head: the mean share of the document language among each
#: query's top 10 (``measures.exposure``'s Share@10(L)); rows made without a head lack it
SHARE_PART = "top10_share"
SHARE_K = 10
#: the optional fifth, when MLRS@K was asked (the first such K): MLRS toward each document language
MLRS_PART = "mlrs"
#: a matrix whose cells ties decided for this % of the queries or more gets a note (run, page)
TIE_NOTE_AT = 10.0


def preference_columns(table: RankTable, doc_langs: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-query ``mean_rank:<L>`` (expected rank of the best-ranked relevant passage in L; NaN when
    the query has none in L), ``best_share:<L>`` (100 × the probability that the best-ranked relevant
    passage is in L: 100 or 0 without ties; NaN for a query with no relevant passage) and
    ``tie_share:<L>`` (100 when the best-ranked passage in L ties with another document, else 0; NaN
    as ``mean_rank``) for every L of ``doc_langs``, aligned with ``table.query_ids``; random
    tie-breaking (``measures.compute``)."""
    if table.doc_lang is None:
        raise ValueError("the rank table has no document languages: no preference matrix")
    among = np.isin(table.doc_lang, list(doc_langs))
    out: dict[str, np.ndarray] = {}
    masks = [table.doc_lang == lang for lang in doc_langs]
    for lang, mask in zip(doc_langs, masks):
        best = expected_best_rank(table, mask)
        out[f"mean_rank:{lang}"] = np.where(np.isfinite(best), best, np.nan)
    for lang, mask in zip(doc_langs, masks):
        out[f"best_share:{lang}"] = 100.0 * first_share(table, mask, among)
    for lang, mask in zip(doc_langs, masks):
        first, size, _ = best_tie_group(table, mask)
        out[f"{TIE_PART}:{lang}"] = np.where(np.isfinite(first), 100.0 * (size > 1), np.nan)
    if table.head is not None:
        shares = lang_shares(table.head, SHARE_K)
        for lang in doc_langs:
            out[f"{SHARE_PART}:{lang}"] = shares[:, table.head.langs.index(lang)]
        mlrs = next((name for name in table.head.precomputed if name.startswith("MLRS@") and ":" not in name), None)
        if mlrs is not None and all(f"{mlrs}:{lang}" in table.head.precomputed for lang in doc_langs):
            for lang in doc_langs:
                out[f"{MLRS_PART}:{lang}"] = np.asarray(table.head.precomputed[f"{mlrs}:{lang}"], dtype=np.float64)
    return out


def preference_row(table: RankTable, doc_langs: Sequence[str], resamples: int = 1000,
                   seed: int = 42) -> dict[str, dict[str, Any]]:
    """``{"mean_rank": {L: MeasureValue}, "best_share": {L: MeasureValue}, "tie_share": {L: ...}}``:
    one row of the matrix, each cell the mean over queries with a percentile bootstrap interval
    (``stats.summary``)."""

    columns = preference_columns(table, doc_langs)
    summary = summarise(list(columns), columns, resamples, seed)
    parts = (*PARTS, TIE_PART) + tuple(p for p in (SHARE_PART, MLRS_PART) if f"{p}:{doc_langs[0]}" in columns)
    return {part: {lang: summary[f"{part}:{lang}"] for lang in doc_langs} for part in parts}


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
    "mean_rank", "best_share", "tie_share"}``, the last three lists of rows of ``{value, ci_low,
    ci_high, n}`` (``tie_share`` cells None for rows recorded before it was kept)."""

    groups: dict[PoolKey, dict[str, Mapping]] = {}
    for record in map(_plain, records):
        if record.get("preference"):
            groups.setdefault(PoolKey.of(record).documents, {})[record["query_lang"]] = record["preference"]
    out = []
    for key, rows in groups.items():
        langs = list(key.doc_langs)
        query_langs = [l for l in langs if l in rows] + sorted(l for l in rows if l not in langs)
        matrix = {"pool": "/".join(key.parts[:-1]), "doc_langs": langs, "query_langs": query_langs}
        for part in (*PARTS, TIE_PART, SHARE_PART, MLRS_PART):
            matrix[part] = [[_cell((rows[q].get(part) or {}).get(d)) for d in langs] for q in query_langs]
        out.append(matrix)
    return out


def tie_note(matrix: Mapping) -> str:
    """One line saying how much of ``matrix`` ties decided (the mean of its ``tie_share`` cells), when
    it is ``TIE_NOTE_AT`` % or more; "" otherwise (or for rows recorded without it)."""
    shares = [c["value"] for row in matrix.get(TIE_PART) or () for c in row if c and c.get("value") is not None]
    if not shares or float(np.mean(shares)) < TIE_NOTE_AT:
        return ""
    return (f"ties: {float(np.mean(shares)):.1f}% of these cells' best-ranked passages share their score with "
            f"another document; ranks and shares are their means over random orders of tied documents")


def _cell(value: Any) -> dict | None:
    if value is None:
        return None
    value = _plain(value)
    return {k: value.get(k) for k in ("value", "ci_low", "ci_high", "n")}
