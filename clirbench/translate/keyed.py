"""Translators that look translations up by id: ``file:<path>`` and ``gold`` (the data set's own)."""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ..collection import Text
from ..formats.jsonl import json_objects
from ..tasks.hub import sha256_file
from ..util.errors import ClirbenchError, MalformedDataError
from ..util.strict import check_id, language_tag

__all__ = ["FileTranslator", "GoldTranslator", "parallel_gold"]


class FileTranslator:
    """``file:<path>``: precomputed translations, JSON Lines of ``{"id", "language", "text"}``.

    ``id`` is the document or query id in the pool, ``language`` the language translated into.
    """

    def __init__(self, path: str) -> None:
        self.path, self.spec = path, f"file:{path}"
        self.table: dict[tuple[str, str], str] = {}
        for line, obj in json_objects(path):
            fields = [obj.get(k) for k in ("id", "language", "text")]
            if not all(isinstance(v, str) for v in fields):
                raise MalformedDataError(f"{path}:{line}: expected string fields id, language, text")
            check_id(fields[0], f"{path}:{line}", "id")
            fields[1] = language_tag(fields[1], f"{path}:{line}")
            if not fields[2].strip():
                raise MalformedDataError(f"{path}:{line}: empty {fields[1]} translation of id {fields[0]!r}")
            if (fields[0], fields[1]) in self.table:
                raise MalformedDataError(f"{path}:{line}: a second {fields[1]} translation of id {fields[0]!r}")
            self.table[(fields[0], fields[1])] = fields[2]
        self.sha256 = sha256_file(path)

    def describe(self) -> dict:
        return {"spec": self.spec, "backend": "file", "sha256": self.sha256, "entries": len(self.table)}

    def translate_items(self, items: Sequence[Text], tgt: str, role: str) -> list[str]:
        missing = [t.id for t in items if (t.id, tgt) not in self.table]
        if missing:
            raise ClirbenchError(f"{self.path}: no {tgt} translation for {len(missing)} of {len(items)} "
                                 f"{role} (first: id {missing[0]!r})")
        return [self.table[(t.id, tgt)] for t in items]


def parallel_gold(collection, items: Sequence[Text], tgt: str, role: str) -> list[str]:
    """Gold translations from a parallel collection: the same item's passage, the same question id's text."""
    if tgt not in collection.passages:
        raise ClirbenchError(f"{collection.task}: no {tgt} text loaded for gold translation")
    if role == "docs":
        passages = collection.passages[tgt]
        return [passages[t.item] for t in items]
    questions = {q.id: q.text for q in collection.questions[tgt]}
    return [questions[t.id] for t in items]


class GoldTranslator:
    """``gold``: the translation the data set itself provides.

    Parallel tasks: the other language's text of the same item / question (``parallel_gold``).
    Other tasks: their loader's ``gold_translations(card, role, lang, data_dir, **options) ->
    {id: text}`` (CLIRudit: ``en.test`` documents); a task without one fails with a clear message.
    """

    spec = "gold"

    def __init__(self, task, data_dir=None, task_options: Mapping | None = None) -> None:
        self.task, self.data_dir, self.options = task, data_dir, dict(task_options or {})
        self._lookups: dict[tuple, Callable] = {}

    def describe(self) -> dict:
        return {"spec": self.spec, "backend": "gold", "task": self.task.id}

    def translate_items(self, items: Sequence[Text], tgt: str, role: str) -> list[str]:
        if not items:
            return []
        if self.task.card.kind == "parallel":
            langs = tuple(sorted({t.lang for t in items} | {tgt}))
            key = ("parallel", langs)
            if key not in self._lookups:
                self._lookups[key] = self.task.load(langs, data_dir=self.data_dir)
            return parallel_gold(self._lookups[key], items, tgt, role)
        hook = self.task.loader().gold_translations
        key = (role, tgt)
        if key not in self._lookups:
            self._lookups[key] = hook(self.task.card, role, tgt, data_dir=self.data_dir, **self.options)
        table = self._lookups[key]
        missing = [t.id for t in items if t.id not in table]
        if missing:
            raise ClirbenchError(f"task {self.task.id}: no gold {tgt} translation for {len(missing)} {role} "
                                 f"(first: {missing[0]!r})")
        return [table[t.id] for t in items]
