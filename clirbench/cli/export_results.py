"""``clirbench export-results SOURCE --format F --output DIR``: result files or a leaderboard as
ir_metadata, MTEB's results layout or Hugging Face ``.eval_results`` (docs/results.md#exports)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..util.errors import ClirbenchError

__all__ = ["add_export_results_parser", "cmd_export_results", "FORMATS"]

FORMATS = ("ir_metadata", "mteb", "hf-eval-results")  # provenance.export.EXPORT_FORMATS


def add_export_results_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``export-results`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("export-results", help="write result files or a leaderboard as ir_metadata, MTEB's "
                                                     "results layout or Hugging Face .eval_results")
    p.add_argument("source", metavar="RESULTS_OR_BOARD", help="a results folder, a result file or a leaderboard")
    p.add_argument("--format", required=True, choices=FORMATS,
                   help="ir_metadata (a YAML per pool, the saved run annotated), mteb (results/<model>/<revision>/"
                        "<task>.json + model_meta.json) or hf-eval-results (<system>/.eval_results/*.yaml)")
    p.add_argument("--output", required=True, metavar="DIR", help="the folder to write into")
    p.add_argument("--data-dir", default=None,
                   help="the task's data, for a leaderboard's per-query query ids (ir_metadata; as for run)")
    p.set_defaults(handler=cmd_export_results)
    return p


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.expanduser().resolve(), folder.expanduser().resolve()
    return path == folder or folder in path.parents


def cmd_export_results(args) -> int:
    from ..provenance.export import export_results  # lazy: numpy

    source, out = Path(args.source), Path(args.output)
    if source.is_dir() and _inside(out, source):
        raise ClirbenchError(f"--output {out}: inside the results folder {source}; its files would mix with the "
                             f"results (name another folder)")
    written = export_results(source, out, args.format, data_dir=args.data_dir)
    print(f"export-results: {len(written)} file{'s' * (len(written) != 1)} in {args.format} format under {out}")
    return 0
