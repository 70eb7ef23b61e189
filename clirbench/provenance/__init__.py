"""Results others can check and carry (docs/results.md#reproduce, #exports): ``reproduce`` re-runs
the recorded recipe of a leaderboard's or a results folder's entries and grades every value;
``export_results`` writes them as ir_metadata, MTEB's results layout or Hugging Face ``.eval_results``.

``entries`` (what a board, a result file or a folder holds, as ``Entry``), ``recipe`` (an entry's
retriever built again, its data checked, its pool re-run), ``grading``, ``reproduce`` (the report),
``ir_metadata``, ``mteb_results``, ``hf_eval`` and ``export`` (the exports).
"""
from __future__ import annotations

from .entries import Entry, read_entries
from .reproduce import Report, format_report, reproduce

__all__ = ["Entry", "read_entries", "Report", "reproduce", "format_report"]
