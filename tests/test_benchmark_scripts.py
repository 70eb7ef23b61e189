"""The exact-rank benchmarks run, at a tiny size, as their README rows invoke them: the scripts stay
in step with the API they time (``DenseRetriever.score_bounded``'s ``BoundedBlock`` rows, the
sharded counter), and ``sharded_ranks.py --full`` asserts that the sharded and full-row ranks are equal."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _run(*args: str) -> str:
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_dense_scoring_runs_every_variant(tmp_path):
    out = tmp_path / "dense.json"
    _run(str(BENCHMARKS / "dense_scoring.py"), "--queries", "700", "--docs", "300", "--dim", "16",
         "--reps", "2", "--out", str(out))
    report = json.loads(out.read_text())
    ranked = report["results"]["dense+rank"]
    assert ranked["ranker"] == "clirbench.rank.rows.rank_relevant"
    assert 1 <= ranked["mean_rank"] <= 300 and len(ranked["runs"]) == 2
    assert set(report["results"]) == {"bare", "dense", "dense+rank"} and report["ratio_dense+rank_vs_bare"] > 0


@pytest.mark.parametrize("budget_mb", ["1", "256"])
def test_sharded_ranks_equal_the_full_rows(budget_mb):
    text = _run(str(BENCHMARKS / "sharded_ranks.py"), "--docs", "3000", "--queries", "300", "--dim", "16",
                "--full", "--relevant", "2", "--budget-mb", budget_mb)
    assert "ranks equal (every RankTable field): yes" in text
