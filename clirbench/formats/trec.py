r"""TREC qrels and run files (plain or gzip), read the way trec_eval reads them: the one reader of
``clirbench evaluate`` (and its pyarrow fast path, ``rank.run_file``) and ``clirbench trec_eval``.

qrels: ``qid iter docid rel`` (rel an integer; iter ignored). run: ``qid Q0 docid rank score tag``,
fields after the tag ignored; Q0 and rank ignored, as trec_eval ignores them; the run id is the tag
of the last line. As trec_eval: fields are separated by ASCII blanks only (space, tab, vertical tab,
form feed: C's ``isspace``), so a no-break space, U+3000 or U+2003 is part of an id; a line whose
first field starts with ``#`` is a comment; a document judged twice for one query (even with the
same grade) or retrieved twice is an error. ``-`` is standard input, read once (trec_eval 10 reads a
run from ``-``; clirbench reads the qrels from it too). Stricter than trec_eval: grades are ASCII
integers and scores ASCII numbers (trec_eval's ``atol``/``atof`` would read ``x`` as 0 and ``١``
as 0, Python ``١`` as 1); ids hold no control character, line separator or U+FEFF (``bad_character``);
a carriage return must end a line as ``\r\n`` (``jsonl.raw_lines``); a file without a judgement or
a result is an error. Kinder: blank lines are skipped (trec_eval calls one in qrels malformed) and a
byte-order mark at the start is dropped. A malformed line raises ``MalformedDataError("<file>:<line>:
...")``, a ``ValueError``.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Mapping

from ..util.atomic import write_bytes_atomic
from ..util.errors import MalformedDataError
from ..util.strict import MAX_GRADE, ascii_int, bad_character
from .jsonl import MAX_LINE_BYTES, raw_lines

__all__ = ["TrecRun", "read_qrels", "read_run", "read_trec_run", "write_run", "write_qrels", "open_input",
           "is_stream", "rereadable", "check_inputs"]

#: the bytes that separate fields: C's isspace in the C locale, as trec_eval (and ``bytes.split()``)
BLANKS = " \t\n\v\f\r"
_BLANK_RUN = re.compile("[ \t\n\v\f\r]+")
STDIN = "-"


@dataclass(frozen=True)
class TrecRun:
    """A run file: ``{qid: {docid: score}}`` and the run id (the tag of its last line)."""

    scores: Mapping[str, Mapping[str, float]]
    runid: str


def _shown(path, name=None) -> str:
    """How errors name the file: ``name`` (else ``path``), ``-`` as ``<stdin>``."""
    shown = path if name is None else name
    return "<stdin>" if os.fspath(shown) == STDIN else str(shown)


class _Prefixed(io.RawIOBase):
    """``head`` then the rest of ``raw``: the bytes read to see whether a stream is gzip, given back."""

    def __init__(self, head: bytes, raw: IO[bytes]) -> None:
        self.head, self.raw = head, raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        return self.raw.readinto(buffer)


@contextlib.contextmanager
def open_input(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """The bytes of a file, gunzipped when they start with gzip's magic, from one open: a pipe or
    FIFO is read once (never opened again to sniff); ``-`` is standard input (left open)."""
    if os.fspath(path) == STDIN:
        raw, owned = sys.stdin.buffer, False
    else:
        raw, owned = open(path, "rb"), True
    try:
        head = raw.read(2)  # up to 2 bytes, waiting for a slow writer
        data = io.BufferedReader(_Prefixed(head, raw), 1 << 16)
        if head == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=data, mode="rb") as unzipped:
                yield unzipped
        else:
            yield data
    finally:
        if owned:
            raw.close()


def _stream_id(path) -> tuple[int, int] | None:
    """(device, inode) of a path that is not a regular file (``-``: standard input); None otherwise
    (also when it cannot be looked at: the reader names the problem)."""
    try:
        st = os.fstat(sys.stdin.fileno()) if os.fspath(path) == STDIN else os.stat(path)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    return None if stat.S_ISREG(st.st_mode) else (st.st_dev, st.st_ino)


def is_stream(path: str | os.PathLike) -> bool:
    """Whether ``path`` is ``-`` (standard input) or not a regular file (a pipe, a FIFO, a device):
    its bytes can be read once."""
    return os.fspath(path) == STDIN or _stream_id(path) is not None


def check_inputs(qrels_path, run_path) -> None:
    """Refuse a qrels file and a run that are one stream (both ``-``, or one pipe): it is read once."""
    one = os.fspath(qrels_path) == os.fspath(run_path) == STDIN
    if one or (_stream_id(qrels_path) is not None and _stream_id(qrels_path) == _stream_id(run_path)):
        raise MalformedDataError(f"{_shown(qrels_path)}, {_shown(run_path)}: the qrels and the run are one stream "
                                 f"(standard input?); it can be read once: give one of them as a file")


@contextlib.contextmanager
def rereadable(path: str | os.PathLike) -> Iterator[str | os.PathLike]:
    """``path`` when it is a regular file; else (``-``, a pipe, a FIFO, a device) a temporary copy of
    its bytes, read once, for a reader that may read it twice. On Linux the copy has no name (it is
    reached through ``/proc/self/fd``), so even a killed process leaves no file behind; elsewhere it
    is a named file deleted on exit. Copying stops past a line longer than
    :data:`jsonl.MAX_LINE_BYTES` in a plain stream (``/dev/zero``): the reader then names that line."""
    if not is_stream(path):
        yield path
        return
    with tempfile.TemporaryFile(prefix="clirbench-stream-") as out:
        src = sys.stdin.buffer if os.fspath(path) == STDIN else open(path, "rb")
        try:
            _copy_bounded(src, out)
        finally:
            if src is not sys.stdin.buffer:
                src.close()
        out.flush()
        unnamed = f"/proc/self/fd/{out.fileno()}"
        if os.path.exists(unnamed):
            yield unnamed
            return
        fd, copy = tempfile.mkstemp(prefix="clirbench-stream-")
        try:
            with os.fdopen(fd, "wb") as named:
                out.seek(0)
                shutil.copyfileobj(out, named)
            yield copy
        finally:
            os.unlink(copy)


def _copy_bounded(src: IO[bytes], out: IO[bytes]) -> None:
    """Copy ``src`` to ``out``; a plain (not gzip) stream stops a chunk past a line over the limit."""
    first, since_newline = True, 0
    while True:
        chunk = src.read(1 << 20)
        if not chunk:
            return
        out.write(chunk)
        if first and chunk.startswith(b"\x1f\x8b"):
            shutil.copyfileobj(src, out)
            return
        first = False
        end = chunk.rfind(b"\n")
        since_newline = since_newline + len(chunk) if end < 0 else len(chunk) - end - 1
        if since_newline > MAX_LINE_BYTES:
            return


def _fields(raw: bytes, path, no: int) -> list[str]:
    """The fields of one line, split at ASCII blanks only, each checked; none for a blank line or a
    comment (its first field starts with ``#``; the rest of it is not read)."""
    if no == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a leading BOM is not part of the first id
        raw = raw[3:]
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedDataError(f"{path}:{no}: not UTF-8 text ({e.reason})") from None
    if line.isascii() and "\x1c" not in line and "\x1d" not in line and "\x1e" not in line and "\x1f" not in line:
        fields = line.split()  # str.split splits ASCII at the blanks and at \x1c-\x1f (none here): 3x faster
    else:
        line = line.strip(BLANKS)
        fields = _BLANK_RUN.split(line) if line else []
    if not fields or fields[0].startswith("#"):
        return []
    if "\ufeff" in line:  # a second BOM, or one mid-file: it would become part of an id
        raise MalformedDataError(f"{path}:{no}: a byte-order mark (U+FEFF) inside the line")
    bad = bad_character("".join(fields))
    if bad:
        raise MalformedDataError(f"{path}:{no}: the forbidden character {bad} (a control character or line "
                                 f"separator) inside a field")
    return fields


def _lines(path, name=None) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each line that is neither blank nor a comment (first field ``#...``)."""
    shown = _shown(path, name)
    with open_input(path) as f:
        try:
            for no, raw in raw_lines(f, shown):
                fields = _fields(raw, shown, no)
                if fields:
                    yield no, fields
        except (OSError, EOFError, zlib.error) as e:
            raise MalformedDataError(f"{shown}: cannot read ({e})") from None


def read_qrels(path: str | os.PathLike, name: str | os.PathLike | None = None) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` from ``qid iter docid rel`` lines; ``name`` names the file in errors."""
    quick = _quick_qrels(path)
    return _strict_qrels(path, name) if quick is None else quick


# what the quick qrels path leaves to the strict reader: a control character but tab and line feed
# (a carriage return too), DEL
_QUICK_REFUSED = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
_QUICK_MAX_BYTES = 1 << 30


def _quick_qrels(path) -> dict[str, dict[str, int]] | None:
    """``read_qrels``'s result for a regular file (plain or gzip) of ASCII lines without a control
    character but tab, each blank, a comment or 4 fields with a grade of at most 9 digits (a minus
    sign allowed), no document judged twice; None for anything else, which the strict reader reads
    (and names the line of an error). One split per line, no per-line decoding and checks: 4x faster."""
    if is_stream(path):
        return None
    try:
        with open_input(path) as f:
            data = f.read(_QUICK_MAX_BYTES + 1)
    except (OSError, EOFError, zlib.error):
        return None
    if len(data) > _QUICK_MAX_BYTES or not data.isascii() or _QUICK_REFUSED.search(data):
        return None
    lines = data.decode("ascii").split("\n")
    if max(map(len, lines)) >= MAX_LINE_BYTES:
        return None
    qrels: dict[str, dict[str, int]] = {}
    for line in lines:
        f = line.split()
        if not f or f[0][0] == "#":
            continue
        g = f[-1]
        if len(f) != 4 or not (g.isdigit() and len(g) < 10 or g[0] == "-" and g[1:].isdigit() and len(g) < 11):
            return None
        q = qrels.setdefault(f[0], {})
        if f[2] in q:
            return None
        q[f[2]] = int(g)
    return qrels or None


def _strict_qrels(path, name=None) -> dict[str, dict[str, int]]:
    """``read_qrels`` line by line, every rule checked: the first malformed line is named."""
    shown = _shown(path, name)
    qrels: dict[str, dict[str, int]] = {}
    for no, f in _lines(path, shown):
        if len(f) != 4:
            raise MalformedDataError(f"{shown}:{no}: expected 4 fields 'qid iter docid rel', got {len(f)}")
        try:
            grade = ascii_int(f[3], -MAX_GRADE, MAX_GRADE)
        except ValueError as exc:
            raise MalformedDataError(f"{shown}:{no}: relevance {_grade_problem(f[3], exc)}") from None
        q = qrels.setdefault(f[0], {})
        if f[2] in q:  # trec_eval: "duplicate docs", exit 4, whether or not the grades differ
            raise MalformedDataError(f"{shown}:{no}: doc {f[2]!r} of query {f[0]!r} judged twice "
                                     f"({q[f[2]]} and {grade})")
        q[f[2]] = grade
    if not qrels:
        raise MalformedDataError(f"{shown}: no judgement in the qrels file")
    return qrels


def _grade_problem(text: str, exc: ValueError) -> str:
    return f"{text!r} is not an integer" if "not an ASCII integer" in str(exc) else str(exc)


def read_trec_run(path: str | os.PathLike, name: str | os.PathLike | None = None) -> TrecRun:
    """A ``TrecRun`` from ``qid Q0 docid rank score tag [ignored...]`` lines; ``name`` names the file in errors."""
    shown = _shown(path, name)
    run: dict[str, dict[str, float]] = {}
    tag = None
    for no, f in _lines(path, shown):
        if len(f) < 6:
            raise MalformedDataError(f"{shown}:{no}: expected 6 fields 'qid Q0 docid rank score tag', got {len(f)}")
        try:
            if not f[4].isascii() or "_" in f[4]:
                raise ValueError
            score = float(f[4])
        except ValueError:
            raise MalformedDataError(f"{shown}:{no}: score {f[4][:40]!r} is not a number") from None
        if math.isnan(score):
            raise MalformedDataError(f"{shown}:{no}: score is NaN")
        q = run.setdefault(f[0], {})
        if f[2] in q:
            raise MalformedDataError(f"{shown}:{no}: doc {f[2]!r} retrieved twice for query {f[0]!r}")
        q[f[2]] = score
        tag = f[5]
    if tag is None:
        raise MalformedDataError(f"{shown}: no result line in the run file")
    return TrecRun(run, tag)


def read_run(path: str | os.PathLike, name: str | os.PathLike | None = None) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` of a run file (``read_trec_run`` without the run id)."""
    return dict(read_trec_run(path, name).scores)


def _check_token(kind: str, s: str) -> str:
    if not s or any(c in BLANKS for c in s) or bad_character(s):
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
