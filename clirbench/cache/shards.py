"""Cache shards: files written atomically, then sealed by a manifest of their sizes and BLAKE2b digests.

Over 500 lines because sealing, verifying, quarantining and the writer lock are one protocol:
splitting them would spread the on-disk format over several modules.

Every on-disk cache (dense, sparse and token embeddings, translations) stores its entries in
shards. Shard ``<name>`` of a cache folder is the files ``<name><suffix>`` (``.vecs.npy``,
``.hashes.npy``, ...) and, written last, ``<name>.shard.json``:
``{"format": 2, "files": {suffix: {"bytes": n, "blake2b": hex}}}`` (plus ``"replaces": [names]`` for a
shard that merges smaller ones: those are then redundant). A shard is complete once its manifest is
there. On load, sizes are checked at once (a stat) and each file's digest on its first
use in the process (one sequential read, about what loading it costs); a shard that fails is moved
to ``<cache root>/quarantine/`` with one warning line on stderr, and its entries are computed again.

Shards written before manifests existed (names without the ``v2-`` prefix, complete once their
marker file, ``.hashes.npy`` or ``.jsonl``, is there) are still read: they are checked by loading
them (shapes, lengths, numbers), not by checksum, i.e. valid but unverified.

Writers hold an exclusive ``flock`` on ``<folder>/writer.lock`` while they encode and write a
shard: a second process on the same cache waits, then finds the shard on disk instead of encoding
its texts again; and whoever holds the lock may remove what a killed writer left in that folder.
The holder removes the lock file when it lets go (a waiter that then holds the lock of a removed
file tries again), so no ``writer.lock`` stays once no process holds it; one a killed writer left
is removed by the next process that finds it free.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import time
import uuid
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..util.atomic import STALE_AFTER, is_stale_temp, is_temp, unlink_all, write_bytes_atomic
from ..util.strict import json_kind

__all__ = ["HASHES", "Shard", "write_shard", "new_name", "find_shards", "set_aside", "quarantine", "writer_lock",
           "remove_free_lock", "leftovers", "remove_leftovers", "clean_purge", "MANIFEST", "LOCK", "QUARANTINE"]

MANIFEST = ".shard.json"
HASHES = ".hashes.npy"  # the text digests of an embedding shard; completes one written before manifests
LOCK = "writer.lock"
QUARANTINE = "quarantine"
FORMAT = 2
_NAME = re.compile(r"(?P<v2>v2-)?\d{13}-\d+-[0-9a-f]{8}")


def new_name() -> str:
    """A fresh shard name: ``v2-<milliseconds>-<pid>-<random>`` (sorts by time)."""
    return f"v2-{int(time.time() * 1000):013d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def _file_digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, lambda: hashlib.blake2b(digest_size=32)).hexdigest()


def write_shard(folder: str | os.PathLike, name: str, files: dict[str, bytes], replaces: list[str] = (),
                encode: dict | None = None) -> None:
    """Write each file atomically, then the manifest that marks the shard complete (naming the shards
    this one ``replaces``, when it merges them, and what ``encode`` says: the model seconds and CPU
    that encoded the shard's texts)."""
    folder = Path(folder)
    for suffix, data in files.items():
        write_bytes_atomic(folder / f"{name}{suffix}", data)
    manifest = {"format": FORMAT, "files": {s: {"bytes": len(d), "blake2b": _digest(d)} for s, d in files.items()}}
    if replaces:
        manifest["replaces"] = list(replaces)
    if encode:
        manifest["encode"] = dict(encode)
    write_bytes_atomic(folder / f"{name}{MANIFEST}", json.dumps(manifest, indent=1).encode())


class Shard:
    """One complete shard on disk: its manifest (None for a legacy shard) and checks of its files."""

    def __init__(self, folder: Path, name: str, manifest: dict | None, problem: str | None = None) -> None:
        self.folder, self.name, self.manifest = folder, name, manifest
        self.problem = problem  # a manifest that could not be read
        self._ok: set[str] = set()

    @property
    def legacy(self) -> bool:
        return self.manifest is None and self.problem is None

    @property
    def replaces(self) -> list[str]:
        """The shards this one merges (redundant once it is complete)."""
        names = (self.manifest or {}).get("replaces") or []
        return [n for n in names if isinstance(n, str) and _NAME.fullmatch(n)]

    @property
    def encode(self) -> tuple[float | None, str | None]:
        """``(model seconds, CPU)`` that encoded this shard's texts, as its manifest records them
        (``(None, None)`` when it does not: a shard written before they were kept)."""
        entry = (self.manifest or {}).get("encode")
        if not isinstance(entry, dict):
            return None, None
        seconds, cpu = entry.get("seconds"), entry.get("cpu")
        ok = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 <= seconds < float("inf")
        return (float(seconds) if ok else None), (cpu if isinstance(cpu, str) and cpu else None)

    def remove(self) -> None:
        """Delete this shard: its manifest first (so that it is incomplete, never half there), then its files."""
        manifest = self.path(MANIFEST)
        unlink_all([manifest] + [p for p in self.files() if p != manifest])

    def path(self, suffix: str) -> Path:
        return self.folder / f"{self.name}{suffix}"

    def files(self) -> list[Path]:
        """Every file of this shard on disk, manifest included."""
        out = []
        try:
            for entry in os.scandir(self.folder):
                if entry.name.startswith(self.name + ".") and not is_temp(entry.name):
                    out.append(Path(entry.path))
        except FileNotFoundError:
            pass
        return sorted(out)

    def check(self, suffix: str, data: bytes | None = None, digest: bool = True) -> str | None:
        """Why file ``suffix`` is bad (size, then digest unless ``digest=False``), or None if it is good.

        ``data``: the file's bytes when the caller read them already. Legacy shards pass (they
        are checked by loading them). A file that passed is not hashed again.
        """
        if self.problem is not None:
            return self.problem
        if self.manifest is None or suffix in self._ok:
            return None
        entry = self.manifest["files"].get(suffix)
        if entry is None:
            return f"the manifest lists no {suffix} file"
        path = self.path(suffix)
        try:
            size = len(data) if data is not None else path.stat().st_size
        except FileNotFoundError:
            return f"{path.name} is missing"
        if size != entry["bytes"]:
            return f"{path.name} has {size} bytes, the manifest says {entry['bytes']}"
        if not digest:
            return None
        try:
            got = _digest(data) if data is not None else _file_digest(path)
        except OSError as e:
            return f"{path.name} cannot be read ({e})"
        if got != entry["blake2b"]:
            return f"{path.name} does not match its checksum"
        self._ok.add(suffix)
        return None

    def check_all(self, digest: bool = True) -> str | None:
        """The first problem over every file the manifest lists, or None."""
        if self.problem is not None or self.manifest is None:
            return self.problem
        for suffix in self.manifest["files"]:
            reason = self.check(suffix, digest=digest)
            if reason:
                return reason
        return None

    def read(self, suffix: str) -> tuple[bytes | None, str | None]:
        """``(bytes, None)`` for a good file, ``(None, reason)`` for a bad one."""
        try:
            data = self.path(suffix).read_bytes()
        except OSError as e:
            return None, f"{self.path(suffix).name} cannot be read ({e.strerror or e})"
        reason = self.check(suffix, data)
        return (None, reason) if reason else (data, None)


def _load_manifest(path: Path) -> tuple[dict | None, str | None]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict):
            return None, f"{path.name} is not a manifest: {json_kind(manifest)}, expected a JSON object"
        files = manifest["files"]
        if manifest.get("format") != FORMAT or not isinstance(files, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("bytes"), int) and isinstance(v.get("blake2b"), str)
                for v in files.values()):
            raise ValueError("unexpected content")
        return manifest, None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return None, f"{path.name} is not a valid manifest ({type(e).__name__})"


def find_shards(folder: str | os.PathLike, marker: str, skip: set[str] | frozenset = frozenset()) -> list[Shard]:
    """The complete shards of ``folder`` not named in ``skip``, by name.

    Complete: a manifest (``v2-`` names), or the legacy ``marker`` file (older names).
    """
    folder = Path(folder)
    try:
        names = [e.name for e in os.scandir(folder)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    shards = []
    for file in sorted(names):
        if file.endswith(MANIFEST):
            name = file[: -len(MANIFEST)]
            if name in skip:
                continue
            manifest, problem = _load_manifest(folder / file)
            shards.append(Shard(folder, name, manifest, problem))
        elif file.endswith(marker) and not is_temp(file):
            name = file[: -len(marker)]
            m = _NAME.fullmatch(name)
            if name not in skip and not (m and m["v2"]):
                shards.append(Shard(folder, name, None))
    return shards


def leftovers(folder: str | os.PathLike, marker: str, lock_held: bool = False) -> list[Path]:
    """Files a killed writer left in ``folder``: stale temp files and files of incomplete shards.

    A ``v2-`` shard without its manifest is incomplete; with ``lock_held`` (nobody else is
    writing here) it is left over at once, else only once older than ``STALE_AFTER``. A legacy
    shard without its marker is left over once older than ``STALE_AFTER``.
    """
    folder = Path(folder)
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = {e.name for e in entries}
    now = time.time()
    out = []
    for entry in entries:
        if is_temp(entry.name):
            if is_stale_temp(entry.path, now):
                out.append(Path(entry.path))
            continue
        m = _NAME.match(entry.name)
        if not m or entry.name[m.end():][:1] != ".":
            continue
        name = m.group(0)
        complete = f"{name}{MANIFEST}" in names if m["v2"] else f"{name}{marker}" in names
        if complete:
            continue
        try:
            old = now - entry.stat().st_mtime > STALE_AFTER
        except FileNotFoundError:
            continue
        if old or (m["v2"] and lock_held):
            out.append(Path(entry.path))
    return sorted(out)


def remove_leftovers(folder: str | os.PathLike, marker: str, lock_held: bool = False) -> list[Path]:
    return unlink_all(leftovers(folder, marker, lock_held))


def quarantine(root: str | os.PathLike, files: list[Path], reason: str, label: str,
               announce: bool = True) -> Path | None:
    """Move ``files`` into ``<root>/quarantine/<their folder under root>/``; one warning line on stderr.

    Returns the folder they went to, or None when another process moved them first.
    """
    root = Path(root)
    moved = []
    for path in files:
        try:
            rel = path.parent.resolve().relative_to(root.resolve())
        except ValueError:
            rel = Path(path.parent.name)
        dest_dir = root / QUARANTINE / rel
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / path.name
        n = 0
        while dest.exists():
            n += 1
            dest = dest_dir / f"{path.name}.{n}"
        try:
            os.replace(path, dest)
            moved.append(dest)
        except FileNotFoundError:
            continue
    if not moved:
        return None
    if announce:
        print(f"clirbench: warning: damaged cache shard {label} ({reason}); moved to {moved[0].parent}, "
              f"its entries will be computed again", file=sys.stderr, flush=True)
    return moved[0].parent


def set_aside(root: str | os.PathLike, shard: Shard, reason: str, announce: bool = True) -> Path | None:
    """Quarantine every file of ``shard``."""
    return quarantine(root, shard.files(), reason, str(shard.folder / shard.name), announce)


def clean_purge(root: str | os.PathLike) -> list[Path]:
    """Remove every quarantine folder under ``root``; returns them."""
    out = []
    for dirpath, dirnames, _ in os.walk(root):
        if QUARANTINE in dirnames:
            target = Path(dirpath) / QUARANTINE
            shutil.rmtree(target)
            out.append(target)
            dirnames.remove(QUARANTINE)
    return out


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (not one removed meanwhile)."""
    try:
        a, b = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _flock(folder: Path, create: bool, wait: bool) -> int | None:
    """An fd holding the exclusive lock of ``folder/writer.lock`` (that file, not a removed one);
    None when there is no lock file (``create=False``) or, with ``wait=False``, another process holds it.
    OSError when the file system refuses locks."""

    path = folder / LOCK
    while True:
        try:
            fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o666)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path):
            return fd
        os.close(fd)  # its holder removed it while this process waited: take the new one
        if not create:
            return None


def _release(folder: Path, fd: int) -> None:
    """Remove the lock file (still holding its lock), then let go."""
    try:
        (folder / LOCK).unlink()
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def remove_free_lock(folder: str | os.PathLike) -> bool:
    """Remove a ``writer.lock`` no process holds (a killed writer's); True when one was removed."""
    try:
        fd = _flock(Path(folder), create=False, wait=False)
    except (ImportError, OSError):
        return False
    if fd is None:
        return False
    _release(Path(folder), fd)
    return True


@contextmanager
def try_lock(folder: str | os.PathLike) -> Iterator[bool]:
    """Take ``<folder>/writer.lock`` without waiting and without creating it; yields whether no writer holds it.

    No lock file means no writer is there (writers create it): True. The file is left as found.
    """
    try:
        import fcntl

        fd = os.open(Path(folder) / LOCK, os.O_RDWR)
    except (ImportError, FileNotFoundError):
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            free = True
        except OSError:
            free = False
        yield free
    finally:
        os.close(fd)


@contextmanager
def writer_lock(folder: str | os.PathLike | None, marker: str) -> Iterator[bool]:
    """Hold ``<folder>/writer.lock`` (exclusive flock; waits for another writer); yields whether held.

    Holding it, the files a killed writer left in ``folder`` are removed first; letting go (also on
    Ctrl-C or an error), the lock file is removed. Without ``fcntl`` or where the file system refuses
    locks, runs unlocked (yields False).
    """
    if folder is None:
        yield False
        return
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = _flock(folder, create=True, wait=True)
    except ImportError:  # pragma: no cover - not POSIX
        fd = None
    except OSError:  # e.g. ENOLCK on a file system without locks
        fd = None
    held = fd is not None
    try:
        remove_leftovers(folder, marker, lock_held=held)
        yield held
    finally:
        if held:
            _release(folder, fd)


# -- whole-cache checks (``clirbench cache verify|clean``) -------------------------------------------

class CacheReport:
    """What ``verify_cache`` found: bad shards and files, stray files, counts."""

    def __init__(self) -> None:
        self.bad: list[tuple[Shard | Path, str]] = []  # a shard or a metadata file, and why
        self.stray: list[Path] = []  # stale temp files, files of shards a killed writer left
        self.shards = self.unverified = self.quarantined = 0

    @property
    def clean(self) -> bool:
        return not self.bad and not self.stray


def _legacy_problem(shard: Shard) -> str | None:
    """Load every ``.npy`` / ``.npz`` file of a shard written before checksums."""

    import numpy as np

    for path in shard.files():
        try:
            if path.suffix == ".npy":
                np.load(path, mmap_mode="r")
            elif path.suffix == ".npz":
                with zipfile.ZipFile(path) as z:
                    if z.testzip() is not None:
                        raise ValueError("bad CRC")
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            return f"{path.name} unreadable ({type(e).__name__})"
    return None


def verify_cache(root: str | os.PathLike) -> CacheReport:
    """Check every shard (sizes and checksums; legacy shards by loading) and metadata file under ``root``."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no cache folder at {root}")
    report = CacheReport()
    for dirpath, dirnames, filenames in os.walk(root):
        if QUARANTINE in dirnames:
            report.quarantined += sum(len(f) for _, _, f in os.walk(Path(dirpath) / QUARANTINE))
            dirnames.remove(QUARANTINE)
        dirnames.sort()
        folder = Path(dirpath)
        for name in ("meta.json", "spec.json"):
            if name in filenames:
                try:
                    data = json.loads((folder / name).read_text(encoding="utf-8"))
                except (OSError, ValueError, RecursionError):
                    report.bad.append((folder / name, "not valid JSON"))
                    continue
                if not isinstance(data, dict):
                    report.bad.append((folder / name, f"{json_kind(data)}, expected a JSON object"))
        for shard in find_shards(folder, HASHES):
            report.shards += 1
            if shard.legacy:
                report.unverified += 1
                reason = _legacy_problem(shard)
            else:
                reason = shard.check_all()
            if reason:
                report.bad.append((shard, reason))
        names = set(filenames)
        for file in filenames:  # the translation cache's older appended files
            if file.endswith(".jsonl") and f"{file[:-len('.jsonl')]}{MANIFEST}" not in names:
                report.shards += 1
                report.unverified += 1
        with try_lock(folder) as free:
            report.stray.extend(leftovers(folder, HASHES, lock_held=free))
    return report


def clean_cache(root: str | os.PathLike, purge: bool = False) -> tuple[CacheReport, list[Path]]:
    """Quarantine what ``verify_cache`` finds bad, remove stray files, and with ``purge`` empty the quarantine.

    Returns the report (as found, before cleaning) and the quarantine folders removed.
    """
    root = Path(root)
    report = verify_cache(root)
    for item, reason in report.bad:
        if isinstance(item, Shard):
            set_aside(root, item, reason, announce=False)
        else:
            quarantine(root, [item], reason, str(item), announce=False)
    for path in report.stray:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    return report, (clean_purge(root) if purge else [])
