"""Bring-your-own parallel data: ``parallel:<file>`` — aligned passages (and questions) per language.

JSONL, one item per line (blank lines ignored)::

    {"item": "p001", "passages": {"en": "...", "id": "..."},
     "questions": [{"id": "q1", "text": {"en": "...?", "id": "...?"}}]}

A question's texts are under ``text``, so no language code (Indonesian is ``id``) can collide with
a field name. The older form with the texts beside the id, ``{"id": "q1", "en": "...?", "de":
"...?"}``, is still read, except in a file whose languages include ``id`` (it would be ambiguous).
``questions`` is optional per item (an item without questions is a distractor passage); a
question's ``id`` defaults to ``<item>-q<n>``. Duplicate keys in a line are refused. TSV, a header
``item<TAB>question_id<TAB><lang>…``, then one row per passage (empty ``question_id``) and one per
question (texts without tabs or newlines)::

    item    question_id    en              de
    p001                   The passage.    Die Passage.
    p001    q1             Who ...?        Wer ...?

Every item has a passage and every question a text in every language of the file; ids are unique
and contain no whitespace or ``/``. The languages are whatever the file has. A byte-order mark at
the start of either kind of file is ignored.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from ..collection import ParallelCollection, Text
from ..formats.jsonl import json_objects, numbered_lines
from ..scenarios import MAIN_MEASURES, POOL_MODES, SCENARIOS
from ..util.errors import DataNotFoundError, MalformedDataError
from ..util.strict import bad_character, check_id, first_duplicate, language_tag
from . import Task
from .card import TaskCard
from .hub import is_file, sha256_file
from .loader import BaseLoader

_ID = re.compile(r"^[^\s/]+$")


def _no_language_twice(given: Sequence[str], tags: Sequence[str], where: str, what: str) -> None:
    """One line naming the language that ``given`` (as written; ``tags``: in BCP-47 case) holds twice."""
    dup = first_duplicate(tags)
    if dup is not None:
        tag, a, b = dup
        spelled = f" (as {given[a]!r} and {given[b]!r})" if given[a] != given[b] else ""
        raise MalformedDataError(f"{where}: a language appears twice{what}: {tag!r}{spelled}")


class _Items:
    """Parsed items in file order: passages[item][lang], questions [(id, item, {lang: text})]."""

    def __init__(self) -> None:
        self.languages: tuple[str, ...] | None = None
        self.passages: dict[str, dict[str, str]] = {}
        self.questions: list[tuple[str, str, dict[str, str]]] = []
        self._qids: set[str] = set()

    def set_languages(self, langs: Sequence[str], where: str) -> None:
        tags = [language_tag(l, where) for l in langs]  # EN and en are one language
        _no_language_twice(langs, tags, where, "")
        langs = tags
        if len(langs) < 2:
            raise MalformedDataError(f"{where}: a parallel file needs at least two languages")
        self.languages = tuple(langs)

    def texts(self, value: Any, where: str, what: str) -> dict[str, str]:
        """``value`` as {lang: text} with exactly the file's languages, texts stripped and non-empty."""
        if not isinstance(value, dict):
            raise MalformedDataError(f"{where}: {what} must be an object of texts by language")
        if self.languages is None:
            self.set_languages(list(value), where)
        tagged = {language_tag(lang, where): text for lang, text in value.items()}
        if len(tagged) != len(value):
            _no_language_twice(list(value), [language_tag(l, where) for l in value], where, f" in {what}")
        value = tagged
        if set(value) != set(self.languages):
            missing = sorted(set(self.languages) - set(value))
            extra = sorted(set(value) - set(self.languages))
            detail = f"lacks {', '.join(missing)}" if missing else f"has extra {', '.join(extra)}"
            raise MalformedDataError(f"{where}: {what} {detail} (every item needs {', '.join(self.languages)})")
        out = {}
        for lang in self.languages:
            text = value[lang]
            if not isinstance(text, str) or not text.strip():
                raise MalformedDataError(f"{where}: {what} in {lang} must be a non-empty string")
            out[lang] = text.strip()
        return out

    def check_id(self, value: Any, where: str, what: str) -> str:
        if not isinstance(value, str) or not _ID.match(value):
            raise MalformedDataError(f"{where}: {what} must be a non-empty string without spaces or '/', got {value!r}")
        return check_id(value, where, what)

    def add_passage(self, item: Any, texts: Any, where: str) -> str:
        item = self.check_id(item, where, "item")
        if item in self.passages:
            raise MalformedDataError(f"{where}: item {item!r} appears twice")
        self.passages[item] = self.texts(texts, where, "passages")
        return item

    def add_question(self, qid: str, item: str, texts: Any, where: str) -> None:
        qid = self.check_id(qid, where, "question id")
        if qid in self._qids:
            raise MalformedDataError(f"{where}: question id {qid!r} appears twice")
        self._qids.add(qid)
        self.questions.append((qid, item, self.texts(texts, where, f"question {qid}")))


def _question_texts(items: _Items, question: dict, k: int, where: str) -> Any:
    """The texts of a question: ``{"id", "text": {lang: text}}``, or the older ``{"id", lang: text}``."""
    if "text" in question:
        extra = sorted(set(question) - {"id", "text"})
        if extra:
            raise MalformedDataError(f"{where}: question {k} has unknown field(s) {', '.join(extra)} "
                                     f"(a question is {{\"id\": ..., \"text\": {{language: text}}}})")
        return question["text"]
    if items.languages is not None and "id" in items.languages:
        raise MalformedDataError(f"{where}: question {k}: with Indonesian (id) among the languages, write the "
                                 f"texts under \"text\": {{\"id\": \"q1\", \"text\": {{\"en\": ..., \"id\": ...}}}}")
    return {key: value for key, value in question.items() if key != "id"}


def _read_jsonl(path: Path) -> _Items:
    items = _Items()
    for n, record in json_objects(path):
        where = f"{path}:{n}"
        if "item" not in record or "passages" not in record:
            raise MalformedDataError(f"{where}: expected an object with \"item\" and \"passages\"")
        extra = set(record) - {"item", "passages", "questions"}
        if extra:
            raise MalformedDataError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
        item = items.add_passage(record["item"], record["passages"], where)
        questions = record.get("questions", [])
        if not isinstance(questions, list):
            raise MalformedDataError(f"{where}: questions must be a list")
        for k, question in enumerate(questions, 1):
            if not isinstance(question, dict):
                raise MalformedDataError(f"{where}: question {k} must be an object")
            items.add_question(question.get("id", f"{item}-q{k}"), item, _question_texts(items, question, k, where),
                               where)
    return items


def _read_tsv(path: Path) -> _Items:
    items = _Items()
    rows = [(n, line.rstrip("\r\n")) for n, line in numbered_lines(path) if line.strip()]
    if not rows:
        return items
    n, header = rows[0]
    columns = header.split("\t")
    if columns[:2] != ["item", "question_id"]:
        raise MalformedDataError(f"{path}:{n}: the header must be item<TAB>question_id<TAB><lang>...")
    items.set_languages(columns[2:], f"{path}:{n}")
    pending = []
    for n, line in rows[1:]:
        where = f"{path}:{n}"
        bad = bad_character(line.replace("\t", ""))
        if bad:
            raise MalformedDataError(f"{where}: the character {bad} inside a cell (TSV cells hold no control "
                                     f"characters or line breaks)")
        cells = line.split("\t")
        if len(cells) != len(columns):
            raise MalformedDataError(f"{where}: {len(cells)} columns, expected {len(columns)}")
        texts = dict(zip(columns[2:], cells[2:]))
        if cells[1]:
            pending.append((cells[1], cells[0], texts, where))
        else:
            items.add_passage(cells[0], texts, where)
    for qid, item, texts, where in pending:
        if item not in items.passages:
            raise MalformedDataError(f"{where}: question {qid!r} is about item {item!r}, which has no passage row")
        items.add_question(qid, item, texts, where)
    return items


def read_items(path: str | Path) -> _Items:
    """Parse and validate a parallel file (``.jsonl`` or ``.tsv``); one-line errors with file:line."""
    path = Path(path)
    if not is_file(path):
        raise DataNotFoundError(f"parallel:{path}: no such file (a .jsonl or .tsv of aligned items)")
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".tsv"):
        raise MalformedDataError(f"parallel:{path}: expected a .jsonl or .tsv file")
    items = (_read_jsonl if suffix == ".jsonl" else _read_tsv)(path)
    if not items.passages:
        raise MalformedDataError(f"{path}: no items")
    if not items.questions:
        raise MalformedDataError(f"{path}: no questions; a parallel task needs questions to use as queries")
    return items


def make_task(argument: str):
    """The task ``parallel:<argument>``: a card built from the file, loaded by this module."""

    path = Path(argument).expanduser()
    items = read_items(path)
    languages = items.languages
    card = TaskCard(
        id=f"parallel:{path.stem}", name=f"Parallel data from {path.name}",
        description=f"{len(items.passages)} aligned items, {len(items.questions)} questions, "
                    f"languages {', '.join(languages)} (bring-your-own parallel data).",
        kind="parallel", source={"path": str(path.resolve()), "local_files": path.name},
        languages=languages, scenarios=SCENARIOS, main_measures={s: MAIN_MEASURES[s] for s in SCENARIOS},
        license="unknown (the user's own data)", citation="", pivot="en" if "en" in languages else languages[0],
        pool_modes=POOL_MODES)
    return Task(card, LOADER)


def load(card: TaskCard, languages: Sequence[str], data_dir=None) -> ParallelCollection:
    """The collection in ``languages``; ``data_dir`` is not used (the card names the file)."""
    path = Path(card.source["path"])
    items = read_items(path)
    missing = [l for l in languages if l not in items.languages]
    if missing:
        raise MalformedDataError(f"{path}: no language(s) {', '.join(missing)} (the file has {', '.join(items.languages)})")
    passages = {lang: {item: texts[lang] for item, texts in items.passages.items()} for lang in languages}
    questions = {lang: tuple(Text(id=qid, text=texts[lang], lang=lang, item=item)
                             for qid, item, texts in items.questions) for lang in languages}
    source = {"origin": str(path), "revision": None, "files_sha256": {path.name: sha256_file(path)},
              "files_match_card": None}
    return ParallelCollection(task=card.id, languages=tuple(languages), passages=passages,
                              questions=questions, source=source)


class ParallelDataLoader(BaseLoader):
    """parallel:<file>: the user's aligned JSONL/TSV file."""

    load = staticmethod(load)


LOADER = ParallelDataLoader()
