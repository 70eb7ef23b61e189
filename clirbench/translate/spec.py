"""Translators by spec string: ``hf:``, ``ct2:``, ``openai:``, ``file:``, ``gold``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..util.errors import ClirbenchError, UnknownNameError
from ..util.optional import MissingDependencyError
from ..util.redact import redact
from .base import canonical_direction
from .keyed import FileTranslator, GoldTranslator
from .llm import OpenAITranslator
from .seq2seq import CT2Translator, HFTranslator, parse_unit

__all__ = ["make_translator", "TranslationOptions", "USAGE"]

USAGE = ("hf:<model>[#sentence]", "ct2:<dir>[#sentence]", "openai:<model>[@<base_url>]", "file:<path.jsonl>", "gold")


@dataclass(frozen=True)
class TranslationOptions:
    """QT or DT for a run, as one value: the ``run`` flags, a sweep cell and the Python API build it.

    ``translator`` is a spec string (or a translator object); ``translator_options`` go to its
    constructor (``batch_size``, ``concurrency``, ...).
    """

    direction: str  # "query" (QT) or "docs" (DT); aliases (qt, documents, ...) are read too
    translator: Any
    cache_dir: Any = None  # default: $CLIRBENCH_CACHE_DIR/translations
    quality: bool = False  # DT only: BLEU / chrF against the task's gold translation
    translator_options: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "direction", canonical_direction(self.direction))
        if not self.translator:
            raise ClirbenchError("a translation needs a translator spec, e.g. gold")

    @classmethod
    def of(cls, value) -> "TranslationOptions | None":
        """None, a TranslationOptions, or the mapping form ``{"direction", "translator", "cache_dir",
        "quality", <translator options>...}`` (what ``runner.run(translation=...)`` always took)."""
        if value is None or isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise ClirbenchError(f"translation: expected TranslationOptions or a mapping, got {type(value).__name__}")
        if "direction" not in value or "translator" not in value:
            raise ClirbenchError("translation: needs direction and translator")
        known = {"direction", "translator", "cache_dir", "quality", "translator_options"}
        extra = {k: v for k, v in value.items() if k not in known}
        return cls(value["direction"], value["translator"], value.get("cache_dir"), bool(value.get("quality", False)),
                   {**value.get("translator_options", {}), **extra})

    @classmethod
    def parse(cls, text: str, **settings) -> "TranslationOptions | None":
        """``none`` -> None; ``query:<spec>`` / ``docs:<spec>`` (aliases qt, dt, ...) -> the options."""
        text = text.strip()
        if text.lower() == "none":
            return None
        direction, sep, spec = text.partition(":")
        if not sep or not spec:
            raise UnknownNameError(f"expected none, query:<translator> or docs:<translator>, got {text!r}")
        return cls(direction, spec, **settings)


def make_translator(spec: str, *, task=None, data_dir=None, task_options: Mapping | None = None, **options):
    """The translator named by ``spec``; ``task`` (a ``Task``) is needed by ``gold``.

    ``options`` go to the constructor (``batch_size``, ``device``, ``max_new_tokens``,
    ``concurrency``, ...).
    """
    prefix, sep, arg = spec.strip().partition(":")
    try:
        if prefix == "gold" and not sep:
            if task is None:
                raise ClirbenchError("the gold translator needs the task")
            return GoldTranslator(task, data_dir, task_options)
        if prefix == "file" and arg:
            return FileTranslator(arg)
        if prefix in ("hf", "ct2") and arg:
            model, unit = parse_unit(arg)
            return (HFTranslator if prefix == "hf" else CT2Translator)(model, unit=unit, **options)
        if prefix == "openai" and arg:
            return OpenAITranslator(arg, **options)
    except MissingDependencyError:
        raise
    except ImportError as exc:
        raise ClirbenchError(f"translator {prefix}: is not available here: it needs {exc.name or exc!r}") from None

    raise UnknownNameError(f"unknown translator {redact(spec)!r}; available: {', '.join(USAGE)}")
