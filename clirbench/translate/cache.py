"""On-disk translation cache: spec + source + target language + SHA-256 of the text -> translation.

Under ``<root>/<sha256(spec)[:16]>/`` (with a ``spec.json`` naming the translator), one folder
``<src>-<tgt>/`` of shards per language pair: each chunk of translations is one JSON Lines shard
with a checksum (``clirbench.cache.shards``), so an interrupted translation of a large corpus resumes
where it stopped and a damaged shard is set aside and translated again. The older single
appended file ``<src>-<tgt>.jsonl`` is still read (a torn last line is ignored).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Sequence

from ..cache.shards import find_shards, new_name, set_aside, write_shard
from ..util.atomic import remove_stale_temps, write_bytes_atomic

__all__ = ["TranslationCache", "text_key"]


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_MARKER = ".jsonl"


def _safe(code: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in code)


class TranslationCache:
    """Translations by (spec, src, tgt, text); ``root=None`` keeps them in memory only."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = None if root is None else Path(root)
        self._memo: dict[tuple[str, str, str], dict[str, str]] = {}

    def _folder(self, spec: str, src: str, tgt: str) -> Path | None:
        if self.root is None:
            return None
        return self.root / hashlib.sha256(spec.encode()).hexdigest()[:16] / f"{_safe(src)}-{_safe(tgt)}"

    def _table(self, spec: str, src: str, tgt: str) -> dict[str, str]:
        key = (spec, src, tgt)
        if key not in self._memo:
            table: dict[str, str] = {}
            folder = self._folder(spec, src, tgt)
            if folder is not None:
                legacy = folder.with_name(folder.name + ".jsonl")  # one appended file, before shards
                if legacy.is_file():
                    _parse(legacy.read_bytes(), table)
                remove_stale_temps(folder)
                for shard in find_shards(folder, _MARKER):
                    data, reason = shard.read(_MARKER)
                    if reason is None and not _parse(data, table, strict=True):
                        reason = "not JSON Lines of translations"
                    if reason:
                        set_aside(self.root, shard, reason)
            self._memo[key] = table
        return self._memo[key]

    def get(self, spec: str, src: str, tgt: str, texts: Sequence[str]) -> list[str | None]:
        """The cached translation of each text, or None."""
        table = self._table(spec, src, tgt)
        return [table.get(text_key(t)) for t in texts]

    def put(self, spec: str, src: str, tgt: str, pairs: Iterable[tuple[str, str]]) -> None:
        """Add (text, translation) pairs and write them to disk at once, as one shard."""
        table = self._table(spec, src, tgt)
        rows = [(text_key(s), t) for s, t in pairs]
        for h, t in rows:
            table[h] = t
        folder = self._folder(spec, src, tgt)
        if folder is None or not rows:
            return
        meta = folder.parent / "spec.json"
        if not meta.exists():
            write_bytes_atomic(meta, (json.dumps({"spec": spec}) + "\n").encode())
        body = "".join(json.dumps({"h": h, "t": t}, ensure_ascii=False) + "\n" for h, t in rows)
        write_shard(folder, new_name(), {_MARKER: body.encode("utf-8")})

    def __len__(self) -> int:
        return sum(len(t) for t in self._memo.values())


def _parse(data: bytes, table: dict[str, str], strict: bool = False) -> bool:
    """Add the rows of a JSON Lines body to ``table``; False (strict) at the first bad line."""
    rows = {}
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            row = json.loads(line)
            h, t = row["h"], row["t"]
            if not isinstance(h, str) or not isinstance(t, str):
                raise TypeError
            rows[h] = t
        except (ValueError, KeyError, TypeError, RecursionError):
            if strict:
                return False
            continue  # the legacy file: a line torn by an interruption
    table.update(rows)
    return True
