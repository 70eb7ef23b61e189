"""``train(...)``: the two recipes on ``SentenceTransformerTrainer``, with the papers' defaults.

- ``align`` (the Max@R paper): rows (q_pivot, p_pivot, p_target), :class:`AlignmentLoss`
  (``jsd+nce`` by default), warm-up ratio 0.15.
- ``compose`` (the Korean–English paper): D(l1 l2 l3) rows with hard negatives mined by a
  clirbench retriever (6 by default, ``bm25``), ``MultipleNegativesRankingLoss``, warm-up ratio 0.1.

Both: 1 epoch, batch 32, AdamW (betas 0.9 / 0.99, weight decay 0.01), linear schedule, seed 42,
bf16 only on a GPU, lr 2e-5 unless given; batches never hold the same text twice
(``BatchSamplers.NO_DUPLICATES``), so that a passage with several questions is not its own
in-batch negative. The output is a normal sentence-transformers folder with
``clirbench_train.json`` (the whole configuration, the data and its hashes, the miner, steps, time).
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence

from ..checks import check_float, check_int, check_seed
from ..errors import ClirbenchError, UnknownNameError
from .choices import LOSSES, RECIPES

TRAIN_RECORD = "clirbench_train.json"
WARMUP = {"align": 0.15, "compose": 0.1}


def train(model: str, out: str | os.PathLike, *, task: str | None = None, langs: Sequence[str] = ("en", "de"),
          task_options: Mapping | None = None, data_dir=None, triplets: str | None = None, recipe: str = "align",
          loss: str | None = None, compositions: str | Sequence[str] = "all", hard_negatives: int = 6,
          miner: str = "bm25", lr: float = 2e-5, epochs: float = 1, batch_size: int = 32,
          warmup_ratio: float | None = None, seed: int = 42, max_steps: int | None = None,
          max_examples: int | None = None, scale: float = 20.0, device: str | None = None,
          cache_dir=None, progress: bool = True, eval_every: int | None = None,
          eval_task_options: Mapping | None = None, evaluator=None) -> Path:
    """Train ``model`` (a sentence-transformers folder or hub id) and save it to ``out``; returns ``out``.

    Data: ``task`` (a parallel task; ``task_options`` such as ``{"articles": "train"}``) or
    ``triplets`` (a triplet JSONL). ``loss`` (align only): ``jsd+nce`` (default), ``nce``, ``jsd``, ``nce-psg``. ``langs`` = (pivot, target) for ``align``, the two languages of
    the compositions for ``compose``. ``max_examples`` keeps the first N examples (after shuffling
    with ``seed``), ``max_steps`` stops early (CI-sized runs). ``eval_every`` N steps, the model is
    measured on the task's multi pools in ``langs`` with ``eval_task_options`` (e.g.
    ``{"articles": "test"}``) by :class:`~clirbench.train.evaluator.PoolEvaluator`, or by any
    sentence-transformers ``evaluator`` given; the values go to ``loss_history``.
    """
    if recipe not in RECIPES:
        raise UnknownNameError(f"unknown recipe {recipe!r}; available: {', '.join(RECIPES)}")
    if recipe == "compose" and loss is not None:
        raise ClirbenchError("--loss applies to --recipe align; compose trains with MultipleNegativesRankingLoss")
    loss = loss or "jsd+nce"
    if loss not in LOSSES:
        raise UnknownNameError(f"unknown loss {loss!r}; available: {', '.join(LOSSES)}")
    langs = tuple(langs)
    if len(langs) != 2 or langs[0] == langs[1]:
        raise ClirbenchError(f"--langs: expected two different languages like en,de, got {','.join(langs)}")
    if (task is None) == (triplets is None):
        raise ClirbenchError("give the training data as exactly one of --task (parallel data) or --triplets FILE")
    lr = check_float(lr, "lr", 0.0, low_open=True)
    epochs = check_float(epochs, "epochs", 0.0, low_open=True)
    batch_size = check_int(batch_size, "batch_size", 2)
    seed = check_seed(seed)
    scale = check_float(scale, "scale", 0.0, low_open=True)
    hard_negatives = check_int(hard_negatives, "hard_negatives", 0)
    warmup = WARMUP[recipe] if warmup_ratio is None else check_float(warmup_ratio, "warmup_ratio", 0.0, 1.0)
    if max_steps is not None:
        max_steps = check_int(max_steps, "max_steps", 1)
    if max_examples is not None:
        max_examples = check_int(max_examples, "max_examples", 1)
    if eval_every is not None:
        eval_every = check_int(eval_every, "eval_every", 1)
        if evaluator is None and task is None:
            raise ClirbenchError("--eval-every measures the --task's pools: give --task (or a Python evaluator)")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ClirbenchError(f"--out {out}: exists and is not empty; choose a new folder")

    from ..optional import require

    require("sentence_transformers", purpose="clirbench train")
    require("datasets", purpose="clirbench train")
    require("accelerate", purpose="clirbench train (sentence-transformers' trainer)")
    from . import data as D

    if task is not None:
        examples = D.from_task(task, langs, task_options, data_dir)
    else:
        examples = D.read_triplets(triplets, langs)
    if max_examples is not None and max_examples < len(examples.examples):
        import random

        keep = sorted(random.Random(seed).sample(range(len(examples.examples)), max_examples))
        examples = D.Examples(tuple(examples.examples[i] for i in keep), examples.corpus,
                              dict(examples.source, max_examples=max_examples))
    if recipe == "align":
        dataset = D.alignment_dataset(examples, langs[0], langs[1])
        composition = None
    else:
        composition = D.parse_compositions(compositions, langs)
        if examples.corpus and hard_negatives > 0:
            examples = D.mine_hard_negatives(examples, miner, langs[0], hard_negatives, cache_dir=cache_dir)
        dataset = D.build_composition(examples, composition, hard_negatives if examples.corpus else None)
    if len(dataset) < batch_size and max_steps is None:
        raise ClirbenchError(f"only {len(dataset)} training rows for a batch of {batch_size}: lower --batch-size")

    import torch
    from sentence_transformers import (SentenceTransformer, SentenceTransformerTrainer,
                                       SentenceTransformerTrainingArguments)
    from sentence_transformers.base.sampler import BatchSamplers

    from .merge import quiet_loading

    if eval_every is not None and evaluator is None:
        from .evaluator import PoolEvaluator

        evaluator = PoolEvaluator.from_task(task, langs, "multi", eval_task_options, data_dir)
    on_gpu = (device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    with quiet_loading():
        st = SentenceTransformer(str(Path(model).expanduser()) if Path(model).expanduser().is_dir() else model,
                                 device=device)
    if recipe == "align":
        from .losses import AlignmentLoss

        loss_module = AlignmentLoss(st, loss=loss, scale=scale)
        loss_record = loss_module.get_config_dict()
    else:
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        loss_module = MultipleNegativesRankingLoss(st, scale=scale)
        loss_record = {"loss": "MultipleNegativesRankingLoss", "scale": scale, "similarity_fct": "cos_sim"}
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        args = SentenceTransformerTrainingArguments(
            output_dir=str(scratch / "checkpoints"), num_train_epochs=epochs, per_device_train_batch_size=batch_size,
            learning_rate=lr, adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.01, lr_scheduler_type="linear",
            warmup_steps=warmup, seed=seed, data_seed=seed, bf16=on_gpu, max_steps=max_steps or -1,
            batch_sampler=BatchSamplers.NO_DUPLICATES, save_strategy="no", report_to="none",
            logging_steps=max(1, len(dataset) // batch_size // 10), disable_tqdm=not progress,
            use_cpu=not on_gpu and (device or "cpu") == "cpu", optim="adamw_torch",
            **({"eval_strategy": "steps", "eval_steps": eval_every} if eval_every else {}))
        trainer = SentenceTransformerTrainer(model=st, args=args, train_dataset=dataset, loss=loss_module,
                                             evaluator=evaluator)
        t0 = time.perf_counter()
        output = trainer.train()
        seconds = time.perf_counter() - t0
        model_dir = scratch / "model"
        with quiet_loading():
            st.save(str(model_dir))
        record = {
            "recipe": recipe, "base_model": str(model), "languages": list(langs), "loss": loss_record,
            "compositions": ["-".join(c) for c in composition] if composition else None,
            "data": dict(examples.source), "examples": len(examples.examples), "rows": len(dataset),
            "columns": list(dataset.column_names),
            "optimizer": {"name": "AdamW", "lr": lr, "betas": [0.9, 0.99], "weight_decay": 0.01,
                          "schedule": "linear", "warmup_ratio": warmup},
            "epochs": epochs, "batch_size": batch_size, "max_steps": max_steps, "seed": seed,
            "batch_sampler": "no_duplicates", "bf16": on_gpu, "device": str(st.device),
            "steps": int(output.global_step), "train_loss": float(output.training_loss),
            "train_seconds": round(seconds, 2), "loss_history": [
                {k: v for k, v in h.items() if k == "step" or k == "loss" or k.startswith("eval_")}
                for h in trainer.state.log_history if "loss" in h or any(k.startswith("eval_") for k in h)],
            "eval_every": eval_every, "eval_task_options": dict(eval_task_options or {}) if eval_every else None,
            "versions": _versions(), "hardware": {"machine": platform.machine(), "torch_threads": torch.get_num_threads()},
        }
        (model_dir / TRAIN_RECORD).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if out.exists():
            out.rmdir()
        os.replace(model_dir, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("clirbench", "sentence-transformers", "transformers", "torch", "datasets", "accelerate"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out
