"""Translators by spec string: ``hf:``, ``ct2:``, ``openai:``, ``file:``, ``gold``."""
from __future__ import annotations

from typing import Mapping

from ..errors import ClirbenchError, UnknownNameError
from ..optional import MissingDependencyError

__all__ = ["make_translator", "USAGE"]

USAGE = ("hf:<model>[#sentence]", "ct2:<dir>[#sentence]", "openai:<model>[@<base_url>]", "file:<path.jsonl>", "gold")


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
            from .keyed import GoldTranslator

            return GoldTranslator(task, data_dir, task_options)
        if prefix == "file" and arg:
            from .keyed import FileTranslator

            return FileTranslator(arg)
        if prefix in ("hf", "ct2") and arg:
            from .seq2seq import CT2Translator, HFTranslator, parse_unit

            model, unit = parse_unit(arg)
            return (HFTranslator if prefix == "hf" else CT2Translator)(model, unit=unit, **options)
        if prefix == "openai" and arg:
            from .llm import OpenAITranslator

            return OpenAITranslator(arg, **options)
    except MissingDependencyError:
        raise
    except ImportError as exc:
        raise ClirbenchError(f"translator {prefix}: is not available here: it needs {exc.name or exc!r}") from None
    from ..redact import redact

    raise UnknownNameError(f"unknown translator {redact(spec)!r}; available: {', '.join(USAGE)}")
