"""``clirbench psq train``: build a PSQ translation table from a parallel corpus."""
from __future__ import annotations

import argparse
import time

from ..util.checks import iteration_count, probability
from ..util.errors import ClirbenchError
from ..util.optional import require
from ..util.strict import language_tag
from .args import check_outputs

__all__ = ["add_psq_parser", "cmd_psq"]


def add_psq_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``psq`` (with its ``train`` subcommand) to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("psq", help="probabilistic structured queries: build translation tables")
    sub = p.add_subparsers(dest="psq_command", parser_class=type(p))
    t = sub.add_parser("train", help="train a table (IBM Model 1) from a bitext for psq:<table>")
    t.add_argument("--bitext", required=True, nargs="+", metavar="FILE",
                   help="UTF-8 files (.gz allowed) of 'source<TAB>target' lines, source = document language")
    t.add_argument("--src", required=True, help="document language of the table (source side), e.g. fr")
    t.add_argument("--tgt", required=True, help="query language of the table (target side), e.g. en")
    t.add_argument("--out", required=True, help="table to write, e.g. fr-en.table.json.gz (+ .meta.json beside it)")
    t.add_argument("--iterations", type=iteration_count, default=10, help="EM iterations (default 10, at most 1,000)")
    t.add_argument("--min-prob", type=probability, default=1e-4, help="drop translations below this (default 1e-4)")
    p.set_defaults(handler=cmd_psq)
    return p


def cmd_psq(args) -> int:
    """Handler: returns the exit code; user errors raise ClirbenchError (one line, exit 2, in cli.main)."""

    if getattr(args, "psq_command", None) != "train":
        raise ClirbenchError("clirbench psq: expected a subcommand: train")
    from ..retrievers.analyzers import require_backends  # lazy: numpy
    from ..retrievers.psq.table import meta_path
    from ..retrievers.psq.train import read_bitext, train_table  # lazy: numpy

    require_backends("psq train")
    require("scipy.sparse", purpose="psq train")
    t0 = time.perf_counter()

    args.src, args.tgt = language_tag(args.src, "--src"), language_tag(args.tgt, "--tgt")

    check_outputs({"--out": args.out, "--out (its sidecar)": str(meta_path(args.out))}, {"--bitext": args.bitext})
    src, tgt = read_bitext(args.bitext)
    result = train_table(src, tgt, args.src, args.tgt, args.out, iterations=args.iterations,
                         min_prob=args.min_prob, corpus_name=", ".join(args.bitext))
    entries = sum(len(v) for v in result.table.values())
    if result.pairs < len(src):  # said, not dropped without a word
        print(f"note: {len(src) - result.pairs} of {len(src)} segment pairs have no index terms on one side "
              f"after analysis (only stopwords or punctuation) and were left out")
    print(f"{args.out}: {len(result.table)} {args.src} terms, {entries} translations into {args.tgt} "
          f"from {result.pairs} segment pairs, {result.iterations} IBM Model 1 iterations "
          f"(log-likelihood {result.log_likelihood[0]:.1f} -> {result.log_likelihood[-1]:.1f}), "
          f"{time.perf_counter() - t0:.1f} s; sidecar {meta_path(args.out)}")
    print(f"use it as --model psq:{args.out}")
    return 0
