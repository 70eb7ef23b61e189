"""``clirbench evaluate`` prints the table ``run`` prints (value [95% CI] per measure, the legend) by
default, and its JSON report with ``--format json`` / ``--json`` (docs/commands.md); counts say
``1 query``, never ``1 queries``."""
from __future__ import annotations

import json

import pytest

from clirbench.cli import main
from clirbench.util.plural import plural

QRELS = "q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 1\nq2 0 d4 0\nq3 0 d5 2\nq9 0 d1 1\n"
RUN = ("q1 Q0 d1 1 3.0 r\nq1 Q0 d4 2 2.0 r\nq2 Q0 d4 1 3.0 r\nq2 Q0 d3 2 2.5 r\nq2 Q0 d9 3 1.0 r\n"
       "q3 Q0 d5 1 1.0 r\nq7 Q0 d1 1 1.0 r\n")


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")


def test_plural():
    assert [plural(n, "query") for n in (0, 1, 2)] == ["0 queries", "1 query", "2 queries"]
    assert (plural(1, "pool"), plural(3, "pool"), plural(2, "match"), plural(2, "day")) == \
        ("1 pool", "3 pools", "2 matches", "2 days")
    assert plural(2, "such query", "such queries") == "2 such queries"


def test_evaluate_prints_runs_table_and_json_on_request(files, capsys, tmp_path):
    import pytrec_eval

    qrels, run = files
    argv = ["evaluate", "--qrels", qrels, "--run", run, "--measures", "nDCG@10,RR,MaxR", "--resamples", "200"]
    assert main(argv + ["--output", str(tmp_path / "e.json")]) == 0
    text = capsys.readouterr().out
    report = json.loads((tmp_path / "e.json").read_text())
    assert main(argv + ["--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == report
    assert main(argv + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out) == report
    assert main(argv + ["--json", "--format", "table"]) == 2 and "disagree" in capsys.readouterr().err

    lines = text.splitlines()
    assert lines[0] == f"qrels: {qrels}"
    assert lines[1].split() == ["run", "n", "nDCG@10", "RR", "MaxR"]
    row = lines[3]
    assert row.startswith(run) and row.split()[1] == "3"
    # the cells are run's: value [low,high] with 2 decimals, from the JSON report
    for name in ("nDCG@10", "RR"):
        m = report["measures"][name]
        assert f"{m['value']:.2f} [{m['ci_low']:.2f},{m['ci_high']:.2f}]" in row
    # and the values are pytrec_eval's on the same files
    q = {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 1, "d4": 0}, "q3": {"d5": 2}, "q9": {"d1": 1}}
    r = {"q1": {"d1": 3.0, "d4": 2.0}, "q2": {"d4": 3.0, "d3": 2.5, "d9": 1.0}, "q3": {"d5": 1.0}, "q7": {"d1": 1.0}}
    te = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut.10", "recip_rank"}).evaluate(r)
    assert report["measures"]["nDCG@10"]["value"] == pytest.approx(sum(v["ndcg_cut_10"] for v in te.values()) / 3)
    assert report["measures"]["RR"]["value"] == pytest.approx(sum(v["recip_rank"] for v in te.values()) / 3)
    assert f"{report['measures']['RR']['value']:.2f}" == f"{(1 + 0.5 + 1) / 3:.2f}"
    # MaxR of q1 needs d2, which the run lacks: no value, said once, with a singular count
    assert row.split()[-1] == "-"
    assert "MaxR: needs the full ranking: 1 query has relevant documents that the run does not contain" in lines
    assert "1 query of the run without judgements (left out)" in lines
    assert "1 query judged but not in the run (left out)" in lines
    assert "↑ higher is better: nDCG@10, RR; ↓ lower is better: MaxR" in lines
    assert lines[-2].startswith("[a,b]: 95% bootstrap interval (200 resamples of the queries); n: queries")
    assert "queries have" not in text and "1 queries" not in text
