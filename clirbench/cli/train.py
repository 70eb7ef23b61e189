"""``clirbench train`` (alignment / data-composition recipes) and ``clirbench merge`` (weight averaging)."""
from __future__ import annotations

import argparse
import json

from ..train import LOSSES, RECIPES
from ..train.merge import merge_models
from ..train.recipes import TRAIN_RECORD, train
from ..util.checks import batch_size, check_float, float_in, int_in, positive_float, positive_int, probability, seed
from .args import split_list, task_options

__all__ = ["add_train_parser", "add_merge_parser", "cmd_train", "cmd_merge"]


def _weights(text: str) -> list[float]:
    """``1,0`` / ``0.3,0.7``: non-negative numbers, comma-separated."""
    out = []
    for part in text.split(","):
        try:
            out.append(check_float(float(part), "weight", 0.0))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{part.strip()!r}: {exc}" if "weight" in str(exc)
                                             else f"expected comma-separated non-negative numbers, got {text!r}") from None
    return out


def add_merge_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("merge", help="average the weights of models with the same architecture")
    p.add_argument("models", nargs="+", metavar="MODEL", help="local sentence-transformers folders (or hub ids)")
    p.add_argument("--out", required=True, help="folder to write the merged model to (new or empty)")
    p.add_argument("--weights", type=_weights, default=None, metavar="W1,W2,...",
                   help="one non-negative weight per model, normalised to sum 1 (default: uniform)")
    p.add_argument("--device", default="cpu")
    p.set_defaults(handler=cmd_merge)
    return p


def cmd_merge(args) -> int:
    out = merge_models(args.models, args.out, weights=args.weights, device=args.device)
    record = json.loads((out / "clirbench_merge.json").read_text(encoding="utf-8"))
    weights = ", ".join(f"{w:g}" for w in record["weights"])
    print(f"{out}: weighted average of {len(args.models)} models (weights {weights}); "
          f"evaluate it with clirbench run --model {out}")
    return 0


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("train", help="fine-tune a sentence-transformers model to reduce language bias")
    p.add_argument("--model", required=True, help="base model: a sentence-transformers folder or hub id")
    p.add_argument("--out", required=True, help="folder for the trained model (new or empty)")
    p.add_argument("--recipe", choices=RECIPES, default="align",
                   help="align: JSD + InfoNCE on (q_pivot, p_pivot, p_target) (default); "
                        "compose: data composition D(l1 l2 l3) with MultipleNegativesRankingLoss")
    p.add_argument("--task", default=None, help="parallel training data: a parallel task (xquad, parallel:<file>)")
    p.add_argument("--triplets", default=None, metavar="FILE", help="or a triplet JSONL (query, positive, negatives by language)")
    p.add_argument("--langs", default="en,de", help="pivot,target (align) or the two languages (compose); default en,de")
    p.add_argument("--task-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a task option, e.g. articles=train (XQuAD's training half)")
    p.add_argument("--data-dir", default=None, help="folder with the task's files")
    p.add_argument("--loss", choices=LOSSES, default=None, help="align recipe's loss (default jsd+nce)")
    p.add_argument("--compositions", default="all", help="compose recipe: all or l1-l2-l3,... e.g. en-de-de")
    p.add_argument("--hard-negatives", type=int_in(0, 1_000), default=6,
                   help="compose: hard negatives mined per query from parallel data (default 6; a triplet file brings its own)")
    p.add_argument("--miner", default="bm25", help="compose: clirbench retriever that mines hard negatives (default bm25)")
    p.add_argument("--lr", type=positive_float, default=2e-5, help="learning rate (default 2e-5)")
    p.add_argument("--epochs", type=float_in(0.0, 10_000.0, low_open=True), default=1.0)
    p.add_argument("--batch-size", type=batch_size, default=32)
    p.add_argument("--warmup-ratio", type=probability, default=None, help="default 0.15 (align) / 0.1 (compose)")
    p.add_argument("--scale", type=float_in(0.0, 1e6, low_open=True), default=20.0, help="cosine similarity scale (1/temperature), default 20")
    p.add_argument("--max-steps", type=positive_int, default=None, help="stop after this many steps")
    p.add_argument("--max-examples", type=positive_int, default=None, help="train on this many examples (seeded sample)")
    p.add_argument("--eval-every", type=positive_int, default=None, metavar="N",
                   help="measure the task's multi pools every N steps (sentence-transformers evaluator)")
    p.add_argument("--eval-task-option", action="append", default=[], metavar="KEY=VALUE",
                   help="task option of the pools measured during training, e.g. articles=test")
    p.add_argument("--seed", type=seed, default=42)
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda when present; bf16 only there)")
    p.add_argument("--cache-dir", default=None, help="embedding cache for a dense miner")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_train)
    return p


def cmd_train(args) -> int:
    out = train(args.model, args.out, task=args.task, langs=split_list(args.langs, "--langs") or (),
                task_options=task_options(args.task_option), data_dir=args.data_dir, triplets=args.triplets,
                recipe=args.recipe, loss=args.loss, compositions=args.compositions,
                hard_negatives=args.hard_negatives, miner=args.miner, lr=args.lr, epochs=args.epochs,
                batch_size=args.batch_size, warmup_ratio=args.warmup_ratio, seed=args.seed,
                max_steps=args.max_steps, max_examples=args.max_examples, scale=args.scale,
                device=args.device, cache_dir=args.cache_dir, progress=not args.no_progress,
                eval_every=args.eval_every, eval_task_options=task_options(args.eval_task_option))
    record = json.loads((out / TRAIN_RECORD).read_text(encoding="utf-8"))
    print(f"{out}: {record['recipe']} ({record['loss']['loss']}), {record['steps']} steps on {record['rows']} rows, "
          f"train loss {record['train_loss']:.4f}, {record['train_seconds']:.0f} s; "
          f"evaluate it with clirbench run --model {out}")
    return 0
