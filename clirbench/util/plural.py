"""``plural(1, "query")`` is ``1 query``, ``plural(3, "query")`` ``3 queries``: a count and its noun."""
from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` and ``noun``, its plural when ``n`` is not 1 (``nouns``, else English's regular rule:
    query → queries, match → matches, pool → pools)."""
    if n == 1:
        return f"{n} {noun}"
    if nouns is None:
        if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
            nouns = noun[:-1] + "ies"
        elif noun.endswith(("s", "x", "z", "ch", "sh")):
            nouns = noun + "es"
        else:
            nouns = noun + "s"
    return f"{n} {nouns}"
