"""Where the on-disk caches live: the cache root and its sub-folders, decided here only.

``<root>`` is ``$CLIRBENCH_CACHE_DIR``, else ``~/.cache/clirbench``::

    <root>/embeddings/<space>/               dense vectors (``--cache-dir`` names this folder)
    <root>/embeddings/sparse/<space>/        SPLADE vectors
    <root>/embeddings/multivector/<space>/   ColBERT token vectors
    <root>/translations/<translator>/<src>-<tgt>/   translations
    <any cache folder>/quarantine/           shards that failed their check
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV", "EMBEDDINGS", "SPARSE", "MULTIVECTOR", "TRANSLATIONS", "default_cache_dir",
           "embeddings_dir", "translations_dir", "retriever_dir"]

ENV = "CLIRBENCH_CACHE_DIR"
EMBEDDINGS = "embeddings"
SPARSE = "sparse"
MULTIVECTOR = "multivector"
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
    """A retriever family's cache (``SPARSE``, ``MULTIVECTOR``) inside the embedding cache; None stays None."""
    if kind not in (SPARSE, MULTIVECTOR):
        raise ValueError(f"unknown cache kind {kind!r}")
    return None if embedding_dir is None else Path(embedding_dir) / kind
