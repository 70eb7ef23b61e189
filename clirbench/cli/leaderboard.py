"""``clirbench leaderboard build | submit | show | html``: leaderboards from result files."""
from __future__ import annotations

import argparse
import sys

from .. import leaderboard as lb
from ..display.paper import CI_STYLES
from ..display.paper import TABLE_FORMATS as FORMATS
from ..leaderboard import store
from ..leaderboard.store import DEFAULT_DIR
from ..leaderboard.submit import describe_changes
from ..leaderboard.tables import render
from ..util import checks
from ..util.errors import ClirbenchError, DataNotFoundError

__all__ = ["add_leaderboard_parser", "cmd_leaderboard"]


def add_leaderboard_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``leaderboard`` (build, submit, show, html) to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("leaderboard", help="build, submit to, show and render leaderboards (./leaderboard/<task>.json)")
    sub = p.add_subparsers(dest="leaderboard_command", parser_class=type(p))
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", default=DEFAULT_DIR,
                        help=f"the leaderboard folder to write (default: {DEFAULT_DIR}, in the current folder; the "
                             "reference boards shipped with clirbench are written only when named here)")
    read = argparse.ArgumentParser(add_help=False)
    where = read.add_mutually_exclusive_group()
    where.add_argument("--dir", default=None,
                       help=f"the leaderboard folder to read (default: {DEFAULT_DIR} when it holds the task's board, "
                            "else the reference board shipped with clirbench)")
    where.add_argument("--reference", action="store_true",
                       help="read the reference board shipped with clirbench, even where you have your own")
    for name, helptext, arg, meta in (
            ("build", "validate and merge every result file under RESULTS_DIR", "results_dir", "RESULTS_DIR"),
            ("submit", "validate one result file (and its per-query table) and merge it", "result", "RESULT.json")):
        s = sub.add_parser(name, help=helptext, parents=[common])
        s.add_argument(arg, metavar=meta)
        s.add_argument("--data-dir", default=None,
                       help="the task's local data, to check qrels of pools the leaderboard does not list yet")
        s.add_argument("--command", dest="provenance", default=None, help="the command that produced the results (kept as provenance)")
        s.add_argument("--replace", action="store_true",
                       help="replace the entries of the pools submitted (and nothing else) when they hold other values "
                            "(prints old → new) or the system is listed with another revision or prompts; values "
                            "within the entry's intervals are kept as a reproduction without it")
    s = sub.add_parser("show", help="print the ranked tables of a task", parents=[read])
    s.add_argument("task")
    s.add_argument("--scenario", default=None)
    s.add_argument("--measure", default=None)
    _add_correction(s)
    _add_table_options(s)
    s = sub.add_parser("html", help="write one self-contained HTML page per leaderboard", parents=[read])
    s.add_argument("--out", required=True, help="output folder (index.html and one page per task, <task>.html)")
    s.add_argument("--task", action="append", default=None, help="only this task (repeatable)")
    _add_correction(s)
    p.set_defaults(handler=cmd_leaderboard)
    return p


def _add_correction(parser) -> None:
    parser.add_argument("--correction", choices=checks.CORRECTIONS, default=checks.CORRECTIONS[0],
                        help="multiple-testing correction (default holm) of the significance groups' pairwise "
                             "p-values (one family per scenario: every pair of systems × every measure) and, "
                             "with --baseline, of the tests against it (every system × every board shown)")


def _add_table_options(s) -> None:
    """``show``'s paper-table options (``leaderboard/tables.py``)."""

    s.add_argument("--format", choices=FORMATS, default="text", help="text (default), markdown, latex or csv")
    s.add_argument("--ci", choices=CI_STYLES, default=CI_STYLES[0],
                   help="markdown/latex: the interval as ± half its length (pm, default) or [low, high] (bracket)")
    s.add_argument("--baseline", default=None, metavar="SYSTEM",
                   help="mark (†) systems significantly different from SYSTEM after correction")


def _read_dir(args, task: str | None):
    """The folder ``show``/``html`` read (``--dir``, ``--reference`` or the default rule), announced
    in one line: on stdout before a text table, on stderr before other formats."""

    if args.reference:
        folder = store.reference_dir()
        if folder is None:
            raise DataNotFoundError("--reference: this installation ships no reference board "
                                    "(it comes with clirbench's source tree, leaderboards/)")
    else:
        folder = store.read_dir(task) if args.dir is None else args.dir
    return folder


def cmd_leaderboard(args) -> int:
    """Handler: returns the exit code; user errors raise ClirbenchError (one line, exit 2, in cli.main)."""

    command = getattr(args, "leaderboard_command", None)

    def written(path) -> str:
        return f"{path}" + (" (the reference board shipped with clirbench)" if store.is_reference(path) else "")

    if command == "build":
        changes: list = []
        reproduced: list = []
        unchanged: dict = {}
        for path, count in lb.build(args.results_dir, args.dir, args.data_dir, args.provenance, args.replace,
                                    changes, reproduced, unchanged).items():
            same = unchanged.get(path, 0)
            print(f"{written(path)}: {count} results merged" + (f" ({same} already there, unchanged)" if same else ""))
        for system, pid, what, old, new in changes:
            print(f"replaced {system} on {pid}: {describe_changes([(what, old, new)])}")
        for system, pid, diff in reproduced:
            print(f"reproduced {system} on {pid} within the board's intervals, kept beside its entry: "
                  f"{describe_changes(diff)}")
    elif command == "submit":
        path, sub = lb.submit(args.result, args.dir, args.data_dir, args.provenance, args.replace)
        if sub.changes:
            print(f"{written(path)}: {sub.system} on {sub.pool_id} replaced")
            for change in sub.changes:
                print(f"  {describe_changes([change])}")
        elif sub.reproduced:
            print(f"{written(path)}: {sub.system} on {sub.pool_id} reproduced within the board's intervals, kept "
                  f"beside its entry: {describe_changes(list(sub.reproduced))}")
        else:
            print(f"{written(path)}: {sub.system} on {sub.pool_id} "
                  f"{'merged' if sub.merged else 'already there (unchanged)'}")
    elif command == "show":
        folder = _read_dir(args, args.task)
        note = store.board_note(store.path_for(args.task, folder))
        if args.format != "text":
            text = render(args.task, folder, args.scenario, args.measure, args.format, args.ci, args.baseline,
                          args.correction)
            print(note, file=sys.stderr)
            print(text)
        else:
            if args.baseline is not None:
                raise ClirbenchError("--baseline marks significant differences in --format markdown, latex or csv")
            text = lb.show(args.task, folder, args.scenario, args.measure, args.correction)
            print(note + "\n\n" + text)
    elif command == "html":
        folder = _read_dir(args, args.task[0] if args.task else None)
        pages = lb.html(args.out, folder, args.task, args.correction)
        print(store.board_note(folder))
        for page in pages:
            print(page)
    else:
        raise ClirbenchError("clirbench leaderboard: expected a subcommand: build, submit, show or html")
    return 0
