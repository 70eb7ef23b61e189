"""``clirbench evaluate``: score a TREC run against TREC qrels, with CIs: the table ``run`` prints
(default) or the JSON report (``--format json``, ``--json``; ``--output`` always writes the JSON)."""
from __future__ import annotations

import argparse
import json

from ..util import checks
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError
from .args import check_outputs, split_list

__all__ = ["add_evaluate_parser", "cmd_evaluate", "FORMATS"]

FORMATS = ("table", "json")


def add_evaluate_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``evaluate`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("evaluate", help="score a TREC run against TREC qrels, with CIs (a table, or JSON)")
    p.add_argument("--qrels", required=True, help="TREC qrels file (plain or gzip; - reads standard input)")
    p.add_argument("--run", required=True, help="TREC run file (plain or gzip; - reads standard input)")
    p.add_argument("--measures", default=None, help="comma list (default: the standard set)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="table (default: value [95%% CI] per measure, as run prints) or json (full precision)")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument("--output", default=None, help="also write the JSON report here (atomically)")
    p.add_argument("--per-query", default=None, metavar="FILE",
                   help="also write each query's values: FILE.tsv (query_id, measure, value) or FILE.jsonl")

    p.set_defaults(handler=cmd_evaluate)
    return p


def cmd_evaluate(args) -> int:
    from ..trec_files import evaluate_files  # lazy: numpy

    fmt = args.format or ("json" if args.json else "table")
    if args.json and fmt != "json":
        raise ClirbenchError(f"--json and --format {fmt} disagree; give one of them")
    check_outputs({"--output": args.output, "--per-query": args.per_query}, {"--qrels": args.qrels, "--run": args.run})

    evaluation = evaluate_files(args.qrels, args.run, measures=split_list(args.measures, "--measures"),
                                resamples=args.resamples, seed=args.seed, per_query_path=args.per_query)
    report = {"qrels": str(args.qrels), "run": str(args.run), **evaluation.to_dict()}
    text = json.dumps(report, indent=2)
    if args.output:
        write_text_atomic(args.output, text + "\n")
    if fmt == "json":
        print(text)
    else:
        from ..display.report import format_evaluation  # lazy: numpy

        print(format_evaluation(report))
    return 0
