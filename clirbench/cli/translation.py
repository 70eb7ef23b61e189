"""``clirbench run --translate query|docs --translator SPEC [--translation-quality]`` (QT / DT)."""
from __future__ import annotations

import argparse

from ..identity import TRANSLATION_DIRECTIONS
from ..translate.spec import USAGE, TranslationOptions
from ..util.checks import MAX_WORKERS, int_in
from ..util.errors import ClirbenchError

__all__ = ["add_translation_arguments", "translation_options"]


def add_translation_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the translation options to the ``run`` parser; returns it."""

    g = parser.add_argument_group("translation (QT / DT)")
    g.add_argument("--translate", choices=TRANSLATION_DIRECTIONS, default=None,
                   help="translate the queries into the documents' language (query, QT) or the documents "
                        "into the query language (docs, DT) before retrieval")
    g.add_argument("--translator", default=None, metavar="SPEC",
                   help="translator spec: " + " | ".join(USAGE) + "; openai: reads the key from $OPENAI_API_KEY")
    g.add_argument("--translation-cache", default=None, metavar="DIR",
                   help="translation cache (default: $CLIRBENCH_CACHE_DIR/translations or ~/.cache/clirbench/translations)")
    g.add_argument("--translation-quality", action="store_true",
                   help="with --translate docs: document-level BLEU and chrF against the data set's gold translation")
    g.add_argument("--translation-batch-size", type=int_in(1, MAX_WORKERS), default=None, metavar="N",
                   help="texts per batch (hf:, ct2:) or requests in flight (openai:)")
    return parser


def translation_options(args: argparse.Namespace) -> dict:
    """Keyword arguments for ``runner.run``: ``{}`` or ``{"translation": TranslationOptions(...)}``."""

    direction, spec = getattr(args, "translate", None), getattr(args, "translator", None)
    if direction is None and spec is None:
        if getattr(args, "translation_quality", False):
            raise ClirbenchError("--translation-quality needs --translate docs and --translator")
        return {}
    if direction is None or not spec:
        raise ClirbenchError("--translate and --translator go together, e.g. --translate docs --translator gold")

    size = getattr(args, "translation_batch_size", None)
    extra = {("concurrency" if spec.startswith("openai:") else "batch_size"): size} if size else {}
    return {"translation": TranslationOptions(direction, spec, getattr(args, "translation_cache", None),
                                              bool(getattr(args, "translation_quality", False)), extra)}
