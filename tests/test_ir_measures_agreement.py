"""``clirbench evaluate`` gives ir_measures' values for every ir_measures name it accepts (ir_measures
itself as the reference: ``calc_aggregate`` and ``iter_calc``), trec_eval's summaries for trec_eval's
names (geometric mean, sums, count: recorded trec_eval output), and refuses other spellings in one line."""
from __future__ import annotations

import json
import math
import random
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pytest

from clirbench.cli import main
from clirbench.trec_files import evaluate_files

FIX = Path(__file__).parent / "fixtures" / "trec_eval"

# every ir_measures spelling clirbench evaluate takes (docs/commands.md), with parameters
ACCEPTED = [
    "nDCG", "nDCG@10", "nDCG@3", "NDCG@5", "nDCG(judged_only=True)@10", "nDCG(judged_only=True)",
    "nDCG(dcg='log2')@5", "AP", "MAP", "AP@5", "AP(rel=2)", "AP(rel=2)@5", "AP(judged_only=True)",
    "RR", "MRR", "RR(rel=2)", "RR(judged_only=True)", "R@5", "Recall@5", "R(rel=2)@5", "R(judged_only=True)@5",
    "P@5", "Precision@5", "P(rel=2)@5", "P(judged_only=True)@3", "P(rel=2,judged_only=True)@5",
    "Success@5", "Success(rel=2)@5", "Rprec", "RPrec", "Rprec(rel=2)", "Rprec(judged_only=True)",
    "Bpref", "BPref", "Bpref(rel=2)", "infAP", "infAP(rel=2)", "SetP", "SetP(rel=2)", "SetP(relative=True)",
    "SetRelP", "SetP(judged_only=True)", "SetR", "SetR(rel=2)", "SetF", "SetF(rel=2)", "SetF(beta=2.0)",
    "SetF(beta=0.5)", "SetAP", "SetAP(rel=2)", "NumRet", "NumRet(rel=2)", "NumRelRet", "NumRelRet(rel=2)",
    "NumRel", "NumQ",
]
# ir_measures ranks these by score, then document id *ascending* (its Judged and MS MARCO providers);
# clirbench by trec_eval's rule everywhere (descending): compared on runs without score ties (docs/commands.md)
UNTIED = ["RR@5", "RR@1", "RR(rel=2)@5", "Judged@5", "Judged@10", "Judged"]


def _case(seed: int, ties: bool) -> tuple[str, str]:
    """Qrels and a run over the same queries (ir_measures scores a judged query missing from the run
    as 0, clirbench leaves it out: tested apart); grades 0-3, unjudged and unretrieved documents."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(rng.randint(1, 15))]
    qrels, run = [], []
    for qi in range(rng.randint(1, 5)):
        q = f"q{qi}"
        judged = [d for d in docs if rng.random() < 0.5] or [docs[0]]
        qrels += [f"{q} 0 {d} {rng.choice([0, 0, 1, 1, 2, 3])}" for d in judged]
        ranked = [d for d in docs + ["u1", "u2", "u3"] if rng.random() < 0.7] or [docs[0]]
        scores = rng.sample(range(1000), len(ranked)) if not ties else [rng.choice([0, 0.5, 1, 2]) for _ in ranked]
        run += [f"{q} Q0 {d} {i + 1} {s} t" for i, (d, s) in enumerate(zip(ranked, scores))]
    if rng.random() < 0.5:
        run.append("q-unjudged Q0 d0 1 1.0 t")  # both leave out a query the qrels do not judge
    return "\n".join(qrels) + "\n", "\n".join(run) + "\n"


def _ir_measures(name, qrels_path, run_path):
    measure = ir_measures.parse_measure(name)
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run = list(ir_measures.read_trec_run(str(run_path)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aggregate = ir_measures.calc_aggregate([measure], qrels, run)[measure]
        per_query = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    return aggregate, per_query


def _assert_agree(tmp_path, names, ties, seeds):
    for seed in seeds:
        qrels_text, run_text = _case(seed, ties)
        (tmp_path / "qrels").write_text(qrels_text)
        (tmp_path / "run").write_text(run_text)
        ev = evaluate_files(tmp_path / "qrels", tmp_path / "run", names, resamples=20)
        ids, columns = ev.per_query
        for name, key in zip(names, ev.measures):
            want, want_per_query = _ir_measures(name, tmp_path / "qrels", tmp_path / "run")
            assert ev.measures[key].value == pytest.approx(want, abs=1e-12), (name, seed)
            assert dict(zip(ids, columns[key].tolist())) == pytest.approx(want_per_query, abs=1e-12), (name, seed)


@pytest.mark.parametrize("name", ACCEPTED)
def test_equals_ir_measures_on_tied_graded_runs(tmp_path, name):
    _assert_agree(tmp_path, [name], ties=True, seeds=range(12))


@pytest.mark.parametrize("name", UNTIED)
def test_equals_ir_measures_without_ties(tmp_path, name):
    _assert_agree(tmp_path, [name], ties=False, seeds=range(12))


def test_many_names_in_one_call_equal_each_alone(tmp_path):
    """Names sharing a trec_eval measure with other parameters (P@5, P(rel=2)@5, P(judged_only=True)@3)
    are computed in separate passes, not merged."""
    _assert_agree(tmp_path, ["P(rel=2)@5", "P(judged_only=True)@3", "SetF(beta=2.0)", "SetF", "NumRet",
                             "NumRet(rel=2)", "nDCG(judged_only=True)@10", "nDCG@10", "AP(rel=2)@5", "AP"],
                  ties=True, seeds=range(6))


def test_judged_counts_the_documents_retrieved_when_fewer_than_k(tmp_path):
    """Judged@10 of 3 retrieved documents, none judged: 0 (ir_measures), not 1 - 3/10."""
    (tmp_path / "qrels").write_text("q 0 a 1\n")
    (tmp_path / "run").write_text("q Q0 x 1 3 t\nq Q0 y 2 2 t\nq Q0 z 3 1 t\n")
    ev = evaluate_files(tmp_path / "qrels", tmp_path / "run", ["Judged@10"], resamples=20)
    assert ev.measures["Judged@10"].value == 0.0 == _ir_measures("Judged@10", tmp_path / "qrels", tmp_path / "run")[0]


def test_a_judged_query_missing_from_the_run_is_left_out(tmp_path):
    """The documented difference: ir_measures scores it 0 (and counts it in NumQ), clirbench measures
    the queries the run and the qrels share (trec_eval's rule) and reports how many it left out."""
    (tmp_path / "qrels").write_text("q1 0 a 1\nq2 0 b 1\n")
    (tmp_path / "run").write_text("q1 Q0 a 1 1.0 t\n")
    ev = evaluate_files(tmp_path / "qrels", tmp_path / "run", ["AP", "NumQ"], resamples=20)
    assert ev.measures["AP"].value == 1.0 and ev.measures["NumQ"].value == 1.0
    assert ev.queries_judged_not_in_run == 1
    assert _ir_measures("AP", tmp_path / "qrels", tmp_path / "run")[0] == 0.5


def _summary_lines(expected: str) -> dict[str, float]:
    out = {}
    for line in (FIX / expected).read_text().splitlines():
        name, qid, value = line.split("\t")[:3]
        if qid == "all" and name.strip() != "runid":
            out[name.strip()] = float(value)
    return out


def _per_query_lines(expected: str) -> dict[tuple[str, str], float]:
    out = {}
    for line in (FIX / expected).read_text().splitlines():
        name, qid, value = line.split("\t")[:3]
        if qid != "all" and name.strip() not in ("runid", "relstring"):
            out[(name.strip(), qid)] = float(value)
    return out


@pytest.mark.parametrize("qrels,expected", [("qrels.test", "out.test.aq"), ("qrels.rel_level", "out.te10.aql0")])
def test_trec_eval_names_summarise_as_trec_eval(capsys, tmp_path, qrels, expected):
    """gm_map and gm_bpref are geometric means, the counts sums, num_q the number of queries: the values
    trec_eval printed (recorded), with intervals around them; per query (--per-query) as trec_eval -q."""
    names = ["gm_map", "gm_bpref", "num_ret", "num_rel", "num_rel_ret", "num_q", "num_nonrel_judged_ret", "NumRet",
             "NumRel", "NumRelRet", "NumQ", "map", "bpref", "Rprec", "ndcg_cut_10", "P_5"]
    level = ["--measures", ",".join(names)]
    code = main(["evaluate", "--json", "--qrels", str(FIX / qrels), "--run", str(FIX / "results.test"), *level,
                 "--resamples", "200", "--per-query", str(tmp_path / "pq.tsv")])
    got = json.loads(capsys.readouterr().out)["measures"]
    assert code == 0
    if expected == "out.te10.aql0":  # that file is -l 0; evaluate's names take rel=1: compare only what -l leaves alone
        names = ["num_ret", "NumRet", "num_q", "NumQ"]
    want = _summary_lines(expected)
    alias = {"NumRet": "num_ret", "NumRel": "num_rel", "NumRelRet": "num_rel_ret", "NumQ": "num_q"}
    for name in names:
        m = got[name]
        assert round(m["value"], 4) == want[alias.get(name, name)], name
        assert m["ci_low"] <= m["value"] <= m["ci_high"], name
    assert got["gm_bpref"]["value"] < got["bpref"]["value"] and got["gm_map"]["value"] < got["map"]["value"]
    assert got["num_ret"]["value"] == 1500 and got["num_q"] == got["NumQ"] and got["NumQ"]["ci_low"] == 3
    per_query = {}
    for line in (tmp_path / "pq.tsv").read_text().splitlines()[1:]:
        qid, name, value = line.split("\t")
        per_query[(alias.get(name, name), qid)] = float(value)
    for (name, qid), value in _per_query_lines(expected).items():
        if (name, qid) in per_query and name in names:
            assert round(per_query[(name, qid)], 4) == value, (name, qid)
    ap = {q: v for (n, q), v in per_query.items() if n == "map"}
    gm = {q: v for (n, q), v in per_query.items() if n == "gm_map"}
    assert gm == pytest.approx({q: max(v, 1e-5) for q, v in ap.items()}, rel=1e-12)  # per query: AP floored, whose geometric mean is gm_map
    assert math.exp(np.mean(np.log(list(gm.values())))) == pytest.approx(got["gm_map"]["value"], rel=1e-12)


@pytest.mark.parametrize("name,why", [
    ("nDCG(dcg='exp-log2')@10", "dcg="), ("nDCG(gains={0:0,1:1})@10", "gains"), ("P(foo=1)@5", "foo"),
    ("P(rel=x)@5", "rel must be an integer"), ("SetF(beta=-1)", "beta"), ("Bpref(judged_only=True)", "judged_only"),
    ("RR(judged_only=True)@5", "judged_only"), ("P(rel=2,rel=3)@5", "twice"), ("Rprec@5", "no cutoff"),
    ("P(rel=2)", "needs a cutoff"), ("nDCG(judged_only=yes)@10", "True or False"),
])
def test_other_spellings_are_refused_in_one_line(capsys, name, why):
    code = main(["evaluate", "--qrels", str(FIX / "qrels.test"), "--run", str(FIX / "results.test"), "--measures",
                 name])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("clirbench: ")
    assert why in err and name[:20] in err
