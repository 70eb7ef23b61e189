"""The default ranker: the retriever's full score rows over the whole pool, exact ranks by the tie rule."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.errors import ClirbenchError
from .capabilities import ScoresBoundedRows, ScoresRows, name_of
from .ranked import Ranked
from .rows import rank_blocks

if TYPE_CHECKING:
    from ..collection import Pool

__all__ = ["ExactRanker"]


class ExactRanker:
    """``retriever.score`` over the whole pool in query blocks (``score_bounded`` where the retriever
    has it: a float32 product and the near-ties scored exactly), exact ranks by the tie rule
    (memory: one block of score rows at a time)."""

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
        return Ranked(rank_blocks(score(seen.queries, seen.docs), pool))
