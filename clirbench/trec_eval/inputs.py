"""Qrels and run files as ``clirbench trec_eval`` reads them: ``formats.trec``'s reader, the one
``clirbench evaluate`` uses (one set of rules; they are described there and in docs/commands.md)."""
from __future__ import annotations

from ..formats.trec import TrecRun, read_qrels
from ..formats.trec import read_trec_run as read_run

__all__ = ["TrecRun", "read_qrels", "read_run"]
