"""Names that every file system takes: at most ``NAME_MAX`` bytes, long ones shortened with a hash."""
from __future__ import annotations

import hashlib

#: bytes of UTF-8 a file or folder name may have on Linux, macOS and Windows file systems
NAME_MAX = 255
#: the longest name clirbench builds from user-given parts (ids, languages, specs), its suffix
#: included: under ``NAME_MAX`` with room for an atomic write's temp name and for a suffix added later
NAME_LIMIT = 200
_HASH_HEX = 16


def fit_name(name: str, limit: int = NAME_LIMIT) -> str:
    """``name`` when its UTF-8 has at most ``limit`` bytes; else its first bytes (whole characters),
    ``~`` and 16 hex digits of the SHA-256 of the whole name (``~`` is never in a :func:`slug`).

    The same name always gives the same result, so a rerun finds (and reuses) the same file; the
    full name stays inside the record.
    """
    raw = name.encode("utf-8")
    if len(raw) <= limit:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:_HASH_HEX]
    keep = max(limit - _HASH_HEX - 1, 0)
    head = raw[:keep].decode("utf-8", errors="ignore").rstrip(".-_")
    return f"{head}~{digest}"
