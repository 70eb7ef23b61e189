"""A sentence-transformers evaluator that measures clirbench pools during training.

``PoolEvaluator(pools)`` encodes each pool with the model being trained (no disk cache: the
weights change between calls), ranks under clirbench's tie rule and returns the mean of each
measure per pool, e.g. ``clirbench_multi_en-de_q-de_MaxR_norm``. The trainer calls it every
``eval_steps`` and logs the values (``clirbench train --eval-every N`` records them in
``clirbench_train.json``'s ``loss_history``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..collection import Pool
from ..identity import join_langs, query_id
from ..measures import compute, parse
from ..rank.exact import ExactRanker
from ..retrievers.dense import DenseRetriever
from ..tasks import get_task

try:  # the base class when sentence-transformers is installed (it is, wherever this is used)
    from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator as _Base
except ImportError:  # pragma: no cover - sentence-transformers < 6
    from sentence_transformers.evaluation import SentenceEvaluator as _Base


class _LiveEncoder:
    """The Encoder protocol over a SentenceTransformer in training (no prompts, L2-normalised)."""

    model_id = "training"
    revision = "live"

    def __init__(self, model, batch_size: int) -> None:
        self.model, self.batch_size = model, batch_size

    def prompt(self, role: str) -> str:
        return ""

    def encode(self, texts, role: str) -> np.ndarray:
        return self.model.encode(list(texts), batch_size=self.batch_size, show_progress_bar=False,
                                 convert_to_numpy=True, normalize_embeddings=True).astype(np.float32)


class PoolEvaluator(_Base):
    """Mean of ``measures`` on each pool; the primary metric is the first measure on the first pool."""

    def __init__(self, pools: Sequence[Pool], measures: Sequence[str] = ("MaxR_norm", "MaxR", "Complete@10"),
                 name: str = "clirbench", batch_size: int = 32) -> None:
        super().__init__()

        if not pools:
            raise ValueError("PoolEvaluator needs at least one pool")
        self.pools, self.name, self.batch_size = list(pools), name, batch_size
        self.measures = [parse(m) for m in measures]
        higher = getattr(self.measures[0], "higher_is_better", None)
        self.greater_is_better = True if higher is None else bool(higher)
        self.primary_metric = self._key(self.pools[0], self.measures[0])

    @classmethod
    def from_task(cls, task: str, langs: Sequence[str], scenarios: str = "multi", task_options=None,
                  data_dir=None, **kwargs) -> "PoolEvaluator":

        pools = get_task(task).pools(",".join(langs), scenarios, None, "unique", data_dir, **dict(task_options or {}))
        return cls(pools, **kwargs)

    @staticmethod
    def _key(pool: Pool, measure) -> str:
        return "_".join([pool.scenario, join_langs(pool.doc_langs), query_id(pool.query_lang), str(measure)])

    def __call__(self, model, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict[str, float]:
        retriever = DenseRetriever(_LiveEncoder(model, self.batch_size), spec="training")
        metrics = {}
        for pool in self.pools:
            table = ExactRanker().rank(retriever, pool, pool).table
            values = compute([m for m in self.measures if not m.of_mean], table)
            for m in self.measures:
                if not m.of_mean:
                    metrics[self._key(pool, m)] = float(np.nanmean(values[str(m)]))
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        if hasattr(self, "store_metrics_in_model_card_data"):
            self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
