"""The evaluation kernel: scores and a pool -> ranks -> per-query values -> bootstrap summary.

Every route that measures a pool goes through here: the runner (a Retriever), ``evaluate`` (a
TREC run already ranked), the MTEB plugin (MTEB's ``{qid: {docid: score}}`` run). The unpacking
of ``rank_relevant``'s arguments and the ``of_mean`` transforms (``MaxR_norm_of_mean``) live here
once.

Ranking is a strategy, the ``rank.ranked.Ranker`` protocol: ``supports(measures)`` (raises,
before any work, for measures the ranker cannot give) and ``rank(retriever, seen, pool) ->
Ranked(table, info)``. ``seen`` is what the retriever reads (translated texts), ``pool`` holds ids,
qrels, languages; ``info`` (a ``RankingInfo``) says how the ranks were obtained (recorded as the
result's ``retriever.settings.ranking``). The rankers and ``choose_ranker`` live in ``rank/``.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from .measures import compute, head_depth, parse
from .measures.mlrs import head_mlrs
from .rank.exact import ExactRanker
from .rank.head import head_of_run
from .rank.judged_head import judge_head
from .rank.pair_scores import head_pair_scorer
from .rank.ranked import Ranker, RankingInfo
from .rank.rows import rank_blocks, run_blocks
from .rank.runs import rank_run
from .results import Evaluation, breakdown
from .stats.correction import describe
from .stats.paired import corrected, paired_rows
from .stats.preference import SHARE_K, preference_columns
from .stats.significance_tests import paired_test
from .stats.summary import summarise
from .util.checks import check_resamples, check_seed
from .util.errors import MalformedDataError, UnknownNameError

if TYPE_CHECKING:
    from .collection import Pool
    from .rank.head import Head
    from .rank.table import RankTable
    from .results import MeasureValue

__all__ = ["PoolEvaluation", "evaluate_table", "evaluate_pool", "evaluate_scores", "evaluate_run",
           "evaluate_ranked_run", "with_head", "versus_first_stage", "preference_table", "STANDARD_MEASURES"]

# A ready run's default measures. MaxR_norm needs |D|, which a run does not give; MaxR needs every
# relevant document retrieved.
STANDARD_MEASURES = ("nDCG@10", "nDCG@1", "RR", "AP@1000", "R@100", "P@10", "Success@10", "MaxR", "Complete@10")


@dataclass(frozen=True)
class PoolEvaluation:
    """One measured pool: the ranks, every measure's per-query vector, and the summary.

    ``per_query[name]`` is aligned with ``table.query_ids`` (``of_mean`` measures hold the
    per-query values their reported value is a function of the mean of). ``summary`` has a
    MeasureValue per measure, except those whose per-query values are infinite (a run that does
    not contain every relevant document cannot give MaxR): ``unsummarised`` names them.
    """

    table: "RankTable"
    measures: tuple
    per_query: Mapping[str, np.ndarray]
    summary: Mapping[str, "MeasureValue"]
    ranking: Mapping | None = None  # how the ranks were obtained (Ranked.info in the record's form)
    seconds: Mapping[str, float] | None = None  # {"search": ranking, "measure": values and bootstrap}
    head: "Head | None" = None  # each query's top-K documents (Ranked.head); None where the ranker gave none
    encode: object | None = None  # the ranker's own encoding cost (Ranked.encode: a reranking's second stage)

    @property
    def query_ids(self) -> tuple[str, ...]:
        return self.table.query_ids

    @property
    def unsummarised(self) -> tuple[str, ...]:
        return tuple(str(m) for m in self.measures if str(m) not in self.summary)

    def columns(self) -> dict[str, np.ndarray]:
        """The per-query table a result file stores: every measure not reported from a mean."""
        return {str(m): self.per_query[str(m)] for m in self.measures if not m.of_mean}

    def breakdown(self, groups: Mapping[str, Mapping[str, Sequence[str]]]) -> dict | None:
        """``{field: {group: {"n", measure: mean}}}`` over ``columns()``; None when ``groups`` is empty."""

        if not groups:
            return None
        columns = self.columns()
        return {field: breakdown(self.query_ids, columns, by_query) for field, by_query in groups.items()}


def evaluate_table(table: "RankTable", measures: Sequence, resamples: int = 1000,
                   seed: int = 42) -> PoolEvaluation:
    """Per-query values and bootstrap summary of a RankTable (``resamples=0``: values, CIs NaN); the
    language exposure measures read its ``head`` (``with_head``)."""

    measures = tuple(measures)
    per_query = compute(measures, table)
    kept = [m for m in measures if not np.isinf(per_query[str(m)]).any()]
    transforms = {str(m): (lambda x, m=m: m.from_mean(x, table)) for m in kept if m.of_mean}
    summary = summarise(kept, {str(m): per_query[str(m)] for m in kept}, resamples, seed,
                        transforms=transforms)
    return PoolEvaluation(table, measures, per_query, summary)


def with_head(table: "RankTable", head: "Head | None", pool: "Pool", measures: Sequence,
              retriever=None, seen: "Pool | None" = None) -> "RankTable":
    """``table`` with its judged head (``rank.judged_head``) when ``measures`` read it (the language
    exposure measures), ``MLRS@K`` computed into it by re-scoring with ``retriever`` (reading
    ``seen``); ``table`` itself when none does. A ValueError when the head is missing or too shallow."""
    depth = head_depth(measures)
    if depth is None:
        return table
    if head is None:
        raise ValueError("this ranking gives no head (each query's top documents): the language exposure "
                         "measures cannot be computed from it")
    judged = judge_head(head, pool.qrels, table.query_ids, pool.query_lang)
    judged.check_depth(depth)
    mlrs = [m for m in map(parse, measures) if m.family == "MLRS"]
    if mlrs:
        if retriever is None:
            raise ValueError("MLRS@K re-scores passages with the retriever: a ready run cannot give it")
        rows = head.select(table.query_ids)
        scorer = head_pair_scorer(retriever, pool if seen is None else seen, rows)
        items = [d.item for d in pool.docs] if tuple(head.doc_ids) == tuple(d.id for d in pool.docs) else \
            [{d.id: d.item for d in pool.docs}[i] for i in head.doc_ids]
        precomputed = {}
        for m in mlrs:  # toward every document language: the query's own is the family's value
            found = head_mlrs(rows, items, scorer, pool.doc_langs, m.cutoff)
            precomputed.update({f"{m}:{lang}": found.column(lang) for lang in found.langs})
            precomputed[str(m)] = precomputed.get(f"{m}:{pool.query_lang}", np.full(len(rows.query_ids), np.nan))
        judged = dataclasses.replace(judged, precomputed=precomputed)
    return dataclasses.replace(table, head=judged)


def evaluate_pool(retriever, pool: "Pool", measures: Sequence, resamples: int = 1000, seed: int = 42,
                  *, seen: "Pool | None" = None, ranker: Ranker | None = None) -> PoolEvaluation:
    """Rank ``pool`` with ``retriever`` (reading ``seen``, default ``pool``) by ``ranker`` (default
    full score rows) and measure it; the evaluation records how it was ranked and the seconds spent."""

    t0 = time.perf_counter()
    ranked = (ranker or ExactRanker()).rank(retriever, pool if seen is None else seen, pool)
    t1 = time.perf_counter()
    table = with_head(ranked.table, ranked.head, pool, measures, retriever, seen)
    evaluation = evaluate_table(table, measures, resamples, seed)
    info = ranked.info.to_dict() if isinstance(ranked.info, RankingInfo) else ranked.info  # the record's form
    if ranked.first is not None and info is not None and "rerank" in info:
        info = {**info, "rerank": versus_first_stage(info["rerank"], ranked.first, evaluation, pool, resamples, seed)}
    return dataclasses.replace(evaluation, ranking=info, head=ranked.head, encode=ranked.encode,
                               seconds={"search": t1 - t0, "measure": time.perf_counter() - t1})


def versus_first_stage(rerank: Mapping, first, evaluation: PoolEvaluation, pool: "Pool", resamples: int = 1000,
                       seed: int = 42) -> dict:
    """A reranking's record (``rank.rerank``'s ``RankingInfo.rerank``) with what it gives: the recall
    ceiling (R@K of the first stage ``first``, a ``Ranked``, on this pool: no reranking of its top K
    finds more) and, per measure of ``evaluation``, the first stage's mean, the reranked one and the
    paired difference (reranked − first) with its bootstrap interval and randomisation p, Holm-adjusted
    over the measures; on a pool of two or more document languages whose first stage ranked every
    document, the same for each cell of the preference row (mean rank and share of the best-ranked
    relevant passage per document language, share of each language in the top 10)."""
    measures = evaluation.measures
    table = with_head(first.table, first.head, pool, measures)
    before = evaluate_table(table, measures, resamples, seed)
    depth = int(rerank["depth"])
    ceiling = evaluate_table(first.table, [parse(f"R@{depth}")], resamples, seed).summary[f"R@{depth}"]
    names = [str(m) for m in measures if not m.of_mean and str(m) in evaluation.summary and str(m) in before.summary]
    test = paired_test()
    out = {**rerank, "recall_ceiling": {"measure": f"R@{depth}", **ceiling.to_dict()}}
    versus = {"test": test.describe(10000), "difference": "reranked - first stage"}
    if names:
        rows = corrected(_paired(before.per_query, evaluation.per_query, names, resamples, seed), "holm")
        versus["measures"] = {n: rows[n].to_dict() for n in names}
        versus["family"] = describe("holm", len(names), "every measure of this pool")
    langs = tuple(pool.doc_langs)
    if (pool.scenario == "multi" and len(langs) > 1 and np.isfinite(first.table.rank).all()
            and table.doc_lang is not None and len(table.qidx)):
        a, b = preference_columns(preference_table(table), langs), preference_columns(preference_table(evaluation.table), langs)
        cells = [c for c in a if c in b and not c.startswith("tie_share")]
        rows = corrected(_paired(a, b, cells, resamples, seed), "holm")
        versus["preference"] = {c: rows[c].to_dict() for c in cells}
        versus["preference_family"] = describe("holm", len(cells), "every cell of this pool's preference row")
    out["versus_first_stage"] = versus
    return out


def preference_table(table: "RankTable") -> "RankTable":
    """``table`` for the preference row: without its head when the head is too shallow for the top-10
    shares (a reranking of fewer than 10 documents keeps only its K)."""
    if table.head is None:
        return table
    try:
        table.head.check_depth(SHARE_K)
    except ValueError:
        return dataclasses.replace(table, head=None)
    return table


def _paired(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], names: Sequence[str], resamples: int,
            seed: int):
    """``stats.paired.paired_rows`` of per-query columns ``names`` of A and B (queries aligned)."""
    return paired_rows(np.stack([np.asarray(a[n], dtype=np.float64) for n in names], axis=1),
                       np.stack([np.asarray(b[n], dtype=np.float64) for n in names], axis=1), names, resamples, seed)


def evaluate_scores(run: Mapping[str, Mapping[str, float]], pool: "Pool", measures: Sequence,
                 resamples: int = 1000, seed: int = 42, depth: int | None = None) -> PoolEvaluation:
    """Measure a ready ``{qid: {docid: score}}`` run over ``pool`` (documents it lacks rank last);
    with ``depth``, the evaluation's head is the run's top ``depth`` under the tie rule (None, the
    default: no head, as the rankers)."""
    needed = head_depth(measures)
    head = None
    if depth is not None or needed is not None:
        head = head_of_run(run, [q.id for q in pool.queries], [d.id for d in pool.docs],
                           [d.lang for d in pool.docs], pool.exclusions, max(depth or 1, needed or 1))
    table = with_head(rank_blocks(run_blocks(pool, run), pool), head, pool, measures)
    evaluation = evaluate_table(table, measures, resamples, seed)
    return evaluation if depth is None else dataclasses.replace(evaluation, head=head.top(depth))


def evaluate_ranked_run(table: "RankTable", qrels: Mapping, run_queries: Sequence[str], measures: Sequence | None = None,
                        resamples: int = 1000, seed: int = 42):
    """The typed ``results.Evaluation`` of a ranked run (``run_queries``: the query ids the run holds):
    ``measures`` (names; default ``STANDARD_MEASURES``) with bootstrap intervals and per-query values."""

    resamples, seed = check_resamples(resamples), check_seed(seed)
    try:
        objs = tuple(parse(str(m)) for m in (measures or STANDARD_MEASURES))
    except ValueError as exc:
        raise UnknownNameError(str(exc)) from None
    if not table.query_ids:
        raise MalformedDataError("no query of the run has judgements in the qrels: nothing to evaluate")
    return Evaluation.of(evaluate_table(table, objs, resamples, seed), qrels, run_queries, resamples, seed)


def evaluate_run(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                 measures: Sequence | None = None, resamples: int = 1000, seed: int = 42):
    """Score a run ``{query_id: {doc_id: score}}`` against qrels (queries evaluated: those in the run
    with at least one judgement, as pytrec_eval): a typed ``results.Evaluation``."""

    resamples, seed = check_resamples(resamples), check_seed(seed)  # before any work
    return evaluate_ranked_run(rank_run(run, qrels), qrels, list(run), measures, resamples, seed)
