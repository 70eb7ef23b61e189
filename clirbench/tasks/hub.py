"""Where a task's files come from — a local folder, the package, or the Hugging Face hub — and how
that is recorded.

Shared by every task loader: the same lookup order (``data_dir`` or ``data_dir/<id>`` when given;
else ``$CLIRBENCH_DATA_DIR/<id>``, then the copy embedded in the package, then the hub), the same
one-line messages, the same file hashes. A card's ``source.local_files`` is a pattern with
``{lang}`` (or a list of them, tried in order). ``source.embedded`` names a folder inside the
``clirbench`` package holding each local file xz-compressed (``<local file>.xz``); its decompressed
bytes must match the card's ``files_sha256``, so results from the embedded copy and from the
original files record the same hashes. An explicit ``data_dir`` never falls back to anything.
"""
from __future__ import annotations

import datetime
import errno
import hashlib
import lzma
import os
import socket
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence
from urllib.parse import urlparse

from ..util.errors import DataNotFoundError, MalformedDataError
from ..util.optional import MissingDependencyError, require
from ..util.strict import shown
from .card import TaskCard


def _patterns(card: TaskCard) -> tuple[str, ...]:
    files = card.source.get("local_files")
    if not files:
        return ()
    return (files,) if isinstance(files, str) else tuple(files)


def files_hint(card: TaskCard) -> str:
    """``xquad.<lang>.json`` — the local file names a card expects, for messages."""
    names = [p.format(lang="<lang>") for p in _patterns(card)]
    return " or ".join(names) if names else "the task's files"


EMBEDDED_SUFFIX = ".xz"


def embedded_dir(card: TaskCard) -> Path | None:
    """The package folder of the card's embedded copy (``source.embedded``), None if it has none."""
    relative = card.source.get("embedded")
    if not relative:
        return None
    folder = Path(__file__).resolve().parent.parent / relative
    return folder if folder.is_dir() else None


def is_embedded(card: TaskCard, folder: Path | None) -> bool:
    """Whether ``folder`` is the card's embedded copy."""
    embedded = embedded_dir(card)
    return embedded is not None and folder is not None and Path(folder).resolve() == embedded


def link_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` is a symbolic link that leads to nothing (broken, a loop); None for anything else."""
    path = Path(path)
    if not path.is_symlink():
        return None
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop (it never reaches a file)"
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        if exc.errno == errno.ENOENT:
            return f"a broken symbolic link (to {shown(target)}, which does not exist)"
        return f"a symbolic link that cannot be followed (to {shown(target)}: {exc.strerror})"
    return None


def _refuse_dead_link(path: str | os.PathLike) -> Path:
    """``Path(path)``; a one-line error naming it when it is a link that leads to nothing."""
    problem = link_problem(path)
    if problem:
        raise MalformedDataError(f"{path}: {problem}")
    return Path(path)


def is_file(path: str | os.PathLike) -> bool:
    """``path.is_file()``; a symbolic link that leads to nothing is a one-line error naming it, not a
    missing file (so a data folder with a broken link is never taken for one without the file)."""
    return _refuse_dead_link(path).is_file()


def is_dir(path: str | os.PathLike) -> bool:
    """``path.is_dir()``, with :func:`is_file`'s error for a link that leads to nothing."""
    return _refuse_dead_link(path).is_dir()


def unusable_files(root: str | os.PathLike, limit: int = 1_000_000) -> Iterator[str]:
    """One line per entry under ``root`` that cannot be read: a link that leads to nothing, a file or
    folder without read permission (``limit`` entries looked at, at most; links to folders not followed)."""
    seen = 0
    for folder, dirs, files in os.walk(root, onerror=lambda exc: None):
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            seen += 1
            problem = link_problem(path)
            if problem is None and not os.access(path, os.R_OK | (os.X_OK if name in dirs else 0)):
                problem = "cannot be read (no permission)"
            if problem:
                yield f"{path}: {problem}"
        if seen >= limit:
            return


def local_file(card: TaskCard, folder: Path, lang: str) -> Path | None:
    """The first of the card's file patterns that exists in ``folder`` for ``lang``."""
    suffix = EMBEDDED_SUFFIX if is_embedded(card, folder) else ""
    for pattern in _patterns(card):
        path = folder / (pattern.format(lang=lang) + suffix)
        if is_file(path):
            return path
    return None


def candidate_dirs(card: TaskCard, data_dir: str | os.PathLike | None) -> list[Path]:
    """Folders to look in: ``data_dir`` then ``data_dir/<id>`` if given, else ``$CLIRBENCH_DATA_DIR/<id>``."""
    if data_dir is not None:
        return [Path(data_dir), Path(data_dir) / card.id]
    env = os.environ.get(card.source.get("local_dir_env", "CLIRBENCH_DATA_DIR"))
    return [Path(env) / card.id] if env else []


def find_local_dir(card: TaskCard, data_dir: str | os.PathLike | None) -> Path | None:
    """The first candidate folder holding a file for any of the card's languages, else the
    embedded copy; None if there is neither (then the hub).

    A ``data_dir`` given explicitly must hold the files: no silent fall-back to anything else.
    """
    for folder in candidate_dirs(card, data_dir):
        if is_dir(folder) and any(local_file(card, folder, lang) is not None for lang in card.languages):
            return folder
    if data_dir is not None:
        raise DataNotFoundError(f"no {files_hint(card)} files for task {card.id} in {data_dir}")
    return embedded_dir(card)


def require_file(card: TaskCard, folder: Path, lang: str, what: str) -> Path:
    """The local file of ``lang``; a one-line error naming the expected path otherwise."""
    path = local_file(card, folder, lang)
    if path is None:
        expected = " or ".join(str(folder / p.format(lang=lang)) for p in _patterns(card))
        raise DataNotFoundError(f"missing {expected} ({what} {lang})")
    return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_bytes(card: TaskCard, path: Path, key: str) -> tuple[bytes, str]:
    """The content of one data file (decompressed when embedded) and its SHA-256.

    An embedded file must match the hash the card pins for ``key``; any other is refused.
    """

    try:
        data = path.read_bytes()
        if path.name.endswith(EMBEDDED_SUFFIX):
            data = lzma.decompress(data)
    except (OSError, lzma.LZMAError) as exc:
        raise MalformedDataError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    digest = hashlib.sha256(data).hexdigest()
    if is_embedded(card, path.parent) and card.files_sha256.get(key) != digest:
        raise MalformedDataError(
            f"{path}: the embedded {card.id} file for {key} does not match the SHA-256 pinned in the "
            f"task card (damaged or altered); reinstall clirbench or pass --data-dir with the original files")
    return data, digest


def origin(card: TaskCard, folder: Path | None) -> str:
    """``embedded:clirbench/<folder>`` for the embedded copy, the folder's path, or ``hub:<id>``."""
    if folder is None:
        return f"hub:{card.source.get('hub')}"
    if is_embedded(card, folder):
        return f"embedded:clirbench/{card.source['embedded']}"
    return str(folder)


def source_record(card: TaskCard, folder: Path | None, hashes: Mapping[str, str]) -> dict[str, Any]:
    """What a collection records about its origin: folder, embedded copy or hub id, revision, file hashes.

    ``files_match_card`` is None when nothing can be compared (hub rows, or a card with no hashes).
    """
    comparable = bool(hashes) and bool(card.files_sha256)
    return {"origin": origin(card, folder),
            "revision": card.source.get("hub_revision") if folder is None else None,
            "files_sha256": dict(hashes),
            "files_match_card": (all(card.files_sha256.get(k) == h for k, h in hashes.items())
                                 if comparable else None)}


def hub_reachable(timeout: float = 5.0) -> bool:
    """False when ``HF_HUB_OFFLINE`` is set or the hub's host cannot be reached within ``timeout``.

    Checked first so that an offline machine gets its one-line message at once instead of
    minutes of retries.
    """

    if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def load_hub_split(repo: str, config: str | None, split: str, revision: str | None, what: str,
                   local_help: str) -> Iterable[Mapping[str, Any]]:
    """Rows of one hub split through ``datasets`` (the thin hub path); any failure is one line."""

    try:
        datasets = require("datasets", purpose=f"reading {repo} from the hub")
    except MissingDependencyError as exc:
        raise DataNotFoundError(f"{what} not found locally; {local_help}, or: {exc}") from None
    if not hub_reachable():
        raise DataNotFoundError(f"{what} not found locally and the hub ({repo}) is unreachable or "
                                f"HF_HUB_OFFLINE is set; {local_help}")
    try:
        return datasets.load_dataset(repo, config, split=split, revision=revision)
    except Exception as exc:  # any hub/network failure becomes one line
        raise DataNotFoundError(f"{what} not found locally and the hub failed ({type(exc).__name__}); "
                                f"{local_help}") from None


def plain_value(value: Any) -> Any:
    """A value of a ``datasets`` row as the JSON file would give it.

    ``datasets`` types what it reads: a date string in a JSON file becomes a ``timestamp`` column
    (a ``datetime``), integers may be numpy scalars, sequences numpy arrays. Timestamps become ISO
    strings (``2023-05-03`` at midnight), numpy scalars and arrays Python values; the rest is unchanged.
    """

    if isinstance(value, datetime.datetime):
        if value.tzinfo is None and value.time() == datetime.time(0):
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    kind = type(value).__module__
    if kind == "numpy":
        import numpy as np

        if isinstance(value, np.datetime64):
            return plain_value(value.astype("datetime64[us]").item())
        return plain_value(value.tolist())  # scalars -> int/float/str/bool, arrays -> lists
    if kind.startswith("pandas") and hasattr(value, "to_pydatetime"):
        return plain_value(value.to_pydatetime())
    return value


def plain_rows(rows: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each row of a hub split with ``plain_value`` applied to every field."""
    for row in rows:
        yield {k: plain_value(v) for k, v in row.items()}


def hub_rows(card: TaskCard, config: str, split: str, what: str) -> Iterator[dict[str, Any]]:
    """Rows of ``config``/``split`` of the card's hub data set (plain values), or a one-line DataNotFoundError."""
    where = (f"pass --data-dir with {files_hint(card)} files or set $CLIRBENCH_DATA_DIR "
             f"(files in $CLIRBENCH_DATA_DIR/{card.id}/)")
    if not card.source.get("hub"):
        raise DataNotFoundError(f"{what} not found locally; {where}")
    return plain_rows(load_hub_split(card.source["hub"], config, split, card.source.get("hub_revision"),
                                     what, where))


def check_counts(card: TaskCard, what: str, lang: str, counts: Mapping[str, int]) -> None:
    """Compare ``counts`` (e.g. ``passages_per_language``) with the card's expected values."""
    for key, value in counts.items():
        expected = card.expected.get(key)
        if expected is not None and value != expected:
            noun = key.replace("_per_language", "")
            raise MalformedDataError(f"{what} {lang}: {value} {noun}, expected {expected}")


def locate(card: TaskCard, data_dir=None) -> str:
    """Where the data would be read from, or why not — for ``clirbench tasks``."""
    try:
        folder = find_local_dir(card, data_dir)
    except DataNotFoundError as exc:
        return f"not found ({exc})"
    if folder is not None and is_embedded(card, folder):
        return f"embedded ({card.license}): {folder}"
    if folder is not None:
        return str(folder)
    if card.source.get("hub"):
        return f"hub:{card.source['hub']} (no local files)"
    where = f"$CLIRBENCH_DATA_DIR/{card.id}/" if os.environ.get("CLIRBENCH_DATA_DIR") is None else \
        str(Path(os.environ["CLIRBENCH_DATA_DIR"]) / card.id)
    return f"not found (put {files_hint(card)} in {where} or pass --data-dir)"


def present_languages(card: TaskCard, folder: Path, languages: Sequence[str]) -> list[str]:
    """The languages whose local file exists in ``folder``."""
    return [lang for lang in languages if local_file(card, folder, lang) is not None]
