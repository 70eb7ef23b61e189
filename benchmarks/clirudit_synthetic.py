"""A CLIRudit-size synthetic stand-in, run end to end through clirbench.runner.run: wall time and peak RSS.

    .venv/bin/python benchmarks/clirudit_synthetic.py [--dim 384] [--out benchmarks/out/clirudit-synthetic]

Writes random parquet files in the documented local layout (16,389 documents, 357,710 queries,
360,596 judgements; ``docs/fr.test.parquet``, ``queries/en.test.parquet``, ``qrels/en_fr.test.parquet``),
then evaluates a hashing bag-of-words encoder (``--dim``, default 384 as multilingual-e5-small; exact dense
scores) on the whole task in
a child process, which reports its wall time and peak resident memory (``VmHWM``). Queries are made
of words of their relevant document, so the scores are not trivial. Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np

N_DOCS, N_QUERIES, N_QRELS = 16_389, 357_710, 360_596


def generate(folder: Path, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i:05d}" for i in range(20_000)])
    lengths = rng.integers(80, 250, size=N_DOCS)
    words = [vocab[rng.integers(0, len(vocab), size=n)] for n in lengths]
    docids = [f"doc{i:06d}" for i in rng.permutation(10 ** 6)[:N_DOCS]]
    docs = pa.table({"docid": docids, "title": [" ".join(w[:8]) for w in words],
                     "subtitle": [" ".join(w[8:14]) if i % 3 else None for i, w in enumerate(words)],
                     "abstract": [" ".join(w[14:]) for w in words],
                     "discipline": [f"discipline{i % 12}" for i in range(N_DOCS)]})
    qids = rng.permutation(10 ** 7)[:N_QUERIES].astype(np.int64)
    gold = rng.integers(0, N_DOCS, size=N_QUERIES)
    queries = pa.table({"qid": qids, "query": [" ".join(rng.choice(words[g], size=3)) for g in gold]})
    extra = rng.choice(N_QUERIES, size=N_QRELS - N_QUERIES, replace=False)  # queries with a second relevant doc
    second = (gold[extra] + rng.integers(1, N_DOCS, size=len(extra))) % N_DOCS
    qrels = pa.table({"qid": np.concatenate([qids, qids[extra]]),
                      "docid": [docids[g] for g in gold] + [docids[g] for g in second],
                      "rel": np.ones(N_QRELS, dtype=np.int64)})
    for config, split, table in (("docs", "fr.test", docs), ("queries", "en.test", queries),
                                 ("qrels", "en_fr.test", qrels)):
        (folder / config).mkdir(parents=True, exist_ok=True)
        pq.write_table(table, folder / config / f"{split}.parquet")


class HashingEncoder:
    """Counts of hashed words, L2-normalised: fast, deterministic, exact enough for a load test."""

    model_id = "bench/hashing-bow-64"
    revision = "1"

    def __init__(self, dim: int = 64):
        self.dim = dim

    def prompt(self, role: str) -> str:
        return ""

    def encode(self, texts, role: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(data: Path, output: Path, resamples: int, dim: int) -> None:
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever
    from clirbench.runner import run
    from clirbench.tasks import get_task
    from clirbench.tasks.clirudit import write_breakdown

    t0 = time.perf_counter()
    retriever = DenseRetriever(HashingEncoder(dim), EmbeddingCache(None), spec=f"bench:hashing-bow-{dim}")
    report = run(retriever, task="clirudit", langs=None, data_dir=data, output_dir=output, overwrite=True,
                 resamples=resamples, progress=False)
    (outcome,) = report.pools
    run_s = time.perf_counter() - t0
    rss_run = _peak_rss_mb()
    (pool,) = get_task("clirudit").pools(None, data_dir=data)  # again, for the discipline breakdown
    breakdown = write_breakdown(outcome.path, pool)
    record = outcome.record.to_dict()
    print(json.dumps({
        "queries": record["num_queries"], "docs": record["pool_size"], "resamples": resamples,
        "AP@1000": record["measures"]["AP@1000"]["value"], "R@100": record["measures"]["R@100"]["value"],
        "timings_s": record["timings_s"], "run_wall_s": round(run_s, 1), "peak_rss_mb_run": round(rss_run),
        "total_wall_s": round(time.perf_counter() - t0, 1), "peak_rss_mb_total": round(_peak_rss_mb()),
        "disciplines": len(breakdown or {}), "dim": retriever.encoder.dim,
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/out/clirudit-synthetic")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384, help="embedding dimension of the hashing encoder")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = Path(args.out)
    if args.child:
        child(out / "data", out / "results", args.resamples, args.dim)
        return
    t0 = time.perf_counter()
    if not (out / "data" / "qrels" / "en_fr.test.parquet").is_file():
        generate(out / "data")
    generated = time.perf_counter() - t0
    t1 = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", "--out", str(out), "--resamples", str(args.resamples),
                           "--dim", str(args.dim)],
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(proc.stderr[-2000:])
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    figures.update(generate_s=round(generated, 1), child_wall_s=round(time.perf_counter() - t1, 1))
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
