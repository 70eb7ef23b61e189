"""Translating a pool (QT or DT) through the cache, and what the result records about it."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Sequence

from ..cache.layout import translations_dir
from ..collection import Pool, Text
from ..util.errors import ClirbenchError
from ..util.optional import require
from .base import canonical_direction
from .cache import TranslationCache
from .keyed import GoldTranslator
from .spec import TranslationOptions, make_translator

__all__ = ["translate_texts", "translate_pool", "TranslationPlan", "translation_quality", "CHUNK"]

CHUNK = 64  # texts per cache flush


def translate_texts(translator, texts: Sequence[str], src: str, tgt: str,
                    cache: TranslationCache | None = None, chunk: int = CHUNK) -> tuple[list[str], int]:
    """(translations, cache hits): distinct texts translated once, chunk by chunk, each chunk cached."""
    cache = cache if cache is not None else TranslationCache(None)
    distinct = list(dict.fromkeys(texts))
    found = dict(zip(distinct, cache.get(translator.spec, src, tgt, distinct)))
    todo = [t for t in distinct if found[t] is None]
    for i in range(0, len(todo), chunk):
        part = todo[i:i + chunk]
        out = translator.translate(part, src, tgt)
        if len(out) != len(part):
            raise ClirbenchError(f"translator {translator.spec} returned {len(out)} texts for {len(part)}")
        cache.put(translator.spec, src, tgt, zip(part, out))
        found.update(zip(part, out))
    fresh = set(todo)
    hits = sum(1 for t in texts if t not in fresh)
    return [found[t] for t in texts], hits


def _targets(pool: Pool, direction: str) -> tuple[str, str]:
    """(role, target language) for QT / DT on ``pool``."""
    if direction == "docs":
        return "docs", pool.query_lang
    others = [l for l in pool.doc_langs if l != pool.query_lang]
    if len(set(others)) > 1:
        raise ClirbenchError(f"{pool.name}: query translation needs one document language other than the "
                             f"query's, got {', '.join(others)}")
    return "queries", (others[0] if others else pool.query_lang)


def _translate_role(texts: Sequence[Text], translator, tgt: str, role: str,
                    cache: TranslationCache | None) -> tuple[tuple[Text, ...], dict]:
    out = list(texts)
    stats = {"translated": 0, "cache_hits": 0, "source_chars": 0,
             "source": "precomputed" if hasattr(translator, "translate_items") else "model"}
    by_src: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        if t.lang != tgt:
            by_src.setdefault(t.lang, []).append(i)
    for src, idx in sorted(by_src.items()):
        items = [texts[i] for i in idx]
        if hasattr(translator, "translate_items"):
            new = translator.translate_items(items, tgt, role)
        else:
            new, hits = translate_texts(translator, [t.text for t in items], src, tgt, cache)
            stats["cache_hits"] += hits
        for i, text in zip(idx, new):
            t = texts[i]
            if role == "queries" and not (isinstance(text, str) and text.strip()):
                raise ClirbenchError(f"translator {translator.spec}: an empty {tgt} translation of query {t.id!r} "
                                     f"(an empty query would be scored)")
            out[i] = Text(t.id, text, tgt, t.item, MappingProxyType({**t.meta, "source_lang": t.lang}))
        stats["translated"] += len(idx)
        stats["source_chars"] += sum(len(t.text) for t in items)
    return tuple(out), stats


def translate_pool(pool: Pool, translator, direction: str, cache: TranslationCache | None = None
                   ) -> tuple[Pool, dict]:
    """The pool as the retriever should see it, and stats (target, translated, cache_hits, source_chars:
    the characters of the texts translated, source: ``precomputed`` for a lookup such as ``gold`` or
    ``file:``, else ``model``, seconds).

    DT: every document not in the query language becomes its translation, tagged with the query
    language (so BM25 analyses it with the target analyzer; the embedding cache keys on the new
    text). QT: every query becomes its translation into the documents' (other) language. Ids,
    items, qrels and the pool's own languages (which name the result) stay; the source language
    rides in ``meta["source_lang"]``. The input pool is not modified.
    """
    direction = canonical_direction(direction)
    role, tgt = _targets(pool, direction)
    t0 = time.perf_counter()
    if role == "docs":
        docs, stats = _translate_role(pool.docs, translator, tgt, role, cache)
        new = dataclasses.replace(pool, docs=docs)
    else:
        queries, stats = _translate_role(pool.queries, translator, tgt, role, cache)
        new = dataclasses.replace(pool, queries=queries)
    return new, {"target_lang": tgt, **stats, "seconds": time.perf_counter() - t0}


def translation_quality(hypotheses: Sequence[str], references: Sequence[str], lang: str = "") -> dict:
    """Document-level corpus BLEU and chrF (sacrebleu; one segment per document).

    BLEU uses sacrebleu's ``zh`` tokenizer for Chinese targets, ``13a`` otherwise.
    """

    metrics = require("sacrebleu.metrics", purpose="--translation-quality")
    BLEU, CHRF = metrics.BLEU, metrics.CHRF

    if not hypotheses:
        return {"n": 0, "bleu": None, "chrf": None}
    hyp, ref = list(hypotheses), [list(references)]
    bleu, chrf = BLEU(tokenize="zh" if lang.split("_")[0] == "zh" else "13a"), CHRF()
    b, c = bleu.corpus_score(hyp, ref), chrf.corpus_score(hyp, ref)
    return {"n": len(hyp), "bleu": float(b.score), "chrf": float(c.score), "reference": "gold",
            "bleu_signature": str(bleu.get_signature()), "chrf_signature": str(chrf.get_signature())}


@dataclass
class TranslationPlan:
    """QT or DT with one translator for a whole run: what ``runner.run(translation=...)`` builds."""

    direction: str
    translator: object
    cache: TranslationCache
    quality: bool = False
    gold: object | None = None  # reference for the quality report (DT only)

    @classmethod
    def create(cls, options, task=None, data_dir=None, task_options: Mapping | None = None) -> "TranslationPlan":
        """The plan for ``options`` (a ``TranslationOptions``, or its mapping form)."""

        options = TranslationOptions.of(options)
        direction, translator, cache_dir, quality = (options.direction, options.translator, options.cache_dir,
                                                     options.quality)
        if isinstance(translator, str):
            translator = make_translator(translator, task=task, data_dir=data_dir, task_options=task_options,
                                         **options.translator_options)
        if cache_dir is None:
            cache_dir = translations_dir()
        gold = None
        if quality:
            if direction != "docs":
                raise ClirbenchError("--translation-quality needs --translate docs (a gold reference for documents)")

            require("sacrebleu", purpose="--translation-quality")  # now, not after the translation

            gold = translator if translator.spec == "gold" else GoldTranslator(task, data_dir, task_options)
        return cls(direction, translator, TranslationCache(Path(cache_dir)), quality, gold)

    def key(self) -> dict:
        """What must match for a finished result to be reused."""
        return {"direction": self.direction, "translator": self.translator.spec}

    def apply(self, pool: Pool) -> tuple[Pool, dict]:
        """(translated pool, the result's ``translation`` record)."""
        new, stats = translate_pool(pool, self.translator, self.direction, self.cache)
        record = {**self.key(), "source_langs": sorted({t.lang for t in (pool.docs if self.direction == "docs"
                                                                          else pool.queries)} - {stats["target_lang"]}),
                  **stats, "settings": self.translator.describe()}
        if self.quality:
            record["quality"] = self._quality(pool, new)
        return new, record

    def _quality(self, pool: Pool, new: Pool) -> dict:
        idx = [i for i, d in enumerate(pool.docs) if d.lang != pool.query_lang]
        try:
            refs = self.gold.translate_items([pool.docs[i] for i in idx], pool.query_lang, "docs")
        except ClirbenchError as exc:
            return {"n": 0, "bleu": None, "chrf": None, "error": str(exc)}
        return translation_quality([new.docs[i].text for i in idx], refs, pool.query_lang)
