"""What the subcommand modules share: the parser class (one-line errors, exit code 2) and value splitters."""
from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from ..util.errors import ClirbenchError
from ..util.redact import redact

__all__ = ["EXIT_USAGE", "Parser", "split_list", "task_options", "check_outputs"]

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    epilog_from = None  # a function giving the epilog when help is shown (lazy registry lookups)

    def error(self, message: str) -> None:  # one line instead of usage + message; no secret echoed
        self.exit(EXIT_USAGE, f"clirbench: error: {redact(message)}\n")

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()


def split_list(value: str | None, option: str) -> list[str] | None:
    """The items of a comma list given to ``option``; None when it is not given. An empty item (``,``,
    ``a,,b``, a trailing comma) is an error, not a fall back to the default. A comma inside
    parentheses is part of its item (ir_measures' ``P(rel=2,judged_only=True)@5``)."""

    if value is None:
        return None
    items = [v.strip() for v in re.split(r",(?![^()]*\))", value)]
    if not all(items):
        raise ClirbenchError(f"{option} {value[:60]!r}: an empty item in the comma list")
    return items


def check_outputs(outputs: dict[str, str | None], inputs: dict[str, object]) -> None:
    """Refuse an output path (option -> path) that is one of the inputs (option -> path or paths),
    or another output: it would be overwritten (``evaluate --output run.txt``)."""

    def same(a, b) -> bool:
        try:
            return os.path.samefile(a, b)
        except OSError:
            return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()

    seen: list[tuple[str, object]] = []
    for option, value in inputs.items():
        for path in (value if isinstance(value, (list, tuple)) else [value]):
            if path is not None:
                seen.append((option, path))
    for option, path in outputs.items():
        if path is None:
            continue
        for other, known in seen:
            if same(path, known):
                raise ClirbenchError(f"{option} {path}: the same file as {other}; it would be overwritten")
        seen.append((option, path))


def task_options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--task-option {pair!r}: expected KEY=VALUE")
        options[key.replace("-", "_")] = value
    return options
