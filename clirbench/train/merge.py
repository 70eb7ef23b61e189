"""Weight-averaged model merging (Model Soup; Matena & Raffel's unweighted case).

``merge_models([A, B, ...], out, weights=None)`` averages the parameters of sentence-transformers
models with the same architecture and tokenizer (uniform weights unless given; weights are
normalised to sum 1) and saves a normal sentence-transformers folder with ``clirbench_merge.json``
recording the parents (path, weights hash) and the weights.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from ..util.errors import ClirbenchError
from ..util.optional import require

MERGE_RECORD = "clirbench_merge.json"


def _architecture(model) -> list:
    """What must agree between parents: module classes, modules' configs, parameter names and shapes."""
    modules = [type(m).__module__ + "." + type(m).__name__ for m in model]
    config = getattr(getattr(model[0], "auto_model", None), "config", None)
    config = config.to_dict() if config is not None else {}
    for volatile in ("_name_or_path", "transformers_version", "torch_dtype", "dtype", "architectures"):
        config.pop(volatile, None)
    shapes = [(k, tuple(v.shape), str(v.dtype)) for k, v in model.state_dict().items()]
    return [modules, config, shapes]


def _tokenizer_key(model):
    tok = getattr(model, "tokenizer", None)
    if tok is None:
        return None
    return (type(tok).__name__, tok.get_vocab(), getattr(tok, "do_lower_case", None))


@contextlib.contextmanager
def quiet_loading():
    """No transformers progress bars while models load (a user error must stay one line on stderr)."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def check_weights(weights: Sequence[float] | None, n: int) -> list[float]:
    """Normalised weights (uniform when None); ClirbenchError for a wrong count or sign."""
    if weights is None:
        return [1.0 / n] * n
    weights = [float(w) for w in weights]
    if len(weights) != n:
        raise ClirbenchError(f"--weights has {len(weights)} value(s) for {n} models")
    if any(not (w >= 0) or w == float("inf") for w in weights) or sum(weights) <= 0:
        raise ClirbenchError(f"--weights must be non-negative finite numbers with a positive sum, got {weights}")
    return [w / sum(weights) for w in weights]


def merge_models(models: Sequence[str], out: str | os.PathLike, weights: Sequence[float] | None = None,
                 device: str = "cpu") -> Path:
    """Average ``models`` (local sentence-transformers folders or hub ids) into ``out``; returns it."""

    require("sentence_transformers", purpose="clirbench merge")
    import torch
    from sentence_transformers import SentenceTransformer

    from ..retrievers.encoders import HUB_ID, check_device, weights_hash  # lazy: numpy

    check_device(device)
    if len(models) < 2:
        raise ClirbenchError("clirbench merge needs at least two models")
    norm = check_weights(weights, len(models))
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ClirbenchError(f"--out {out}: exists and is not empty; choose a new folder")
    for name in models:
        if not Path(name).expanduser().is_dir() and not HUB_ID.match(name):
            raise ClirbenchError(f"model {name!r}: no such directory, and not a Hugging Face hub id")
    with quiet_loading():
        loaded = [SentenceTransformer(str(Path(m).expanduser()) if Path(m).expanduser().is_dir() else m,
                                      device=device) for m in models]
    first_arch, first_tok = _architecture(loaded[0]), _tokenizer_key(loaded[0])
    for name, model in zip(models[1:], loaded[1:]):
        if _architecture(model) != first_arch:
            raise ClirbenchError(f"cannot merge {models[0]} and {name}: different architectures "
                                 f"(modules, model config or parameter shapes differ)")
        if _tokenizer_key(model) != first_tok:
            raise ClirbenchError(f"cannot merge {models[0]} and {name}: different tokenizers")
    states = [m.state_dict() for m in loaded]
    merged = {}
    for key, value in states[0].items():
        if torch.is_floating_point(value):
            merged[key] = sum(w * s[key].to(torch.float64) for w, s in zip(norm, states)).to(value.dtype)
        else:  # integer buffers (position ids): must agree, kept as they are
            merged[key] = value
    loaded[0].load_state_dict(merged)
    record = {"method": "weighted parameter average", "weights": norm,
              "weights_given": list(weights) if weights is not None else None,
              "parents": [{"model": str(m), "revision": weights_hash(Path(m).expanduser())
                           if Path(m).expanduser().is_dir() else None} for m in models]}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        with quiet_loading():
            loaded[0].save(str(tmp))
        (tmp / MERGE_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
