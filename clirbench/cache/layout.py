"""Where the on-disk caches live: the cache root and its sub-folders, decided here only.

``<root>`` is ``$CLIRBENCH_CACHE_DIR``, else ``~/.cache/clirbench``; ``$CLIRBENCH_CACHE_READ``
lists more roots (separated by ``os.pathsep``), read-only, consulted after it for embeddings
(``read_only_dirs``)::

    <root>/embeddings/<space>/               dense vectors (``--cache-dir`` names this folder)
    <root>/embeddings/sparse/<space>/        SPLADE vectors
    <root>/embeddings/multivector/<space>/   ColBERT token vectors
    <root>/embeddings/pairs/<space>/         a second stage's (query, document) pair scores
    <root>/translations/<translator>/<src>-<tgt>/   translations
    <any cache folder>/quarantine/           shards that failed their check
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV", "READ_ENV", "EMBEDDINGS", "SPARSE", "MULTIVECTOR", "PAIRS", "TRANSLATIONS", "default_cache_dir",
           "embeddings_dir", "translations_dir", "retriever_dir", "read_only_dirs"]

ENV = "CLIRBENCH_CACHE_DIR"
READ_ENV = "CLIRBENCH_CACHE_READ"
EMBEDDINGS = "embeddings"
SPARSE = "sparse"
MULTIVECTOR = "multivector"
PAIRS = "pairs"
TRANSLATIONS = "translations"


def default_cache_dir() -> Path:
    """``$CLIRBENCH_CACHE_DIR``, else ``~/.cache/clirbench``."""
    env = os.environ.get(ENV)
    return Path(env) if env else Path.home() / ".cache" / "clirbench"


def embeddings_dir(root: str | os.PathLike | None = None) -> Path:
    """The dense embedding cache under ``root`` (default: the cache root)."""
    return Path(root if root is not None else default_cache_dir()) / EMBEDDINGS


def translations_dir(root: str | os.PathLike | None = None) -> Path:
    """The translation cache under ``root`` (default: the cache root)."""
    return Path(root if root is not None else default_cache_dir()) / TRANSLATIONS


def retriever_dir(embedding_dir: str | os.PathLike | None, kind: str) -> Path | None:
    """A retriever family's cache (``SPARSE``, ``MULTIVECTOR``, ``PAIRS``) inside the embedding cache; None stays None."""
    if kind not in (SPARSE, MULTIVECTOR, PAIRS):
        raise ValueError(f"unknown cache kind {kind!r}")
    return None if embedding_dir is None else Path(embedding_dir) / kind


def read_only_dirs(kind: str | None = None) -> list[Path]:
    """The embedding caches of the roots ``$CLIRBENCH_CACHE_READ`` lists (``os.pathsep``-separated),
    read-only layers of every on-disk embedding cache; ``kind``: ``SPARSE``, ``MULTIVECTOR`` or ``PAIRS`` for
    those families' folders."""
    roots = [r for r in os.environ.get(READ_ENV, "").split(os.pathsep) if r.strip()]
    return [embeddings_dir(r) if kind is None else retriever_dir(embeddings_dir(r), kind) for r in roots]
