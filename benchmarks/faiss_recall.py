"""faiss IVF and HNSW on a synthetic clustered pool: top-k recall against exact, and speed-up over exact.

Pool: ``--docs`` L2-normalised float32 vectors of ``--dim`` dims drawn around ``docs / 200``
Gaussian centres (noise ``--noise``), ``--queries`` queries drawn the same way; doc ids ``d%07d``.

  exact   brute force, as clirbench.rank.ann.exact_topk: blocked numpy matmul + argpartition,
          ties settled by the tie rule (score desc, doc id desc); its time is the baseline
  <index> AnnIndex.build (timed apart: training on a sample + add; once per factory string, search
          parameters set on the built index), then search of k + margin
          candidates and exact rescoring (rescore_topk), as ``ann_run`` does; recall@k of the kept
          top-k against the exact top-k over every query; speed-up = exact seconds / search seconds

Usage: python benchmarks/faiss_recall.py [--docs N] [--dim D] [--queries N] [--k K]
       [--index SPEC ...] [--train-size N] [--threads T] [--out result.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_INDEXES = ("faiss:IVF1024,Flat?nprobe=8", "faiss:IVF1024,Flat?nprobe=32", "faiss:HNSW32",
                   "faiss:HNSW32?efSearch=256")


def clustered(n_docs: int, n_q: int, dim: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n_docs // 200), dim), dtype=np.float32)

    def draw(n: int) -> np.ndarray:
        out = np.empty((n, dim), dtype=np.float32)
        for a in range(0, n, 65536):
            b = min(a + 65536, n)
            x = centres[rng.integers(0, len(centres), b - a)] + noise * rng.standard_normal((b - a, dim), dtype=np.float32)
            out[a:b] = x / np.linalg.norm(x, axis=1, keepdims=True)
        return out

    return draw(n_docs), draw(n_q)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--noise", type=float, default=2.0, help="Gaussian noise around the centres (default 2.0: clusters overlap)")
    ap.add_argument("--index", action="append", help=f"faiss:<factory>[?params], repeatable (default: {', '.join(DEFAULT_INDEXES)})")
    ap.add_argument("--train-size", type=int, default=None, help="training vectors (default: all, at most 1M)")
    ap.add_argument("--threads", type=int, default=None, help="faiss OpenMP threads (default: faiss's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    args = ap.parse_args(argv)

    import faiss

    from clirbench.rank.ann import exact_topk, rescore_topk
    from clirbench.rank.ann_index import AnnIndex, parse_index_spec
    from clirbench.rank.table import tie_keys

    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    specs = [parse_index_spec(s, args.dim) for s in (args.index or DEFAULT_INDEXES)]
    t0 = time.perf_counter()
    D, Q = clustered(args.docs, args.queries, args.dim, args.noise, args.seed)
    keys = tie_keys([f"d{i:07d}" for i in range(args.docs)])
    print(f"pool {args.docs:,} docs x {args.dim} dims, {args.queries:,} queries, k={args.k} "
          f"(data {time.perf_counter() - t0:.1f} s; faiss {faiss.__version__}, {faiss.omp_get_max_threads()} threads)",
          flush=True)
    t0 = time.perf_counter()
    exact, _ = exact_topk(Q, D, args.k, keys)
    exact_s = time.perf_counter() - t0
    print(f"{'exact (numpy blocked matmul + top-k)':44s} search {exact_s:8.2f} s", flush=True)
    margin = args.k // 10 + 10  # ann_run's default
    rows = []
    built: dict[str, AnnIndex] = {}  # one build per factory string; search parameters applied after
    for spec in specs:
        if spec.factory not in built:
            built[spec.factory] = AnnIndex(spec, args.dim, train_size=args.train_size, seed=args.seed).build(D)
        index = built[spec.factory].set_params(spec.params)
        t0 = time.perf_counter()
        _, cand = index.search(Q, args.k + margin)
        t1 = time.perf_counter()
        cols, _, unresolved = rescore_topk(Q, D, cand, args.k, keys)
        t2 = time.perf_counter()
        recall = np.mean([len(np.intersect1d(cols[i], exact[i])) / args.k for i in range(len(Q))])
        d = index.describe()
        row = {"index": str(spec), "build_s": d["build_s"], "train_size": d["train_size"],
               "search_s": t1 - t0, "rescore_s": t2 - t1, f"recall@{args.k}": float(recall),
               "speedup_search": exact_s / (t1 - t0), "speedup_search_rescore": exact_s / (t2 - t0),
               "boundary_ties_unresolved": unresolved}
        rows.append(row)
        print(f"{str(spec):44s} search {t1 - t0:8.2f} s  rescore {t2 - t1:6.2f} s  recall@{args.k} {recall:.4f}  "
              f"speed-up {row['speedup_search']:6.1f}x ({row['speedup_search_rescore']:.1f}x with rescoring)  "
              f"build {d['build_s']:.1f} s (trained on {d['train_size']:,})", flush=True)
    if args.out:
        args.out.write_text(json.dumps({
            "docs": args.docs, "dim": args.dim, "queries": args.queries, "k": args.k, "noise": args.noise,
            "seed": args.seed, "faiss": faiss.__version__, "threads": faiss.omp_get_max_threads(),
            "machine": platform.processor() or platform.machine(), "exact_s": exact_s, "indexes": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
