"""Task cards: the declarative description of a task (``clirbench/tasks/cards/<id>.yaml``), validated loudly."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..scenarios import MAIN_MEASURES, POOL_MODES, RETRIEVAL, SCENARIOS
from ..util.errors import MalformedDataError
from ..util.strict import json_kind, load_yaml, shown

_REQUIRED = ("id", "name", "description", "kind", "source", "languages", "scenarios", "license", "citation")


@dataclass(frozen=True)
class TaskCard:
    id: str
    name: str
    description: str
    kind: str
    source: Mapping[str, Any]
    languages: tuple[str, ...]
    scenarios: tuple[str, ...]
    main_measures: Mapping[str, tuple[str, ...]]
    license: str
    citation: str
    pivot: str | None = None
    pool_modes: tuple[str, ...] = ("unique",)
    expected: Mapping[str, int] = field(default_factory=dict)
    files_sha256: Mapping[str, str] = field(default_factory=dict)


def cards_dir() -> Path:
    """The folder of task cards, ``clirbench/tasks/cards/``, shipped inside the package."""
    folder = Path(__file__).resolve().parent / "cards"
    if not folder.is_dir():
        raise MalformedDataError("clirbench installation is incomplete: no task cards folder found")
    return folder


def parse_card(data: Mapping[str, Any], origin: str) -> TaskCard:
    """Validate one card's fields and build a TaskCard; errors name the file and the field."""
    if not isinstance(data, Mapping):
        raise MalformedDataError(f"{origin}: a task card must be a mapping, got {json_kind(data, yaml=True)}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise MalformedDataError(f"{origin}: missing field(s) {', '.join(missing)}")
    unknown = set(data) - set(TaskCard.__dataclass_fields__)
    if unknown:
        raise MalformedDataError(f"{origin}: unknown field(s) {', '.join(sorted(unknown))}")
    for key, kind, what in (("scenarios", (list, tuple), "a list"), ("languages", (list, tuple), "a list"),
                            ("source", Mapping, "a mapping"), ("main_measures", Mapping, "a mapping"),
                            ("pool_modes", (list, tuple), "a list"), ("expected", (Mapping, type(None)), "a mapping"),
                            ("files_sha256", (Mapping, type(None)), "a mapping")):
        if key in data and not isinstance(data[key], kind):
            raise MalformedDataError(f"{origin}: {key} must be {what}, got {type(data[key]).__name__}")
    scenarios = tuple(data["scenarios"])
    kinds = {"parallel": SCENARIOS, "retrieval": (RETRIEVAL,)}
    if data["kind"] not in kinds:
        raise MalformedDataError(f"{origin}: kind must be one of {', '.join(kinds)}")
    bad = [s for s in scenarios if s not in kinds[data["kind"]]]
    if bad:
        raise MalformedDataError(f"{origin}: unknown scenario(s) {', '.join(bad)}")
    pool_modes = tuple(data.get("pool_modes", ("unique",)))
    if any(m not in POOL_MODES for m in pool_modes):
        raise MalformedDataError(f"{origin}: pool_modes must be among {', '.join(POOL_MODES)}")
    override = {k: tuple(v) for k, v in dict(data.get("main_measures") or {}).items()}
    if set(override) - set(scenarios):
        raise MalformedDataError(f"{origin}: main_measures names a scenario the task lacks")
    # optional for the parallel scenarios (declared in scenarios.py); a retrieval task names its own
    lacking = [s for s in scenarios if s not in override and s not in MAIN_MEASURES]
    if lacking:
        raise MalformedDataError(f"{origin}: main_measures must name the main measures of {', '.join(lacking)}")
    main = {s: tuple(override.get(s, MAIN_MEASURES.get(s, ()))) for s in scenarios}
    languages = tuple(data["languages"])
    pivot = data.get("pivot")
    if pivot is not None and pivot not in languages:
        raise MalformedDataError(f"{origin}: pivot {pivot!r} is not among the languages")
    sha = dict(data.get("files_sha256") or {})
    if set(sha) - set(languages):
        extra = sorted(map(str, set(sha) - set(languages)))
        raise MalformedDataError(f"{origin}: files_sha256 names a language the task lacks: {', '.join(extra)[:200]}")
    _check_local_files(dict(data["source"]), origin)
    _check_embedded(dict(data["source"]), languages, sha, origin)
    return TaskCard(
        id=str(data["id"]), name=str(data["name"]), description=str(data["description"]),
        kind=str(data["kind"]), source=dict(data["source"]), languages=languages,
        scenarios=scenarios, main_measures=main, license=str(data["license"]),
        citation=str(data["citation"]), pivot=pivot, pool_modes=pool_modes,
        expected=dict(data.get("expected") or {}), files_sha256=sha,
    )


def read_card_yaml(path: Path) -> Any:
    """The parsed YAML of a card file: no anchors/aliases, no duplicate keys (one-line errors)."""

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise MalformedDataError(f"{path}: not UTF-8 text") from None
    return load_yaml(text, str(path))


def _outside(path: str) -> bool:
    """Whether ``path`` (a name from a card) could point outside its folder."""
    return path.startswith(("/", "\\", "~")) or ".." in path.replace("\\", "/").split("/") or ":" in path[:2]


def _check_local_files(source: Mapping[str, Any], origin: str) -> None:
    """``source.local_files``: file name patterns inside the data folder (never ``..`` or absolute)."""
    files = source.get("local_files")
    for pattern in [files] if isinstance(files, str) else list(files or []):
        if not isinstance(pattern, str) or not pattern or _outside(pattern):
            raise MalformedDataError(f"{origin}: source.local_files {shown(pattern)} is refused: it must name files "
                                     f"inside the data folder (no '..', no absolute path)")


def _check_embedded(source: Mapping[str, Any], languages, sha: Mapping[str, str], origin: str) -> None:
    """``source.embedded``: a folder inside the package (relative, no ``..``), every language pinned."""
    embedded = source.get("embedded")
    if embedded is None:
        return
    if not isinstance(embedded, str) or not embedded or _outside(embedded):
        raise MalformedDataError(f"{origin}: source.embedded must be a folder inside the clirbench package, "
                                 f"e.g. data/<task id>; got {shown(embedded)} (no '..', no absolute path)")
    if not source.get("local_files"):
        raise MalformedDataError(f"{origin}: source.embedded needs source.local_files (the file names)")
    unpinned = [lang for lang in languages if lang not in sha]
    if unpinned:
        raise MalformedDataError(f"{origin}: source.embedded needs files_sha256 for every language "
                                 f"(missing: {', '.join(unpinned)})")


def load_cards(folder: Path | None = None) -> dict[str, TaskCard]:
    """All task cards in ``folder`` (default: the installed cards), by task id."""
    folder = folder or cards_dir()
    cards: dict[str, TaskCard] = {}
    for path in sorted(folder.glob("*.yaml")):
        card = parse_card(read_card_yaml(path), str(path))
        if card.id != path.stem:
            raise MalformedDataError(f"{path}: id {card.id!r} does not match the file name")
        cards[card.id] = card
    return cards
