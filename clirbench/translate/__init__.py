"""Query and document translation (docs/architecture.md): translators by spec string, a disk cache, pools.

The names below are imported on first use, so that ``clirbench`` commands which never translate
(``evaluate``, ``tasks``…) do not pay for the cache, pool and collection modules at start-up.
"""
from __future__ import annotations

import importlib

_MODULE_OF = {
    "Translator": ".base", "KeyedTranslator": ".base", "DIRECTIONS": ".base", "canonical_direction": ".base",
    "TranslationCache": ".cache",
    "TranslationPlan": ".pool", "translate_pool": ".pool", "translate_texts": ".pool", "translation_quality": ".pool",
    "make_translator": ".spec", "TranslationOptions": ".spec",
}
__all__ = list(_MODULE_OF)


def __getattr__(name: str):
    if name in _MODULE_OF:
        return getattr(importlib.import_module(_MODULE_OF[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
