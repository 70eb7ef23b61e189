"""XQuAD loader: 12 parallel SQuAD-format files, aligned by paragraph position and question id.

Read from ``--data-dir``, else ``$CLIRBENCH_DATA_DIR/xquad/``, else the copy shipped in the package
(``clirbench/data/xquad``, CC-BY-SA 4.0, checked against the card's hashes), else the hub.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..collection import ParallelCollection, Text
from ..errors import MalformedDataError
from ..strict import loads_json
from .cards import TaskCard
from .hub import check_counts, find_local_dir, hub_rows, read_bytes, require_file, source_record


def _read_squad_file(path: Path, content: bytes) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(context, [(question id, question), ...]), ...] in file order, whitespace-stripped."""
    try:
        data = loads_json(content.decode("utf-8-sig"), str(path))
        paragraphs = []
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                qas = [(str(qa["id"]), qa["question"].strip()) for qa in paragraph["qas"]]
                paragraphs.append((paragraph["context"].strip(), qas))
    except (OSError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise MalformedDataError(f"{path}: not a SQuAD v1.1 JSON file ({type(exc).__name__}: {exc})") from None
    return paragraphs


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
    raw, hashes = {}, {}
    for lang in languages:
        if folder is not None:
            path = require_file(card, folder, lang, "XQuAD")
            content, hashes[lang] = read_bytes(card, path, lang)
            raw[lang] = _read_squad_file(path, content)
        else:
            raw[lang] = _read_hub(card, lang)
    _check_alignment(card, raw)
    passages, questions = {}, {}
    for lang, paragraphs in raw.items():
        passages[lang] = {f"p{i:03d}": context for i, (context, _) in enumerate(paragraphs)}
        questions[lang] = tuple(
            Text(id=qid, text=question, lang=lang, item=f"p{i:03d}")
            for i, (_, qas) in enumerate(paragraphs) for qid, question in qas)
    source = source_record(card, folder, hashes)
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
            raise MalformedDataError(f"XQuAD {lang}: duplicate question ids")
