"""What the subcommand modules share: the parser class (one-line errors, exit code 2) and value splitters."""
from __future__ import annotations

import argparse

__all__ = ["EXIT_USAGE", "Parser", "split_list", "task_options"]

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    epilog_from = None  # a function giving the epilog when help is shown (lazy registry lookups)

    def error(self, message: str) -> None:  # one line instead of usage + message
        self.exit(EXIT_USAGE, f"clirbench: error: {message}\n")

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()


def split_list(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def task_options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--task-option {pair!r}: expected KEY=VALUE")
        options[key.replace("-", "_")] = value
    return options
