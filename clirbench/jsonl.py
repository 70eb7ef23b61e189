"""JSON Lines reading with one-line ``file:line`` errors, shared by every loader that reads JSONL."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from .errors import DataNotFoundError, MalformedDataError


def json_objects(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON Lines file.

    Errors are one line naming ``file:line``: a missing file, invalid JSON, a value that is not an
    object, text that is not UTF-8.
    """
    path = Path(path)
    try:
        handle = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise DataNotFoundError(f"{path}: no such file") from None
    with handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise MalformedDataError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
                if not isinstance(obj, dict):
                    raise MalformedDataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
                yield lineno, obj
        except UnicodeDecodeError:
            raise MalformedDataError(f"{path}:{lineno + 1}: not valid UTF-8") from None
