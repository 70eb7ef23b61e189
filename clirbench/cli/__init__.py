"""The ``clirbench`` command: one parser, a subparser per subcommand module, one dispatch.

Each module (``run``, ``evaluate``, ``export``, ``trec_eval``, ``compare``, ``tasks``, ``validate``, ``leaderboard``, ``psq``,
``sweep``, ``train``/``merge``, ``cache``, ``plot``) adds its parser and sets its handler
(``set_defaults(handler=...)``); ``main`` calls it. User errors: one line, exit code 2.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Sequence

from .. import __version__
from ..util.redact import redact
from .args import EXIT_USAGE, Parser

__all__ = ["main", "EXIT_USAGE"]

# (name, module, function), in the order `clirbench --help` lists them. A command imports only its own
# module (`clirbench evaluate` skips the leaderboard's, the runner's...: 0.12 s of CPU); --help, no
# command or an unknown one import them all
_SUBCOMMANDS = (("tasks", "tasks", "add_tasks_parser"), ("validate", "validate", "add_validate_parser"),
                ("run", "run", "add_run_parser"), ("evaluate", "evaluate", "add_evaluate_parser"),
                ("export", "export", "add_export_parser"), ("trec_eval", "trec_eval", "add_trec_eval_parser"),
                ("psq", "psq", "add_psq_parser"), ("leaderboard", "leaderboard", "add_leaderboard_parser"),
                ("plot", "plot", "add_plot_parser"), ("sweep", "sweep", "add_sweep_parser"),
                ("cache", "cache", "add_cache_parser"), ("train", "train", "add_train_parser"),
                ("merge", "train", "add_merge_parser"), ("compare", "compare", "add_compare_parser"),
                ("reproduce", "reproduce", "add_reproduce_parser"),
                ("export-results", "export_results", "add_export_results_parser"))


def _build_parser(command: str | None = None) -> Parser:
    """The parser of every subcommand, or of ``command`` alone when it names one."""
    parser = Parser(prog="clirbench", description="Cross-lingual retrieval benchmark harness.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    # not "command": `leaderboard build|submit --command` is an option of its own
    sub = parser.add_subparsers(dest="subcommand", parser_class=Parser)
    known = any(command == name for name, _, _ in _SUBCOMMANDS)
    for name, module, function in _SUBCOMMANDS:
        if not known or name == command:
            getattr(importlib.import_module(f".{module}", __name__), function)(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = _build_parser(given[0] if given else None)
    for arg in given:
        if re.search("[\ud800-\udfff]", arg):  # bytes that are not UTF-8 (surrogate-escaped by Python)
            print(f"clirbench: error: argument {ascii(redact(arg))[:80]} is not valid UTF-8 text", file=sys.stderr)
            return EXIT_USAGE
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        return int(exc.code or 0)
    if args.version:
        print(f"clirbench {__version__}")
        return 0
    if args.subcommand is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        print("clirbench: interrupted; finished pools and cached embeddings are kept, rerun to resume",
              file=sys.stderr)
        return 130
    except (ValueError, LookupError, OSError) as exc:
        if os.environ.get("CLIRBENCH_DEBUG"):
            raise

        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"clirbench: error: {redact(message)}", file=sys.stderr)  # no secret echoed
        return EXIT_USAGE
