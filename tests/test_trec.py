"""TREC qrels / run files: round trips, gzip, trec_eval order, one-line errors with file:line."""
from __future__ import annotations

import gzip

import numpy as np
import pytest
import pytrec_eval

from clirbench.measures import compute, nDCG
from clirbench.rank.runs import rank_run
from clirbench.formats.trec import read_qrels, read_run, write_qrels, write_run


def test_qrels_round_trip_and_format(tmp_path):
    p = tmp_path / "qrels.txt"
    p.write_text("q1 0 d1 1\nq1 0 d10 0\n\nq2\t0\tdé 3\n  q2 Q0 d1 -1  \n", encoding="utf-8")
    q = read_qrels(p)
    assert q == {"q1": {"d1": 1, "d10": 0}, "q2": {"dé": 3, "d1": -1}}
    out = tmp_path / "out.qrels.gz"
    write_qrels(out, q)
    assert read_qrels(out) == q


def test_run_round_trip_in_trec_eval_order(tmp_path):
    run = {"q1": {"d1": 0.5, "d10": 0.5, "D2": 0.5, "é": 1.0, "x": 0.30000000000000004}, "q2": {"a": -np.inf}}
    p = tmp_path / "run.txt"
    write_run(p, run, tag="mine")
    lines = p.read_text(encoding="utf-8").splitlines()
    assert [l.split()[2] for l in lines[:5]] == ["é", "d10", "d1", "D2", "x"]  # score desc, id desc
    assert [l.split()[3] for l in lines[:5]] == ["1", "2", "3", "4", "5"]
    assert all(l.split()[5] == "mine" and l.split()[1] == "Q0" for l in lines)
    back = read_run(p)
    assert back == run  # floats round-trip exactly
    gz = tmp_path / "run.txt.gz"
    write_run(gz, run)
    assert gzip.open(gz).read(2) and read_run(gz) == run
    assert not list(tmp_path.glob(".*tmp"))  # atomic write leaves no temp file


def test_rank_column_is_ignored(tmp_path):
    p = tmp_path / "run"
    p.write_text("q Q0 a 1 1.0 t\nq Q0 b 2 1.0 t\nq Q0 c 99 2.0 t\n")
    qrels = {"q": {"a": 1}}
    t = rank_run(read_run(p), qrels)
    assert t.rank.tolist() == [3.0]  # c (2.0), then b, then a: the rank column says nothing
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(read_run(p))
    assert compute([nDCG @ 10], t)["nDCG@10"][0] == pytest.approx(ref["q"]["ndcg_cut_10"])


@pytest.mark.parametrize("text,match", [
    ("q1 0 d1\n", r"qrels:1: expected 4 fields"),
    ("q1 0 d1 1\nq1 0 d2 x\n", r"qrels:2: relevance 'x' is not an integer"),
    ("q1 0 d1 1\nq1 0 d1 2\n", r"qrels:2: doc 'd1' of query 'q1' judged twice"),
])
def test_malformed_qrels(tmp_path, text, match):
    p = tmp_path / "qrels"
    p.write_text(text)
    with pytest.raises(ValueError, match=match) as e:
        read_qrels(p)
    assert "\n" not in str(e.value) and str(p) in str(e.value)


def test_repeated_identical_qrels_line_is_refused_as_trec_eval_refuses_it(tmp_path):
    """trec_eval 9.0.8 and 10.0: "trec_eval.form_res_rels: duplicate docs d1", exit 4."""
    p = tmp_path / "qrels"
    p.write_text("q1 0 d1 1\nq2 0 d1 1\n# c\nq1 7 d1 1\n")
    with pytest.raises(ValueError, match=r"qrels:4: doc 'd1' of query 'q1' judged twice \(1 and 1\)$"):
        read_qrels(p)


@pytest.mark.parametrize("text,match", [
    ("q Q0 d 1 1.0\n", r"run:1: expected 6 fields"),
    ("q Q0 d 1 1.0 t\nq Q0 e 2 high t\n", r"run:2: score 'high' is not a number"),
    ("q Q0 d 1 nan t\n", r"run:1: score is NaN"),
    ("q Q0 d 1 1.0 t\n\nq Q0 d 2 0.5 t\n", r"run:3: doc 'd' retrieved twice for query 'q'"),
])
def test_malformed_run(tmp_path, text, match):
    p = tmp_path / "run"
    p.write_text(text)
    with pytest.raises(ValueError, match=match) as e:
        read_run(p)
    assert "\n" not in str(e.value)


def test_unreadable_files(tmp_path):
    p = tmp_path / "bin"
    p.write_bytes(b"q Q0 \xff\xfe 1 1.0 t\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_run(p)
    bad_gz = tmp_path / "trunc.gz"
    bad_gz.write_bytes(gzip.compress(b"".join(b"q 0 d%d 1\n" % i for i in range(100)))[:30])
    with pytest.raises(ValueError, match="cannot read"):
        read_qrels(bad_gz)


def test_write_rejects_unwritable_ids(tmp_path):
    with pytest.raises(ValueError, match="whitespace"):
        write_run(tmp_path / "r", {"q": {"a b": 1.0}})
    with pytest.raises(ValueError, match="whitespace"):
        write_run(tmp_path / "r", {"q": {"a": 1.0}}, tag="my tag")
    with pytest.raises(ValueError, match="NaN"):
        write_run(tmp_path / "r", {"q": {"a": float("nan")}})
    assert not (tmp_path / "r").exists()


def test_file_path_agrees_with_pytrec_eval(tmp_path):
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(30)]
    run = {f"q{j}": {d: float(rng.choice([0.1, 0.2, 0.3])) for d in rng.choice(docs, 20, replace=False)} for j in range(5)}
    qrels = {f"q{j}": {d: int(rng.integers(0, 4)) for d in rng.choice(docs, 6, replace=False)} for j in range(5)}
    write_run(tmp_path / "r.gz", run)
    write_qrels(tmp_path / "q", qrels)
    run2, qrels2 = read_run(tmp_path / "r.gz"), read_qrels(tmp_path / "q")
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}).evaluate(run)
    t = rank_run(run2, qrels2)
    np.testing.assert_allclose(nDCG.per_query(t), [ref[q]["ndcg"] for q in t.query_ids], atol=1e-12)


def test_bom_is_not_part_of_the_first_id(tmp_path):
    (tmp_path / "q").write_bytes(b"\xef\xbb\xbfq1 0 d1 1\n")
    (tmp_path / "r").write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 1.0 t\n")
    assert read_qrels(tmp_path / "q") == {"q1": {"d1": 1}}
    assert read_run(tmp_path / "r") == {"q1": {"d1": 1.0}}


@pytest.mark.parametrize("grade", ["\u0661", "1_0", "1.0", "\uff11"])
def test_grades_are_ascii_integers(tmp_path, grade):
    p = tmp_path / "qrels"
    p.write_text(f"q1 0 d1 1\nq1 0 d2 {grade}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"qrels:2: relevance '{grade}' is not an integer"):
        read_qrels(p)
    p.write_text("q1 0 d1 +2\nq1 0 d2 -1\n")
    assert read_qrels(p) == {"q1": {"d1": 2, "d2": -1}}


@pytest.mark.parametrize("score", ["\u0661", "1_0", "\u0661.5"])
def test_scores_are_ascii_numbers(tmp_path, score):
    p = tmp_path / "run"
    p.write_text(f"q Q0 d 1 {score} t\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"run:1: score .* is not a number"):
        read_run(p)
