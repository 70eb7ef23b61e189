"""Encoding and exact ranking on a real local Ray (clirbench.rank.distributed): the driver finds every
embedding the workers encoded, ranks equal rank_relevant's for 1 and 3 shards with ties and copies,
a worker killed mid-run is retried with the same result, finished shards are reused, and an
unreachable cluster or a missing ray is one line."""
from __future__ import annotations

import os
import socket
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from clirbench.collection import Pool, Text
from clirbench.util.errors import ClirbenchError
from clirbench.rank.rows import rank_relevant
from clirbench.rank.sharded import rank_pool_sharded
from clirbench.rank.topk import topk_sharded

from conftest import BagOfCharsEncoder, assert_same_table

import ray  # noqa: E402,F401  (the test extra installs it: a missing one fails, never skips)

ROOT = Path(__file__).resolve().parents[1]


def bag_recipe(cache_dir):
    """What every Ray worker builds: the deterministic bag-of-chars retriever over the shared cache."""
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever

    return DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(cache_dir), spec="test:bag", batch_size=4)


class NearTieEncoder:
    """Text "q<i>" / "d<j>": row i / j of ``test_bounded_ranks``' adversarial embeddings (seed 1)."""

    model_id, revision, batch_size = "test/near-ties", "1", 64

    def prompt(self, role):
        return ""

    def encode(self, texts, role):
        from test_bounded_ranks import _adversarial

        M = _adversarial(1)[0 if role == "query" else 1]
        return M[[int(t[1:]) for t in texts]]


def near_tie_recipe(cache_dir):
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever

    return DenseRetriever(NearTieEncoder(), EmbeddingCache(cache_dir), spec="test:near-ties", batch_size=16)


def in_a_task(driver_pid) -> bool:

    return os.getpid() != driver_pid and ray.get_runtime_context().get_actor_id() is None


def dies_once_in_a_task(marker, driver_pid, cache_dir):
    """Kills its worker process the first time a ranking task (not an encoder actor) builds it."""
    if in_a_task(driver_pid) and not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os._exit(1)
    return bag_recipe(cache_dir)


def never_in_a_task(driver_pid, cache_dir):
    if in_a_task(driver_pid):
        raise AssertionError("a finished shard was computed again")
    return bag_recipe(cache_dir)




def tie_pool():
    """Bag-of-chars vectors are small integers: exact float32 scores, many ties; copies of one text
    across shard boundaries, exclusions, multi-grade qrels, two doc languages."""
    words = ["river bank", "bank loan", "loan shark", "shark river", "the bank", "banks", "a b", "river"]
    texts = [words[i % len(words)] + ("" if i % 3 else " x") for i in range(41)]
    docs = tuple(Text(f"doc-{(7 * i) % 41:02d}", t, ("en", "zh")[i % 3 == 0]) for i, t in enumerate(texts))
    qtexts = ["bank", "river", "shark loan", "the", "zz", "river bank", "x"]
    queries = tuple(Text(f"q{i}", t, "en") for i, t in enumerate(qtexts))
    qrels = {f"q{i}": {f"doc-{(3 * i + j) % 41:02d}": j + 1 for j in range(3)} for i in range(6)}
    qrels["q0"]["doc-30"] = 0
    excl = {"q1": frozenset({"doc-00", "doc-08"}), "q2": frozenset({"doc-20"})}
    return Pool("t", "multi", "unique", ("en", "zh"), "en", docs, queries, qrels, excl)


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """One local Ray (2 CPUs, no dashboard) for the module, under pytest's temp folder; workers
    import this worktree and this test module (the recipes above)."""

    with pytest.MonkeyPatch.context() as mp:
        home = tmp_path_factory.mktemp("home")
        mp.setenv("HOME", str(home))
        mp.setenv("RAY_AUTH_MODE", "disabled")
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        mp.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
        temp = tmp_path_factory.mktemp("ray")  # AF_UNIX socket paths: keep the temp root short
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(temp), log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_cluster_and_missing_ray_are_one_line(tmp_path, monkeypatch):
    from clirbench.rank.distributed import rank_pool_ray
    from clirbench.rank.ray_encode import encode_on_ray
    from clirbench.util.optional import MissingDependencyError

    address = f"127.0.0.1:{closed_port()}"
    t0 = time.perf_counter()
    with pytest.raises(ClirbenchError) as err:
        rank_pool_ray(bag_recipe(tmp_path / "c"), tie_pool(), tie_pool(), 2, address=address, recipe=bag_recipe)
    assert time.perf_counter() - t0 < 10
    assert str(err.value).startswith(f"cannot connect to Ray at {address}") and "\n" not in str(err.value)
    with pytest.raises(ClirbenchError, match="cannot connect to Ray at ray://127.0.0.1"):
        encode_on_ray(bag_recipe, {"query": ["a"]}, tmp_path / "c", address=f"ray://127.0.0.1:{closed_port()}")
    with pytest.raises(ClirbenchError, match="is not HOST:PORT"):
        encode_on_ray(bag_recipe, {"query": ["a"]}, tmp_path / "c", address="127.0.0.1:http")
    from clirbench.sweep.executors import RayExecutor  # the sweep connects through the same helper

    with pytest.raises(ClirbenchError, match=f"cannot connect to Ray at {address}"):
        next(RayExecutor(address).map([], None, progress=False))
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'clirbench\[ray\]'"):
        encode_on_ray(bag_recipe, {"query": ["a"]}, tmp_path / "c")


def test_without_an_address_a_local_ray_is_started_and_shut_down(tmp_path):
    """In a fresh process (this module's Ray would be reused): workers=1 starts a 1-CPU Ray, the
    texts are encoded in it, and no Ray is left running."""
    import shutil
    import subprocess
    import tempfile

    short = tempfile.mkdtemp(prefix="cr")  # AF_UNIX socket paths are limited to 107 bytes
    script = ("import ray\nfrom clirbench.rank.ray_encode import encode_on_ray\nfrom test_distributed import bag_recipe\n"
              f"r = encode_on_ray(bag_recipe, {{'query': ['a b', 'c d', 'a b']}}, {str(tmp_path / 'c')!r}, workers=1)\n"
              "print(r.encoded, r.chunks, len(r.workers), ray.is_initialized())\n")
    env = dict(os.environ, HOME=str(tmp_path), RAY_TMPDIR=short, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    try:
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-4:] == ["2", "1", "1", "False"]
    driver = bag_recipe(tmp_path / "c")
    assert driver.embed(["a b", "c d"], "query").shape == (2, 64) and driver.encoder.calls == 0


def test_encoded_on_ray_the_driver_finds_everything_cached(tmp_path, local_ray):
    from clirbench.rank.ray_encode import encode_on_ray

    pool = tie_pool()
    report = encode_on_ray(bag_recipe, {"document": pool.docs, "query": pool.queries}, tmp_path / "cache",
                           workers=2, chunk_size=4)
    n_distinct = len({d.text for d in pool.docs}) + len({q.text for q in pool.queries})
    assert report.encoded == n_distinct and sum(report.texts.values()) == n_distinct
    assert report.chunks > 2 and not report.gpus
    assert all(not w.endswith(f":{os.getpid()}") for w in report.workers)
    driver = bag_recipe(tmp_path / "cache")
    driver.prepare(pool.queries, pool.docs)
    assert driver.encoder.calls == 0 and driver.cache.stats()["loaded"] == n_distinct
    again = encode_on_ray(bag_recipe, {"document": pool.docs, "query": pool.queries}, tmp_path / "cache", workers=2)
    assert again.encoded == 0  # resumable: a rerun encodes nothing


@pytest.mark.parametrize("shards", [1, 3])
def test_ranks_and_topk_on_ray_equal_rank_relevant(tmp_path, local_ray, shards):
    from clirbench.rank.distributed import rank_pool_ray

    pool = tie_pool()
    retriever = bag_recipe(tmp_path / "cache")
    got = rank_pool_ray(retriever, pool, pool, shards, recipe=bag_recipe, topk=5, workers=2)
    M = np.concatenate([S for _, S in bag_recipe(None).score(pool.queries, pool.docs)])
    ids, qids = [d.id for d in pool.docs], [q.id for q in pool.queries]
    want = rank_relevant([(0, M)], ids, qids, pool.qrels, pool.exclusions, [d.lang for d in pool.docs], "en")
    assert len(set(want.rank.tolist())) > 5 and (M[:, None, :] == M[:, :, None]).sum() > 1000  # ties
    assert_same_table(got.table, want)
    assert_same_table(got.table, rank_pool_sharded(bag_recipe(None), pool, pool, shards).table)
    assert (got.shards, got.computed, got.reused, got.exact) == (shards, shards, 0, True)
    from clirbench.cache.shards import verify_cache  # `clirbench cache clean` leaves the shard counts alone

    report = verify_cache(tmp_path / "cache")
    assert not report.bad and not report.stray and len(list((tmp_path / "cache").rglob("shard-*.npz"))) == shards
    excl = {qids.index(q): {ids.index(d) for d in ex} for q, ex in pool.exclusions.items()}
    want_top = topk_sharded(lambda cols: [(0, M[:, cols])], 1, ids, len(qids), 5, excl)
    assert np.array_equal(got.topk[0], want_top[0]) and np.array_equal(got.topk[1], want_top[1])
    # a rerun reuses every finished shard: no ranking task runs (the recipe would fail in one)
    again = rank_pool_ray(retriever, pool, pool, shards, recipe=partial(never_in_a_task, os.getpid()), topk=5,
                          workers=2)
    assert (again.computed, again.reused) == (0, shards)
    assert_same_table(again.table, want)
    assert np.array_equal(again.topk[0], want_top[0])


def test_ranks_on_ray_with_a_torch_device_are_the_exact_ones(tmp_path, local_ray):
    """``device``: the workers multiply with torch (its CPU device here, a GPU on a cluster), whose
    float32 scores differ from the exact ones in the last bits on these near-ties; counted as bounded
    blocks, the ranks are still those of an independent ``math.fsum`` sort."""
    from clirbench.rank.distributed import rank_pool_ray
    from test_bounded_ranks import _adversarial, _pool, _reference_ranks, _triples

    Q, D = _adversarial(1)
    perm = np.random.default_rng(11).permutation(len(D))
    pool = _pool(Q, D, perm, 1)
    want = _reference_ranks(Q, D[perm], [d.id for d in pool.docs], pool.qrels, pool.exclusions,
                            [q.id for q in pool.queries])
    for device in (None, "cpu"):
        got = rank_pool_ray(near_tie_recipe(tmp_path / str(device)), pool, pool, 3, recipe=near_tie_recipe, workers=2,
                            device=device)
        assert got.exact and got.computed == 3
        assert _triples(got.table) == want, device


def test_workers_building_another_retriever_is_one_line(tmp_path):
    from clirbench.rank.distributed import rank_pool_ray

    enc = BagOfCharsEncoder()
    enc.model_id = "test/other"
    with pytest.raises(ClirbenchError, match="is not the driver's") as err:
        from clirbench.cache.embeddings import EmbeddingCache
        from clirbench.retrievers.dense import DenseRetriever

        rank_pool_ray(DenseRetriever(enc, EmbeddingCache(tmp_path), spec="test:bag"), tie_pool(), tie_pool(), 2,
                      recipe=bag_recipe)
    assert "\n" not in str(err.value)


def test_a_worker_killed_mid_run_costs_only_its_shard(tmp_path, local_ray):
    from clirbench.rank.distributed import rank_pool_ray

    pool = tie_pool()
    marker = tmp_path / "died"
    dies = partial(dies_once_in_a_task, str(marker), os.getpid())
    got = rank_pool_ray(bag_recipe(tmp_path / "cache"), pool, pool, 3, recipe=dies, workers=2)
    assert marker.exists() and int(marker.read_text()) != os.getpid()  # a worker did die
    assert (got.computed, got.reused) == (3, 0)
    assert_same_table(got.table, rank_pool_sharded(bag_recipe(None), pool, pool, 3).table)


class LockCheckingEncoder(BagOfCharsEncoder):
    """Fails when it encodes while its embedding space's writer lock is held."""

    def __init__(self, cache_dir):
        super().__init__()
        self.cache_dir = Path(cache_dir)

    def encode(self, texts, role):
        import fcntl

        for lock in self.cache_dir.glob("*/writer.lock"):
            with open(lock, "a") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise AssertionError("encoding while holding the writer lock: actors would take turns")
                fcntl.flock(f, fcntl.LOCK_UN)
        return super().encode(texts, role)


def lock_checking_recipe(cache_dir):
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever

    return DenseRetriever(LockCheckingEncoder(cache_dir), EmbeddingCache(cache_dir), spec="test:bag")


def test_encoder_actors_encode_outside_the_writer_lock_and_write_each_text_once(tmp_path):
    from clirbench.rank.ray_encode import _EncoderActor

    pytest.importorskip("fcntl")
    actor = _EncoderActor(lock_checking_recipe, str(tmp_path), None, None)  # the class Ray runs, in-process
    texts = ["river bank", "bank loan", "river", "a b"]
    assert actor.encode("document", texts)[0] == 4
    assert actor.encode("document", texts + ["loan"])[0] == 1  # only the new text
    assert actor.retriever.encoder.calls == 2
    driver = bag_recipe(tmp_path)
    assert np.array_equal(driver.embed(texts + ["loan"], "document"), BagOfCharsEncoder().vectors(texts + ["loan"]))
    assert driver.encoder.calls == 0
    # what the cache encoded inside its lock would fail
    with pytest.raises(AssertionError, match="writer lock"):
        lock_checking_recipe(tmp_path).embed(["something new"], "document")
