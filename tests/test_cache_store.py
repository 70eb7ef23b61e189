"""The one shard store under the dense, sparse and token caches, and the cache layout that places them."""
from __future__ import annotations

import numpy as np
import pytest

from clirbench.cache import layout
from clirbench.cache.codecs import DENSE, SPARSE, TOKENS
from clirbench.cache.shards import MANIFEST
from clirbench.cache.store import ShardStore, text_digest

TEXTS = ["alpha", "beta", "gamma"]


def _batch(codec):
    rng = np.random.default_rng(0)
    if codec is DENSE:
        return rng.standard_normal((3, 4)).astype(np.float32)
    if codec is SPARSE:
        import scipy.sparse as sp

        return sp.csr_matrix(np.array([[0, 1.5, 0, 0], [2, 0, 0, 0.5], [0, 0, 0, 3]], dtype=np.float32))
    return [rng.standard_normal((n, 4)).astype(np.float32) for n in (2, 5, 1)]


def _row(codec, payload, row):
    if codec is DENSE:
        return np.asarray(payload[row])
    if codec is SPARSE:
        return payload[row].toarray()
    tokens, offsets = payload
    return np.asarray(tokens[offsets[row]: offsets[row + 1]])


def _expected(codec, batch, row):
    return batch[row].toarray() if codec is SPARSE else np.asarray(batch[row])


@pytest.mark.parametrize("codec", [DENSE, SPARSE, TOKENS], ids=["dense", "sparse", "tokens"])
def test_each_codec_round_trips_through_the_one_store(tmp_path, codec):
    keys = [text_digest(t) for t in TEXTS]
    batch = _batch(codec)
    writer = ShardStore(tmp_path / "space", codec, {"model_id": "m", "role": "document"})
    with writer.lock():
        writer.write(keys, batch)
    [manifest] = (tmp_path / "space").glob(f"v2-*{MANIFEST}")
    name = manifest.name[: -len(MANIFEST)]
    files = {p.name[len(name):] for p in (tmp_path / "space").glob(f"{name}.*")}
    assert files == {".hashes.npy", MANIFEST, *codec.suffixes}
    assert (tmp_path / "space" / "meta.json").is_file()

    reader = ShardStore(tmp_path / "space", codec, {"model_id": "m", "role": "document"})
    reader.refresh()
    wanted = [keys[2], text_digest("absent"), keys[0]]
    found, groups = reader.read(wanted)
    assert found == [keys[2], keys[0]]
    [(_, payload, pos, rows)] = groups
    for i, row in zip(pos.tolist(), rows.tolist()):
        np.testing.assert_array_equal(_row(codec, payload, row), _expected(codec, batch, keys.index(found[i])))
    assert reader.dim == 4


@pytest.mark.parametrize("codec", [DENSE, SPARSE, TOKENS], ids=["dense", "sparse", "tokens"])
def test_a_damaged_shard_is_set_aside_by_the_store_whatever_the_codec(tmp_path, codec, capsys):
    keys = [text_digest(t) for t in TEXTS]
    store = ShardStore(tmp_path / "space", codec, {"model_id": "m"})
    store.write(keys, _batch(codec))
    data = next((tmp_path / "space").glob(f"v2-*{codec.suffixes[-1]}"))
    raw = bytearray(data.read_bytes())
    raw[-1] ^= 0xFF  # same size, other bytes: only the checksum tells
    data.write_bytes(bytes(raw))

    reader = ShardStore(tmp_path / "space", codec, {"model_id": "m"})
    reader.refresh()
    assert reader.read(keys) == ([], [])
    assert "damaged cache shard" in capsys.readouterr().err
    assert not list((tmp_path / "space").glob("v2-*"))
    assert list((tmp_path / "quarantine" / "space").glob(f"v2-*{codec.suffixes[-1]}"))


def test_dense_meta_of_another_space_is_an_error(tmp_path):
    store = ShardStore(tmp_path / "space", DENSE, {"model_id": "a"})
    store.write([text_digest("x")], np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match="holds 'a' for model_id"):
        ShardStore(tmp_path / "space", DENSE, {"model_id": "b"}, check_meta=True).refresh()


def test_memory_only_store_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = ShardStore(None, DENSE, {"model_id": "m"})
    with store.lock() as held:
        store.write([text_digest("x")], np.ones((1, 2), np.float32))
    store.refresh()
    assert held is False and store.read([text_digest("x")]) == ([], []) and not list(tmp_path.iterdir())


def test_layout_names_every_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(tmp_path / "c"))
    assert layout.default_cache_dir() == tmp_path / "c"
    assert layout.embeddings_dir() == tmp_path / "c" / "embeddings"
    assert layout.translations_dir() == tmp_path / "c" / "translations"
    assert layout.retriever_dir(tmp_path / "e", layout.SPARSE) == tmp_path / "e" / "sparse"
    assert layout.retriever_dir(None, layout.MULTIVECTOR) is None
    monkeypatch.delenv("CLIRBENCH_CACHE_DIR")
    assert layout.default_cache_dir().parts[-2:] == (".cache", "clirbench")
    with pytest.raises(ValueError):
        layout.retriever_dir(tmp_path, "dense")


def test_the_callers_ask_the_layout(tmp_path, monkeypatch):
    """The translation cache default and the SPLADE / ColBERT folders come from ``cache.layout``."""
    from clirbench.retrievers import splade
    from clirbench.translate import TranslationPlan

    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(tmp_path / "c"))
    plan = TranslationPlan.create({"direction": "query", "translator": _Identity()})
    assert plan.cache.root == tmp_path / "c" / "translations"
    (tmp_path / "model").mkdir()  # a local model folder: nothing loads until encoding
    assert splade.from_spec(str(tmp_path / "model"), {"cache_dir": tmp_path / "e"}).cache.root == tmp_path / "e" / "sparse"


class _Identity:
    spec = "identity"

    def translate(self, texts, src, tgt):
        return list(texts)
