"""XQuAD loader: 12 parallel SQuAD-format files, aligned by paragraph position and question id."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Sequence

from ..collection import ParallelCollection, Text
from ..errors import DataNotFoundError, MalformedDataError
from .cards import TaskCard


def find_local_dir(card: TaskCard, data_dir: str | os.PathLike | None) -> Path | None:
    """Where the local files are: ``data_dir``, then ``$CLIRBENCH_DATA_DIR/xquad``; None if neither."""
    candidates = []
    if data_dir is not None:
        candidates.append(Path(data_dir))
    env = os.environ.get(card.source.get("local_dir_env", "CLIRBENCH_DATA_DIR"))
    if env:
        candidates.append(Path(env) / card.id)
    for folder in candidates:
        if any((folder / card.source["local_files"].format(lang=lang)).is_file() for lang in card.languages):
            return folder
    if data_dir is not None:
        raise DataNotFoundError(
            f"no {card.source['local_files'].format(lang='<lang>')} files in {data_dir}")
    return None


def _read_squad_file(path: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(context, [(question id, question), ...]), ...] in file order, whitespace-stripped."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        paragraphs = []
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                qas = [(str(qa["id"]), qa["question"].strip()) for qa in paragraph["qas"]]
                paragraphs.append((paragraph["context"].strip(), qas))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise MalformedDataError(f"{path}: not a SQuAD v1.1 JSON file ({type(exc).__name__}: {exc})") from None
    return paragraphs


def _read_hub(card: TaskCard, lang: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The same structure from the Hugging Face hub (rows are questions, grouped by context)."""
    try:
        import datasets
    except ImportError:
        raise DataNotFoundError(
            f"XQuAD not found locally; pass --data-dir with xquad.<lang>.json files, set "
            f"$CLIRBENCH_DATA_DIR, or install clirbench[hub] to read {card.source['hub']}") from None
    try:
        rows = datasets.load_dataset(card.source["hub"], f"xquad.{lang}", split="validation",
                                     revision=card.source.get("hub_revision"))
    except Exception as exc:  # any hub/network failure becomes one line
        raise DataNotFoundError(
            f"XQuAD not found locally and the hub failed ({type(exc).__name__}); pass --data-dir "
            f"with xquad.<lang>.json files or set $CLIRBENCH_DATA_DIR") from None
    paragraphs: list[tuple[str, list[tuple[str, str]]]] = []
    for row in rows:
        context = row["context"].strip()
        if not paragraphs or paragraphs[-1][0] != context:
            paragraphs.append((context, []))
        paragraphs[-1][1].append((str(row["id"]), row["question"].strip()))
    return paragraphs


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load(card: TaskCard, languages: Sequence[str], data_dir=None) -> ParallelCollection:
    """Load ``languages`` of XQuAD and check that they align paragraph by paragraph, id by id."""
    folder = find_local_dir(card, data_dir)
    raw, hashes = {}, {}
    for lang in languages:
        if folder is not None:
            path = folder / card.source["local_files"].format(lang=lang)
            if not path.is_file():
                raise DataNotFoundError(f"missing {path} (XQuAD {lang})")
            raw[lang] = _read_squad_file(path)
            hashes[lang] = _sha256(path)
        else:
            raw[lang] = _read_hub(card, lang)
    _check_alignment(card, raw)
    passages, questions = {}, {}
    for lang, paragraphs in raw.items():
        passages[lang] = {f"p{i:03d}": context for i, (context, _) in enumerate(paragraphs)}
        questions[lang] = tuple(
            Text(id=qid, text=question, lang=lang, item=f"p{i:03d}")
            for i, (_, qas) in enumerate(paragraphs) for qid, question in qas)
    source = {"origin": str(folder) if folder is not None else f"hub:{card.source['hub']}",
              "revision": card.source.get("hub_revision") if folder is None else None,
              "files_sha256": hashes,
              "files_match_card": all(card.files_sha256.get(l) == h for l, h in hashes.items()) if hashes else None}
    return ParallelCollection(task=card.id, languages=tuple(languages), passages=passages,
                              questions=questions, source=source)


def _check_alignment(card: TaskCard, raw) -> None:
    expected_p = card.expected.get("passages_per_language")
    expected_q = card.expected.get("questions_per_language")
    reference_lang, reference = next(iter(raw.items()))
    reference_ids = [[qid for qid, _ in qas] for _, qas in reference]
    for lang, paragraphs in raw.items():
        n_q = sum(len(qas) for _, qas in paragraphs)
        if expected_p is not None and len(paragraphs) != expected_p:
            raise MalformedDataError(f"XQuAD {lang}: {len(paragraphs)} paragraphs, expected {expected_p}")
        if expected_q is not None and n_q != expected_q:
            raise MalformedDataError(f"XQuAD {lang}: {n_q} questions, expected {expected_q}")
        ids = [[qid for qid, _ in qas] for _, qas in paragraphs]
        if ids != reference_ids:
            where = next(i for i, (a, b) in enumerate(zip(ids, reference_ids)) if a != b) if len(ids) == len(reference_ids) else "count"
            raise MalformedDataError(
                f"XQuAD {lang} and {reference_lang} do not align (paragraph {where}): question ids differ")
        flat = [qid for group in ids for qid in group]
        if len(set(flat)) != len(flat):
            raise MalformedDataError(f"XQuAD {lang}: duplicate question ids")
