"""``clirbench sweep CONFIG.yaml``: models × tasks × translations, resumable, locally or on Ray."""
from __future__ import annotations

import argparse
import sys

from ..checks import nonnegative_float, positive_float

__all__ = ["add_sweep_parser", "cmd_sweep"]


def add_sweep_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``sweep`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("sweep", help="run models × tasks × translations from a YAML config (resumable; local or Ray)")
    p.add_argument("config", help="sweep config (YAML): models, tasks, translations, output, cache_dir, ...")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: cells in this process; ray: one Ray task per cell (default: local)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join (auto, HOST:6379, ray://HOST:10001); default: a local Ray")
    p.add_argument("--cpus-per-cell", type=positive_float, default=1.0, help="Ray: CPUs reserved per cell (default 1)")
    p.add_argument("--gpus-per-cell", type=nonnegative_float, default=0.0, help="Ray: GPUs reserved per cell (default 0)")
    p.add_argument("--output", default=None, help="override the config's output folder")
    p.add_argument("--cache-dir", default=None, help="override the config's cache_dir")
    p.add_argument("--overwrite", action="store_true", help="recompute finished cells and pools")
    p.add_argument("--no-leaderboard", action="store_true", help="do not build the leaderboards afterwards")
    p.add_argument("--leaderboard-dir", default=None, help="override the config's leaderboard_dir (default: leaderboards)")
    p.add_argument("--dry-run", action="store_true", help="list the cells and which are finished; run nothing")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_sweep)
    return p


def cmd_sweep(args) -> int:
    """Handler: 0 when every cell finished, 1 when some failed; a malformed config raises
    SweepConfigError (a ClirbenchError: one line, exit 2 in cli.py)."""
    from dataclasses import replace

    from ..sweep import cells, load_config, make_executor, run_sweep
    from ..sweep.executors import finished

    config = load_config(args.config)
    overrides = {k: v for k, v in (("output", args.output), ("cache_dir", args.cache_dir),
                                   ("leaderboard_dir", args.leaderboard_dir)) if v is not None}
    config = replace(config, **overrides).resolved()
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
                       leaderboard=False if args.no_leaderboard else None, command=command)
    for o in report.outcomes:
        if o.status == "failed":
            continue
        pools = f"{len(o.results)} pools ({o.computed} computed, {o.reused} reused)"
        print(f"{o.status:<8} {o.label}: {pools}, {o.seconds:.1f} s")
    counts = {s: sum(o.status == s for o in report.outcomes) for s in ("done", "skipped", "failed")}
    print(f"{len(report.outcomes)} cells: {counts['done']} run, {counts['skipped']} finished before, "
          f"{counts['failed']} failed; results in {config.output} ({report.seconds:.1f} s)")
    print(_leaderboard_line(report))
    for o in report.failed:
        print(f"clirbench: sweep: FAILED {o.label}: {o.error} (traceback in {config.output}/_sweep/{o.key}.failed)",
              file=sys.stderr)
    if report.failed:
        print(f"clirbench: sweep: {len(report.failed)} cell(s) failed; finished cells are kept, rerun to retry",
              file=sys.stderr)
        return 1
    return 0


def _quote(text: str) -> str:
    import shlex

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
