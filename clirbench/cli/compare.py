"""``clirbench compare A.json B.json``: paired comparison of two results on the same pool, the
queries that changed most (``--flips N``), as text, JSON or a LaTeX table."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..util import checks
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError
from .args import check_outputs, split_list

__all__ = ["add_compare_parser", "cmd_compare", "FORMATS"]

FORMATS = ("text", "json", "latex")


def add_compare_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``compare`` to the ``clirbench`` subparsers; returns its parser."""
    from ..display.paper import CI_STYLES  # lazy: numpy

    p = subparsers.add_parser("compare", help="paired comparison of two results on the same pool")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--measures", default=None, help="comma list (default: all common measures)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--permutations", type=checks.resample_count, default=10000)
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("--correction", choices=checks.CORRECTIONS, default=checks.CORRECTIONS[0],
                   help="multiple-testing correction over the measures compared (default holm)")
    p.add_argument("--format", choices=FORMATS, default=None, help="text (default), json or latex (booktabs)")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument("--ci", choices=CI_STYLES, default=CI_STYLES[0],
                   help="latex: the interval as ± half its length (pm, default) or [low, high] (bracket)")
    p.add_argument("--flips", type=checks.int_in(1, 1_000_000), default=None, metavar="N",
                   help="list the N queries whose value changes most, with texts and ranks of relevant documents")
    p.add_argument("--flip-measure", default=None,
                   help="the measure of --flips (default MaxR when compared, else the first measure compared)")
    p.add_argument("--flips-tsv", default=None, metavar="PATH", help="also write the flips as TSV")
    p.add_argument("--data-dir", default=None, help="the task's data, for the query texts of --flips "
                                                    "(default: where the task finds it, e.g. the embedded XQuAD)")
    p.set_defaults(handler=cmd_compare)
    return p


def cmd_compare(args) -> int:
    from ..stats.paired import compare, format_comparison  # lazy: numpy

    fmt = args.format or ("json" if args.json else "text")
    if args.json and fmt != "json":
        raise ClirbenchError(f"--json and --format {fmt} disagree; give one of them")
    if args.flips is None and (args.flips_tsv or args.flip_measure):
        raise ClirbenchError("--flips-tsv and --flip-measure need --flips N")
    if args.flips_tsv:  # never over an input: a result, its per-query table or its ranks table
        check_outputs({"--flips-tsv": args.flips_tsv}, {"A": _inputs(args.a), "B": _inputs(args.b)})
    report = compare(args.a, args.b, measures=split_list(args.measures, "--measures"), resamples=args.resamples,
                     seed=args.seed, permutations=args.permutations, correction=args.correction)
    found = None
    if args.flips is not None:
        from ..stats.flips import default_flip_measure, flips, flips_tsv  # lazy: numpy

        measure = args.flip_measure or default_flip_measure(list(report.measures))
        found = flips(args.a, args.b, args.flips, measure, args.data_dir)
        if args.flips_tsv:
            write_text_atomic(args.flips_tsv, flips_tsv(found))
    if fmt == "json":
        out = report.to_dict()
        if found is not None:
            out["flips"] = found.to_dict()
        print(json.dumps(out, indent=2))
        return 0
    if fmt == "latex":
        from ..display.paper import comparison_table  # lazy: numpy

        print(comparison_table(report, "latex", args.ci))
    else:
        print(format_comparison(report))
    if found is not None:
        from ..stats.flips import format_flips  # lazy: numpy

        text = format_flips(found)
        print("\n" + ("\n".join("% " + line for line in text.splitlines()) if fmt == "latex" else text))
    return 0


def _inputs(path: str) -> list:
    """A result file and the tables beside it that compare and --flips read."""

    from ..results.files import ranks_name, read_result  # lazy: numpy

    path = Path(path)
    tables = (read_result(path).per_query_file, ranks_name(path))
    return [path, *(path.parent / name for name in tables if name)]
