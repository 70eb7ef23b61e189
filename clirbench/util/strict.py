"""Strict parsing of the JSON, YAML and numbers users hand us: one-line errors, bounded cost.

* JSON: duplicate keys refused (``json`` keeps the last value silently), nesting deeper than
  :data:`MAX_JSON_DEPTH` refused before parsing (no ``RecursionError``).
* YAML (config files: sweep configs, task cards): duplicate keys refused, anchors and aliases
  refused (a 600-byte "billion laughs" file expands to gigabytes), a byte-order mark ignored.
* Integers in judgement files: ASCII digits only (``int("١")`` is 1 in Python, 0 in trec_eval),
  at most :data:`MAX_INT_DIGITS` digits (Python refuses over 4,300 with a message naming no file).
* Text that names things (ids, language tags): no control characters, line or paragraph
  separators, lone surrogates or byte-order marks (:func:`bad_character`, :func:`check_id`); language
  tags in BCP-47 case (:func:`language_tag`: ``EN`` is ``en``, ``kor_HANG`` is ``kor_Hang``).
"""
from __future__ import annotations

import json
import re
from typing import Any

from .errors import MalformedDataError

__all__ = ["MAX_JSON_DEPTH", "MAX_INT_DIGITS", "MAX_GRADE", "loads_json", "load_yaml", "ascii_int", "BOM",
           "bad_character", "check_id", "language_tag", "first_duplicate", "shown", "json_kind", "expect_json"]

MAX_JSON_DEPTH = 64
#: longest integer read from a file (JSON, YAML, TREC, TSV): far above any count, seed or grade
MAX_INT_DIGITS = 100
#: relevance grades are 32-bit integers (trec_eval reads them with atol; float64 keeps them exact)
MAX_GRADE = 2**31 - 1
BOM = "\ufeff"
_ASCII_INT = re.compile(r"[+-]?[0-9]+")
# C0/C1 controls (NUL, ESC, ...; tab and line feed are never inside a field), line and paragraph
# separators (str.splitlines breaks on them), lone surrogates (not encodable), BOMs, non-characters
_BAD_CHAR = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
# a JSON \\u escape of a surrogate that is not half of a pair (preceded by an even run of backslashes)
_LONE_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})")
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:[_-][A-Za-z0-9]{1,8})*")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _show(key: Any, limit: int = 60) -> str:
    text = str(key)
    return ascii(text[:limit]) + ("…" if len(text) > limit else "")


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a one-line message: control characters escaped, cut after ``limit``
    characters with the full length said (``'aaa…' (5,000 characters)``)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return ascii(text) if bad_character(text) else repr(text)
    head = text[:limit]
    return f"{ascii(head) if bad_character(head) else repr(head)}… ({len(text):,} characters)"


def first_duplicate(values) -> tuple[Any, int, int] | None:
    """``(value, first position, second position)`` of the first value seen twice in ``values``
    (positions from 0); None when all differ. For messages that name what is duplicated and where."""
    seen: dict = {}
    for i, value in enumerate(values):
        if value in seen:
            return value, seen[value], i
        seen[value] = i
    return None


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

    def bounded_int(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise MalformedDataError(f"{where}: an integer of {len(digits.lstrip('-')):,} digits "
                                     f"(at most {MAX_INT_DIGITS})")
        return int(digits)

    if "\\u" in text:
        lone = _LONE_SURROGATE_ESCAPE.search(text)
        if lone:
            raise MalformedDataError(f"{where}: a lone surrogate {lone.group(1)} is not text "
                                     f"(not encodable as UTF-8)")
    try:
        return json.loads(text, object_pairs_hook=no_duplicates, parse_int=bounded_int,
                          parse_constant=None if constants else no_constant)
    except json.JSONDecodeError as exc:
        raise MalformedDataError(f"{where}: not valid JSON ({exc.msg})") from None
    except RecursionError:  # the depth scan should have caught it; never a traceback
        raise MalformedDataError(f"{where}: JSON nested too deeply") from None


def json_kind(value: Any, yaml: bool = False) -> str:
    """What a parsed JSON value is, in JSON's words (``a JSON array``, ``a JSON object``, ``JSON
    null``...), or with ``yaml`` in YAML's (``a YAML list``, ``a YAML mapping``, ``nothing``)."""
    if yaml:
        kinds = {dict: "a YAML mapping", list: "a YAML list", str: "a YAML string", bool: "a YAML boolean",
                 int: "a YAML number", float: "a YAML number"}
        return "nothing (an empty file, or null)" if value is None else kinds.get(type(value), type(value).__name__)
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, str):
        return "a JSON string"
    if isinstance(value, bool):
        return f"JSON {str(value).lower()}"
    if isinstance(value, (int, float)):
        return "a JSON number"
    return "JSON null" if value is None else type(value).__name__


def expect_json(value: Any, kind: type, where: str, what: str, expected: str | None = None) -> Any:
    """``value`` if its top level is ``kind`` (``dict``: an object, ``list``: an array); else one line
    ``<where>: not <what>: a JSON array, expected a JSON object`` (MalformedDataError; ``expected``
    replaces "a JSON object")."""
    if isinstance(value, kind):
        return value
    expected = expected or ("a JSON object" if kind is dict else "a JSON array" if kind is list else kind.__name__)
    raise MalformedDataError(f"{where}: not {what}: {json_kind(value)}, expected {expected}")


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

        def construct_bounded_int(self, node):
            digits = sum(c.isdigit() for c in str(node.value))
            if digits > MAX_INT_DIGITS:
                raise MalformedDataError(f"{origin}:{node.start_mark.line + 1}: an integer of {digits:,} digits "
                                         f"(at most {MAX_INT_DIGITS})")
            return self.construct_yaml_int(node)

    StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_bounded_int)
    return StrictLoader


def _no_lone_surrogates(data: Any, origin: str) -> Any:
    """``data`` (parsed YAML) if none of its strings holds a lone surrogate (a ``"\\ud800"`` escape)."""
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str) and re.search("[\ud800-\udfff]", node):
            raise MalformedDataError(f"{origin}: {_show(node)} holds a lone surrogate (not encodable as UTF-8)")
    return data


def load_yaml(text: str, origin: str) -> Any:
    """Parse a YAML config (one document); every problem is a one-line MalformedDataError."""
    import yaml

    if text.startswith(BOM):
        text = text[1:]
    loader = _strict_loader(origin)(text)
    try:
        return _no_lone_surrogates(loader.get_single_data(), origin)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{origin}:{mark.line + 1}" if mark is not None else origin
        problem = getattr(exc, "problem", None) or str(exc)
        raise MalformedDataError(f"{where}: not valid YAML ({' '.join(str(problem).split())})") from None
    except RecursionError:
        raise MalformedDataError(f"{origin}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def ascii_int(text: str, low: int | None = None, high: int | None = None) -> int:
    """``int(text)`` for ASCII decimal digits with an optional sign only, within [low, high]; else
    ValueError (a one-line reason, the text shortened).

    Python's ``int`` also takes ``"١"``, ``"1_0"`` and surrounding whitespace; trec_eval does not.
    """
    if not _ASCII_INT.fullmatch(text):
        raise ValueError(f"{_show(text)} is not an ASCII integer")
    digits = len(text.lstrip("+-"))
    if digits > MAX_INT_DIGITS:
        raise ValueError(f"{_show(text, 20)} has {digits:,} digits (at most {MAX_INT_DIGITS})")
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{_show(text, 20)} is out of range [{low:,}, {high:,}]")
    return value


def bad_character(text: str) -> str | None:
    """The first character that may not be part of an id or tag (see :data:`_BAD_CHAR`), as
    ``U+XXXX``; None when there is none. Linear, in C."""
    m = _BAD_CHAR.search(text)
    return None if m is None else f"U+{ord(m.group()):04X}"


def check_id(value: str, where: str, what: str) -> str:
    """``value`` if it is a non-empty id without a :func:`bad_character`; MalformedDataError naming
    ``where`` and ``what`` (e.g. ``query id``) otherwise."""
    if not value:
        raise MalformedDataError(f"{where}: empty {what}")
    bad = bad_character(value)
    if bad:
        raise MalformedDataError(f"{where}: {what} {_show(value)} holds the forbidden character {bad} "
                                 f"(a control character, line separator or lone surrogate)")
    return value


def language_tag(code: object, where: str) -> str:
    """``code`` as a language tag in BCP-47 case (``EN`` -> ``en``, ``zh-cn`` -> ``zh-CN``,
    ``KOR_HANG`` -> ``kor_Hang``), so that one language is never two; a MalformedDataError naming
    ``where`` for anything that is not a tag (a path, a word, a number)."""
    if not isinstance(code, str) or len(code) > 35 or not _LANGUAGE.fullmatch(code):
        raise MalformedDataError(f"{where}: {_show(code)} is not a language code (like en, zh, kor_Hang)")
    first, *rest = re.split(r"([_-])", code)
    out = [first.lower()]
    for part in rest:
        if part in "_-":
            out.append(part)
        elif len(part) == 4 and part.isalpha():
            out.append(part.title())
        elif len(part) == 2 and part.isalpha() or len(part) == 3 and part.isdigit():
            out.append(part.upper())
        else:
            out.append(part.lower())
    return "".join(out)
