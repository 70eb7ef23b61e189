"""``clirbench evaluate``: score a TREC run against TREC qrels, with CIs: the table ``run`` prints
(default) or the JSON report (``--format json``, ``--json``; ``--output`` always writes the JSON);
``--doc-langs``/``--query-lang`` add the language exposure measures, ``--preset neuclir`` NeuCLIR's set."""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..util import checks
from ..util.atomic import write_text_atomic
from ..util.errors import ClirbenchError
from .args import check_outputs, split_list

__all__ = ["add_evaluate_parser", "cmd_evaluate", "FORMATS", "one_blas_thread"]

FORMATS = ("table", "json")
PRESETS = ("neuclir",)  # trec_files.PRESETS (not imported here: it pulls numpy)


def add_evaluate_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``evaluate`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("evaluate", help="score a TREC run against TREC qrels, with CIs (a table, or JSON)")
    p.add_argument("--qrels", required=True, help="TREC qrels file (plain or gzip; - reads standard input)")
    p.add_argument("--run", required=True, help="TREC run file (plain or gzip; - reads standard input)")
    p.add_argument("--measures", default=None, help="comma list (default: the standard set)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="table (default: value [95%% CI] per measure, as run prints) or json (full precision)")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument("--output", default=None, help="also write the JSON report here (atomically)")
    p.add_argument("--per-query", default=None, metavar="FILE",
                   help="also write each query's values: FILE.tsv (query_id, measure, value) or FILE.jsonl")
    p.add_argument("--doc-langs", default=None, metavar="FILE",
                   help="the documents' languages: 'docid lang' lines (plain or gzip) or a BEIR corpus "
                        "(corpus.jsonl with a lang field, or its folder); enables the language exposure "
                        "measures (Share@10, AWRF@10, alpha_nDCG@20, Top1_rel_qlang, ...)")
    p.add_argument("--query-lang", default=None, metavar="LANG",
                   help="the queries' language (Share@k and the Top-1 split compare with it; default: none, "
                        "those measures NaN with a note)")
    p.add_argument("--preset", choices=PRESETS, default=None,
                   help="neuclir: nDCG@20, AP, R@100, R@1000, Judged@20; with a --doc-langs map of >= 2 "
                        "languages (MLIR) also alpha_nDCG@20 and nDCG@20 per document language; the run tag's "
                        "team and flags in the report (--measures adds to it)")

    p.set_defaults(handler=cmd_evaluate)
    return p


def one_blas_thread() -> None:
    """OpenBLAS on one thread when numpy is not imported yet (a user's setting kept): its pool's
    threads spin at start-up, 0.04 s of CPU per process on 2 cores, and evaluating multiplies
    matrices only in the bootstrap, which runs BLAS on one thread anyway (the same values)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def cmd_evaluate(args) -> int:
    one_blas_thread()
    from ..trec_files import evaluate_trec_files  # lazy: numpy

    fmt = args.format or ("json" if args.json else "table")
    if args.json and fmt != "json":
        raise ClirbenchError(f"--json and --format {fmt} disagree; give one of them")
    check_outputs({"--output": args.output, "--per-query": args.per_query},
                  {"--qrels": args.qrels, "--run": args.run, "--doc-langs": args.doc_langs})

    evaluation, extras = evaluate_trec_files(
        args.qrels, args.run, split_list(args.measures, "--measures"), args.resamples, args.seed, args.per_query,
        doc_langs=args.doc_langs, query_lang=args.query_lang, preset=args.preset)
    report = {"qrels": str(args.qrels), "run": str(args.run), **extras, **evaluation.to_dict()}
    for name, note in evaluation.notes.items():  # a NaN measure's reason (a missing one has its note already)
        report["measures"][name].setdefault("note", note)
    text = json.dumps(report, indent=2)
    if args.output:
        write_text_atomic(args.output, text + "\n")
    if fmt == "json":
        print(text)
    else:
        from ..display.report import format_evaluation  # lazy: numpy

        print("\n".join([format_evaluation(report)] + _extra_lines(report)))
    return 0


def _extra_lines(report: dict) -> list[str]:
    """The table's lines for the run tag (``--preset``) and the document languages (``--doc-langs``)."""
    lines = []
    if "run_tag" in report:
        tag = report["run_tag"]
        lines.append(f"run tag: {tag['tag']} (team {tag['team'] or '-'}; flags {', '.join(tag['flags']) or '-'})")
    if "doc_langs" in report:
        counts = report["doc_langs"]["documents"]
        kind = "MLIR" if report["doc_langs"]["mlir"] else "one language"
        lines.append(f"document languages ({kind}): " + ", ".join(f"{k} {v:,}" for k, v in counts.items())
                     + f"; query language: {report['query_lang'] or 'not given'}")
    return lines
