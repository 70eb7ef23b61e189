"""A pool's saved run (``clirbench run --save-run``, docs/results.md): the head of its ranking
(``rank.head.Head``) as a gzipped TREC run ``<record stem>.run.gz`` beside the record, and the
record's optional ``run`` section that names it (file, SHA-256, depth, run id).

The file is ``qid Q0 docid rank score runid`` lines, by query then rank (the tie rule's order),
scores as the exact float32 values the ranks were decided on (Python ``repr`` of the double), so
``clirbench evaluate`` and trec_eval rank it as clirbench did. The gzip stream is deterministic
(mtime 0, no file name): the same head gives the same bytes.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..run_config import MAX_DEPTH
from ..util.checks import check_int

__all__ = ["RunFile", "run_name", "run_bytes", "run_id_of", "file_sha256"]

_RUN_SUFFIX = ".run.gz"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_BLANK = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")  # what a TREC field cannot hold (formats.trec's blanks, controls)


@dataclass(frozen=True)
class RunFile:
    """The record's ``run`` section: the run file's name beside the record (``file``), its
    ``sha256``, the ``depth`` asked (each query holds its top ``depth`` documents, fewer when the
    pool has fewer) and the run id (``run_id``: the system's label)."""

    file: str
    sha256: str
    depth: int
    run_id: str

    def __post_init__(self) -> None:
        if not isinstance(self.file, str) or not self.file.endswith(_RUN_SUFFIX) or Path(self.file).name != self.file \
                or self.file.startswith(".") or "\\" in self.file:
            raise ValueError(f"run.file must be a file name ending {_RUN_SUFFIX} beside the record, got {self.file!r}")
        if not isinstance(self.sha256, str) or not _SHA256.fullmatch(self.sha256):
            raise ValueError("run.sha256 must be 64 lower-case hex digits")
        object.__setattr__(self, "depth", check_int(self.depth, "run.depth", 1, MAX_DEPTH))
        if not isinstance(self.run_id, str) or not self.run_id or _BLANK.search(self.run_id):
            raise ValueError(f"run.run_id must be a TREC run tag (no blank or control character), got {self.run_id!r}")

    def to_dict(self) -> dict:
        return {"file": self.file, "sha256": self.sha256, "depth": self.depth, "run_id": self.run_id}

    @classmethod
    def from_dict(cls, data: Any) -> "RunFile":
        if not isinstance(data, Mapping):
            raise ValueError("run must be an object with file, sha256, depth, run_id")
        extra = sorted(set(data) - {"file", "sha256", "depth", "run_id"})
        if extra:
            raise ValueError(f"unknown key run.{extra[0]}")
        missing = [k for k in ("file", "sha256", "depth", "run_id") if k not in data]
        if missing:
            raise ValueError(f"missing key run.{missing[0]}")
        if isinstance(data["depth"], bool) or not isinstance(data["depth"], int):
            raise ValueError(f"run.depth must be int, got {type(data['depth']).__name__}")
        return cls(data["file"], data["sha256"], data["depth"], data["run_id"])


def run_name(result_file: str | os.PathLike) -> str:
    """``x/en-zh.q-zh.json`` -> ``en-zh.q-zh.run.gz`` (the name, relative to its folder)."""
    name = Path(result_file).name
    return (name[:-5] if name.endswith(".json") else name) + _RUN_SUFFIX


def run_id_of(label: str) -> str:
    """A system's label as a TREC run tag (a blank or control character becomes ``_``)."""
    return _BLANK.sub("_", label) or "clirbench"


def _check_ids(head) -> None:
    """Every id the run would write is one TREC field."""
    bad = next((q for q in head.query_ids if not q or _BLANK.search(q)), None)
    if bad is None:
        used = np.unique(head.docs)
        bad = next((head.doc_ids[i] for i in used[used >= 0].tolist() if _BLANK.search(head.doc_ids[i])), None)
    if bad is not None:
        raise ValueError(f"id {bad!r} holds a blank or control character: a TREC run cannot hold it")


def run_bytes(head, run_id: str) -> bytes:
    """The gzipped TREC run of ``head`` (a ``rank.head.Head``) tagged ``run_id``, deterministic."""
    _check_ids(head)
    lines = [f"{qid} Q0 {doc} {rank} {score!r} {run_id}\n" for qid, rank, doc, score in head.rows()]
    return gzip.compress("".join(lines).encode("utf-8"), compresslevel=6, mtime=0)


def file_sha256(path: str | os.PathLike) -> str | None:
    """The SHA-256 of the file at ``path``; None when there is none."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return digest.hexdigest()
