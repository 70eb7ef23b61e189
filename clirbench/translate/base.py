"""The translator protocol, spec strings, language codes and sentence splitting."""
from __future__ import annotations

import re
from typing import Protocol, Sequence, runtime_checkable

from ..collection import Text
from ..identity import DIRECTION_ALIASES
from ..identity import TRANSLATION_DIRECTIONS as DIRECTIONS
from ..util.errors import UnknownNameError

__all__ = ["Translator", "KeyedTranslator", "split_sentences", "join_sentences", "language_name",
           "nllb_code", "DIRECTIONS", "canonical_direction"]


def canonical_direction(name: str) -> str:
    """``query`` or ``docs`` (accepts ``document(s)``, ``qt``, ``dt``)."""

    try:
        return DIRECTION_ALIASES[str(name).strip().lower()]
    except KeyError:
        raise UnknownNameError(f"unknown translation direction {name!r}; "
                               f"available: {', '.join(DIRECTIONS)}") from None


@runtime_checkable
class Translator(Protocol):
    """Text to text for a language pair. ``spec`` is the string results and caches store."""

    spec: str

    def describe(self) -> dict:
        """JSON-able settings (model, revision, unit, prompt hash, ...); never secrets."""
        ...

    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[str]:
        """One translation per text, in order (batched inside, with a progress bar)."""
        ...


@runtime_checkable
class KeyedTranslator(Protocol):
    """A translator that looks translations up by id (``gold``, ``file:``) instead of computing them."""

    spec: str

    def describe(self) -> dict: ...

    def translate_items(self, items: Sequence[Text], tgt: str, role: str) -> list[str]:
        """The translation into ``tgt`` of each item (``role``: ``docs`` or ``queries``)."""
        ...


_NAMES = {"ar": "Arabic", "bn": "Bengali", "de": "German", "el": "Greek", "en": "English", "es": "Spanish",
          "fr": "French", "hi": "Hindi", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "ko": "Korean",
          "ms": "Malay", "nl": "Dutch", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "th": "Thai",
          "tl": "Tagalog", "tr": "Turkish", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese"}
_NLLB = {"ar": "arb_Arab", "bn": "ben_Beng", "de": "deu_Latn", "el": "ell_Grek", "en": "eng_Latn",
         "es": "spa_Latn", "fr": "fra_Latn", "hi": "hin_Deva", "id": "ind_Latn", "it": "ita_Latn",
         "ja": "jpn_Jpan", "ko": "kor_Hang", "ms": "zsm_Latn", "nl": "nld_Latn", "pt": "por_Latn",
         "ro": "ron_Latn", "ru": "rus_Cyrl", "th": "tha_Thai", "tl": "tgl_Latn", "tr": "tur_Latn",
         "ur": "urd_Arab", "vi": "vie_Latn", "zh": "zho_Hans"}


def language_name(code: str) -> str:
    """English name of an ISO 639-1 code (the code itself when unknown)."""
    return _NAMES.get(code.split("_")[0].split("-")[0], code)


def nllb_code(code: str) -> str:
    """NLLB-200 / FLORES code (``fr`` -> ``fra_Latn``); codes already in that form pass through."""
    if "_" in code:
        return code
    try:
        return _NLLB[code]
    except KeyError:
        raise UnknownNameError(f"no NLLB code known for language {code!r}; pass it as e.g. fra_Latn") from None


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=\S)|(?<=[。！？；])")
_NO_SPACE = {"zh", "ja", "th"}


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after . ! ? ; followed by space, and after CJK full stops."""
    parts = [p.strip() for p in _SENTENCE_END.split(text)]
    return [p for p in parts if p] or [text]


def join_sentences(sentences: Sequence[str], lang: str) -> str:
    """Join translated sentences: no separator for zh/ja/th, one space otherwise."""
    sep = "" if lang.split("_")[0] in _NO_SPACE else " "
    return sep.join(s.strip() for s in sentences)
