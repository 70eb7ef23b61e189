"""The ``clirbench`` command: one parser, a subparser per subcommand module, one dispatch.

Each module (``run``, ``evaluate``, ``export``, ``trec_eval``, ``compare``, ``tasks``, ``validate``, ``leaderboard``, ``psq``,
``sweep``, ``train``/``merge``, ``cache``, ``plot``) adds its parser and sets its handler
(``set_defaults(handler=...)``); ``main`` calls it. User errors: one line, exit code 2.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Sequence

from .. import __version__
from ..util.redact import redact
from .args import EXIT_USAGE, Parser
from .cache import add_cache_parser
from .compare import add_compare_parser
from .evaluate import add_evaluate_parser
from .export import add_export_parser
from .export_results import add_export_results_parser
from .leaderboard import add_leaderboard_parser
from .plot import add_plot_parser
from .psq import add_psq_parser
from .reproduce import add_reproduce_parser
from .run import add_run_parser
from .sweep import add_sweep_parser
from .tasks import add_tasks_parser
from .train import add_merge_parser, add_train_parser
from .trec_eval import add_trec_eval_parser
from .validate import add_validate_parser

__all__ = ["main", "EXIT_USAGE"]

# in the order `clirbench --help` lists them
_SUBCOMMANDS = (add_tasks_parser, add_validate_parser, add_run_parser, add_evaluate_parser, add_export_parser,
                add_trec_eval_parser, add_psq_parser,
                add_leaderboard_parser, add_plot_parser, add_sweep_parser, add_cache_parser, add_train_parser, add_merge_parser,
                add_compare_parser, add_reproduce_parser, add_export_results_parser)


def _build_parser() -> Parser:
    parser = Parser(prog="clirbench", description="Cross-lingual retrieval benchmark harness.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    # not "command": `leaderboard build|submit --command` is an option of its own
    sub = parser.add_subparsers(dest="subcommand", parser_class=Parser)
    for add in _SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    for arg in (sys.argv[1:] if argv is None else argv):
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
