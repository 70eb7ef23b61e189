"""TREC qrels and run files (plain or gzip), read and written the way trec_eval reads them.

qrels: ``qid iter docid rel`` (rel an integer). run: ``qid Q0 docid rank score tag``; the rank,
Q0 and tag columns are ignored, as trec_eval ignores them. Fields are whitespace separated; blank
lines are skipped; a byte-order mark at the start is dropped. Grades are ASCII integers and scores
ASCII numbers (trec_eval's ``atoi``/``atof`` would read ``١`` as 0, Python as 1: refused). A malformed
line raises ``ValueError("<file>:<line>: ...")``. A (qid, docid)
pair that occurs twice in a run is an error (trec_eval stops on duplicate docnos too); in qrels, a
repeated pair with the same grade is accepted and one with a different grade is an error.
"""
from __future__ import annotations

import gzip
import math
import os
import zlib
from pathlib import Path
from typing import IO, Iterator, Mapping

from ..atomic import write_bytes_atomic
from ..strict import MAX_GRADE, ascii_int, bad_character
from .jsonl import raw_lines

__all__ = ["read_qrels", "add_qrels_line", "read_run", "add_run_line", "write_run", "write_qrels", "line_fields"]


def _open_binary(path: str | os.PathLike) -> IO[bytes]:
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def line_fields(path: str | os.PathLike) -> Iterator[tuple[int, list[str]]]:
    """(line number, whitespace-separated fields) of each non-blank line, checked as described above."""
    with _open_binary(path) as f:
        try:
            for no, raw in raw_lines(f, path):
                if no == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a leading BOM is not part of the first id
                    raw = raw[3:]
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise ValueError(f"{path}:{no}: not UTF-8 text ({e.reason})") from None
                if "\ufeff" in line:  # a second BOM, or one mid-file: it would become part of an id
                    raise ValueError(f"{path}:{no}: a byte-order mark (U+FEFF) inside the line")
                fields = line.split()
                bad = bad_character("".join(fields))
                if bad:
                    raise ValueError(f"{path}:{no}: the forbidden character {bad} (a control character) "
                                     f"inside a field")
                if fields:
                    yield no, fields
        except (OSError, EOFError, zlib.error) as e:
            raise ValueError(f"{path}: cannot read ({e})") from None


def read_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` from ``qid iter docid rel`` lines."""
    qrels: dict[str, dict[str, int]] = {}
    for no, f in line_fields(path):
        add_qrels_line(qrels, f, path, no)
    return qrels


def add_qrels_line(qrels: dict[str, dict[str, int]], f, path, no: int, error: type = ValueError) -> None:
    """Put one qrels line's fields ``f`` (``qid iter docid rel``) into ``qrels``: four fields, an
    integer grade within ``MAX_GRADE``, one grade per document; else ``error`` naming file and line."""
    if len(f) != 4:
        raise error(f"{path}:{no}: expected 4 fields 'qid iter docid rel', got {len(f)}")
    try:
        grade = ascii_int(f[3], -MAX_GRADE, MAX_GRADE)
    except ValueError as exc:
        raise error(f"{path}:{no}: relevance {_grade_problem(f[3], exc)}") from None
    q = qrels.setdefault(f[0], {})
    if q.get(f[2], grade) != grade:
        raise error(f"{path}:{no}: doc {f[2]!r} of query {f[0]!r} judged twice ({q[f[2]]} and {grade})")
    q[f[2]] = grade


def _grade_problem(text: str, exc: ValueError) -> str:
    return f"{text!r} is not an integer" if "not an ASCII integer" in str(exc) else str(exc)


def read_run(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` from ``qid Q0 docid rank score tag`` lines."""
    run: dict[str, dict[str, float]] = {}
    for no, f in line_fields(path):
        if len(f) != 6:
            raise ValueError(f"{path}:{no}: expected 6 fields 'qid Q0 docid rank score tag', got {len(f)}")
        add_run_line(run, f, path, no)
    return run


def add_run_line(run: dict[str, dict[str, float]], f, path, no: int, error: type = ValueError) -> None:
    """Put one run line's fields ``f`` (``qid Q0 docid rank score tag ...``) into ``run``: the score a
    finite-or-infinite ASCII number, each document once per query; else ``error`` naming file and line."""
    try:
        if not f[4].isascii() or "_" in f[4]:
            raise ValueError
        score = float(f[4])
    except ValueError:
        raise error(f"{path}:{no}: score {f[4][:40]!r} is not a number") from None
    if math.isnan(score):
        raise error(f"{path}:{no}: score is NaN")
    q = run.setdefault(f[0], {})
    if f[2] in q:
        raise error(f"{path}:{no}: doc {f[2]!r} retrieved twice for query {f[0]!r}")
    q[f[2]] = score


def _check_token(kind: str, s: str) -> str:
    if not s or any(c.isspace() for c in s) or bad_character(s):
        raise ValueError(f"{kind} {s!r} is empty or contains whitespace or control characters; "
                         f"TREC files cannot hold it")
    return s


def _write_atomic(path: str | os.PathLike, text: str) -> None:
    data = text.encode("utf-8")
    if Path(path).name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    write_bytes_atomic(path, data)


def write_run(path: str | os.PathLike, run: Mapping[str, Mapping[str, float]], tag: str = "clirbench") -> None:
    """Write a run in trec_eval order (score desc, doc id desc), ranks 1..n; ``.gz`` compresses."""
    _check_token("tag", tag)
    out = []
    for qid, docs in run.items():
        _check_token("query id", qid)
        ranked = sorted(((float(s), _check_token("doc id", d)) for d, s in docs.items()), reverse=True)
        for i, (s, d) in enumerate(ranked, 1):
            if math.isnan(s):
                raise ValueError(f"NaN score for doc {d!r} of query {qid!r}")
            out.append(f"{qid} Q0 {d} {i} {s!r} {tag}\n")
    _write_atomic(path, "".join(out))


def write_qrels(path: str | os.PathLike, qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Write ``qid 0 docid rel`` lines; ``.gz`` compresses."""
    out = [f"{_check_token('query id', q)} 0 {_check_token('doc id', d)} {int(g)}\n"
           for q, docs in qrels.items() for d, g in docs.items()]
    _write_atomic(path, "".join(out))
