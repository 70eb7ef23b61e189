"""``Evaluation``: what scoring a ready run against qrels gives (``clirbench.trec_files``, ``clirbench
evaluate``): every measure's value with its interval, the per-query values, and the query counts,
typed; ``to_dict()`` is the JSON report at the edge."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from ..util.plural import plural
from .files import PerQuery
from .frames import measures_frame, per_query_frame
from .records import MeasureValue

__all__ = ["Evaluation", "Metric", "TIE_RULE"]

TIE_RULE = "score descending, then doc id descending (byte-wise), as trec_eval"


class Metric(NamedTuple):
    """One per-query value, as ir_measures' ``Metric``."""

    query_id: str
    measure: str
    value: float


@dataclass(frozen=True)
class Evaluation:
    """Aggregates with CIs (``measures``, ``aggregate``) and per-query values (``per_query``,
    ``iter_calc()``), as ir_measures' ``calc_aggregate`` and ``iter_calc``. A measure that needs the
    full ranking (MaxR with a relevant document missing from the run) has no value (None in
    ``measures``, its reason in ``notes``) and per-query ``inf`` where it is unknown."""

    measures: Mapping[str, MeasureValue | None]
    per_query: PerQuery
    num_queries: int
    queries_in_run_without_judgements: int
    queries_judged_not_in_run: int
    resamples: int
    seed: int
    notes: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, evaluation, qrels: Mapping, run_queries: Sequence[str], resamples: int, seed: int) -> "Evaluation":
        """From the kernel's ``PoolEvaluation`` of a run (``run_queries``: the query ids the run holds)."""
        measures, notes = {}, {}
        for m in evaluation.measures:
            name = str(m)
            measures[name] = evaluation.summary.get(name)
            if measures[name] is None:
                missing = int(np.isinf(evaluation.per_query[name]).sum())
                notes[name] = (f"needs the full ranking: {plural(missing, 'query')} "
                               f"{'has' if missing == 1 else 'have'} relevant documents that the run does not contain")
        in_run = set(run_queries)
        return cls(measures, PerQuery(tuple(evaluation.query_ids), dict(evaluation.per_query)),
                   len(evaluation.query_ids), sum(1 for q in run_queries if not qrels.get(q)),
                   sum(1 for q in qrels if q not in in_run), resamples, seed, notes)

    @property
    def aggregate(self) -> dict[str, float | None]:
        """``{measure: value}`` (each measure summarised by its own rule: a mean, a sum, a geometric mean;
        docs/measures.md), as ``ir_measures.calc_aggregate``."""
        return {name: None if m is None else m.value for name, m in self.measures.items()}

    def __getitem__(self, measure) -> float | None:
        return self.aggregate[str(measure)]

    def iter_calc(self) -> Iterator[Metric]:
        """``Metric(query_id, measure, value)`` per evaluated query and measure."""
        ids, values = self.per_query
        for name, column in values.items():
            for qid, value in zip(ids, column.tolist()):
                yield Metric(qid, name, value)

    def to_dict(self) -> dict:
        """The JSON report (what ``clirbench evaluate`` prints, less the file names)."""
        out = {}
        for name, m in self.measures.items():
            out[name] = m.to_dict() if m is not None else {"value": None, "ci_low": None, "ci_high": None, "n": 0,
                                                           "note": self.notes[name]}
        return {
            "num_queries": self.num_queries,
            "queries_in_run_without_judgements": self.queries_in_run_without_judgements,
            "queries_judged_not_in_run": self.queries_judged_not_in_run,
            "measures": out,
            "bootstrap": {"resamples": self.resamples, "seed": self.seed, "confidence": 0.95, "method": "percentile"},
            "tie_rule": TIE_RULE,
        }

    def to_pandas(self, per_query: bool = False):
        """One row per measure (measure, value, ci_low, ci_high, n), or per query and measure."""

        if per_query:
            return per_query_frame([("", *self.per_query)]).drop(columns="pool")
        return measures_frame(self.measures)
