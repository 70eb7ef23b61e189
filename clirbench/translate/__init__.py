"""Query and document translation (DESIGN §1): translators by spec string, a disk cache, pools."""
from __future__ import annotations

from .base import DIRECTIONS, KeyedTranslator, Translator, canonical_direction
from .cache import TranslationCache
from .pool import TranslationPlan, translate_pool, translate_texts, translation_quality
from .spec import make_translator

__all__ = ["Translator", "KeyedTranslator", "make_translator", "TranslationCache", "TranslationPlan",
           "translate_pool", "translate_texts", "translation_quality", "DIRECTIONS", "canonical_direction"]
