"""Neural MT: ``hf:<model>`` (transformers seq2seq) and ``ct2:<dir>`` (CTranslate2).

MarianMT / OpusMT (one model per direction, no language codes), NLLB-200 (``fra_Latn`` codes)
and M2M100 (``fr`` codes). ``#sentence`` after the model translates sentence by sentence (for
models with short limits: OpusMT's 512 tokens) and joins the sentences; the default, ``document``,
translates each text whole, truncated at the model's own input limit (its position embeddings or
its tokenizer's ``model_max_length``, whichever is smaller; ``max_input_tokens`` lowers it), which
is what the CLIRudit paper did with OpusMT. The unit is part of the spec, so both modes have their
own cache and result folder.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..util.errors import DataNotFoundError, UnknownNameError
from ..util.optional import require
from .base import join_sentences, nllb_code, split_sentences

__all__ = ["HFTranslator", "CT2Translator", "parse_unit"]

UNITS = ("document", "sentence")
DEFAULT_MAX_INPUT_TOKENS = 512  # when neither the model nor its tokenizer states a limit


def parse_unit(arg: str) -> tuple[str, str]:
    """``model#sentence`` -> (``model``, ``sentence``); no suffix -> ``document``."""

    model, sep, unit = arg.partition("#")
    unit = unit if sep else "document"
    if unit not in UNITS:
        raise UnknownNameError(f"unknown translation unit {unit!r} in {arg!r}; available: {', '.join(UNITS)}")
    if not model:
        raise UnknownNameError("a translator model is required, e.g. hf:Helsinki-NLP/opus-mt-fr-en")
    return model, unit


def _family(tokenizer) -> str:
    name = type(tokenizer).__name__
    if name.startswith("Nllb"):
        return "nllb"
    if hasattr(tokenizer, "get_lang_id") or name.startswith("M2M100"):
        return "m2m100"
    return "plain"  # Marian / OpusMT: the model fixes the direction


class _Seq2Seq:
    """What both back ends share: tokenizer, language codes, units, length-sorted batches."""

    prefix = ""

    def __init__(self, model: str, unit: str = "document", batch_size: int = 8, max_input_tokens: int | None = None,
                 max_new_tokens: int | None = None, num_beams: int = 1, progress: bool = True) -> None:
        self.model, self.unit = model, unit
        self.batch_size, self._max_input_tokens = batch_size, max_input_tokens
        self.max_new_tokens, self.num_beams, self.progress = max_new_tokens, num_beams, progress
        self.spec = f"{self.prefix}:{model}" + ("" if unit == "document" else f"#{unit}")
        self._tokenizer = None

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.model)
        return self._tokenizer

    def _positions(self) -> int | None:
        """The model's position embeddings (None when unknown)."""
        return None

    @property
    def max_input_tokens(self) -> int:
        """Input tokens kept per text: the model's limit, or ``max_input_tokens`` when lower."""
        limits = [n for n in (getattr(self.tokenizer, "model_max_length", None), self._positions(),
                              self._max_input_tokens) if isinstance(n, int) and 0 < n < 1_000_000]
        return min(limits) if limits else DEFAULT_MAX_INPUT_TOKENS

    def codes(self, src: str, tgt: str) -> tuple[str | None, str | None]:
        family = _family(self.tokenizer)
        if family == "nllb":
            return nllb_code(src), nllb_code(tgt)
        if family == "m2m100":
            return src.split("_")[0], tgt.split("_")[0]
        return None, None

    def describe(self) -> dict:
        return {"spec": self.spec, "backend": self.prefix, "model": self.model, "unit": self.unit,
                "max_input_tokens": self.max_input_tokens, "num_beams": self.num_beams,
                "max_new_tokens": self.max_new_tokens}

    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[str]:
        texts = list(texts)
        if self.unit == "document":
            return self._batched(texts, src, tgt)
        pieces = [split_sentences(t) for t in texts]
        flat = self._batched([s for p in pieces for s in p], src, tgt)
        out, i = [], 0
        for p in pieces:
            out.append(join_sentences(flat[i:i + len(p)], tgt))
            i += len(p)
        return out

    def _batched(self, texts: list[str], src: str, tgt: str) -> list[str]:
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[str] = [""] * len(texts)
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        if self.progress and len(batches) > 1:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc=f"translate {src}->{tgt}", unit="batch")
        for idx in batches:
            for i, t in zip(idx, self._generate([texts[i] for i in idx], src, tgt)):
                out[i] = t
        return out

    def _generate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        raise NotImplementedError


class HFTranslator(_Seq2Seq):
    """``hf:<model or dir>[#sentence]``: transformers ``AutoModelForSeq2SeqLM`` + ``generate``."""

    prefix = "hf"

    def __init__(self, model: str, device: str | None = None, **options) -> None:
        for module in ("torch", "transformers"):
            require(module, purpose="translator hf:")
        if model.startswith(("/", "./", "../", "~")) and not Path(model).expanduser().is_dir():
            raise DataNotFoundError(f"translator hf:{model}: no such model folder")
        super().__init__(model, **options)
        self.device = device
        self._model = None

    def _positions(self) -> int | None:
        return getattr(self._load().config, "max_position_embeddings", None)

    def _load(self):
        if self._model is None:
            import torch
            from transformers import AutoModelForSeq2SeqLM

            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            self._model = AutoModelForSeq2SeqLM.from_pretrained(self.model).to(device).eval()
        return self._model

    def describe(self) -> dict:
        desc = super().describe()
        model = self._load()
        desc["revision"] = getattr(model.config, "_commit_hash", None)
        return desc

    def _generate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        import torch

        model, tok = self._load(), self.tokenizer
        src_code, tgt_code = self.codes(src, tgt)
        kwargs = {"num_beams": self.num_beams}
        positions = self._positions()  # the decoder cannot go past its position embeddings either
        if self.max_new_tokens:
            kwargs["max_new_tokens"] = min(self.max_new_tokens, positions - 1) if positions else self.max_new_tokens
        elif positions:
            limit = model.generation_config.max_length
            kwargs["max_length"] = min(limit, positions) if limit else positions
        if src_code is not None:
            tok.src_lang = src_code
            kwargs["forced_bos_token_id"] = tok.convert_tokens_to_ids(tgt_code) if _family(tok) == "nllb" \
                else tok.get_lang_id(tgt_code)
        batch = tok(texts, return_tensors="pt", padding=True, truncation=True,
                    max_length=self.max_input_tokens).to(model.device)
        with torch.inference_mode():
            ids = model.generate(**batch, **kwargs)
        return [t.strip() for t in tok.batch_decode(ids, skip_special_tokens=True)]


class CT2Translator(_Seq2Seq):
    """``ct2:<dir>[#sentence]``: a model converted with ``ct2-transformers-converter``.

    The Hugging Face tokenizer is read from the same folder (convert with ``--copy_files`` for the
    tokenizer files, or ``tokenizer.save_pretrained(dir)``).
    """

    prefix = "ct2"

    def __init__(self, model: str, device: str = "cpu", compute_type: str = "default", **options) -> None:
        folder = Path(model).expanduser()
        if not folder.is_dir():
            raise DataNotFoundError(f"translator ct2:{model}: no such folder (a model converted with "
                                    f"ct2-transformers-converter)")
        if not (folder / "model.bin").is_file():
            raise DataNotFoundError(f"translator ct2:{model}: no model.bin in {folder} (convert the model "
                                    f"with ct2-transformers-converter)")
        require("ctranslate2", purpose="translator ct2:")
        require("transformers", purpose="translator ct2: (its tokenizer)")
        super().__init__(model, **options)
        self.device, self.compute_type = device, compute_type
        self._translator = None

    def describe(self) -> dict:
        return {**super().describe(), "device": self.device, "compute_type": self.compute_type}

    def _generate(self, texts: list[str], src: str, tgt: str) -> list[str]:
        if self._translator is None:
            import ctranslate2

            self._translator = ctranslate2.Translator(self.model, device=self.device, compute_type=self.compute_type)
        tok = self.tokenizer
        src_code, tgt_code = self.codes(src, tgt)
        if src_code is not None:
            tok.src_lang = src_code
        tokens = [tok.convert_ids_to_tokens(tok(t, truncation=True, max_length=self.max_input_tokens)["input_ids"])
                  for t in texts]
        kwargs = {"beam_size": self.num_beams, "max_batch_size": self.batch_size}
        if self.max_new_tokens:
            kwargs["max_decoding_length"] = self.max_new_tokens
        if tgt_code is not None:
            kwargs["target_prefix"] = [[tgt_code]] * len(texts)
        results = self._translator.translate_batch(tokens, **kwargs)
        out = []
        for r in results:
            hyp = r.hypotheses[0][1:] if tgt_code is not None else r.hypotheses[0]
            out.append(tok.decode(tok.convert_tokens_to_ids(hyp), skip_special_tokens=True).strip())
        return out
