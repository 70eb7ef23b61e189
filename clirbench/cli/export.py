"""``clirbench export``: write a task's pools as BEIR folders and TREC qrels (``tasks.export``)."""
from __future__ import annotations

import argparse

from ..scenarios import POOL_MODES
from ..tasks.export import EXPORT_FORMATS, export_pools
from .args import split_list, task_options

__all__ = ["add_export_parser", "cmd_export"]


def add_export_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``export`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("export", help="write a task's pools as BEIR folders and TREC qrels")
    p.add_argument("--task", required=True, help="task id, pool id (xquad/multi/en-zh), beir:<dir>, parallel:<file>, ...")
    p.add_argument("--langs", default=None, help="as for run: en,zh | en+all | en,zh,ar | all (default: pivot+all)")
    p.add_argument("--scenario", default="all", help="all or a comma list of multi, multi-1, mono-same, mono-cross")
    p.add_argument("--query-lang", default=None, help="restrict query languages (comma list)")
    p.add_argument("--pool-mode", "--pool", dest="pool_mode", default="unique", choices=[*POOL_MODES, "all"],
                   help="pool mode, or all of the task's (default: unique)")
    p.add_argument("--task-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a task-specific option (repeatable), e.g. split=test")
    p.add_argument("--data-dir", default=None, help="folder with the task's files (as for run)")
    p.add_argument("--out", required=True, help="the folder to write into (one sub-folder per pool, as results)")
    p.add_argument("--format", default=None, choices=EXPORT_FORMATS,
                   help="beir (corpus.jsonl, queries.jsonl, qrels/test.tsv) or trec (<pool>.qrels); default both")
    p.set_defaults(handler=cmd_export)
    return p


def cmd_export(args) -> int:
    for option, value in (("--langs", args.langs), ("--scenario", args.scenario)):
        split_list(value, option)  # "" or "en,zh,": an error, not the default
    written = export_pools(args.task, args.out, langs=args.langs, scenarios=args.scenario,
                           query_langs=split_list(args.query_lang, "--query-lang"), pool_modes=args.pool_mode,
                           formats=(args.format,) if args.format else EXPORT_FORMATS, data_dir=args.data_dir,
                           task_options=task_options(args.task_option))
    for pool in written:
        files = [str(p) for p in (pool.beir, pool.qrels) if p is not None]
        print(f"{pool.pool}: {', '.join(files)}")
    print(f"exported {len(written)} pool{'s' * (len(written) != 1)} to {args.out}")
    return 0
