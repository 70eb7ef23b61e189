"""XQuAD loader: 12 parallel SQuAD-format files, aligned by paragraph position and question id.

Read from ``--data-dir``, else ``$CLIRBENCH_DATA_DIR/xquad/``, else the copy shipped in the package
(``clirbench/data/xquad``, CC-BY-SA 4.0, checked against the card's hashes), else the hub.

Option ``articles=train|test`` (``--task-option articles=test``) keeps the paragraphs of half of
XQuAD's 48 Wikipedia articles (5 paragraphs each, in file order): ``train`` = articles 1-24
(paragraphs p000-p119, 632 questions), ``test`` = articles 25-48 (p120-p239, 558 questions), so that
a model trained on one half (``clirbench train --task xquad --task-option articles=train``) is
evaluated on passages and questions it never saw. Results record it as the subset ``articles=test``.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

from ..collection import ParallelCollection, Text
from ..util.errors import MalformedDataError, UnknownNameError
from ..util.strict import check_id, first_duplicate, loads_json
from .card import TaskCard
from .hub import check_counts, find_local_dir, hub_rows, read_bytes, require_file, source_record
from .loader import BaseLoader

#: the article split: articles [0, 24) are "train", [24, 48) "test" (0-based, file order)
ARTICLE_SPLITS = {"train": range(0, 24), "test": range(24, 48)}
#: paragraphs per article in XQuAD (every one of its 48 articles has 5); the hub rows lack titles
PARAGRAPHS_PER_ARTICLE = 5


def _read_squad_file(path: Path, content: bytes, articles: list[int] | None = None
                     ) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(context, [(question id, question), ...]), ...] in file order, whitespace-stripped;
    ``articles`` (if given) receives each paragraph's 0-based article index."""
    try:
        data = loads_json(content.decode("utf-8-sig"), str(path))
        paragraphs = []
        for a, article in enumerate(data["data"]):
            for paragraph in article["paragraphs"]:
                qas = [(check_id(str(qa["id"]), str(path), "question id"), qa["question"].strip())
                       for qa in paragraph["qas"]]
                paragraphs.append((paragraph["context"].strip(), qas))
                if articles is not None:
                    articles.append(a)
    except (OSError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise MalformedDataError(f"{path}: not a SQuAD v1.1 JSON file ({type(exc).__name__}: {exc})") from None
    return paragraphs


@functools.lru_cache(maxsize=16)
def _parsed(path: str, content: bytes) -> tuple[tuple, tuple[int, ...]]:
    """``_read_squad_file`` of ``content`` (frozen) and its paragraphs' article indices, kept per
    content: checking many pools' qrels (``leaderboard build``) reads the same files again."""
    articles: list[int] = []
    paragraphs = _read_squad_file(Path(path), content, articles)
    return tuple((context, tuple(qas)) for context, qas in paragraphs), tuple(articles)


def _read_hub(card: TaskCard, lang: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The same structure from the Hugging Face hub (rows are questions, grouped by context)."""
    paragraphs: list[tuple[str, list[tuple[str, str]]]] = []
    for row in hub_rows(card, f"xquad.{lang}", "validation", "XQuAD"):
        context = row["context"].strip()
        if not paragraphs or paragraphs[-1][0] != context:
            paragraphs.append((context, []))
        paragraphs[-1][1].append((str(row["id"]), row["question"].strip()))
    return paragraphs


def load(card: TaskCard, languages: Sequence[str], data_dir=None) -> ParallelCollection:
    """Load ``languages`` of XQuAD and check that they align paragraph by paragraph, id by id."""
    folder = find_local_dir(card, data_dir)
    raw, hashes, articles = {}, {}, []
    for lang in languages:
        if folder is not None:
            path = require_file(card, folder, lang, "XQuAD")
            content, hashes[lang] = read_bytes(card, path, lang)
            raw[lang], file_articles = _parsed(str(path), content)
            articles = articles or list(file_articles)
        else:
            raw[lang] = _read_hub(card, lang)
    if not articles:  # the hub's rows carry no article: XQuAD's fixed 5 paragraphs per article
        articles = [i // PARAGRAPHS_PER_ARTICLE for i in range(len(next(iter(raw.values()))))]
    _check_alignment(card, raw)
    passages, questions = {}, {}
    for lang, paragraphs in raw.items():
        passages[lang] = {f"p{i:03d}": context for i, (context, _) in enumerate(paragraphs)}
        questions[lang] = tuple(
            Text(id=qid, text=question, lang=lang, item=f"p{i:03d}")
            for i, (_, qas) in enumerate(paragraphs) for qid, question in qas)
    source = source_record(card, folder, hashes)
    source["paragraph_articles"] = tuple(articles)
    return ParallelCollection(task=card.id, languages=tuple(languages), passages=passages,
                              questions=questions, source=source)


def _check_alignment(card: TaskCard, raw) -> None:
    reference_lang, reference = next(iter(raw.items()))
    reference_ids = [[qid for qid, _ in qas] for _, qas in reference]
    for lang, paragraphs in raw.items():
        n_q = sum(len(qas) for _, qas in paragraphs)
        check_counts(card, "XQuAD", lang, {"passages_per_language": len(paragraphs),
                                           "questions_per_language": n_q})
        ids = [[qid for qid, _ in qas] for _, qas in paragraphs]
        if ids != reference_ids:
            where = next(i for i, (a, b) in enumerate(zip(ids, reference_ids)) if a != b) if len(ids) == len(reference_ids) else "count"
            raise MalformedDataError(
                f"XQuAD {lang} and {reference_lang} do not align (paragraph {where}): question ids differ")
        flat = [qid for group in ids for qid in group]
        if len(set(flat)) != len(flat):
            raise MalformedDataError(f"XQuAD {lang}: question id {first_duplicate(flat)[0]!r} appears twice")


def select(card: TaskCard, collection: ParallelCollection, articles: str | None = None,
           **unknown) -> ParallelCollection:
    """The paragraphs (and their questions) of the ``articles`` half: ``train`` or ``test``."""
    if unknown:
        raise UnknownNameError(f"task {card.id} takes no option(s) {', '.join(unknown)}; it takes articles=train|test")
    if articles not in ARTICLE_SPLITS:
        raise UnknownNameError(f"task {card.id}: articles={articles}: expected articles=train or articles=test")
    keep_articles = ARTICLE_SPLITS[articles]
    per_paragraph = collection.source["paragraph_articles"]
    keep = {f"p{i:03d}" for i, a in enumerate(per_paragraph) if a in keep_articles}
    passages = {lang: {k: v for k, v in texts.items() if k in keep}
                for lang, texts in collection.passages.items()}
    questions = {lang: tuple(q for q in qs if q.item in keep) for lang, qs in collection.questions.items()}
    source = dict(collection.source, subset=f"articles={articles}")
    return ParallelCollection(task=collection.task, languages=collection.languages, passages=passages,
                              questions=questions, source=source)


class XQuADLoader(BaseLoader):
    """XQuAD: SQuAD-format JSON per language; articles=train|test selects articles."""

    load = staticmethod(load)
    select = staticmethod(select)


LOADER = XQuADLoader()
