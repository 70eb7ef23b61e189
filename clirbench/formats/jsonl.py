"""Line-oriented data files (JSON Lines, TSV) read with one-line ``file:line`` errors, for every loader."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import DataNotFoundError, MalformedDataError
from ..strict import loads_json

_BOM = b"\xef\xbb\xbf"


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


def decode_lines(handle: Iterable[bytes], path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Number and decode the byte lines of an open binary file (plain or gzip) as UTF-8; a BOM at
    the start is dropped and ``\r\n`` ends a line like ``\n``."""
    for lineno, raw in enumerate(handle, start=1):
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
    deeper than :data:`clirbench.strict.MAX_JSON_DEPTH`, a value that is not an object, text that
    is not UTF-8.
    """
    for lineno, line in numbered_lines(path):
        if not line.strip():
            continue
        obj = loads_json(line, f"{path}:{lineno}")
        if not isinstance(obj, dict):
            raise MalformedDataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj
