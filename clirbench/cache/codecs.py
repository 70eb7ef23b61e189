"""How a batch of embeddings is stored in a shard: dense vectors, sparse rows, token matrices.

Each codec turns one batch into the shard's data files and reads them back, checked (see
``clirbench.cache.store``). The file names and formats are those of the caches' earlier
versions, so folders they wrote are still read.
"""
from __future__ import annotations

import io

import numpy as np

from .shards import Shard
from .store import BadShard, npy_bytes

__all__ = ["DENSE", "SPARSE", "TOKENS", "DenseCodec", "SparseCodec", "TokenCodec"]

FORMAT = 1  # meta.json's format of the dense and sparse caches


def _unreadable(e: Exception) -> BadShard:
    first = str(e).splitlines()[0][:80] if str(e) else ""
    return BadShard(f"unreadable: {type(e).__name__}" + (f": {first}" if first else ""))


class DenseCodec:
    """float32 (n, d) vectors in ``.vecs.npy``, read through a memory map."""

    suffixes = (".vecs.npy",)

    def dump(self, vecs: np.ndarray) -> dict[str, bytes]:
        return {".vecs.npy": npy_bytes(np.ascontiguousarray(vecs, dtype=np.float32))}

    def meta(self, vecs: np.ndarray) -> dict:
        return {"dim": int(vecs.shape[1]), "format": FORMAT}

    def load(self, shard: Shard, rows: int) -> np.ndarray:
        reason = shard.check(".vecs.npy")
        if reason:
            raise BadShard(reason)
        try:
            vecs = np.load(shard.path(".vecs.npy"), mmap_mode="r")
        except (OSError, ValueError, EOFError) as e:
            raise _unreadable(e) from None
        if vecs.ndim != 2 or len(vecs) != rows or vecs.dtype != np.float32:
            raise BadShard(f"inconsistent shapes ({rows}, 32) and {vecs.shape}")
        if shard.legacy and not np.isfinite(vecs).all():  # written before checksums: re-read, unverified
            raise BadShard("non-finite vectors")
        return vecs

    def width(self, vecs: np.ndarray) -> int:
        return int(vecs.shape[1])


class SparseCodec:
    """A scipy CSR float32 matrix (n, vocabulary) in ``.npz`` (uncompressed)."""

    suffixes = (".npz",)

    def dump(self, mat) -> dict[str, bytes]:
        import scipy.sparse as sp

        buffer = io.BytesIO()
        sp.save_npz(buffer, mat, compressed=False)
        return {".npz": buffer.getvalue()}

    def meta(self, mat) -> dict:
        return {"dim": int(mat.shape[1]), "format": FORMAT}

    def load(self, shard: Shard, rows: int):
        import scipy.sparse as sp

        data, reason = shard.read(".npz")
        if reason:
            raise BadShard(reason)
        try:
            mat = sp.load_npz(io.BytesIO(data)).tocsr()
        except (OSError, ValueError, EOFError, KeyError) as e:
            raise BadShard(f"unreadable: {type(e).__name__}") from None
        if mat.shape[0] < rows or (shard.legacy and not np.isfinite(mat.data).all()):
            raise BadShard(f"a matrix of shape {mat.shape}")
        return mat.astype(np.float32, copy=False)

    def width(self, mat) -> int:
        return int(mat.shape[1])


class TokenCodec:
    """A list of float32 (tokens_i, d) matrices: all tokens in ``.tokens.npy``, boundaries in ``.offsets.npy``."""

    suffixes = (".offsets.npy", ".tokens.npy")

    def dump(self, vecs: list[np.ndarray]) -> dict[str, bytes]:
        offsets = np.concatenate([[0], np.cumsum([len(v) for v in vecs])]).astype(np.int64)
        return {".tokens.npy": npy_bytes(np.concatenate(vecs).astype(np.float32)),
                ".offsets.npy": npy_bytes(offsets)}

    def meta(self, vecs: list[np.ndarray]) -> dict:
        return {}

    def load(self, shard: Shard, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """``(memory-mapped tokens, offsets)``; text ``i`` is ``tokens[offsets[i]:offsets[i + 1]]``."""
        reason = shard.check(".offsets.npy") or shard.check(".tokens.npy")
        if reason:
            raise BadShard(reason)
        try:
            offsets = np.load(shard.path(".offsets.npy"))
            tokens = np.load(shard.path(".tokens.npy"), mmap_mode="r")
        except (OSError, ValueError, EOFError) as e:
            raise BadShard(f"unreadable: {type(e).__name__}") from None
        if offsets.ndim != 1 or len(offsets) != rows + 1 or tokens.ndim != 2 or tokens.dtype != np.float32 \
                or offsets[0] != 0 or offsets[-1] != len(tokens) or (np.diff(offsets) < 0).any():
            raise BadShard(f"offsets of shape {offsets.shape} and tokens of shape {tokens.shape} disagree")
        if shard.legacy and not np.isfinite(tokens).all():  # written before checksums: re-read
            raise BadShard("non-finite token embeddings")
        return tokens, offsets

    def width(self, payload: tuple[np.ndarray, np.ndarray]) -> int:
        return int(payload[0].shape[1])


DENSE, SPARSE, TOKENS = DenseCodec(), SparseCodec(), TokenCodec()
