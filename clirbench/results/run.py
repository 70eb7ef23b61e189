"""What a run returns, typed end to end: ``RunResult`` of ``PoolResult`` (a ``Result`` record and its
per-query values), for the runner, the Python API and the report; dicts only at the JSON and CLI edges."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from .files import PerQuery, read_per_query, read_result
from .frames import per_query_frame, summary_frame
from .records import MeasureValue, Result

__all__ = ["PoolResult", "RunResult"]


@dataclass(frozen=True)
class PoolResult:
    """One evaluated pool: its record (what the result JSON holds: means with CIs, pool, system)
    and its per-query values. ``path`` is the result file, None when nothing was written."""

    name: str
    record: Result
    per_query: PerQuery
    path: Path | None = None
    reused: bool = False

    @property
    def measures(self) -> Mapping[str, MeasureValue]:
        return self.record.measures

    def value(self, measure) -> float:
        """The reported value of ``measure`` (a name or a measure object)."""
        return self.record.measures[str(measure)].value

    @classmethod
    def read(cls, name: str, path, record: Result | None = None, reused: bool = False) -> "PoolResult":
        """The pool result stored at ``path`` (its record, given or read, and its per-query table)."""

        record = read_result(path) if record is None else record
        return cls(name, record, PerQuery(*read_per_query(path)), Path(path), reused)

    def to_pandas(self, per_query: bool = False):
        """One row per measure with the pool's fields (or per query and measure)."""

        if per_query:
            return per_query_frame([(self.name, *self.per_query)])
        return summary_frame([(self.name, self.record)])


@dataclass(frozen=True)
class RunResult(Sequence):
    """What ``run`` returns: one ``PoolResult`` per pool (index by position or pool name), the
    query-language gaps of bilingual pools (``gaps``, with the files they were written to in
    ``gap_paths``, None where computed in memory only), the task's main measures per scenario, wall
    time, the measures asked for (None: the default set), the texts encoded (None: the retriever has
    no embedding cache), the encoding stage's seconds (every pool's texts at once; not in the
    records' ``timings_s``) and the consistency of the rankings across query languages (MRC@10, RBO@10)
    of each set of ``multi`` documents whose pools were ranked in this run."""

    pools: tuple[PoolResult, ...]
    gaps: tuple = ()  # stats.paired.Gap, one per bilingual pool finished for both query languages
    main_measures: Mapping[str, Sequence[str]] = field(default_factory=dict)
    seconds: float = 0.0
    gap_paths: tuple[Path | None, ...] = ()
    measures: tuple[str, ...] | None = None
    encoded: int | None = None
    encode_seconds: float = 0.0
    consistency: tuple = ()  # (documents' name, stats.consistency.ConsistencyMatrix) per multi pool set

    def __len__(self) -> int:
        return len(self.pools)

    def __iter__(self) -> Iterator[PoolResult]:
        return iter(self.pools)

    def __getitem__(self, key):
        if isinstance(key, str):
            for pool in self.pools:
                if pool.name == key:
                    return pool
            raise KeyError(f"no pool {key!r}; pools: {', '.join(p.name for p in self.pools)}")
        return self.pools[key]

    def to_pandas(self, per_query: bool = False):
        """One row per pool × measure (pool fields, measure, value, ci_low, ci_high, n); with
        ``per_query=True``, one row per pool × query × measure (pool, query_id, measure, value)."""

        if per_query:
            return self.per_query_frame()
        return summary_frame([(p.name, p.record) for p in self.pools])

    def per_query_frame(self):
        """One row per pool × query × measure: pool, query_id, measure, value."""

        return per_query_frame([(p.name, *p.per_query) for p in self.pools])
