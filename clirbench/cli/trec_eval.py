"""``clirbench trec_eval``: NIST trec_eval's command line and text output (docs/commands.md); with
``--doc-langs``, ``-m`` also takes clirbench's language exposure measures (columns after trec_eval's)."""
from __future__ import annotations

import argparse
import dataclasses
import sys

from ..formats.doc_langs import read_doc_langs
from ..formats.trec import check_inputs
from ..util import checks
from ..util.errors import ClirbenchError
from ..util.strict import MAX_GRADE
from .evaluate import one_blas_thread

__all__ = ["add_trec_eval_parser", "cmd_trec_eval"]


def add_trec_eval_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``trec_eval`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("trec_eval", help="a drop-in for NIST trec_eval: same options, measures and output",
                              description="trec_eval [-q] [-c] [-n] [-l N] [-M N] [-J] [-N N] {-m measure[.params]} "
                                          "qrels run")
    p.add_argument("-q", "--query_eval_wanted", action="store_true", help="per-query lines too")
    p.add_argument("-m", "--measure", action="append", default=None, metavar="MEASURE[.PARAMS]",
                   help="a measure, 'official' (default), 'all_trec' or 'set'; repeatable")
    p.add_argument("-c", "--complete_rel_info_wanted", action="store_true",
                   help="average over every judged query (a query missing from the run scores 0)")
    p.add_argument("-n", "--nosummary", action="store_true", help="no summary ('all') lines")
    # ASCII integers (Python's int would read "1_0" as 10 where trec_eval's atol reads 1, and "١" as 1)
    p.add_argument("-l", "--level_for_rel", type=checks.int_in(-MAX_GRADE, MAX_GRADE), default=1, metavar="N",
                   help="judgements >= N are relevant (default 1)")
    p.add_argument("-M", "--Max_retrieved_per_topic", type=checks.int_in(0, checks.MAX_LONG), default=None, metavar="N",
                   help="use the top N documents of each query")
    p.add_argument("-J", "--Judged_docs_only", action="store_true", help="drop unjudged documents first")
    p.add_argument("-N", "--Number_docs_in_coll", type=checks.int_in(0, checks.MAX_LONG), default=0, metavar="N",
                   help="collection size (utility)")
    p.add_argument("-R", "--Rel_info_format", default="qrels", help="only 'qrels'")
    p.add_argument("-T", "--Results_format", default="trec_results", help="only 'trec_results'")
    p.add_argument("--ci", action="store_true", help="add each averaged summary's 95%% bootstrap interval "
                                                      "(two more tab-separated fields)")
    p.add_argument("--doc-langs", default=None, metavar="FILE",
                   help="the documents' languages ('docid lang' lines or a BEIR corpus): -m then also takes "
                        "clirbench's language exposure measures (Share@10, AWRF@10, alpha_nDCG@20, Top1_rel_qlang, ...)")
    p.add_argument("--query-lang", default=None, metavar="LANG",
                   help="the queries' language (Share@k and the Top-1 split compare with it; default: none, NaN)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000)
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("qrels", help="qrels file (plain or gzip; - reads standard input)")
    p.add_argument("run", help="run file (plain or gzip; - reads standard input)")
    p.set_defaults(handler=cmd_trec_eval)
    return p


def cmd_trec_eval(args) -> int:
    one_blas_thread()
    from ..trec_eval import Options, evaluate_files, intervals  # lazy: numpy
    from ..trec_eval.report import write

    if args.Rel_info_format != "qrels" or args.Results_format != "trec_results":
        raise ClirbenchError("-R/-T: only the qrels and trec_results formats are read")
    check_inputs(args.qrels, args.run)  # "-" is standard input (either one), read once
    options = Options(per_query=args.query_eval_wanted, complete=args.complete_rel_info_wanted,
                      summary=not args.nosummary, rel_level=args.level_for_rel,
                      max_ret=args.Max_retrieved_per_topic, judged_only=args.Judged_docs_only,
                      num_docs=args.Number_docs_in_coll)
    trec, exposure = _split_measures(args.measure or ["official"], args.doc_langs is not None)
    if exposure or args.doc_langs is not None:
        report = _with_exposure(args, trec, exposure, options)
    else:
        report = evaluate_files(args.qrels, args.run, trec, options)
    ci = intervals(report, args.resamples, args.seed) if args.ci else None
    write(report, options, sys.stdout, ci)  # -n without -q prints nothing, as trec_eval (not an empty line)
    return 0


def _split_measures(names: list[str], with_map: bool) -> tuple[list[str], list[str]]:
    """(trec_eval's -m arguments, clirbench's exposure measure names); the latter need --doc-langs."""
    from ..measures import parse  # lazy: numpy

    trec, exposure = [], []
    for name in names:
        try:
            family = parse(name).record
        except ValueError:
            trec.append(name)
            continue
        if not family.needs_head:
            trec.append(name)
        elif not with_map:
            raise ClirbenchError(f"-m {name}: a language exposure measure; it needs --doc-langs (a 'docid lang' "
                                 f"file or a BEIR corpus)")
        else:
            exposure.append(name)
    return trec, exposure


def _with_exposure(args, trec: list[str], exposure: list[str], options):
    """trec_eval's report with the exposure measures' columns after trec_eval's, on the same queries
    (with -c, a judged query the run lacks has an empty ranking); -M, -J and -l apply to them too."""
    import numpy as np  # lazy: numpy

    from ..trec_eval import evaluate, select  # lazy: numpy
    from ..trec_eval.engine import Column  # lazy: numpy
    from ..trec_eval.inputs import read_qrels, read_run  # lazy: numpy
    from ..trec_files import check_map, exposure_per_query  # lazy: numpy

    selected = select(trec) if trec else []  # unknown names fail before any file is read
    langs = read_doc_langs(args.doc_langs)
    qrels, run = read_qrels(args.qrels), read_run(args.run)
    report = evaluate(qrels, run.scores, run.runid, selected, options)
    if not exposure:
        return report
    qrels_e = {q: {d: g if g >= options.rel_level else 0 for d, g in js.items()} for q, js in qrels.items()}
    scores = {q: _cut(hits, qrels.get(q, {}), options) for q, hits in run.scores.items()}
    check_map(langs, scores, qrels_e, report.query_ids, (str(args.run), str(args.qrels), str(args.doc_langs)))
    values = exposure_per_query(qrels_e, scores, exposure, report.query_ids, langs, args.query_lang)
    columns = []
    for name in exposure:
        column = values[name]
        mean = float(np.nanmean(column)) if np.any(~np.isnan(column)) else float("nan")
        columns.append(Column(name, "double", "mean", True, column.tolist(), mean))
    return dataclasses.replace(report, columns=report.columns + tuple(columns))


def _cut(hits: dict, judged: dict, options) -> dict:
    """One query's results as trec_eval measures them: -J keeps the judged documents, -M the top N
    (float32 score, then document id, descending)."""
    import numpy as np  # lazy: numpy

    if options.judged_only:
        hits = {d: s for d, s in hits.items() if d in judged}
    if options.max_ret is not None and len(hits) > options.max_ret:
        ranked = sorted(hits, key=lambda d: (float(np.float32(hits[d])), d), reverse=True)
        hits = {d: hits[d] for d in ranked[:options.max_ret]}
    return hits
