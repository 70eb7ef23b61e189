"""Result records and files (docs/results.md): one JSON per evaluated pool, per-query values beside it.

``records`` (the typed, validated record), ``files`` (read/write, paths, per-query tables), ``store``
(``ResultStore``: a results folder's paths, reuse and writes),
``breakdown`` (per-group means), ``cost`` (a system's cold cost), ``hardware`` (the probe), ``run``
(``RunResult`` / ``PoolResult``: what a run returns), ``run_report`` (``Evaluation``: a ready run scored).
"""
from __future__ import annotations

from .breakdown import breakdown
from .cost import Cost
from .files import (
                    PerQuery,
                    RankedDoc,
                    per_query_name,
                    ranks_name,
                    read_per_query,
                    read_ranks,
                    read_result,
                    result_path,
                    write_result,
)
from .hardware import hardware_info
from .records import SCHEMA_VERSION, BootstrapSettings, Hardware, MeasureValue, Result, RetrieverRef, TaskRef, Timings
from .run import PoolResult, RunResult
from .run_report import Evaluation, Metric
from .store import ResultStore, RunIdentity

__all__ = [
    "SCHEMA_VERSION", "TaskRef", "RetrieverRef", "MeasureValue", "BootstrapSettings", "Timings",
    "Hardware", "Cost", "Result", "PerQuery", "RankedDoc", "write_result", "read_result", "read_per_query", "read_ranks",
    "ranks_name",
    "hardware_info", "result_path", "per_query_name", "breakdown", "PoolResult", "RunResult",
    "Evaluation", "Metric", "ResultStore", "RunIdentity",
]
