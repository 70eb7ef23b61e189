"""Read-only cache layers ($CLIRBENCH_CACHE_READ, ``SpaceCache(read=...)``): a warm cache elsewhere is
read, checked, and never written (docs/commands.md#caches; clirbench/cache/store.py)."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from clirbench.cache.embeddings import EmbeddingCache
from clirbench.cache.layout import READ_ENV, embeddings_dir, read_only_dirs
from clirbench.retrievers.dense import DenseRetriever
from conftest import BagOfCharsEncoder

TEXTS = [f"passage {i}: " + "word " * (i % 7) + chr(0x4E00 + i) for i in range(150)]


class BatchedBag(BagOfCharsEncoder):
    """BagOfCharsEncoder with model batches of 32 texts (so a cache holds several shards)."""

    batch_size = 32

    def encode_batches(self, texts, role):
        texts = list(texts)
        for a in range(0, len(texts), self.batch_size):
            yield self.encode(texts[a: a + self.batch_size], role)


def _tree(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under ``root``: its bytes, mode and modification time (what a write would change)."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (path.read_bytes() if path.is_file() else b"", st.st_mode, st.st_mtime_ns)
    return out


def _read_only(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.fixture
def user_cache(tmp_path):
    """A warm "user" cache root holding TEXTS' document vectors, made read-only (restored after)."""
    root = tmp_path / "user-cache"
    DenseRetriever(BatchedBag(), EmbeddingCache(embeddings_dir(root), read=())).embed(TEXTS, "document")
    _read_only(root)
    yield root
    _writable(root)


def test_a_run_reads_a_read_only_cache_without_writing_to_it(tmp_path, user_cache, monkeypatch):
    monkeypatch.setenv(READ_ENV, str(user_cache))
    before = _tree(user_cache)
    encoder = BatchedBag()
    cache = EmbeddingCache(tmp_path / "suite-cache")
    assert cache.read == [embeddings_dir(user_cache)] == read_only_dirs()
    vecs = DenseRetriever(encoder, cache).embed(TEXTS, "document")
    assert encoder.calls == 0 and cache.loaded == len(TEXTS) and cache.encoded == 0
    assert np.array_equal(vecs, BagOfCharsEncoder().vectors(TEXTS))
    assert _tree(user_cache) == before
    assert not (tmp_path / "suite-cache").exists()  # nothing encoded here, nothing written here
    # queries are not in the user's cache: encoded and written here only
    DenseRetriever(encoder, cache).embed(TEXTS[:5], "query")
    assert cache.encoded == 5 and _tree(user_cache) == before
    assert list((tmp_path / "suite-cache").rglob("*.shard.json"))


def test_a_damaged_entry_in_a_read_only_cache_is_recomputed_not_trusted(tmp_path, user_cache, monkeypatch, capsys):
    shards = sorted(user_cache.rglob("*.vecs.npy"))
    assert len(shards) == 1  # the chunk's batches merged into one shard
    victim = shards[0]
    victim.chmod(0o644)
    data = bytearray(victim.read_bytes())
    data[-5] ^= 0xFF  # same size, another vector: only its checksum tells
    victim.write_bytes(bytes(data))
    victim.chmod(0o444)
    before = _tree(user_cache)
    encoder = BatchedBag()
    cache = EmbeddingCache(tmp_path / "suite-cache", read=[embeddings_dir(user_cache)])
    vecs = DenseRetriever(encoder, cache).embed(TEXTS, "document")
    assert np.array_equal(vecs, BagOfCharsEncoder().vectors(TEXTS))  # the damaged vector was not used
    assert cache.encoded == len(TEXTS) and cache.loaded == 0
    err = capsys.readouterr().err
    assert "read-only cache" in err and "does not match its checksum" in err and str(victim.name)[:10] in err
    assert _tree(user_cache) == before  # not quarantined, not moved: left as it was
    # written here, so the next run reads it from its own cache
    again = EmbeddingCache(tmp_path / "suite-cache", read=[embeddings_dir(user_cache)])
    DenseRetriever(BatchedBag(), again).embed(TEXTS, "document")
    assert again.encoded == 0 and again.loaded == len(TEXTS)


def test_a_layer_fills_only_what_the_own_cache_lacks_and_sizes_the_cost(tmp_path, user_cache):
    """Own shards first, then the layer; the layer's recorded encode seconds give the cold cost."""
    own = EmbeddingCache(tmp_path / "own", read=())
    DenseRetriever(BatchedBag(), own).embed(TEXTS[:40], "document")
    encoder = BatchedBag()
    cache = EmbeddingCache(tmp_path / "own", read=[embeddings_dir(user_cache)])
    vecs = DenseRetriever(encoder, cache).embed(TEXTS + ["a text nobody cached"], "document")
    assert encoder.calls == 1 and cache.encoded == 1 and cache.loaded == len(TEXTS)
    assert np.array_equal(vecs, BagOfCharsEncoder().vectors(TEXTS + ["a text nobody cached"]))
    cost = cache.cost(encoder, TEXTS, "document")
    assert cost is not None and cost.seconds is not None and cost.cold is False and cost.texts == len(TEXTS)


def test_a_layer_of_another_space_or_width_is_ignored(tmp_path, capsys):
    """A layer whose meta.json names another model, or whose vectors have another width than the
    cache's own, is not read (a warning says so); its texts are encoded here."""
    import json

    other = tmp_path / "other"
    DenseRetriever(BagOfCharsEncoder(dim=16), EmbeddingCache(embeddings_dir(other), read=())).embed(TEXTS, "document")
    encoder = BatchedBag()
    cache = EmbeddingCache(tmp_path / "own", read=[embeddings_dir(other)])
    DenseRetriever(encoder, cache).embed(TEXTS[:10], "query")  # another space: nothing to read
    cache.embed(encoder, TEXTS[:3], "document")  # read from the layer: the space's width is now 16
    fresh = EmbeddingCache(tmp_path / "own", read=[embeddings_dir(other)])
    vecs = fresh.embed(encoder, TEXTS[:3], "document")
    assert vecs.shape == (3, 16) and fresh.encoded == 0  # the cache's key holds 16-d vectors: served
    own64 = EmbeddingCache(tmp_path / "own64", read=())
    own64.embed(encoder, TEXTS[:1], "document")
    layered = EmbeddingCache(tmp_path / "own64", read=[embeddings_dir(other)])
    vecs = layered.embed(encoder, TEXTS, "document")
    assert vecs.shape == (len(TEXTS), 64) and layered.encoded == len(TEXTS) - 1
    assert "16-d vectors" in capsys.readouterr().err
    [meta] = embeddings_dir(other).glob("*/meta.json")
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps({**data, "model_id": "someone/else"}))
    renamed = EmbeddingCache(tmp_path / "own16", read=[embeddings_dir(other)])
    assert renamed.embed(encoder, TEXTS, "document").shape == (len(TEXTS), 64) and renamed.encoded == len(TEXTS)
    err = capsys.readouterr().err
    assert "someone/else" in err and "ignored" in err


def test_read_env_lists_roots_by_kind(monkeypatch, tmp_path):
    from clirbench.cache.layout import MULTIVECTOR, SPARSE

    monkeypatch.setenv(READ_ENV, os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]))
    assert read_only_dirs() == [tmp_path / "a" / "embeddings", tmp_path / "b" / "embeddings"]
    assert read_only_dirs(SPARSE)[0] == tmp_path / "a" / "embeddings" / "sparse"
    assert read_only_dirs(MULTIVECTOR)[1] == tmp_path / "b" / "embeddings" / "multivector"
    assert EmbeddingCache(None).read == []  # a memory-only cache reads no disk
