"""A system's cold cost on one pool (docs/results.md#cost): the record's optional ``cost`` section.

Encoding rates are the model's own time: texts served by the embedding cache count the seconds
recorded when they were encoded (``cost.cold`` is false then), so a rerun reports the cost of the
first. A retriever reports its encoding and index with ``cost(queries, docs) -> EncodeReport``; the
runner adds the search time and the translation (``pool_cost``).
"""
from __future__ import annotations

import functools
import math
import platform
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["Cost", "EncodeCost", "EncodeReport", "TRANSLATION_SOURCES", "pool_cost", "combine_cpus", "cpu_name",
           "fuse_reports"]

TRANSLATION_SOURCES = ("model", "precomputed")  # who translated: a model now, or a lookup (gold, file:)
_RATES = ("docs_per_second", "queries_per_second", "search_ms_per_query", "translation_seconds", "cold_seconds")


@dataclass(frozen=True)
class EncodeCost:
    """Distinct texts of one role, the model seconds that encoded them, whether all were encoded by
    this process (``cold``), and the CPU(s) they were encoded on (None: unknown)."""

    texts: int
    seconds: float | None  # None: some text's encode time is unknown (a cache written before it was kept)
    cold: bool
    cpu: str | None = None

    @property
    def per_second(self) -> float | None:
        if self.seconds is None or not self.texts or not self.seconds > 0:
            return None
        return self.texts / self.seconds


@dataclass(frozen=True)
class EncodeReport:
    """What a retriever reports about one pool: its documents' and queries' encoding, and the bytes
    of what it holds to search the documents (embeddings, an index)."""

    docs: EncodeCost | None = None
    queries: EncodeCost | None = None
    index_bytes: int | None = None


@functools.lru_cache(maxsize=1)
def cpu_name() -> str:
    """This machine's CPU model (``/proc/cpuinfo``'s model name, else what ``platform`` says)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def combine_cpus(cpus: Sequence[str | None]) -> str | None:
    """One CPU name for several measurements: the common one, else the distinct ones joined by ``" + "``."""
    names = sorted({c for c in cpus if c})
    return " + ".join(names) if names else None


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

    def __post_init__(self) -> None:
        w = "cost."
        for name in _RATES:
            object.__setattr__(self, name, _rate(getattr(self, name), w + name))
        for name in ("index_bytes", "translation_chars"):
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


def fuse_reports(reports: Sequence[EncodeReport]) -> EncodeReport:
    """Several retrievers over one pool (fusion): their encoding seconds and index bytes add up."""
    def add(parts: list) -> EncodeCost | None:
        if not parts or any(p is None for p in parts):
            return None
        seconds = None if any(p.seconds is None for p in parts) else sum(p.seconds for p in parts)
        return EncodeCost(max(p.texts for p in parts), seconds, all(p.cold for p in parts),
                          combine_cpus([p.cpu for p in parts]))

    sizes = [r.index_bytes for r in reports]
    return EncodeReport(add([r.docs for r in reports]), add([r.queries for r in reports]),
                        None if any(s is None for s in sizes) else sum(sizes))


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
        cold=cold, cpu=measured_cpu or cpu, cold_seconds=cold_seconds)
