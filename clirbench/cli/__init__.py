"""The ``clirbench`` command: tasks, validate, run, evaluate, compare. User errors: one line, exit code 2."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from .cache import add_cache_parser, cmd_cache
from .leaderboard import add_leaderboard_parser, cmd_leaderboard
from .psq import add_psq_parser, cmd_psq
from .sweep import add_sweep_parser, cmd_sweep
from .train import add_merge_parser, add_train_parser, cmd_merge, cmd_train
from .translation import add_translation_arguments, translation_options
from .. import checks

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    epilog_from = None  # a function giving the epilog when help is shown (lazy registry lookups)

    def error(self, message: str) -> None:  # one line instead of usage + message
        self.exit(EXIT_USAGE, f"clirbench: error: {message}\n")

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()


def _run_epilog() -> str:
    """Task ids and retriever families, from their registries (only when ``run --help`` is shown)."""
    from ..retrievers.spec import family_usages
    from ..tasks import list_tasks

    tasks = [t.card.id for t in list_tasks()] + ["parallel:<file>", "beir:<dir>"]
    return (f"tasks (--task): {', '.join(tasks)}; `clirbench tasks` lists their languages and data. "
            f"retrievers (--model): {'; '.join(family_usages())}.")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="clirbench", description="Cross-lingual retrieval benchmark harness.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    # not "command": `leaderboard build|submit --command` is an option of its own
    sub = parser.add_subparsers(dest="subcommand", parser_class=_Parser)

    p = sub.add_parser("tasks", help="list tasks with languages, scenarios and where their data is")
    p.add_argument("--data-dir", help="a local data folder to look in")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("validate", help="check every task card, and the data of each task found locally")
    p.add_argument("--data-dir", help="a data folder holding <task id>/ subfolders (else $CLIRBENCH_DATA_DIR)")
    p.add_argument("--no-data", action="store_true", help="check the cards only, load no data")

    p = sub.add_parser("run", help="evaluate a retriever on a task's pools")
    p.epilog_from = _run_epilog
    p.add_argument("--model", required=True, help="retriever spec (families listed below)")
    p.add_argument("--task", default="xquad", help="task id (listed below; default: xquad)")
    p.add_argument("--langs", default=None, help="parallel tasks: en,zh | en+all | en+de,zh (default: pivot+all); others: see the task")
    p.add_argument("--scenario", default="all", help="all or a comma list of multi, multi-1, mono-same, mono-cross")
    p.add_argument("--query-lang", default=None, help="restrict query languages (comma list)")
    p.add_argument("--pool", default="unique", choices=["unique", "per-query"], help="pool mode")
    p.add_argument("--task-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a task-specific option (repeatable), e.g. split=test")
    p.add_argument("--data-dir", default=None, help="folder with the task's files (else $CLIRBENCH_DATA_DIR/<task>, else the copy in the package, else the hub)")
    p.add_argument("--output", default="results", help="results folder (default: ./results)")
    p.add_argument("--cache-dir", default=None, help="embedding cache (default: $CLIRBENCH_CACHE_DIR or ~/.cache/clirbench)")
    p.add_argument("--measures", default=None, help="comma list of measures (default: the full set)")
    p.add_argument("--query-prompt", default=None, help="override the query prompt")
    p.add_argument("--doc-prompt", default=None, help="override the document prompt")
    p.add_argument("--batch-size", type=checks.positive_int, default=None)
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda when present)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000, help="bootstrap resamples")
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("--overwrite", action="store_true", help="recompute finished pools")
    p.add_argument("--no-progress", action="store_true")
    add_translation_arguments(p)

    p = sub.add_parser("evaluate", help="score a TREC run against TREC qrels, with CIs (JSON out)")
    p.add_argument("--qrels", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--measures", default=None, help="comma list (default: the standard set)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("--output", default=None, help="write the JSON here (atomically) as well as to stdout")
    p.add_argument("--per-query", default=None, metavar="FILE",
                   help="also write each query's values: FILE.tsv (query_id, measure, value) or FILE.jsonl")

    add_psq_parser(sub)
    add_leaderboard_parser(sub)
    add_sweep_parser(sub)
    add_cache_parser(sub)
    add_train_parser(sub)
    add_merge_parser(sub)

    p = sub.add_parser("compare", help="paired comparison of two results on the same pool")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--measures", default=None, help="comma list (default: all common measures)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--permutations", type=checks.resample_count, default=10000)
    p.add_argument("--seed", type=checks.seed, default=42)
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


def _size(expected) -> str:
    per_lang = {k[: -len("_per_language")]: v for k, v in expected.items() if k.endswith("_per_language")}
    if per_lang:
        return ", ".join(f"{v} {k}" for k, v in per_lang.items()) + " per language"
    return ", ".join(f"{v} {k}" for k, v in expected.items()) or "not recorded"


def cmd_tasks(args) -> int:
    from ..tasks import list_tasks

    rows = [task.describe(args.data_dir) for task in list_tasks()]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    width = max([10] + [len(r["id"]) + 1 for r in rows])
    for r in rows:
        print(f"{r['id']:<{width}} {r['name']}")
        print(f"{'':<{width}} languages ({len(r['languages'])}): {' '.join(r['languages'])}")
        print(f"{'':<{width}} scenarios: {', '.join(r['scenarios'])}; pools: {', '.join(r['pool_modes'])}; licence {r['license']}")
        print(f"{'':<{width}} size: {_size(r['size'])}")
        print(f"{'':<{width}} data: {r['data']}")
    return 0


def cmd_validate(args) -> int:
    from ..tasks.validate import validate

    problems, notes = validate(args.data_dir, load_data=not args.no_data)
    for note in notes:
        print(f"note: {note}")
    for problem in problems:
        print(f"clirbench: validate: {problem}", file=sys.stderr)
    if problems:
        return EXIT_USAGE
    from ..tasks.card import cards_dir
    print(f"ok: {len(list(cards_dir().glob('*.yaml')))} task cards valid")
    return 0


def cmd_run(args) -> int:
    from ..report import format_outcomes
    from ..runner import run

    report = run(
        args.model, task=args.task, langs=args.langs, scenarios=args.scenario,
        query_langs=_split(args.query_lang), pool_mode=args.pool, data_dir=args.data_dir,
        output_dir=args.output, cache_dir=args.cache_dir, measures=_split(args.measures),
        resamples=args.resamples, seed=args.seed, overwrite=args.overwrite,
        query_prompt=args.query_prompt, doc_prompt=args.doc_prompt, batch_size=args.batch_size,
        device=args.device, progress=not args.no_progress, task_options=_options(args.task_option),
        **translation_options(args))
    print(format_outcomes(report))
    return 0


def cmd_evaluate(args) -> int:
    from ..evaluate import evaluate_files
    from ..atomic import write_text_atomic

    report = evaluate_files(args.qrels, args.run, measures=_split(args.measures),
                            resamples=args.resamples, seed=args.seed, per_query_path=args.per_query)
    text = json.dumps(report, indent=2)
    if args.output:
        write_text_atomic(args.output, text + "\n")
    print(text)
    return 0


def cmd_compare(args) -> int:
    from ..paired import compare, format_comparison

    report = compare(args.a, args.b, measures=_split(args.measures), resamples=args.resamples,
                     seed=args.seed, permutations=args.permutations)
    print(json.dumps(report, indent=2) if args.json else format_comparison(report))
    return 0


COMMANDS = {"cache": cmd_cache, "sweep": cmd_sweep, "leaderboard": cmd_leaderboard, "psq": cmd_psq, "tasks": cmd_tasks, "validate": cmd_validate, "run": cmd_run, "evaluate": cmd_evaluate, "compare": cmd_compare,
            "train": cmd_train, "merge": cmd_merge}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        return int(exc.code or 0)
    if args.version:
        from .. import __version__
        print(f"clirbench {__version__}")
        return 0
    if args.subcommand is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.subcommand](args)
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
