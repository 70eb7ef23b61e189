"""The evaluation kernel: scores and a pool -> ranks -> per-query values -> bootstrap summary.

Every route that measures a pool goes through here: the runner (a Retriever), ``evaluate`` (a
TREC run already ranked), the MTEB plugin (MTEB's ``{qid: {docid: score}}`` run). The unpacking
of ``rank_relevant``'s arguments and the ``of_mean`` transforms (``MaxR_norm_of_mean``) live here
once.

Ranking is a strategy, ``ranker(retriever, seen_pool, pool) -> RankTable``: ``rank_exact`` scores
the whole pool in memory (the default); a large-pool path (exact ranks by sharded counting) or an
ANN path plug in with the same signature, e.g. ``functools.partial(rank_pool_sharded, shards=8)``.
``seen_pool`` is what the retriever reads (translated texts), ``pool`` holds ids, qrels, languages.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from .collection import Pool
    from .ranking import RankTable
    from .results import MeasureValue

__all__ = ["PoolEvaluation", "Ranker", "rank_exact", "ShardedRanker", "RayRanker", "AnnRanker", "choose_ranker", "rank_blocks",
           "run_blocks", "evaluate_table", "evaluate_pool", "evaluate_scores"]

Ranker = Callable[[object, "Pool", "Pool"], "RankTable"]
RUN_ROWS = 256  # score rows per block when a {qid: {docid: score}} run is laid over a pool


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
        from .results import breakdown

        if not groups:
            return None
        columns = self.columns()
        return {field: breakdown(self.query_ids, columns, by_query) for field, by_query in groups.items()}


def evaluate_table(table: "RankTable", measures: Sequence, resamples: int = 1000,
                   seed: int = 42) -> PoolEvaluation:
    """Per-query values and bootstrap summary of a RankTable (``resamples=0``: values, CIs NaN)."""
    from .measures import compute
    from .results import summarise

    measures = tuple(measures)
    per_query = compute(measures, table)
    kept = [m for m in measures if not np.isinf(per_query[str(m)]).any()]
    transforms = {str(m): (lambda x, m=m: m.from_mean(x, table)) for m in kept if m.of_mean}
    summary = summarise(kept, {str(m): per_query[str(m)] for m in kept}, resamples, seed,
                        transforms=transforms)
    return PoolEvaluation(table, measures, per_query, summary)


def rank_blocks(blocks: Iterable[tuple[int, np.ndarray]], pool: "Pool") -> "RankTable":
    """RankTable of score rows ``(start, (b, |D|) scores)`` over ``pool`` (its qrels, exclusions, languages)."""
    from .ranking import rank_relevant

    return rank_relevant(blocks, [d.id for d in pool.docs], [q.id for q in pool.queries], pool.qrels,
                         pool.exclusions, doc_langs=[d.lang for d in pool.docs], query_lang=pool.query_lang)


def rank_exact(retriever, seen: "Pool", pool: "Pool") -> "RankTable":
    """The default ranker: ``retriever.score`` over the whole of ``seen``, exact ranks over ``pool``."""
    return rank_blocks(retriever.score(seen.queries, seen.docs), pool)


class ShardedRanker:
    """Exact ranks by counting per document shard (``clirbench.sharded``): memory O(queries x
    relevant + block x shard) for dense retrievers, never queries x pool. Same ranks as
    ``rank_exact`` (tested for 1, 2 and 7 shards). ``info`` says how the last pool was ranked."""

    def __init__(self, shards: int | None = None, device: str | None = None) -> None:
        self.shards, self.device, self.info = shards, device, None

    def __call__(self, retriever, seen: "Pool", pool: "Pool") -> "RankTable":
        from .sharded import rank_pool_sharded

        ranked = rank_pool_sharded(retriever, seen, pool, shards=self.shards, device=self.device)
        self.info = {"path": "sharded counting", "shards": ranked.shards, "scoring": ranked.path,
                     "exact": ranked.exact, "precision": ranked.precision}
        return ranked.table


class RayRanker:
    """``ShardedRanker`` on a Ray cluster (``clirbench.distributed``): documents encoded by Ray
    actors into the shared embedding cache, shards counted by Ray tasks (retried when a worker is
    lost; finished shards' counts kept for a rerun), counts added on the driver. Same ranks."""

    def __init__(self, shards: int | None = None, address: str | None = None, workers: int | None = None,
                 options: Mapping | None = None, device: str | None = None) -> None:
        self.shards, self.address, self.workers, self.device = shards, address, workers, device
        self.options, self.info = dict(options or {}), None

    def __call__(self, retriever, seen: "Pool", pool: "Pool") -> "RankTable":
        from .distributed import rank_pool_ray
        from .redact import redact

        ranked = rank_pool_ray(retriever, seen, pool, self.shards, address=self.address, workers=self.workers,
                               options=self.options, device=self.device)
        self.info = {"path": "sharded counting on Ray", "shards": ranked.shards, "scoring": ranked.path,
                     "exact": ranked.exact, "precision": ranked.precision, "shards_computed": ranked.computed,
                     "shards_reused": ranked.reused, "address": redact(self.address) if self.address else "local"}
        return ranked.table


class AnnRanker:
    """Cutoff measures from a faiss index's top-k lists (``--index faiss:<factory>``), for a
    DenseRetriever. The record gets the index and its recall against the exact top-k on a sample of
    queries (``info``). Rank-set measures (MaxR, Complete@K, ...) are refused before any work
    (``retrievers.ann.check_ann_measures``), never approximated."""

    def __init__(self, spec: str, k: int, device: str | None = None) -> None:
        self.spec, self.k, self.device, self.info = spec, k, device, None

    def __call__(self, retriever, seen: "Pool", pool: "Pool") -> "RankTable":
        from .errors import ClirbenchError
        from .retrievers.ann import ann_run
        from .retrievers.dense import DenseRetriever

        if not isinstance(retriever, DenseRetriever):
            raise ClirbenchError(f"--index {self.spec} needs a dense retriever (embeddings to index), "
                                 f"not {retriever.spec}")
        run, info = ann_run(retriever, seen.queries, seen.docs, self.spec, self.k, exclusions=pool.exclusions,
                            device=self.device)
        self.info = {"path": "approximate top-k", **info}
        return rank_blocks(run_blocks(pool, run), pool)


def choose_ranker(shards: int | None = None, index: str | None = None, pool_sizes: Sequence[int] = (),
                  device: str | None = None, measures: Sequence = (), executor: str = "local",
                  address: str | None = None, workers: int | None = None,
                  options: Mapping | None = None) -> Ranker | None:
    """The ranking strategy of a run: ``index`` (faiss, approximate top-k), else ``executor="ray"``
    (exact, sharded counting on Ray; ``options`` rebuild the retriever on the workers), else
    ``shards`` (exact, sharded counting here), else sharded counting chosen by itself when a pool
    holds more than ``sharded.AUTO_SHARD_DOCS`` documents, else None (``rank_exact``: full rows)."""
    from .errors import ClirbenchError

    if executor not in ("local", "ray"):
        raise ClirbenchError(f"unknown executor {executor!r}; expected local or ray")
    if address is not None and executor != "ray":
        raise ClirbenchError("--address needs --executor ray")
    if index is not None and (shards is not None or executor == "ray"):
        raise ClirbenchError("--index excludes --shards and --executor ray: an approximate index gives "
                             "top-k lists, the sharded path exact ranks")
    if executor == "ray":
        if address:
            from .distributed import check_reachable

            check_reachable(address)  # one line for an unreachable cluster, before any work
        return RayRanker(shards, address, workers, options, device)
    if index is not None:
        from .retrievers.ann import ann_depth, check_ann_measures

        k = ann_depth(measures)
        check_ann_measures(measures, k)
        return AnnRanker(index, k, device)
    if shards is not None:
        return ShardedRanker(shards, device)
    from .sharded import AUTO_SHARD_DOCS

    if any(n > AUTO_SHARD_DOCS for n in pool_sizes):
        return ShardedRanker(None, device)
    return None


def run_blocks(pool: "Pool", run: Mapping[str, Mapping[str, float]],
               rows: int = RUN_ROWS) -> Iterator[tuple[int, np.ndarray]]:
    """Score rows of a ``{qid: {docid: score}}`` run laid over ``pool`` (-inf for documents not in it)."""
    doc_ids = [d.id for d in pool.docs]
    col = {d: i for i, d in enumerate(doc_ids)}
    qids = [q.id for q in pool.queries]
    for start in range(0, len(qids), rows):
        block = np.full((min(rows, len(qids) - start), len(doc_ids)), -np.inf, dtype=np.float32)
        for r, q in enumerate(qids[start:start + rows]):
            hits = run.get(q) or {}
            if hits:
                idx = np.fromiter((col[d] for d in hits), dtype=np.int64, count=len(hits))
                block[r, idx] = np.fromiter(hits.values(), dtype=np.float64, count=len(hits))
        yield start, block


def evaluate_pool(retriever, pool: "Pool", measures: Sequence, resamples: int = 1000, seed: int = 42,
                  *, seen: "Pool | None" = None, ranker: Ranker | None = None) -> PoolEvaluation:
    """Rank ``pool`` with ``retriever`` (reading ``seen``, default ``pool``) and measure it."""
    table = (ranker or rank_exact)(retriever, pool if seen is None else seen, pool)
    return evaluate_table(table, measures, resamples, seed)


def evaluate_scores(run: Mapping[str, Mapping[str, float]], pool: "Pool", measures: Sequence,
                 resamples: int = 1000, seed: int = 42) -> PoolEvaluation:
    """Measure a ready ``{qid: {docid: score}}`` run over ``pool`` (documents it lacks rank last)."""
    return evaluate_table(rank_blocks(run_blocks(pool, run), pool), measures, resamples, seed)
