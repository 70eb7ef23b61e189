"""Language coverage: the languages a record's pool puts before its retriever that the retriever's
card does not list (``retriever.languages`` in the record, from the retriever's ``describe()``)."""
from __future__ import annotations

__all__ = ["languages_seen", "not_covered", "coverage_lines"]

MAX_POOLS_NAMED = 6


def languages_seen(record: dict) -> list[str]:
    """The document and query languages the retriever saw: after ``--translate``, the target for the
    translated side's source languages."""
    docs, query = list(record["doc_langs"]), record["query_lang"]
    t = record.get("translation") or {}
    source, target = set(t.get("source_langs") or ()), t.get("target_lang")
    if target and t.get("direction") == "docs":
        docs = [target if lang in source else lang for lang in docs]
    elif target and t.get("direction") == "query" and query in source:
        query = target
    return list(dict.fromkeys(docs + [query]))


def _covered(lang: str, card: set[str]) -> bool:
    """``lang`` or its primary subtag (``pt`` of ``pt-BR``) among the card's languages, any case."""
    tag = lang.lower().replace("_", "-")
    return tag in card or tag.split("-")[0] in card


def not_covered(record: dict) -> list[str]:
    """The languages of the record's pool outside its retriever's ``languages`` ([] when the retriever
    lists none: nothing is known)."""
    card = (record.get("retriever") or {}).get("languages")
    if not isinstance(card, list) or not card:
        return []
    known = {str(lang).lower().replace("_", "-") for lang in card}
    return [lang for lang in languages_seen(record) if not _covered(lang, known)]


def coverage_lines(records: list[dict]) -> list[str]:
    """One line per retriever that saw languages outside its card:
    ``usem3 does not cover hi (not among its card's 16 languages): pools multi en+hi q en, ...``."""
    missing: dict[str, dict[str, None]] = {}
    pools: dict[str, list[str]] = {}
    card_size: dict[str, int] = {}
    for r in records:
        langs = not_covered(r)
        if langs:
            spec = r["retriever"]["spec"]
            missing.setdefault(spec, {}).update(dict.fromkeys(langs))
            pools.setdefault(spec, []).append(f"{r['scenario']} {'+'.join(r['doc_langs'])} q {r['query_lang']}")
            card_size[spec] = len(r["retriever"]["languages"])
    lines = []
    for spec, langs in missing.items():
        named, more = pools[spec][:MAX_POOLS_NAMED], len(pools[spec]) - MAX_POOLS_NAMED
        lines.append(f"{spec} does not cover {', '.join(sorted(langs))} (not among its card's {card_size[spec]} "
                     f"languages): pools " + ", ".join(named) + (f" and {more} more" if more > 0 else ""))
    return lines
