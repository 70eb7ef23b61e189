"""Sharded-count exact ranks vs a bare blocked-matmul floor (and vs full rows where they fit).

    python benchmarks/sharded_ranks.py --docs 1000000 --dim 384 --queries 10000 [--full] [--device cuda]

Synthetic L2-normalised float32 embeddings; each query is a noisy copy of its one relevant
document (``--relevant`` per query). Three paths over the same (query block x document shard)
products:

- floor: the blocked float32 matmul alone (same blocks, nothing counted);
- sharded: ``clirbench.rank.counting.rank_relevant_sharded`` (float32 matmul + counting, one pass with
  error bounds; documents within the product's error bound of a relevant score scored exactly:
  ``BoundedBlock`` parts computed and counted on the BLAS's thread count of threads, the ranks of
  the exact ``fl32(fl64(q . d))`` scores);
- full (``--full``): ``clirbench.rank.rows.rank_relevant`` on full rows (``BoundedBlock`` blocks, as
  ``DenseRetriever.score_bounded`` yields them on the CPU), whose ranks must equal the sharded ones (asserted).

Prints each timed run, then a table: median seconds, time relative to the floor, and the peak of
traced allocations per path (one more run each, under tracemalloc: numpy reports its arrays to it;
BLAS work buffers are not included; the timed runs are untraced), then the process's peak RSS.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clirbench.rank.rows import rank_relevant  # noqa: E402
from clirbench.retrievers.dense import BoundedBlock  # noqa: E402
from clirbench.rank.counting import rank_relevant_sharded  # noqa: E402
from clirbench.rank.dense_shards import DenseShards  # noqa: E402
from clirbench.rank.shards import SHARD_BYTES, shard_plan, shard_slices  # noqa: E402


def synthetic(n_docs: int, n_queries: int, dim: int, relevant: int, noise: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    D = np.empty((n_docs, dim), dtype=np.float32)
    for a in range(0, n_docs, 100_000):  # in chunks: no float64 pool-sized temporary
        x = rng.standard_normal((min(100_000, n_docs - a), dim), dtype=np.float32)
        D[a:a + len(x)] = x / np.linalg.norm(x, axis=1, keepdims=True)
    rel = rng.integers(0, n_docs, size=(n_queries, relevant))
    Q = D[rel].mean(axis=1) + noise * rng.standard_normal((n_queries, dim), dtype=np.float32)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    doc_ids = [f"d{i:08d}" for i in rng.permutation(n_docs)]
    query_ids = [f"q{i}" for i in range(n_queries)]
    qrels = {q: {doc_ids[j]: 1 for j in rel[i]} for i, q in enumerate(query_ids)}
    return Q.astype(np.float32), D, doc_ids, query_ids, qrels


def timed(fn):
    """(result, seconds) of an untraced call: tracing every allocation slows the path that makes more
    of them (4% on the sharded path at 200,000 docs), which users never run under."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def traced_peak(fn) -> int:
    """The peak of traced allocations during one more call (numpy reports its arrays to tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--relevant", type=int, default=1)
    ap.add_argument("--noise", type=float, default=0.25, help="query = relevant doc + this x N(0,1) per dim")
    ap.add_argument("--repeat", type=int, default=1, help="time each path this many times (interleaved), report the median")
    ap.add_argument("--budget-mb", type=int, default=SHARD_BYTES >> 20, help="score block budget (MiB)")
    ap.add_argument("--shards", type=int, default=None, help="default: from the budget (shard_plan)")
    ap.add_argument("--full", action="store_true", help="also rank from full rows and assert equal ranks")
    ap.add_argument("--device", default=None, help="torch device for the products and counting (e.g. cuda)")
    args = ap.parse_args(argv)

    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    t0 = time.perf_counter()
    Q, D, doc_ids, query_ids, qrels = synthetic(args.docs, args.queries, args.dim, args.relevant, args.noise)
    t_gen = time.perf_counter() - t0
    shards, block = shard_plan(args.docs, args.queries, args.budget_mb << 20)
    shards = args.shards or shards
    parts = shard_slices(args.docs, shards)
    dev, xp = None, np
    if args.device:
        import torch as xp

        dev = xp.device(args.device)
    dense = DenseShards(Q, D, np.arange(args.docs), block, dev)
    score_shard = dense.scorer(bounded=dense.counts_bounded())  # as rank_pool_sharded: exact near-ties on a GPU too
    print(f"pool {args.docs:,} docs x {args.queries:,} queries x {args.dim} dims, {args.relevant} relevant/query; "
          f"{len(parts)} shards of ~{args.docs // len(parts):,} docs, query blocks of {block}; "
          f"data made in {t_gen:.1f}s; device {args.device or 'numpy (cpu)'}", flush=True)

    def floor():
        total = 0.0
        if dev is not None:
            raw = dense.scorer(bounded=False)  # the bare products: the floor under any counting
            for cols in parts:
                for _, S in raw(cols):
                    total += float(S[0, 0])  # touch the result (and sync a GPU)
            return total
        for cols in parts:
            Ds = D[cols]
            for a in range(0, args.queries, block):
                total += float((Q[a:a + block] @ Ds.T)[0, 0])
        return total

    def sharded():
        return rank_relevant_sharded(score_shard, parts, doc_ids, query_ids, qrels, bounds=dense.bounds,
                                     xp=xp, check_nan=False)

    def full():
        step = max(1, SHARD_BYTES // (4 * args.docs))  # DenseRetriever's default row blocks
        d_norm = float(np.linalg.norm(D.astype(np.float64), axis=1).max())
        none = np.zeros(0, np.int64)
        blocks = ((s, BoundedBlock(Q, np.arange(s, min(s + step, args.queries)), D, d_norm, none, none))
                  for s in range(0, args.queries, step))
        return rank_relevant(blocks, doc_ids, query_ids, qrels)

    paths = {"sharded count (exact ranks)": sharded, "floor: blocked matmul only": floor}
    if args.full:
        paths["full rows (rank_relevant)"] = full
    runs: dict[str, list] = {name: [] for name in paths}
    for _ in range(args.repeat):  # interleaved: each path sees the same machine load
        for name, fn in paths.items():
            runs[name].append(timed(fn))
            print(f"  {name}: {runs[name][-1][1]:.2f} s (load average {os.getloadavg()[0]:.2f})", flush=True)
    peaks = {name: traced_peak(fn) for name, fn in paths.items()}  # one more, traced, run each
    out = {name: (r[0][0], statistics.median(x[1] for x in r), peaks[name]) for name, r in runs.items()}
    table = out["sharded count (exact ranks)"][0]
    t_floor = out["floor: blocked matmul only"][1]
    rows = [(name, t, m) for name, (_, t, m) in sorted(out.items(), key=lambda kv: kv[0] != "floor: blocked matmul only")]
    if args.full:
        want = out["full rows (rank_relevant)"][0]
        for f in ("query_ids", "num_docs", "qidx", "rank", "grade"):
            assert np.array_equal(np.asarray(getattr(want, f)), np.asarray(getattr(table, f))), f
    print(f"{'path':32s} {'seconds':>9s} {'x floor':>8s} {'peak traced MiB':>16s}")
    for name, t, m in rows:
        print(f"{name:32s} {t:9.2f} {t / t_floor:8.2f} {m / 2**20:16.1f}")
    if args.full:
        print("ranks equal (every RankTable field): yes")
    print(f"median rank {np.median(table.rank):.0f}, max rank {table.rank.max():.0f}; "
          f"process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB "
          f"(embeddings: {D.nbytes / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
