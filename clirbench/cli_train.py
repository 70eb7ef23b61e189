"""``clirbench train`` (alignment / data-composition recipes) and ``clirbench merge`` (weight averaging)."""
from __future__ import annotations

import argparse
import json

from .checks import check_float, nonnegative_int, positive_float, positive_int, probability, seed

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
    return p


def cmd_merge(args) -> int:
    from .train.merge import merge_models

    out = merge_models(args.models, args.out, weights=args.weights, device=args.device)
    record = json.loads((out / "clirbench_merge.json").read_text(encoding="utf-8"))
    weights = ", ".join(f"{w:g}" for w in record["weights"])
    print(f"{out}: weighted average of {len(args.models)} models (weights {weights}); "
          f"evaluate it with clirbench run --model {out}")
    return 0
