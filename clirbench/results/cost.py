"""A system's cold cost on one pool (docs/results.md#cost): the record's optional ``cost`` section.

Encoding rates are the model's own time: texts served by the embedding cache count the seconds
recorded when they were encoded (``cost.cold`` is false then), so a rerun reports the cost of the
first. A retriever reports its encoding and index with ``cost(queries, docs) -> EncodeReport``; the
runner adds the search time and the translation (``pool_cost``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..cache.cost import EncodeCost, EncodeReport, combine_cpus, cpu_name, fuse_reports

__all__ = ["Cost", "EncodeCost", "EncodeReport", "TRANSLATION_SOURCES", "pool_cost", "combine_cpus", "cpu_name",
           "fuse_reports"]

TRANSLATION_SOURCES = ("model", "precomputed")  # who translated: a model now, or a lookup (gold, file:)
_RATES = ("docs_per_second", "queries_per_second", "search_ms_per_query", "translation_seconds", "cold_seconds")


def _rate(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where} must be a number or null, got {type(value).__name__}")
    value = float(value)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{where} must be a finite number >= 0, got {value!r}")
    return value


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where} must be an integer >= 0 or null, got {value!r}")
    return value


@dataclass(frozen=True)
class Cost:
    """The ``cost`` section of a result record; every number may be null (not measured)."""

    docs_per_second: float | None = None
    queries_per_second: float | None = None
    index_bytes: int | None = None
    search_ms_per_query: float | None = None
    translation_seconds: float | None = None
    translation_chars: int | None = None
    translation_source: str | None = None  # "model", "precomputed", or None without translation
    cold: bool = True
    cpu: str | None = None
    cold_seconds: float | None = None  # the whole pool from nothing: encode + index + search + translate
    requests: int | None = None  # a served model: HTTP requests this run sent for the pool's texts (0: all cached)
    tokens: int | None = None  # ... and the tokens they carried

    def __post_init__(self) -> None:
        w = "cost."
        for name in _RATES:
            object.__setattr__(self, name, _rate(getattr(self, name), w + name))
        for name in ("index_bytes", "translation_chars", "requests", "tokens"):
            object.__setattr__(self, name, _count(getattr(self, name), w + name))
        if self.translation_source is not None and self.translation_source not in TRANSLATION_SOURCES:
            raise ValueError(f"{w}translation_source must be one of {', '.join(TRANSLATION_SOURCES)} or null, "
                             f"got {self.translation_source!r}")
        if not isinstance(self.cold, bool):
            raise ValueError(f"{w}cold must be true or false, got {self.cold!r}")
        if self.cpu is not None and not (isinstance(self.cpu, str) and self.cpu.strip()):
            raise ValueError(f"{w}cpu must be a non-empty string or null, got {self.cpu!r}")

    def to_dict(self) -> dict:
        """The JSON form; ``cold_seconds`` only when measured (records written before it stay as they were)."""
        out = {"docs_per_second": self.docs_per_second, "queries_per_second": self.queries_per_second,
               "index_bytes": self.index_bytes, "search_ms_per_query": self.search_ms_per_query,
               "translation_seconds": self.translation_seconds, "translation_chars": self.translation_chars,
               "translation_source": self.translation_source, "cold": self.cold, "cpu": self.cpu}
        if self.cold_seconds is not None:
            out["cold_seconds"] = self.cold_seconds
        out.update({k: getattr(self, k) for k in ("requests", "tokens") if getattr(self, k) is not None})
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "Cost":
        """Validate a ``cost`` object (every key optional; an unknown key, a negative or non-finite number
        is refused, naming the field)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"cost must be an object, got {type(data).__name__}")
        known = tuple(cls.__dataclass_fields__)
        extra = sorted(set(data) - set(known))
        if extra:
            raise ValueError(f"unknown key(s) {', '.join('cost.' + str(k) for k in extra)}")
        return cls(**{k: data[k] for k in known if k in data})


def pool_cost(report: EncodeReport | None, num_queries: int, search_seconds: float,
              translation: Mapping | None = None, cpu: str | None = None) -> Cost:
    """The record's ``cost`` of one pool: ``report`` (the retriever's, None when it reports none), the
    ranking stage's seconds over ``num_queries`` queries, the pool's ``translation`` record (its
    ``seconds``, ``source_chars`` and ``source``) and this machine's ``cpu``."""
    report = report or EncodeReport()
    parts = [p for p in (report.docs, report.queries) if p is not None]
    cold = all(p.cold for p in parts)
    measured_cpu = combine_cpus([p.cpu for p in parts]) if parts else None
    t_seconds = t_chars = t_source = None
    if translation is not None:
        t_source = translation.get("source")
        t_chars = int(translation.get("source_chars", 0))
        t_seconds = 0.0 if t_source == "precomputed" else float(translation.get("seconds", 0.0))
    encode = [p.seconds for p in parts]
    cold_seconds = None if report.docs is None or None in encode else \
        sum(encode) + search_seconds + (t_seconds or 0.0)
    return Cost(
        docs_per_second=report.docs.per_second if report.docs else None,
        queries_per_second=report.queries.per_second if report.queries else None,
        index_bytes=report.index_bytes,
        search_ms_per_query=1000.0 * search_seconds / num_queries if num_queries else None,
        translation_seconds=t_seconds, translation_chars=t_chars, translation_source=t_source,
        cold=cold, cpu=measured_cpu or cpu, cold_seconds=cold_seconds, requests=report.requests, tokens=report.tokens)
