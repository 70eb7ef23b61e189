"""Result records as pandas DataFrames, for analysis in a notebook (pandas imported on first use).

Long ("tidy") frames, as ir_measures' ``Metric(query_id, measure, value)``: one row per
pool × measure with the pool's fields and ``value, ci_low, ci_high, n``; one row per
pool × query × measure for per-query values. NaN stays NaN (a measure undefined for that query).
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..util.optional import require

POOL_COLUMNS = ("pool", "task", "subset", "scenario", "pool_mode", "doc_langs", "query_lang", "retriever",
                "translation")
SUMMARY_COLUMNS = (*POOL_COLUMNS, "measure", "value", "ci_low", "ci_high", "n")
PER_QUERY_COLUMNS = ("pool", "query_id", "measure", "value")


def _pandas():
    return require("pandas", purpose="DataFrames of results")


def pool_fields(name: str, record) -> dict:
    """The columns that say which pool and system a ``Result`` is about."""
    translation = record.translation
    return {"pool": name, "task": record.task.id, "subset": record.subset, "scenario": record.scenario,
            "pool_mode": record.pool_mode, "doc_langs": "-".join(record.doc_langs),
            "query_lang": record.query_lang, "retriever": record.retriever.spec,
            "translation": None if not translation else f"{translation.get('direction')}:{translation.get('translator')}"}


def summary_frame(records: Iterable[tuple[str, object]]):
    """One row per (pool, measure) from ``(pool name, Result)`` pairs."""
    rows = []
    for name, record in records:
        fields = pool_fields(name, record)
        for measure, mv in record.measures.items():
            rows.append({**fields, "measure": measure, "value": mv.value, "ci_low": mv.ci_low,
                         "ci_high": mv.ci_high, "n": mv.n})
    return _pandas().DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def per_query_frame(tables: Iterable[tuple[str, Sequence[str], Mapping[str, Sequence[float]]]]):
    """One row per (pool, query, measure) from ``(pool name, query ids, {measure: values})``."""
    import numpy as np

    pd = _pandas()
    parts = []
    for name, query_ids, values in tables:
        ids = np.asarray(query_ids, dtype=object)
        for measure, column in values.items():
            parts.append(pd.DataFrame({"pool": name, "query_id": ids, "measure": measure,
                                       "value": np.asarray(column, dtype=np.float64)}))
    if not parts:
        return pd.DataFrame(columns=list(PER_QUERY_COLUMNS))
    return pd.concat(parts, ignore_index=True)[list(PER_QUERY_COLUMNS)]


def measures_frame(measures: Mapping[str, object]):
    """One row per measure from ``{name: MeasureValue or None}`` (None: not computable)."""
    rows = [{"measure": name, "value": getattr(mv, "value", None), "ci_low": getattr(mv, "ci_low", None),
             "ci_high": getattr(mv, "ci_high", None), "n": getattr(mv, "n", 0)} for name, mv in measures.items()]
    return _pandas().DataFrame(rows, columns=["measure", "value", "ci_low", "ci_high", "n"])
