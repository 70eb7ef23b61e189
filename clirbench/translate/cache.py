"""On-disk translation cache: spec + source + target language + SHA-256 of the text -> translation.

One JSON Lines file per (translator spec, src, tgt) under ``<root>/<sha256(spec)[:16]>/``, with a
``spec.json`` naming the translator. Lines are appended and flushed chunk by chunk, so an
interrupted translation of a large corpus resumes where it stopped; a torn last line is ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["TranslationCache", "text_key"]


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _safe(code: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in code)


class TranslationCache:
    """Translations by (spec, src, tgt, text); ``root=None`` keeps them in memory only."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = None if root is None else Path(root)
        self._memo: dict[tuple[str, str, str], dict[str, str]] = {}

    def _file(self, spec: str, src: str, tgt: str) -> Path | None:
        if self.root is None:
            return None
        return self.root / hashlib.sha256(spec.encode()).hexdigest()[:16] / f"{_safe(src)}-{_safe(tgt)}.jsonl"

    def _table(self, spec: str, src: str, tgt: str) -> dict[str, str]:
        key = (spec, src, tgt)
        if key not in self._memo:
            table: dict[str, str] = {}
            path = self._file(spec, src, tgt)
            if path is not None and path.is_file():
                with open(path, encoding="utf-8", errors="replace") as handle:
                    for line in handle:
                        try:
                            row = json.loads(line)
                            table[row["h"]] = row["t"]
                        except (ValueError, KeyError, TypeError, RecursionError):
                            continue  # a line torn by an interruption (or garbled): re-translated
            self._memo[key] = table
        return self._memo[key]

    def get(self, spec: str, src: str, tgt: str, texts: Sequence[str]) -> list[str | None]:
        """The cached translation of each text, or None."""
        table = self._table(spec, src, tgt)
        return [table.get(text_key(t)) for t in texts]

    def put(self, spec: str, src: str, tgt: str, pairs: Iterable[tuple[str, str]]) -> None:
        """Add (text, translation) pairs and append them to disk at once (flushed and synced)."""
        table = self._table(spec, src, tgt)
        rows = [(text_key(s), t) for s, t in pairs]
        for h, t in rows:
            table[h] = t
        path = self._file(spec, src, tgt)
        if path is None or not rows:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = path.parent / "spec.json"
        if not meta.exists():
            meta.write_text(json.dumps({"spec": spec}) + "\n", encoding="utf-8")
        with open(path, "a", encoding="utf-8") as handle:
            if handle.tell() > 0 and not _ends_with_newline(path):
                handle.write("\n")  # after a torn line
            handle.write("".join(json.dumps({"h": h, "t": t}, ensure_ascii=False) + "\n" for h, t in rows))
            handle.flush()
            os.fsync(handle.fileno())

    def __len__(self) -> int:
        return sum(len(t) for t in self._memo.values())


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"
