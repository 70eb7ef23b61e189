"""``clirbench leaderboard build | submit | show | html``: leaderboards from result files."""
from __future__ import annotations

import argparse

__all__ = ["add_leaderboard_parser", "cmd_leaderboard"]


def add_leaderboard_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``leaderboard`` (build, submit, show, html) to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("leaderboard", help="build, submit to, show and render leaderboards/<task>.json")
    sub = p.add_subparsers(dest="leaderboard_command", parser_class=type(p))
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", default="leaderboards", help="leaderboard folder (default: leaderboards)")
    for name, helptext, arg, meta in (
            ("build", "validate and merge every result file under RESULTS_DIR", "results_dir", "RESULTS_DIR"),
            ("submit", "validate one result file (and its per-query table) and merge it", "result", "RESULT.json")):
        s = sub.add_parser(name, help=helptext, parents=[common])
        s.add_argument(arg, metavar=meta)
        s.add_argument("--data-dir", default=None,
                       help="the task's local data, to check qrels of pools the leaderboard does not list yet")
        s.add_argument("--command", dest="provenance", default=None, help="the command that produced the results (kept as provenance)")
        s.add_argument("--replace", action="store_true",
                       help="replace an entry of the same system and pool that has other values (prints old → new), "
                            "or a system listed with another model revision or prompts")
    s = sub.add_parser("show", help="print the ranked tables of a task", parents=[common])
    s.add_argument("task")
    s.add_argument("--scenario", default=None)
    s.add_argument("--measure", default=None)
    _add_correction(s)
    _add_table_options(s)
    s = sub.add_parser("html", help="write one self-contained HTML page per leaderboard", parents=[common])
    s.add_argument("--out", required=True, help="output folder (index.html and one page per task, <task>.html)")
    s.add_argument("--task", action="append", default=None, help="only this task (repeatable)")
    _add_correction(s)
    p.set_defaults(handler=cmd_leaderboard)
    return p


def _add_correction(parser) -> None:
    from .. import checks

    parser.add_argument("--correction", choices=checks.CORRECTIONS, default=checks.CORRECTIONS[0],
                        help="multiple-testing correction (default holm) of the significance groups' pairwise "
                             "p-values (one family per scenario: every pair of systems × every measure) and, "
                             "with --baseline, of the tests against it (every system × every board shown)")


def _add_table_options(s) -> None:
    """``show``'s paper-table options (``leaderboard/tables.py``)."""
    from ..paper import CI_STYLES, TABLE_FORMATS as FORMATS

    s.add_argument("--format", choices=FORMATS, default="text", help="text (default), markdown, latex or csv")
    s.add_argument("--ci", choices=CI_STYLES, default=CI_STYLES[0],
                   help="markdown/latex: the interval as ± half its length (pm, default) or [low, high] (bracket)")
    s.add_argument("--baseline", default=None, metavar="SYSTEM",
                   help="mark (†) systems significantly different from SYSTEM after correction")


def cmd_leaderboard(args) -> int:
    """Handler: returns the exit code; user errors raise ClirbenchError (one line, exit 2, in cli.main)."""
    from ..errors import ClirbenchError
    from .. import leaderboard as lb

    command = getattr(args, "leaderboard_command", None)
    from ..leaderboard.submit import describe_changes

    if command == "build":
        changes: list = []
        for path, count in lb.build(args.results_dir, args.dir, args.data_dir, args.provenance, args.replace,
                                    changes).items():
            print(f"{path}: {count} results merged")
        for system, pid, what, old, new in changes:
            print(f"replaced {system} on {pid}: {describe_changes([(what, old, new)])}")
    elif command == "submit":
        path, sub = lb.submit(args.result, args.dir, args.data_dir, args.provenance, args.replace)
        if sub.changes:
            print(f"{path}: {sub.system} on {sub.pool_id} replaced")
            for change in sub.changes:
                print(f"  {describe_changes([change])}")
        else:
            print(f"{path}: {sub.system} on {sub.pool_id} {'merged' if sub.merged else 'already there (unchanged)'}")
    elif command == "show" and args.format != "text":
        from ..leaderboard.tables import render

        print(render(args.task, args.dir, args.scenario, args.measure, args.format, args.ci, args.baseline,
                     args.correction))
    elif command == "show":
        if args.baseline is not None:
            raise ClirbenchError("--baseline marks significant differences in --format markdown, latex or csv")
        print(lb.show(args.task, args.dir, args.scenario, args.measure, args.correction))
    elif command == "html":
        for page in lb.html(args.out, args.dir, args.task, args.correction):
            print(page)
    else:
        raise ClirbenchError("clirbench leaderboard: expected a subcommand: build, submit, show or html")
    return 0
