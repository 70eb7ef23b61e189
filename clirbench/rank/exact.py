"""The default ranker: the retriever's full score rows over the whole pool, exact ranks by the tie rule."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.errors import ClirbenchError
from .capabilities import ScoresBoundedRows, ScoresRows, name_of
from .head import HeadBuilder
from .ranked import Ranked
from .rows import rank_blocks

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["ExactRanker"]


class ExactRanker:
    """``retriever.score`` over the whole pool in query blocks (``score_bounded`` where the retriever
    has it: a float32 product and the near-ties scored exactly), exact ranks by the tie rule
    (memory: one block of score rows at a time), and the head of the ranking: each query's top
    ``depth`` documents from the same blocks (``head.HeadBuilder``; ``depth=None``: no head)."""

    def __init__(self, depth: int | None = None) -> None:
        self.depth = depth

    def supports(self, measures) -> None:
        """Every measure: the ranks are exact at any depth."""

    def accepts(self, retriever) -> None:
        """A one-line ClirbenchError unless ``retriever`` scores full rows."""
        if not isinstance(retriever, ScoresRows):
            raise ClirbenchError(f"{name_of(retriever)} cannot be ranked: it gives no score rows "
                                 f"(score(queries, docs))")

    def rank(self, retriever, seen: "Pool", pool: "Pool") -> Ranked:
        self.accepts(retriever)
        score = retriever.score_bounded if isinstance(retriever, ScoresBoundedRows) else retriever.score
        blocks = score(seen.queries, seen.docs)
        if not self.depth:
            return Ranked(rank_blocks(blocks, pool))
        head = HeadBuilder.for_pool(pool, self.depth)
        table = rank_blocks(head.tee(blocks), pool)
        return Ranked(table, head=head.finish())
