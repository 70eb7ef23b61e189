"""Spec strings (a retriever's ``bm25:pyserini``, an index's ``faiss:HNSW32?efSearch=128``): their
length and characters, and their ``name=value`` parameter parts."""
from __future__ import annotations

from .errors import ClirbenchError, UnknownNameError
from .strict import bad_character

__all__ = ["MAX_SPEC_CHARS", "spec_params", "check_spec_text"]

#: longest retriever or index spec (a fusion of a few paths fits many times over)
MAX_SPEC_CHARS = 8192


def spec_params(text: str, sep: str, where: str, error: type = ClirbenchError) -> dict[str, str]:
    """The ``name=value`` pairs of a spec's parameter part (``alpha=0.1&oov=drop``), split at
    ``sep``: a ClirbenchError naming ``where`` for an empty part (a doubled or trailing ``sep``, or
    nothing after ``?``), a part without ``name=`` or a name given twice (the last would win silently)."""
    out: dict[str, str] = {}
    for part in text.split(sep):
        name, eq, value = (s.strip() for s in part.partition("="))
        if not part.strip():
            raise error(f"{where}: empty parameter in {text!r} (a doubled or trailing {sep!r}?)")
        if not eq or not name:
            raise error(f"{where}: expected <name>=<value>, got {part.strip()!r}")
        if name in out:
            raise error(f"{where}: parameter {name!r} given twice in {text!r}")
        out[name] = value
    return out


def check_spec_text(spec: str, what: str = "retriever") -> str:
    """``spec`` if it is at most MAX_SPEC_CHARS long and holds no control character; else UnknownNameError."""
    if len(spec) > MAX_SPEC_CHARS:
        raise UnknownNameError(f"{what} spec of {len(spec):,} characters (at most {MAX_SPEC_CHARS:,})")
    bad = bad_character(spec)
    if bad:
        raise UnknownNameError(f"{what} spec {spec[:60]!r} holds the forbidden character {bad}")
    return spec
