"""``clirbench tasks``: the task cards, their languages, scenarios and where their data is."""
from __future__ import annotations

import argparse
import json

from ..tasks import list_tasks

__all__ = ["add_tasks_parser", "cmd_tasks"]


def add_tasks_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``tasks`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("tasks", help="list tasks with languages, scenarios and where their data is")
    p.add_argument("--data-dir", help="a local data folder to look in")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p.set_defaults(handler=cmd_tasks)
    return p


def _size(expected) -> str:
    per_lang = {k[: -len("_per_language")]: v for k, v in expected.items() if k.endswith("_per_language")}
    if per_lang:
        return ", ".join(f"{v} {k}" for k, v in per_lang.items()) + " per language"
    return ", ".join(f"{v} {k}" for k, v in expected.items()) or "not recorded"


def cmd_tasks(args) -> int:
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
