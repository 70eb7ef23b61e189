"""What encoding costs: the texts, model seconds and CPU of each role, as retrievers report it with
``cost(queries, docs) -> EncodeReport``; texts served by the cache count the seconds recorded when
they were encoded (``cold`` is false then). ``results/cost.py`` turns a report into a record's ``cost``."""
from __future__ import annotations

import functools
import platform
from dataclasses import dataclass
from typing import Sequence

__all__ = ["EncodeCost", "EncodeReport", "combine_cpus", "cpu_name", "fuse_reports"]


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
    requests: int | None = None  # a served model (openai:): HTTP requests this process sent for the pool's texts
    tokens: int | None = None  # ... and the tokens they carried


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


def fuse_reports(reports: Sequence[EncodeReport]) -> EncodeReport:
    """Several retrievers over one pool (fusion): their encoding seconds and index bytes add up."""
    def add(parts: list) -> EncodeCost | None:
        if not parts or any(p is None for p in parts):
            return None
        seconds = None if any(p.seconds is None for p in parts) else sum(p.seconds for p in parts)
        return EncodeCost(max(p.texts for p in parts), seconds, all(p.cold for p in parts),
                          combine_cpus([p.cpu for p in parts]))

    def total(counts: list) -> int | None:
        return None if all(c is None for c in counts) else sum(c or 0 for c in counts)

    sizes = [r.index_bytes for r in reports]
    return EncodeReport(add([r.docs for r in reports]), add([r.queries for r in reports]),
                        None if any(s is None for s in sizes) else sum(sizes),
                        total([r.requests for r in reports]), total([r.tokens for r in reports]))
