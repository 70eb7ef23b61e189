"""Training recipes that reduce language bias, on sentence-transformers' trainer.

- ``losses``: the alignment losses of the Max@R paper (sqrt-JSD over embedding dimensions, InfoNCE)
  as ``nn.Module``s for ``SentenceTransformerTrainer``.
- ``data``: training examples from parallel data or a triplet JSONL; the data composition
  D(l1 l2 l3) of the Korean–English paper; hard-negative mining with any clirbench retriever.
- ``recipes``: ``train(model, out, **options)`` — the two recipes with the papers' defaults.
- ``config``: ``TrainConfig``, every setting of a run as one checked value (the options of ``train``).
- ``merge``: weight-averaged model merging.
- ``choices``: the recipe and loss names (what the CLI offers), without torch.

Everything here imports torch / sentence-transformers lazily (``clirbench[train]``).
"""
from __future__ import annotations

from . import data
from .choices import LOSSES, RECIPES
from .config import TrainConfig
from .merge import merge_models
from .recipes import train

__all__ = ["LOSSES", "RECIPES", "TrainConfig", "train", "merge_models", "build_composition", "from_task", "read_triplets"]


def __getattr__(name: str):
    if name == "TrainConfig":
        return TrainConfig
    if name == "train":
        return train
    if name == "merge_models":
        return merge_models
    if name in ("build_composition", "from_task", "read_triplets"):
        return getattr(data, name)
    raise AttributeError(name)
