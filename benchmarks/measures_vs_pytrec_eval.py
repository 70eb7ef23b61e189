"""Time and peak memory: clirbench (run arrays -> RankTable -> measures) vs pytrec_eval.

    .venv/bin/python benchmarks/measures_vs_pytrec_eval.py --queries 50000 --depth 1000 --out bench.json

The parent generates one synthetic run (tied scores, ~2 relevant docs per query, some not
retrieved, some grade-0 judgements) into a temp dir; each approach runs in its own subprocess that
loads it, so peak RSS (VmHWM) is not polluted by the other. "extra" memory = peak RSS minus
RSS after loading the shared input (run arrays, doc ids, qrels). Values are checked to agree.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEASURES = ["nDCG@10", "nDCG", "RR", "AP@1000", "AP", "R@100", "P@10", "Success@10", "nDCG@1", "R@10"]


def generate(queries: int, depth: int, n_docs: int, seed: int, folder: Path) -> dict:
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_docs).astype(np.int32)
    start = rng.integers(0, n_docs, size=queries)
    qidx = np.repeat(np.arange(queries, dtype=np.int32), depth)
    doc = perm[(start[:, None] + np.arange(depth)[None, :]) % n_docs].reshape(-1)  # distinct per query
    score = (rng.integers(0, 200, size=queries * depth) / 8).astype(np.float32)  # ~5 ties per value
    doc_ids = [f"doc{i}" for i in range(n_docs)]
    query_ids = [f"q{i}" for i in range(queries)]
    qrels: dict[str, dict[str, int]] = {}
    n_rel = rng.integers(1, 4, size=queries)  # 1..3, mean 2
    for q in range(queries):
        rel = {}
        for _ in range(n_rel[q]):
            if rng.random() < 0.8:  # retrieved, at a random position
                d = doc[q * depth + rng.integers(0, depth)]
            else:  # not retrieved
                d = perm[(start[q] + depth + rng.integers(0, 1000)) % n_docs]
            rel[doc_ids[d]] = int(rng.integers(1, 4))
        rel.setdefault(doc_ids[doc[q * depth + rng.integers(0, depth)]], 0)  # a judged non-relevant doc
        qrels[query_ids[q]] = rel
    np.save(folder / "qidx.npy", qidx)
    np.save(folder / "doc.npy", doc)
    np.save(folder / "score.npy", score)
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump({"doc_ids": doc_ids, "query_ids": query_ids, "qrels": qrels}, f, protocol=5)
    return {"entries": int(len(qidx)), "relevant": int(sum(1 for r in qrels.values() for g in r.values() if g > 0))}


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss() -> int:
    """Peak RSS of this process image: VmHWM (ru_maxrss would carry over the parent's peak
    through fork + exec on Linux)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _load(folder: Path):
    qidx, doc, score = (np.load(folder / f"{n}.npy") for n in ("qidx", "doc", "score"))
    with open(folder / "meta.pkl", "rb") as f:
        meta = pickle.load(f)
    return qidx, doc, score, meta["doc_ids"], meta["query_ids"], meta["qrels"]


def child(approach: str, folder: Path) -> None:
    from clirbench.measures import compute, parse
    from clirbench.rank.runs import rank_run_arrays

    import pytrec_eval  # imported by both so that the baseline is comparable

    qidx, doc, score, doc_ids, query_ids, qrels = _load(folder)
    base = _rss()
    t0 = time.perf_counter()
    if approach == "ours":
        table = rank_run_arrays(qidx, doc, score, query_ids, doc_ids, qrels)
        t1 = time.perf_counter()
        values = compute(MEASURES, table)
        t2 = time.perf_counter()
        qids = list(table.query_ids)
        steps = {"rank_table_s": t1 - t0, "measures_s": t2 - t1}
    else:
        bounds = np.flatnonzero(np.r_[True, np.diff(qidx) != 0, True])
        run = {}
        for a, b in zip(bounds[:-1], bounds[1:]):
            run[query_ids[qidx[a]]] = dict(zip([doc_ids[d] for d in doc[a:b].tolist()], score[a:b].tolist()))
        t1 = time.perf_counter()
        names = {parse(m).trec_name for m in MEASURES}
        request = {n.rsplit("_", 1)[0] + "." + n.rsplit("_", 1)[1] if n[-1].isdigit() else n for n in names}
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, request)
        res = evaluator.evaluate(run)
        t2 = time.perf_counter()
        qids = [q for q in query_ids if q in res]
        values = {m: np.array([res[q][parse(m).trec_name] for q in qids]) for m in MEASURES}
        steps = {"build_dict_s": t1 - t0, "evaluate_s": t2 - t1}
    total = t2 - t0
    peak = _peak_rss()
    np.savez(folder / f"values_{approach}.npz", qids=np.array(qids), **values)
    print(json.dumps({"approach": approach, "time_s": total, **steps, "peak_rss_bytes": peak,
                      "input_rss_bytes": base, "extra_bytes": peak - base}))


def run_child(approach: str, folder: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", approach, "--folder", str(folder)],
                         check=True, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=50_000)
    ap.add_argument("--depth", type=int, default=1_000)
    ap.add_argument("--docs", type=int, default=1_000_000, help="collection size (doc id vocabulary)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the JSON report here")
    ap.add_argument("--child", choices=["ours", "pytrec_eval"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.folder)
    if args.docs < args.depth + 1000:
        ap.error("--docs must exceed --depth + 1000")
    with tempfile.TemporaryDirectory(prefix="clirbench-bench-") as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        sizes = generate(args.queries, args.depth, args.docs, args.seed, folder)
        print(f"generated {sizes['entries']:,} run entries, {sizes['relevant']:,} relevant judgements "
              f"in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        results = {a: run_child(a, folder) for a in ("ours", "pytrec_eval")}
        ours, ref = np.load(folder / "values_ours.npz"), np.load(folder / "values_pytrec_eval.npz")
        assert ours["qids"].tolist() == ref["qids"].tolist(), "different evaluated queries"
        max_diff = {m: float(np.max(np.abs(ours[m] - ref[m]), initial=0.0)) for m in MEASURES}
    agree = all(d <= 1e-9 for d in max_diff.values())
    o, p = results["ours"], results["pytrec_eval"]
    report = {
        "queries": args.queries, "depth": args.depth, "docs": args.docs, "seed": args.seed, **sizes,
        "measures": MEASURES, "results": results, "max_abs_diff": max_diff, "agree_1e-9": agree,
        "speedup": p["time_s"] / o["time_s"],
        "peak_rss_ratio": o["peak_rss_bytes"] / p["peak_rss_bytes"],
        "extra_memory_ratio": o["extra_bytes"] / max(p["extra_bytes"], 1),
        "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    mb = 1 / 2**20
    print(f"{'approach':<12}{'time s':>10}{'peak RSS MiB':>15}{'extra MiB':>12}")
    for name, r in results.items():
        print(f"{name:<12}{r['time_s']:>10.2f}{r['peak_rss_bytes'] * mb:>15.0f}{r['extra_bytes'] * mb:>12.0f}")
    print(f"speed-up {report['speedup']:.1f}x; peak RSS ratio {report['peak_rss_ratio']:.3f}; "
          f"extra memory ratio {report['extra_memory_ratio']:.4f}; values agree to 1e-9: {agree}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    if not agree:
        sys.exit(f"values differ: {max_diff}")


if __name__ == "__main__":
    main()
