"""Qrels and run files as ``clirbench trec_eval`` reads them: ``formats.trec``'s rules, the ones
``clirbench evaluate`` follows (described there and in docs/commands.md). The run goes through
``rank.run_file`` (pyarrow, straight to the ranks of the judged documents, scores compared as C
doubles) when it can vouch for the file, else through the strict reader; the run id is the tag of
its last line."""
from __future__ import annotations

import functools
import os

import numpy as np

from ..formats.trec import TrecRun, is_stream, open_input, read_qrels, rereadable
from ..formats.trec import read_trec_run as read_run
from ..rank.run_file import rank_run_file
from .rankings import Judgements, Rankings, from_dicts, from_table, judgements

__all__ = ["TrecRun", "read_qrels", "read_run", "read_rankings", "last_tag"]

_TAIL = 1 << 16
_BOM = b"\xef\xbb\xbf"


def read_rankings(qrels_path, run_path, complete: bool = False) -> tuple[Judgements, Rankings, str]:
    """(the qrels' judgements, the rankings of the evaluated queries, the run id); qrels errors
    before run errors, as ``evaluate_files`` reads them."""
    judged = functools.cache(lambda: judgements(read_qrels(qrels_path)))
    if is_stream(run_path):
        judged()  # the qrels first: one writer may feed the qrels, then the run
    with rereadable(run_path) as run_file:
        lengths: list = []
        # reads the qrels while its threads parse the run's first blocks
        fast = rank_run_file(run_file, lambda: judged().codes, exact_scores=True, lengths=lengths)
        judg = judged()
        if fast is not None:
            table, run_ids = fast
            run_lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
            return judg, from_table(judg, table, run_ids, run_lengths, complete), last_tag(run_file)
        run = read_run(run_file, name=run_path)
    return judg, from_dicts(judg, run.scores, complete), run.runid


def last_tag(path: str | os.PathLike) -> str:
    """The tag (sixth field) of the last line of a run that ``rank.run_file`` has read (six fields a
    line, no comment): read from the file's end (a gzip file: to its end)."""
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
        if not gzipped:
            size = f.seek(0, os.SEEK_END)
            step = _TAIL
            while True:
                start = max(size - step, 0)
                f.seek(start)
                tail = f.read(size - start)
                line = _last_line(tail, whole=start == 0)
                if line is not None or start == 0:
                    return line or ""
                step *= 4
    last, carry, first = None, b"", True
    with open_input(path) as f:
        while block := f.read(1 << 20):
            if first and block.startswith(_BOM):
                block = block[3:]
            first = False
            buf = carry + block
            cut = buf.rfind(b"\n") + 1
            last = _last_line(buf[:cut], whole=True) or last
            carry = buf[cut:]
    return _last_line(carry, whole=True) or last or ""


def _last_line(tail: bytes, whole: bool) -> str | None:
    """The tag of the last non-blank line among ``tail``'s complete lines (all of them when ``whole``:
    the tail starts the file); None when the last line may start before the tail."""
    pieces = tail.split(b"\n")
    for i in range(len(pieces) - 1, -1 if whole else 0, -1):
        text = pieces[i].strip()
        if text:
            if i == 0 and text.startswith(_BOM):
                text = text[3:]
            return text.split()[5].decode("utf-8")
    return None
