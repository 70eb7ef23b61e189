"""``clirbench trec_eval``: NIST trec_eval's command line and text output (docs/commands.md)."""
from __future__ import annotations

import argparse

from ..formats.trec import check_inputs
from ..util import checks
from ..util.errors import ClirbenchError
from ..util.strict import MAX_GRADE

__all__ = ["add_trec_eval_parser", "cmd_trec_eval"]


def add_trec_eval_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``trec_eval`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("trec_eval", help="a drop-in for NIST trec_eval: same options, measures and output",
                              description="trec_eval [-q] [-c] [-n] [-l N] [-M N] [-J] [-N N] {-m measure[.params]} "
                                          "qrels run")
    p.add_argument("-q", "--query_eval_wanted", action="store_true", help="per-query lines too")
    p.add_argument("-m", "--measure", action="append", default=None, metavar="MEASURE[.PARAMS]",
                   help="a measure, 'official' (default), 'all_trec' or 'set'; repeatable")
    p.add_argument("-c", "--complete_rel_info_wanted", action="store_true",
                   help="average over every judged query (a query missing from the run scores 0)")
    p.add_argument("-n", "--nosummary", action="store_true", help="no summary ('all') lines")
    # ASCII integers (Python's int would read "1_0" as 10 where trec_eval's atol reads 1, and "١" as 1)
    p.add_argument("-l", "--level_for_rel", type=checks.int_in(-MAX_GRADE, MAX_GRADE), default=1, metavar="N",
                   help="judgements >= N are relevant (default 1)")
    p.add_argument("-M", "--Max_retrieved_per_topic", type=checks.int_in(0, checks.MAX_LONG), default=None, metavar="N",
                   help="use the top N documents of each query")
    p.add_argument("-J", "--Judged_docs_only", action="store_true", help="drop unjudged documents first")
    p.add_argument("-N", "--Number_docs_in_coll", type=checks.int_in(0, checks.MAX_LONG), default=0, metavar="N",
                   help="collection size (utility)")
    p.add_argument("-R", "--Rel_info_format", default="qrels", help="only 'qrels'")
    p.add_argument("-T", "--Results_format", default="trec_results", help="only 'trec_results'")
    p.add_argument("--ci", action="store_true", help="add each averaged summary's 95%% bootstrap interval "
                                                      "(two more tab-separated fields)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("qrels", help="qrels file (plain or gzip; - reads standard input)")
    p.add_argument("run", help="run file (plain or gzip; - reads standard input)")
    p.set_defaults(handler=cmd_trec_eval)
    return p


def cmd_trec_eval(args) -> int:
    from ..trec_eval import Options, evaluate_files, intervals  # lazy: numpy
    from ..trec_eval.report import lines

    if args.Rel_info_format != "qrels" or args.Results_format != "trec_results":
        raise ClirbenchError("-R/-T: only the qrels and trec_results formats are read")
    check_inputs(args.qrels, args.run)  # "-" is standard input (either one), read once
    options = Options(per_query=args.query_eval_wanted, complete=args.complete_rel_info_wanted,
                      summary=not args.nosummary, rel_level=args.level_for_rel,
                      max_ret=args.Max_retrieved_per_topic, judged_only=args.Judged_docs_only,
                      num_docs=args.Number_docs_in_coll)
    report = evaluate_files(args.qrels, args.run, args.measure or ["official"], options)
    ci = intervals(report, args.resamples, args.seed) if args.ci else None
    text = "\n".join(lines(report, options, ci))
    if text:  # -n without -q prints nothing, as trec_eval (not an empty line)
        print(text)
    return 0
