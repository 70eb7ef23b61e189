"""Atomic file writes: a temp file in the same folder, then ``os.replace``.

The temp file is ``.<name>.<host>.<pid>.<random>.tmp``, created with mode 0o666 so that the
umask decides the final mode (as for any file a program opens), and the writer is named in it:
a temp file left by a killed writer is stale once that process is gone (same host) or once it
is older than ``STALE_AFTER`` seconds (another host, or a pid reused since). Writing a file
first removes the stale temp files of that same file, so a rerun cleans up after a killed run.
"""
from __future__ import annotations

import os
import re
import secrets
import socket
import time
from pathlib import Path

from .filenames import NAME_MAX, fit_name

__all__ = ["write_bytes_atomic", "write_text_atomic", "is_temp", "is_stale_temp", "remove_stale_temps",
           "STALE_AFTER"]

STALE_AFTER = 3600.0  # seconds: a temp file this old is abandoned, whoever wrote it
_TEMP = re.compile(r"\.(?P<target>.+)\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32] or "host"


def _temp_target(name: str) -> str:
    """``name`` as its temp files spell it: shortened with a hash (``identity.fit_name``) when the
    temp name would be over the file system's 255-byte limit."""

    return fit_name(name, NAME_MAX - 60)  # dots, host (32), pid, random part and .tmp


def is_temp(name: str) -> bool:
    """Whether ``name`` is an atomic-write temp file (this format, or the older ``mkstemp`` one)."""
    return name.startswith(".") and name.endswith(".tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) writes nothing more
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def is_stale_temp(path: str | os.PathLike, now: float | None = None, stale_after: float = STALE_AFTER) -> bool:
    """True for a temp file whose writer is dead (same host) or that is older than ``stale_after``."""
    path = Path(path)
    if not is_temp(path.name):
        return False
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except FileNotFoundError:
        return False
    if age > stale_after:
        return True
    m = _TEMP.fullmatch(path.name)
    return bool(m and m["host"] == _host() and int(m["pid"]) != os.getpid() and not _alive(int(m["pid"])))


def remove_stale_temps(folder: str | os.PathLike, target: str | None = None) -> list[Path]:
    """Remove stale temp files in ``folder`` (only those of file ``target`` when given); returns them."""
    prefix = "." if target is None else f".{_temp_target(target)}."
    try:
        names = [e.name for e in os.scandir(folder) if e.name.startswith(prefix) and e.name.endswith(".tmp")]
    except FileNotFoundError:
        return []
    return unlink_all(Path(folder) / name for name in names if is_stale_temp(Path(folder) / name))


def unlink_all(paths) -> list[Path]:
    """Remove each path; those another process removed first are skipped. Returns the removed ones."""
    removed = []
    for path in paths:
        try:
            Path(path).unlink()
            removed.append(Path(path))
        except FileNotFoundError:
            pass
    return removed


def _open_temp(path: Path) -> tuple[int, Path]:
    stem = f".{_temp_target(path.name)}.{_host()}.{os.getpid()}."
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = path.parent / f"{stem}{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp  # the umask applies, as for any new file
        except FileExistsError:
            continue


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    path = Path(path)
    if path.is_dir():  # before any temp file: os.replace would name the temp file in its error
        raise IsADirectoryError(f"{path}: a folder, not a file name")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path.parent, path.name)
    fd, tmp = _open_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """``write_bytes_atomic`` for UTF-8 text."""
    return write_bytes_atomic(path, text.encode("utf-8"))
