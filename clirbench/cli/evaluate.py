"""``clirbench evaluate``: score a TREC run against TREC qrels, with CIs (JSON out)."""
from __future__ import annotations

import argparse
import json

from .. import checks
from .args import split_list

__all__ = ["add_evaluate_parser", "cmd_evaluate"]


def add_evaluate_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``evaluate`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("evaluate", help="score a TREC run against TREC qrels, with CIs (JSON out)")
    p.add_argument("--qrels", required=True, help="TREC qrels file (plain or gzip; - reads standard input)")
    p.add_argument("--run", required=True, help="TREC run file (plain or gzip; - reads standard input)")
    p.add_argument("--measures", default=None, help="comma list (default: the standard set)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("--output", default=None, help="write the JSON here (atomically) as well as to stdout")
    p.add_argument("--per-query", default=None, metavar="FILE",
                   help="also write each query's values: FILE.tsv (query_id, measure, value) or FILE.jsonl")

    p.set_defaults(handler=cmd_evaluate)
    return p


def cmd_evaluate(args) -> int:
    from ..evaluate import evaluate_files
    from ..atomic import write_text_atomic
    from .args import check_outputs

    check_outputs({"--output": args.output, "--per-query": args.per_query}, {"--qrels": args.qrels, "--run": args.run})

    evaluation = evaluate_files(args.qrels, args.run, measures=split_list(args.measures, "--measures"),
                                resamples=args.resamples, seed=args.seed, per_query_path=args.per_query)
    text = json.dumps({"qrels": str(args.qrels), "run": str(args.run), **evaluation.to_dict()}, indent=2)
    if args.output:
        write_text_atomic(args.output, text + "\n")
    print(text)
    return 0
