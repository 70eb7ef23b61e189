"""Qrels and run files read as trec_eval reads them, with one-line errors naming file and line.

As trec_eval: a line whose first field starts with ``#`` is a comment (``qrels.test.with-comments``);
run lines may carry fields after the run tag (ignored); the run id is the tag of the last line.
Stricter than trec_eval: grades must be integers and scores numbers (trec_eval's ``atol``/``atof``
read ``x`` as 0), a document retrieved twice or judged twice with two grades is refused, and a
file with no judgement or no result is refused. Blank lines are skipped (trec_eval skips them in
runs, and calls one in qrels malformed).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from ..errors import MalformedDataError
from ..formats.trec import add_qrels_line, add_run_line, line_fields

__all__ = ["TrecRun", "read_qrels", "read_run"]


@dataclass(frozen=True)
class TrecRun:
    """A run file: ``{qid: {docid: score}}`` and the run id (the tag of its last line)."""

    scores: Mapping[str, Mapping[str, float]]
    runid: str


def read_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` from ``qid iter docid rel`` lines (negative grade: judged "unjudged")."""
    qrels: dict[str, dict[str, int]] = {}
    for no, f in line_fields(path):
        if f[0].startswith("#"):
            continue
        add_qrels_line(qrels, f, path, no, MalformedDataError)
    if not qrels:
        raise MalformedDataError(f"{path}: no judgement in the qrels file")
    return qrels


def read_run(path: str | os.PathLike) -> TrecRun:
    """A ``TrecRun`` from ``qid iter docid rank score tag [anything]`` lines."""
    run: dict[str, dict[str, float]] = {}
    runid = None
    for no, f in line_fields(path):
        if f[0].startswith("#"):
            continue
        if len(f) < 6:
            raise MalformedDataError(f"{path}:{no}: expected 6 fields 'qid Q0 docid rank score tag', got {len(f)}")
        add_run_line(run, f, path, no, MalformedDataError)
        runid = f[5]
    if runid is None:
        raise MalformedDataError(f"{path}: no result line in the run file")
    return TrecRun(run, runid)
