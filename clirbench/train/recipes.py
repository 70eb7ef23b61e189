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
import random
import shutil
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ..util.errors import ClirbenchError
from ..util.optional import require
from . import data as D
from .config import TrainConfig
from .merge import quiet_loading

TRAIN_RECORD = "clirbench_train.json"


def train(model: str, out: str | os.PathLike, config: TrainConfig | None = None, **options) -> Path:
    """Train ``model`` (a sentence-transformers folder or hub id) and save it to ``out``; returns ``out``.

    The settings are a :class:`~clirbench.train.config.TrainConfig` (``config``), and/or its fields
    as keyword ``options`` (``train(m, out, task="xquad", langs=("en", "de"), max_steps=20)``):
    the data (``task`` or ``triplets``), the recipe, the optimisation, the evaluation every
    ``eval_every`` steps (whose values go to ``loss_history``) and the output.
    """
    c = config.with_options(**options) if config is not None else TrainConfig.from_options(**options)
    from ..retrievers.encoders import check_device  # lazy: numpy

    check_device(c.device)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ClirbenchError(f"--out {out}: exists and is not empty; choose a new folder")

    require("sentence_transformers", purpose="clirbench train")
    require("datasets", purpose="clirbench train")
    require("accelerate", purpose="clirbench train (sentence-transformers' trainer)")

    if c.task is not None:
        examples = D.from_task(c.task, c.langs, c.task_options, c.data_dir)
    else:
        examples = D.read_triplets(c.triplets, c.langs)
    if c.max_examples is not None and c.max_examples < len(examples.examples):
        keep = sorted(random.Random(c.seed).sample(range(len(examples.examples)), c.max_examples))
        examples = D.Examples(tuple(examples.examples[i] for i in keep), examples.corpus,
                              dict(examples.source, max_examples=c.max_examples))
    if c.recipe == "align":
        dataset = D.alignment_dataset(examples, c.langs[0], c.langs[1])
        composition = None
    else:
        composition = D.parse_compositions(c.compositions, c.langs)
        if examples.corpus and c.hard_negatives > 0:
            examples = D.mine_hard_negatives(examples, c.miner, c.langs[0], c.hard_negatives, cache_dir=c.cache_dir)
        dataset = D.build_composition(examples, composition, c.hard_negatives if examples.corpus else None)
    if len(dataset) < c.batch_size and c.max_steps is None:
        raise ClirbenchError(f"only {len(dataset)} training rows for a batch of {c.batch_size}: lower --batch-size")

    import torch
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.base.sampler import BatchSamplers

    evaluator = c.evaluator
    if c.eval_every is not None and evaluator is None:
        from .evaluator import PoolEvaluator  # lazy: numpy, sentence_transformers

        evaluator = PoolEvaluator.from_task(c.task, c.langs, "multi", c.eval_task_options, c.data_dir)
    on_gpu = (c.device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    with quiet_loading():
        st = SentenceTransformer(str(Path(model).expanduser()) if Path(model).expanduser().is_dir() else model,
                                 device=c.device)
    if c.recipe == "align":
        from .losses import AlignmentLoss  # lazy: torch

        loss_module = AlignmentLoss(st, loss=c.loss, scale=c.scale)
        loss_record = loss_module.get_config_dict()
    else:
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        loss_module = MultipleNegativesRankingLoss(st, scale=c.scale)
        loss_record = {"loss": "MultipleNegativesRankingLoss", "scale": c.scale, "similarity_fct": "cos_sim"}
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        args = SentenceTransformerTrainingArguments(
            output_dir=str(scratch / "checkpoints"), num_train_epochs=c.epochs, per_device_train_batch_size=c.batch_size,
            learning_rate=c.lr, adam_beta1=0.9, adam_beta2=0.99, weight_decay=0.01, lr_scheduler_type="linear",
            warmup_steps=c.warmup, seed=c.seed, data_seed=c.seed, bf16=on_gpu, max_steps=c.max_steps or -1,
            batch_sampler=BatchSamplers.NO_DUPLICATES, save_strategy="no", report_to="none",
            logging_steps=max(1, len(dataset) // c.batch_size // 10), disable_tqdm=not c.progress,
            use_cpu=not on_gpu and (c.device or "cpu") == "cpu", optim="adamw_torch",
            **({"eval_strategy": "steps", "eval_steps": c.eval_every} if c.eval_every else {}))
        trainer = SentenceTransformerTrainer(model=st, args=args, train_dataset=dataset, loss=loss_module,
                                             evaluator=evaluator)
        t0 = time.perf_counter()
        output = trainer.train()
        seconds = time.perf_counter() - t0
        model_dir = scratch / "model"
        with quiet_loading():
            st.save(str(model_dir))
        record = {
            "recipe": c.recipe, "base_model": str(model), "languages": list(c.langs), "loss": loss_record,
            "compositions": ["-".join(combo) for combo in composition] if composition else None,
            "data": dict(examples.source), "examples": len(examples.examples), "rows": len(dataset),
            "columns": list(dataset.column_names),
            "optimizer": {"name": "AdamW", "lr": c.lr, "betas": [0.9, 0.99], "weight_decay": 0.01,
                          "schedule": "linear", "warmup_ratio": c.warmup},
            "epochs": c.epochs, "batch_size": c.batch_size, "max_steps": c.max_steps, "seed": c.seed,
            "batch_sampler": "no_duplicates", "bf16": on_gpu, "device": str(st.device),
            "steps": int(output.global_step), "train_loss": float(output.training_loss),
            "train_seconds": round(seconds, 2), "loss_history": [
                {k: v for k, v in h.items() if k == "step" or k == "loss" or k.startswith("eval_")}
                for h in trainer.state.log_history if "loss" in h or any(k.startswith("eval_") for k in h)],
            "eval_every": c.eval_every, "eval_task_options": dict(c.eval_task_options or {}) if c.eval_every else None,
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
    out = {}
    for dist in ("clirbench", "sentence-transformers", "transformers", "torch", "datasets", "accelerate"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out
