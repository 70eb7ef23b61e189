"""``clirbench compare A.json B.json``: paired comparison of two results on the same pool."""
from __future__ import annotations

import argparse
import json

from .. import checks
from .args import split_list

__all__ = ["add_compare_parser", "cmd_compare"]


def add_compare_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``compare`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("compare", help="paired comparison of two results on the same pool")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--measures", default=None, help="comma list (default: all common measures)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--permutations", type=checks.resample_count, default=10000)
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("--correction", choices=checks.CORRECTIONS, default=checks.CORRECTIONS[0],
                   help="multiple-testing correction over the measures compared (default holm)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_compare)
    return p


def cmd_compare(args) -> int:
    from ..stats.paired import compare, format_comparison

    report = compare(args.a, args.b, measures=split_list(args.measures, "--measures"), resamples=args.resamples,
                     seed=args.seed, permutations=args.permutations, correction=args.correction)
    print(json.dumps(report.to_dict(), indent=2) if args.json else format_comparison(report))
    return 0
