"""Line-oriented data files (JSON Lines, TSV, TREC, bitext) read with one-line ``file:line`` errors,
for every loader. Lines end at ``\\n`` or ``\\r\\n`` only (``str.splitlines`` would also break at
U+2028, U+0085, form feeds...); a carriage return anywhere else is an error naming its line (a file
with old Mac CR-only line ends would otherwise be one long line, its records glued together). No
line is longer than :data:`MAX_LINE_BYTES` (an endless file such as ``/dev/zero`` stops there
instead of filling memory)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Iterator

from ..util.errors import DataNotFoundError, MalformedDataError
from ..util.strict import loads_json

_BOM = b"\xef\xbb\xbf"
#: longest line of any line-oriented input file (a BEIR document, a bitext segment pair, ...)
MAX_LINE_BYTES = 16 << 20


def numbered_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(line number, line) for every line of a UTF-8 text file; one-line errors for a missing file
    or text that is not UTF-8 (naming the line that holds it). A byte-order mark at the start is
    dropped, so it never becomes part of the first id or header."""
    path = Path(path)
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise DataNotFoundError(f"{path}: no such file") from None
    with handle:
        yield from decode_lines(handle, path)


def raw_lines(handle: IO[bytes], path: str | os.PathLike) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of an open binary file (plain or gzip), lines ending at ``\n``; a line
    longer than :data:`MAX_LINE_BYTES`, or holding a carriage return that is not its ``\\r\\n``
    ending, is a one-line error naming it."""
    lineno = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise MalformedDataError(f"{path}:{lineno}: a line longer than {MAX_LINE_BYTES >> 20} MiB "
                                     f"(not a text file of lines?)")
        cr = raw.find(b"\r")
        if cr >= 0 and (cr != len(raw) - 2 or raw[-1] != 10):
            raise MalformedDataError(f"{path}:{lineno}: a carriage return (\\r) not followed by a line feed "
                                     f"(old Mac CR-only line ends?); lines must end with \\n or \\r\\n")
        yield lineno, raw


def decode_lines(handle: IO[bytes], path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Number and decode the byte lines of an open binary file (plain or gzip) as UTF-8; a BOM at
    the start is dropped and ``\r\n`` ends a line like ``\n``."""
    for lineno, raw in raw_lines(handle, path):
        if lineno == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedDataError(f"{path}:{lineno}: not valid UTF-8") from None
        yield lineno, (line[:-2] + "\n" if line.endswith("\r\n") else line)


def json_objects(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON Lines file.

    Errors are one line naming ``file:line``: a missing file, invalid JSON, a duplicate key, nesting
    deeper than :data:`clirbench.util.strict.MAX_JSON_DEPTH`, a value that is not an object, text that
    is not UTF-8.
    """
    for lineno, line in numbered_lines(path):
        if not line.strip():
            continue
        obj = loads_json(line, f"{path}:{lineno}")
        if not isinstance(obj, dict):
            raise MalformedDataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj
