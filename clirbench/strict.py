"""Strict parsing of the JSON, YAML and numbers users hand us: one-line errors, bounded cost.

* JSON: duplicate keys refused (``json`` keeps the last value silently), nesting deeper than
  :data:`MAX_JSON_DEPTH` refused before parsing (no ``RecursionError``).
* YAML (config files: sweep configs, task cards): duplicate keys refused, anchors and aliases
  refused (a 600-byte "billion laughs" file expands to gigabytes), a byte-order mark ignored.
* Integers in judgement files: ASCII digits only (``int("١")`` is 1 in Python, 0 in trec_eval).
"""
from __future__ import annotations

import json
import re
from typing import Any

from .errors import MalformedDataError

__all__ = ["MAX_JSON_DEPTH", "loads_json", "load_yaml", "ascii_int", "BOM"]

MAX_JSON_DEPTH = 64
BOM = "\ufeff"
_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _show(key: Any, limit: int = 60) -> str:
    text = str(key)
    return ascii(text[:limit]) + ("…" if len(text) > limit else "")


def _json_depth_ok(text: str, limit: int) -> bool:
    """Whether ``text`` nests at most ``limit`` arrays/objects (strings skipped); linear, in C."""
    if text.count("[") + text.count("{") <= limit:
        return True
    import numpy as np

    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).encode("ascii")
    opening = np.frombuffer(brackets, dtype=np.uint8)
    opening = (opening == ord("[")) | (opening == ord("{"))
    return int(np.cumsum(np.where(opening, 1, -1)).max(initial=0)) <= limit


def loads_json(text: str | bytes, where: str, max_depth: int = MAX_JSON_DEPTH, constants: bool = True) -> Any:
    """Parse JSON (a ``str`` is parsed as is; file readers drop a byte-order mark); a duplicate key,
    deep nesting, bad syntax or (``constants=False``) NaN/Infinity raises one-line
    MalformedDataError naming ``where`` (``file`` or ``file:line``)."""
    if isinstance(text, bytes):  # a whole file: a byte-order mark at its start is dropped
        text = text.decode("utf-8-sig")
    if not _json_depth_ok(text, max_depth):
        raise MalformedDataError(f"{where}: JSON nested deeper than {max_depth} levels")

    def no_duplicates(pairs: list) -> dict:
        out: dict = {}
        for key, value in pairs:
            if key in out:
                raise MalformedDataError(f"{where}: duplicate key {_show(key)} in a JSON object")
            out[key] = value
        return out

    def no_constant(name: str):
        raise MalformedDataError(f"{where}: {name} is not valid JSON")

    try:
        return json.loads(text, object_pairs_hook=no_duplicates, parse_constant=None if constants else no_constant)
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"{where}: not valid JSON ({exc.msg})") from None
    except RecursionError:  # the depth scan should have caught it; never a traceback
        raise MalformedDataError(f"{where}: JSON nested too deeply") from None


def _strict_loader(origin: str):
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """SafeLoader that refuses anchors, aliases and duplicate mapping keys."""

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = event.start_mark.line + 1
                raise MalformedDataError(
                    f"{origin}:{line}: YAML anchors and aliases (&/*) are not allowed in this file")
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:  # an unhashable key: let SafeLoader report it
                    break
                if duplicate:
                    line = key_node.start_mark.line + 1
                    raise MalformedDataError(f"{origin}:{line}: duplicate key {_show(key)}")
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def load_yaml(text: str, origin: str) -> Any:
    """Parse a YAML config (one document); every problem is a one-line MalformedDataError."""
    import yaml

    if text.startswith(BOM):
        text = text[1:]
    loader = _strict_loader(origin)(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{origin}:{mark.line + 1}" if mark is not None else origin
        problem = getattr(exc, "problem", None) or str(exc)
        raise MalformedDataError(f"{where}: not valid YAML ({' '.join(str(problem).split())})") from None
    except RecursionError:
        raise MalformedDataError(f"{origin}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def ascii_int(text: str) -> int:
    """``int(text)`` for ASCII decimal digits with an optional sign only; else ValueError.

    Python's ``int`` also takes ``"١"``, ``"1_0"`` and surrounding whitespace; trec_eval does not.
    """
    if not _ASCII_INT.fullmatch(text):
        raise ValueError(f"{text!r} is not an ASCII integer")
    return int(text)
