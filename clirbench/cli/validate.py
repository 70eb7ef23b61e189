"""``clirbench validate``: check every task card, and the data of each task found locally."""
from __future__ import annotations

import argparse
import sys

from ..tasks import card as cards  # cards.cards_dir is looked up at call time (tests point it elsewhere)
from ..tasks.validate import validate
from .args import EXIT_USAGE

__all__ = ["add_validate_parser", "cmd_validate"]


def add_validate_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``validate`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("validate", help="check every task card, and the data of each task found locally")
    p.add_argument("--data-dir", help="a data folder holding <task id>/ subfolders (else $CLIRBENCH_DATA_DIR)")
    p.add_argument("--no-data", action="store_true", help="check the cards only, load no data")

    p.set_defaults(handler=cmd_validate)
    return p


def cmd_validate(args) -> int:
    problems, notes = validate(args.data_dir, load_data=not args.no_data)
    for note in notes:
        print(f"note: {note}")
    for problem in problems:
        print(f"clirbench: validate: {problem}", file=sys.stderr)
    if problems:
        return EXIT_USAGE
    print(f"ok: {len(list(cards.cards_dir().glob('*.yaml')))} task cards valid")
    return 0
