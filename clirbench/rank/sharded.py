"""The sharded ranker (``--shards``): exact ranks by counting per document shard (``counting.py``), the
shards scored from a retriever's embeddings (``dense_shards.py``) or cut from its full rows."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..util.errors import ClirbenchError
from .capabilities import Embeds, ScoresRows, name_of
from .counting import ShardCounter, rank_relevant_sharded
from .dense_shards import dense_shard_scorer
from .head import Head, HeadBuilder
from .pairs import judged_pairs
from .ranked import Ranked, RankingInfo
from .shards import SHARD_BYTES, grouped_shards, shard_counts, shard_slices
from .table import RankTable, as_trec_scores, tie_keys

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["ShardedRanks", "rank_pool_sharded", "check_shardable", "ShardedRanker"]


@dataclass(frozen=True)
class ShardedRanks:
    """What ``rank_pool_sharded`` computed and how (for the result record)."""

    table: RankTable
    shards: int
    path: str  # "dense document shards" or "column split of full rows"
    exact: bool  # False for half-precision products
    precision: str
    head: Head | None = None  # each query's top-K documents (None: not asked for)


def rank_pool_sharded(retriever, seen_pool: "Pool", pool: "Pool", shards: int | None = None, device: str | None = None,
                      *, precision: str = "float32", budget_bytes: int = SHARD_BYTES,
                      depth: int | None = None) -> ShardedRanks:
    """Ranks of ``pool``'s relevant docs, scored by ``retriever`` on ``seen_pool`` (its texts, maybe
    translated; ids, qrels, exclusions and languages come from ``pool``), shard by shard.

    A retriever that embeds (``capabilities.Embeds``) is scored by true document shards (memory:
    embeddings + one block x shard). One that only yields full rows has them split column-wise into
    ``shards`` parts and counted part by part, exact but with no memory saved (its own row blocks
    bound the memory); one that does neither is refused (``check_shardable``). ``shards=None`` picks
    the count from ``budget_bytes`` (``shard_plan``). The head (each query's top ``depth``
    documents; None: none) is kept from the same blocks, merged shard by shard (memory O(queries x depth)).
    """
    doc_ids = [d.id for d in pool.docs]
    query_ids = [q.id for q in pool.queries]
    langs = [d.lang for d in pool.docs]
    n, block = shard_counts(len(doc_ids), len(query_ids), shards, budget_bytes)
    head = HeadBuilder.for_pool(pool, depth) if depth else None
    if isinstance(retriever, Embeds) and doc_ids:
        dense = dense_shard_scorer(retriever, seen_pool.queries, seen_pool.docs, block, device, precision)
        parts = grouped_shards(dense.rows, n)
        xp = np
        if dense.device is not None:
            import torch as xp  # lazy: optional, counting on the device
        exactness = {"bounds": dense.bounds} if precision == "float32" else {}
        scorer = dense.scorer(dense.counts_bounded())
        table = rank_relevant_sharded(head.scorer(scorer) if head else scorer, parts, doc_ids, query_ids, pool.qrels,
                                      pool.exclusions, langs, pool.query_lang, xp=xp, check_nan=False, **exactness)
        return ShardedRanks(table, len(parts), "dense document shards", dense.exact_ranks(), precision,
                            head and head.finish())
    check_shardable(retriever)
    blocks = retriever.score(seen_pool.queries, seen_pool.docs)
    table = _rank_full_rows_split(head.tee(blocks) if head else blocks, n, doc_ids, query_ids, pool, langs)
    return ShardedRanks(table, min(n, max(len(doc_ids), 1)), "column split of full rows", True, "float32",
                        head and head.finish())


def _rank_full_rows_split(blocks, shards: int, doc_ids, query_ids, pool, langs) -> RankTable:
    pairs = judged_pairs(doc_ids, query_ids, pool.qrels, pool.exclusions, langs)
    counter = ShardCounter(pairs, tie_keys(doc_ids), len(doc_ids))
    parts = shard_slices(len(doc_ids), shards)
    for start, S in blocks:
        S = as_trec_scores(np.asarray(S))
        if S.ndim != 2 or S.shape[1] != len(doc_ids):
            raise ValueError(f"score block has shape {S.shape}, expected (b, {len(doc_ids)})")
        a0, a1 = np.searchsorted(pairs.rel_row, [start, start + S.shape[0]])
        idx = np.arange(a0, a1)
        counter.set_exact(idx, S[pairs.rel_row[idx] - start, pairs.rel_col[idx]])
        for cols in parts:
            counter.add(start, cols, S[:, cols])
    return pairs.finish(counter.ranks(query_ids), langs, pool.query_lang)


def check_shardable(retriever, option: str = "--shards") -> None:
    """A one-line ClirbenchError unless ``retriever`` embeds texts or scores full rows."""
    if not isinstance(retriever, (Embeds, ScoresRows)):
        raise ClirbenchError(f"{option} needs a retriever that embeds texts (embed, score_dtype) or gives full score "
                             f"rows (score); {name_of(retriever)} does neither")


class ShardedRanker:
    """Exact ranks by counting per document shard (``rank_pool_sharded``): memory O(queries x
    relevant + block x shard) for retrievers that embed, never queries x pool; the same ranks as
    ``exact.ExactRanker`` (tested for 1, 2 and 7 shards), and the same head (each query's top
    ``depth`` documents, merged across shards)."""

    def __init__(self, shards: int | None = None, device: str | None = None,
                 depth: int | None = None) -> None:
        self.shards, self.device, self.depth = shards, device, depth

    def supports(self, measures) -> None:
        """Every measure: the ranks are exact."""

    def accepts(self, retriever) -> None:
        check_shardable(retriever)

    def rank(self, retriever, seen: "Pool", pool: "Pool") -> Ranked:
        done = rank_pool_sharded(retriever, seen, pool, shards=self.shards, device=self.device, depth=self.depth)
        return Ranked(done.table, RankingInfo("sharded counting", shards=done.shards, scoring=done.path,
                                              exact=done.exact, precision=done.precision), done.head)
