"""``TrainConfig``: what ``clirbench train`` trains on and how, as one frozen, validated value.

Built by the CLI (``clirbench train``) and by the Python API (``train(model, out, **options)``: the
options are this class's fields). Grouped as data, recipe, optimisation, evaluation and output.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..util.checks import check_float, check_int, check_seed
from ..util.errors import ClirbenchError, UnknownNameError
from .choices import LOSSES, RECIPES

__all__ = ["TrainConfig", "WARMUP"]

#: the papers' warm-up ratios per recipe
WARMUP = {"align": 0.15, "compose": 0.1}


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run; ``TrainConfig(**options)`` checks them all.

    Data: ``task`` (a parallel task, with ``task_options`` and ``data_dir``) or ``triplets`` (a
    triplet JSONL), ``langs`` = (pivot, target) for ``align``, the two languages of the compositions
    for ``compose``; ``max_examples`` keeps the first N examples after shuffling with ``seed``.
    Recipe: ``align`` with ``loss`` (``jsd+nce`` by default, ``nce``, ``jsd``, ``nce-psg``) or
    ``compose`` with ``compositions``, ``hard_negatives`` mined by ``miner``; ``scale`` of the loss.
    Optimisation: ``lr``, ``epochs``, ``batch_size``, ``warmup_ratio`` (the recipe's by default),
    ``seed``, ``max_steps`` (stop early: CI-sized runs), ``device``. Evaluation: every
    ``eval_every`` steps on the task's multi pools (``eval_task_options``), or by a
    sentence-transformers ``evaluator``. Output: ``cache_dir`` (the miner's embeddings), ``progress``.
    """

    # data
    task: str | None = None
    triplets: str | None = None
    langs: tuple[str, ...] = ("en", "de")
    task_options: Mapping[str, Any] = field(default_factory=dict)
    data_dir: Any = None
    max_examples: int | None = None
    # recipe
    recipe: str = "align"
    loss: str | None = None
    compositions: Any = "all"
    hard_negatives: int = 6
    miner: str = "bm25"
    scale: float = 20.0
    # optimisation
    lr: float = 2e-5
    epochs: float = 1
    batch_size: int = 32
    warmup_ratio: float | None = None
    seed: int = 42
    max_steps: int | None = None
    device: str | None = None
    # evaluation
    eval_every: int | None = None
    eval_task_options: Mapping[str, Any] = field(default_factory=dict)
    evaluator: Any = None
    # output
    cache_dir: Any = None
    progress: bool = True

    def __post_init__(self) -> None:
        def put(name: str, value) -> None:
            object.__setattr__(self, name, value)

        if self.recipe not in RECIPES:
            raise UnknownNameError(f"unknown recipe {self.recipe!r}; available: {', '.join(RECIPES)}")
        if self.recipe == "compose" and self.loss is not None:
            raise ClirbenchError("--loss applies to --recipe align; compose trains with MultipleNegativesRankingLoss")
        if self.recipe == "align":
            put("loss", self.loss or "jsd+nce")
            if self.loss not in LOSSES:
                raise UnknownNameError(f"unknown loss {self.loss!r}; available: {', '.join(LOSSES)}")
        put("langs", tuple(self.langs))
        if len(self.langs) != 2 or self.langs[0] == self.langs[1]:
            raise ClirbenchError(f"--langs: expected two different languages like en,de, got {','.join(self.langs)}")
        if (self.task is None) == (self.triplets is None):
            raise ClirbenchError("give the training data as exactly one of --task (parallel data) or --triplets FILE")
        put("task_options", dict(self.task_options or {}))
        put("eval_task_options", dict(self.eval_task_options or {}))
        put("lr", check_float(self.lr, "lr", 0.0, low_open=True))
        put("epochs", check_float(self.epochs, "epochs", 0.0, low_open=True))
        put("batch_size", check_int(self.batch_size, "batch_size", 2))
        put("seed", check_seed(self.seed))
        put("scale", check_float(self.scale, "scale", 0.0, low_open=True))
        put("hard_negatives", check_int(self.hard_negatives, "hard_negatives", 0))
        if self.warmup_ratio is not None:
            put("warmup_ratio", check_float(self.warmup_ratio, "warmup_ratio", 0.0, 1.0))
        for name in ("max_steps", "max_examples", "eval_every"):
            if getattr(self, name) is not None:
                put(name, check_int(getattr(self, name), name, 1))
        if self.eval_every is not None and self.evaluator is None and self.task is None:
            raise ClirbenchError("--eval-every measures the --task's pools: give --task (or a Python evaluator)")

    @property
    def warmup(self) -> float:
        """The warm-up ratio in force: the one given, else the recipe's."""
        return WARMUP[self.recipe] if self.warmup_ratio is None else self.warmup_ratio

    @classmethod
    def from_options(cls, **options) -> "TrainConfig":
        """``TrainConfig(**options)``; an unknown option is a TypeError naming the valid ones."""
        return cls(**_known(options))

    def with_options(self, **options) -> "TrainConfig":
        """A copy with ``options`` changed (checked again)."""
        return dataclasses.replace(self, **_known(options))


def _known(options: Mapping[str, Any]) -> Mapping[str, Any]:
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise TypeError(f"unknown training option(s) {', '.join(unknown)}; options: {', '.join(names)}")
    return options
