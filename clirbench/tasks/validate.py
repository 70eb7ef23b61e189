"""``clirbench validate``: every task card's fields, its loader, and the data of each task found locally."""
from __future__ import annotations

import itertools
import os
from pathlib import Path

from ..util.errors import DataNotFoundError
from . import Task, hub
from . import card as cards  # cards.cards_dir is looked up at call time (tests point it elsewhere)
from .card import parse_card, read_card_yaml
from .hub import is_dir, unusable_files

__all__ = ["validate"]

_MAX_FILE_PROBLEMS = 20  # unreadable files reported, at most


def validate(data_dir=None, load_data: bool = True, folder=None) -> tuple[list[str], list[str]]:
    """(problems, notes) for every card in ``folder`` (default: the installed task cards).

    Cards: fields, id = file name, loader module and entry point, main measures, expected counts.
    Data: every file and folder under the data folder (``data_dir``, else ``$CLIRBENCH_DATA_DIR``)
    can be read (no link that leads to nothing, no missing permission); then, for each task found
    locally, it loads (the loader checks counts and alignment) and the files' SHA-256 match the
    card. Problems fail ``clirbench validate``; notes (no local data, a file the card has no hash
    for) do not.
    """

    if data_dir is not None and not is_dir(data_dir):  # else every task would be "not found locally"
        raise DataNotFoundError(f"--data-dir {data_dir}: not a folder (of <task id>/ subfolders)")

    problems: list[str] = []
    notes: list[str] = []
    root = data_dir if data_dir is not None else os.environ.get("CLIRBENCH_DATA_DIR")
    if load_data and root and is_dir(root):
        problems.extend(itertools.islice(unusable_files(root), _MAX_FILE_PROBLEMS))
        if problems:  # the loaders would only say it again
            load_data = False
            notes.append(f"task data not loaded: {len(problems)} file(s) under {root} cannot be read")
    for path in sorted(Path(folder or cards.cards_dir()).glob("*.yaml")):
        name = path.stem
        try:
            card = parse_card(read_card_yaml(path), str(path))
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
            continue
        if not card.expected:
            notes.append(f"{card.id}: the card records no expected counts")
        found = _check_card(card, path, problems)
        if found is not None and load_data:
            _check_data(found, data_dir, problems, notes)
    return problems, notes


def _check_card(card, path, problems: list[str]):
    """Problems with one parsed card; the Task when its loader is usable, else None."""
    from ..measures import parse  # lazy: numpy

    start = len(problems)
    if card.id != path.stem:
        problems.append(f"{path.stem}: id {card.id!r} does not match the file name")
        return None
    for scenario, names in card.main_measures.items():
        for measure in names:
            try:
                parse(measure)
            except ValueError:
                problems.append(f"{card.id}: main measure {measure!r} of {scenario} is not a measure")
    for field in ("license", "citation", "description"):
        if not str(getattr(card, field)).strip():
            problems.append(f"{card.id}: empty {field}")
    if card.kind == "parallel":
        if card.pivot is None:
            problems.append(f"{card.id}: a parallel task needs a pivot language")
        for key in ("passages_per_language", "questions_per_language"):
            if key not in card.expected:
                problems.append(f"{card.id}: expected.{key} is missing")
    task = Task(card)
    try:
        task.loader()  # imports it and checks the hook its kind requires
    except ValueError as exc:
        problems.append(f"{card.id}: {exc}")
        return None
    return task if len(problems) == start else None


def _check_data(task, data_dir, problems: list[str], notes: list[str]) -> None:
    card = task.card
    try:
        if card.kind == "parallel":
            folder = hub.find_local_dir(card, data_dir)
            if folder is None:
                notes.append(f"{card.id}: no local data ({task.locate(data_dir)})")
                return
            present = hub.present_languages(card, folder, card.languages)
            if len(present) < len(card.languages):
                notes.append(f"{card.id}: {len(present)} of {len(card.languages)} languages present in {folder}")
            hashes = task.load(present, data_dir=folder).source.get("files_sha256") or {}
        else:
            where = task.locate(data_dir)
            if not Path(where).exists() and not Path(where).is_symlink():
                notes.append(f"{card.id}: no local data ({where})")
                return
            pools = task.pools(data_dir=where)
            hashes = {k: v for p in pools for k, v in (p.source.get("files_sha256") or {}).items()}
    except DataNotFoundError as exc:
        notes.append(f"{card.id}: no local data ({exc})")
        return
    except (ValueError, LookupError, OSError) as exc:
        problems.append(f"{card.id}: data does not load: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}")
        return
    wrong = sorted(k for k, h in hashes.items() if k in card.files_sha256 and card.files_sha256[k] != h)
    if wrong:
        problems.append(f"{card.id}: file(s) differ from the card's SHA-256: {', '.join(wrong)}")
    unpinned = sorted(k for k in hashes if k not in card.files_sha256)
    if unpinned:
        notes.append(f"{card.id}: the card has no SHA-256 for {len(unpinned)} file(s), e.g. "
                     f"{unpinned[0]}: {hashes[unpinned[0]]}")
    notes.append(f"{card.id}: data loaded ({len(hashes)} file(s) hashed, {len(hashes) - len(wrong) - len(unpinned)} match the card)")
