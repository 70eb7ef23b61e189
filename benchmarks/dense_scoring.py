"""Dense scoring at CLIRudit scale: DenseRetriever blocks (+ ranks) vs a bare chunked numpy product.

Random L2-normalised float32 embeddings (default 357,710 queries x 16,389 docs x 384 dims, one
relevant doc per query) are injected through a trivial encoder. Each variant runs in its own
subprocess so that its peak RSS is its own:

  bare        Q[i:j] @ D.T per block, nothing else (same block rows as DenseRetriever)
  dense       DenseRetriever.score blocks, consumed and dropped
  dense+rank  DenseRetriever.score_bounded -> clirbench.rank.rows.rank_relevant (exact ranks, tie rule):
              ExactRanker's path, a float32 product per block + exact scores of the near-ties

Usage: python benchmarks/dense_scoring.py [--queries N] [--docs N] [--dim D] [--reps R] [--out result.json]
(``--reps``: the variants run R times, interleaved; medians reported, with each run's CPU time and
the load average before it.)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS = ("bare", "dense", "dense+rank")


class InjectedEncoder:
    """Texts "q<i>" / "d<i>" -> rows of precomputed matrices."""

    model_id, revision, batch_size = "benchmark/random", "0", 1 << 16

    def __init__(self, Q: np.ndarray, D: np.ndarray) -> None:
        self.Q, self.D = Q, D

    def prompt(self, role: str) -> str:
        return ""

    def encode(self, texts, role):
        M = self.Q if role == "query" else self.D
        return M[np.fromiter((int(t[1:]) for t in texts), dtype=np.int64, count=len(texts))]


def _data(n_q: int, n_d: int, dim: int, seed: int):
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((n_d, dim), dtype=np.float32)
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    Q = np.empty((n_q, dim), dtype=np.float32)
    for a in range(0, n_q, 65536):  # in slices: no float64 temporaries the size of Q
        q = rng.standard_normal((min(65536, n_q - a), dim), dtype=np.float32)
        Q[a:a + len(q)] = q / np.linalg.norm(q, axis=1, keepdims=True)
    rel = rng.integers(0, n_d, size=n_q)
    return Q, D, rel


def _minimal_ranks(blocks, rel: np.ndarray) -> np.ndarray:
    """Fallback when clirbench.rank.rows is missing: 1 + #docs scoring above the relevant one."""
    ranks = np.empty(len(rel), dtype=np.int64)
    for start, S in blocks:
        r = rel[start:start + len(S)]
        s = S[np.arange(len(S)), r][:, None]
        ranks[start:start + len(S)] = 1 + np.count_nonzero(S > s, axis=1)
    return ranks


def run_variant(variant: str, n_q: int, n_d: int, dim: int, seed: int, device: str | None = None) -> dict:
    from threadpoolctl import threadpool_info

    from clirbench.collection import Text
    from clirbench.retrievers import DenseRetriever

    t0 = time.perf_counter()
    Q, D, rel = _data(n_q, n_d, dim, seed)
    out = {"variant": variant, "setup_s": 0.0, "device": device or "cpu (numpy)"}
    retriever = DenseRetriever(InjectedEncoder(Q, D), device=device)
    step = retriever.rows_per_block(n_d)
    out["block_rows"] = step
    out["blocks"] = -(-n_q // step)
    if variant == "bare":
        out["setup_s"] = time.perf_counter() - t0
        t = time.perf_counter()
        if device and device != "cpu":  # the same product with torch, copied back to host memory
            import torch

            Dt = torch.from_numpy(D).to(device)
            for a in range(0, n_q, step):
                S = (torch.from_numpy(Q[a:a + step]).to(device) @ Dt.T).cpu().numpy()
                del S
        else:
            c = time.process_time()
            for a in range(0, n_q, step):
                S = Q[a:a + step] @ D.T
                del S
            out["cpu_s"] = time.process_time() - c
        out["time_s"] = time.perf_counter() - t
    else:
        queries = [Text(f"q{i}", f"q{i}", "en") for i in range(n_q)]
        docs = [Text(f"d{i}", f"d{i}", "en") for i in range(n_d)]
        t = time.perf_counter()
        retriever.prepare(queries, docs)  # inject the vectors into the (memory-only) cache
        out["inject_s"] = time.perf_counter() - t
        if variant == "dense":
            out["setup_s"] = time.perf_counter() - t0
            t = time.perf_counter()
            for _, S in retriever.score(queries, docs):
                del S
            out["time_s"] = time.perf_counter() - t
        else:
            qids, dids = [q.id for q in queries], [d.id for d in docs]
            qrels = {q: {dids[r]: 1} for q, r in zip(qids, rel.tolist())}
            out["setup_s"] = time.perf_counter() - t0
            try:
                from clirbench.rank.rows import rank_relevant
            except ImportError:
                rank_relevant = None
            t = time.perf_counter()
            c = time.process_time()
            if rank_relevant is not None:
                blocks = getattr(retriever, "score_bounded", retriever.score)(queries, docs)
                table = rank_relevant(blocks, dids, qids, qrels)
                ranks = table.rank
                out["ranker"] = "clirbench.rank.rows.rank_relevant"
            else:
                ranks = _minimal_ranks(retriever.score(queries, docs), rel)
                out["ranker"] = "minimal vectorised count (clirbench.rank.rows not importable)"
            out["time_s"] = time.perf_counter() - t
            out["cpu_s"] = time.process_time() - c
            out["mean_rank"] = float(np.mean(ranks))
            out["expected_mean_rank"] = (n_d + 1) / 2
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["blas"] = [{k: i.get(k) for k in ("internal_api", "num_threads", "architecture", "version")}
                   for i in threadpool_info()]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=357_710)
    ap.add_argument("--docs", type=int, default=16_389)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--device", help="torch device for the products (e.g. cuda); default numpy on CPU")
    ap.add_argument("--reps", type=int, default=1, help="run the variants this many times, interleaved (medians)")
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        print(json.dumps(run_variant(args.child, args.queries, args.docs, args.dim, args.seed, args.device)))
        return 0

    runs: dict[str, list] = {v: [] for v in args.variants.split(",")}
    for rep, variant in ((r, v) for r in range(args.reps) for v in runs):
        load = os.getloadavg()[0]
        cmd = [sys.executable, __file__, "--child", variant, "--queries", str(args.queries),
               "--docs", str(args.docs), "--dim", str(args.dim), "--seed", str(args.seed)]
        if args.device:
            cmd += ["--device", args.device]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            return proc.returncode
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        r["load_avg_1min_before"] = load
        runs[variant].append(r)
        print(f"{variant:>11} [{rep}]: {r['time_s']:8.2f} s  cpu {r.get('cpu_s', float('nan')):8.2f} s  "
              f"peak RSS {r['peak_rss_mb']:7.0f} MB  load {load:.2f}"
              + (f"   (inject {r['inject_s']:.2f} s)" if "inject_s" in r else ""), flush=True)
    results = {}
    for variant, rs in runs.items():
        results[variant] = dict(rs[len(rs) // 2], time_s=statistics.median(r["time_s"] for r in rs),
                                cpu_s=statistics.median(r.get("cpu_s", float("nan")) for r in rs),
                                runs=[{k: r.get(k) for k in ("time_s", "cpu_s", "load_avg_1min_before")} for r in rs])
    report = {
        "queries": args.queries, "docs": args.docs, "dim": args.dim, "seed": args.seed, "device": args.device,
        "gflop": 2 * args.queries * args.docs * args.dim / 1e9,
        "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "results": results,
    }
    if "bare" in results:
        base = results["bare"]["time_s"]
        report["bare_gflops"] = report["gflop"] / base
        for v in results:
            if v != "bare":
                report[f"ratio_{v}_vs_bare"] = results[v]["time_s"] / base
                report[f"cpu_ratio_{v}_vs_bare"] = results[v]["cpu_s"] / results["bare"]["cpu_s"]
                print(f"{v} / bare = {results[v]['time_s'] / base:.3f} (medians of wall time; of CPU time "
                      f"{report[f'cpu_ratio_{v}_vs_bare']:.3f})")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
