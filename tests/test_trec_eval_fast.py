"""``clirbench trec_eval`` on the pyarrow reader with measures over all queries at once:
against outputs the real trec_eval 10.0 printed (wide_cases.jsonl.gz: parameters, larger rankings,
double-only ties, files for either reader), the strict reader against the fast one, the per-query
sums in C's order, and the helpers against plain loops."""
from __future__ import annotations

import gzip
import io
import json
import math
import random
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirbench.cli import main
from clirbench.trec_eval import Options, evaluate_files, select
from clirbench.trec_eval import inputs as te_inputs
from clirbench.trec_eval import segments as sg
from clirbench.trec_eval.rankings import NOT_POOLED, UNJUDGED, from_dicts, judgements
from clirbench.trec_eval.report import lines, write

FIX = Path(__file__).parent / "fixtures" / "trec_eval"


def run_cli(args) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["trec_eval", *map(str, args)])
    return code, out.getvalue()


def _wide_cases() -> list[dict]:
    with gzip.open(FIX / "wide_cases.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def _without_rbp(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("rbp ")]


@pytest.mark.parametrize("case", _wide_cases(), ids=lambda c: f"seed{c['seed']}")
def test_equals_recorded_trec_eval_on_wide_cases(tmp_path, case):
    """60 random cases (make_wide_cases.py) and what trec_eval 10.0 printed for them; rbp is left out
    (m_rbp.c reads two uninitialised variables)."""
    (tmp_path / "qrels").write_text(case["qrels"])
    (tmp_path / "run").write_text(case["run"])
    code, out = run_cli([*case["args"], tmp_path / "qrels", tmp_path / "run"])
    assert code == 0
    assert _without_rbp(out) == _without_rbp(case["stdout"])


def test_wide_cases_cover_what_they_are_for():
    cases = _wide_cases()
    args = [" ".join(c["args"]) for c in cases]
    assert len(cases) == 60 and all(c["version"] == "trec_eval version 10.0-rc3" for c in cases)
    assert sum("=" in a for a in args) >= 20  # gain parameters
    assert any("-m dcg.0=1" in a or "-m ideal_dcg.2=-3" in a for a in args)  # dcg/ideal_dcg/ndcg share theirs
    assert any(".-1=" in a for a in args) and any("11pt_avg.0.9" in a for a in args)  # a gain for not pooled
    assert sum(int(a.split()[2]) <= -1 for a in args) >= 10 and sum("-J" in a for a in args) >= 10
    assert sum("  " in c["run"] for c in cases) >= 5 and sum("\t" in c["run"] for c in cases) >= 5
    assert sum("1.000000000001e-12" in c["run"] or "0.100000000001" in c["run"] for c in cases) >= 20
    assert max(len(c["run"].splitlines()) for c in cases) >= 100


def test_11pt_avg_adds_its_points_from_the_last(tmp_path):
    """Query q4282 of the 5,000-query benchmark: 3 relevant documents (grades 2, 3, 3), two retrieved
    at ranks 32 and 160 of 1,000; its 11 interpolated precisions add up to 0.20625, and /11 lands on
    0.01875: trec_eval adds them from the last point down and prints 0.0187 (the first point up
    gives 0.0188)."""
    run = [f"q Q0 d{i} {i} {2000 - i} t" for i in range(1, 1001)]
    (tmp_path / "run").write_text("\n".join(run) + "\n")
    (tmp_path / "qrels").write_text("q 0 d32 2\nq 0 d160 3\nq 0 unretrieved 3\n")
    code, out = run_cli(["-q", "-m", "11pt_avg", "-m", "iprec_at_recall", tmp_path / "qrels", tmp_path / "run"])
    assert code == 0 and "11pt_avg              \tq\t0.0187" in out.splitlines()
    values = [0.0, 0.0] + [2 / 160] * 4 + [1 / 32] * 5  # the points from the last to the first
    assert f"{sum(reversed(values)) / 11:6.4f}" == "0.0188" and f"{sum(values) / 11:6.4f}" == "0.0187"


def _random_files(rng: random.Random, tmp_path: Path, layout: str = " ") -> tuple[Path, Path]:
    qrels, run = [], []
    for q in range(rng.randint(1, 6)):
        docs = [f"doc{rng.randint(0, 60)}" for _ in range(rng.randint(1, 40))]
        docs = list(dict.fromkeys(docs))
        for d in rng.sample(docs, max(1, len(docs) // 3)) + ["never"]:
            qrels.append(f"q{q} 0 {d} {rng.choice([-1, 0, 1, 2, 3])}")
        base = rng.choice([0.1, 1e20, 3.0])
        for i, d in enumerate(docs):
            score = base + rng.choice([0.0, 1e-12 * base, 2e-12 * base, 0.5])  # ties as floats, not as doubles
            run.append(layout.join([f"q{q}", "Q0", d, str(i + 1), repr(score), "tag"]))
    qp, rp = tmp_path / f"qrels{layout == ' '}", tmp_path / f"run{len(layout)}{layout == ' '}"
    qp.write_text("\n".join(qrels) + "\n")
    rp.write_text("\n".join(run) + "\n")
    return qp, rp


@pytest.mark.parametrize("seed", range(12))
def test_fast_and_strict_readers_give_the_same_output(tmp_path, monkeypatch, seed):
    """One run as the pyarrow reader takes it (one space) and as only the strict reader does (two
    spaces): the same output, scores compared as doubles (ties as floats are not ties)."""
    rng = random.Random(seed)
    qrels, fast = _random_files(rng, tmp_path)
    _, strict = _random_files(random.Random(seed), tmp_path, layout="  ")
    taken = []
    real = te_inputs.rank_run_file

    def spy(*args, **kwargs):
        got = real(*args, **kwargs)
        taken.append(got is not None)
        return got
    monkeypatch.setattr(te_inputs, "rank_run_file", spy)
    args = ["-q", "-c", "-m", "all_trec", "-m", "relstring.40"]
    code_a, a = run_cli([*args, qrels, fast])
    code_b, b = run_cli([*args, qrels, strict])
    assert taken == [True, False] and code_a == code_b == 0 and a == b
    by_hand = _relstrings(qrels, strict)
    got = {line.split("\t")[1]: line.split("\t")[2].strip("'") for line in a.splitlines()
           if line.startswith("relstring_40") and "\tall\t" not in line}
    assert got == by_hand


def _relstrings(qrels: Path, run: Path) -> dict[str, str]:
    """relstring.40 by a plain loop: score (double) then document id, both descending."""
    judged: dict[str, dict[str, int]] = {}
    for line in qrels.read_text().splitlines():
        q, _, d, g = line.split()
        judged.setdefault(q, {})[d] = int(g)
    ranked: dict[str, list] = {}
    for line in run.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        ranked.setdefault(q, []).append((float(s), d))
    out = {}
    for q in sorted(judged):
        rows = sorted(ranked.get(q, [(1.0, "ceci_nest_pas_un_docno")]), reverse=True)[:40]
        chars = []
        for _, d in rows:
            g = judged[q].get(d)
            chars.append("-" if g is None else "." if g < 0 else ">" if g > 9 else str(g))
        out[q] = "".join(chars) if q in ranked else ""
    return out


def test_gzip_and_stdin_runs_read_alike(tmp_path, monkeypatch):
    qrels, run = _random_files(random.Random(3), tmp_path)
    (tmp_path / "run.gz").write_bytes(gzip.compress(run.read_bytes()))
    code, plain = run_cli(["-q", "-m", "all_trec", qrels, run])
    code_gz, zipped = run_cli(["-q", "-m", "all_trec", qrels, tmp_path / "run.gz"])
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(run.read_bytes())))
    code_in, piped = run_cli(["-q", "-m", "all_trec", qrels, "-"])
    assert code == code_gz == code_in == 0 and plain == zipped == piped


@pytest.mark.parametrize("text,tag", [
    ("q Q0 d 1 1.0 first\nq Q0 e 2 0.5 last\n", "last"),
    ("q Q0 d 1 1.0 first\nq Q0 e 2 0.5 last\n\n\n", "last"),
    ("q Q0 d 1 1.0 first\r\nq Q0 e 2 0.5 last\r\n", "last"),
    ("\ufeffq Q0 d 1 1.0 only", "only"),
    ("q\tQ0\td\t1\t1.0\ta\nq\tQ0\te\t2\t0.5\tt\u00e9\n", "t\u00e9"),
])
def test_run_id_is_the_last_lines_tag(tmp_path, text, tag):
    path = tmp_path / "run"
    path.write_text(text, encoding="utf-8", newline="")
    (tmp_path / "run.gz").write_bytes(gzip.compress(path.read_bytes()))
    assert te_inputs.last_tag(path) == tag == te_inputs.last_tag(tmp_path / "run.gz")


def test_run_id_of_a_long_file_from_its_tail(tmp_path):
    path = tmp_path / "run"
    path.write_text("".join(f"q Q0 d{i} {i} 1.0 tag{i}\n" for i in range(20000)) + "\n" * 70000)
    assert te_inputs.last_tag(path) == "tag19999"
    report = evaluate_files(FIX / "qrels.test", FIX / "results.test", ["runid"])
    assert report.runid == (FIX / "results.test").read_text().split()[-1] == "STANDARD"


def test_streamed_output_equals_the_lines(tmp_path):
    report = evaluate_files(FIX / "qrels.test", FIX / "results.test", ["all_trec"], Options(per_query=True))
    for options in (Options(per_query=True), Options(), Options(per_query=True, summary=False)):
        out = io.StringIO()
        write(report, options, out)
        assert out.getvalue() == "".join(line + "\n" for line in lines(report, options))


# ------------------------------------------------------------------ the helpers against loops
@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=64), max_size=12), max_size=8))
def test_sums_add_each_querys_terms_in_order(groups):
    terms = np.asarray([x for g in groups for x in g], dtype=np.float64)
    bounds = np.cumsum([0] + [len(g) for g in groups])
    got = sg.seq_cumsum(terms, bounds)
    want = []
    for g in groups:
        total = 0.0
        for x in g:
            total += x
            want.append(total)
    assert got.tolist() == want
    assert sg.seq_sum(terms, bounds).tolist() == [math.fsum([]) + (w[-1] if w else 0.0)
                                                   for w in [want[a:b] for a, b in zip(bounds[:-1], bounds[1:])]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.booleans(), max_size=10), max_size=8), st.data())
def test_counts_and_firsts_equal_plain_loops(groups, data):
    mask = np.asarray([x for g in groups for x in g], dtype=bool)
    bounds = np.cumsum([0] + [len(g) for g in groups])
    values = np.asarray(data.draw(st.lists(st.floats(-5, 5), min_size=len(mask), max_size=len(mask))) or [],
                        dtype=np.float64)
    running, counts, firsts, maxes = [], [], [], []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        c = 0
        for i in range(a, b):
            c += bool(mask[i])
            running.append(c)
        counts.append(c)
        firsts.append(next((i for i in range(a, b) if mask[i]), -1))
        maxes.append(max(values[a:b].tolist(), default=-math.inf))
    assert sg.running_count(mask, bounds).tolist() == running
    assert sg.count(mask, bounds).tolist() == counts
    assert sg.first_of(mask, bounds).tolist() == firsts
    assert sg.seg_max(values, bounds).tolist() == maxes


def test_libm_log2_table_is_c_log2():
    table = sg.log2_table(5000)
    assert table[1] == 0.0 and table[2] == 1.0 and all(table[i] == math.log2(i) for i in range(1, 5001))


@pytest.mark.parametrize("seed", range(20))
def test_rankings_equal_a_sort_per_query(seed):
    """Each judged document's rank (score as a double, then id, descending), its value, the
    documents retrieved; -M and -J; the not-pooled documents listed by densified()."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(rng.randint(1, 5)):
        docs = list(dict.fromkeys(f"d{rng.randint(0, 30)}" for _ in range(rng.randint(1, 25))))
        qrels[f"q{q}"] = {d: rng.choice([-2, -1, 0, 1, 2]) for d in rng.sample(docs, max(1, len(docs) // 2))}
        qrels[f"q{q}"].setdefault("x", 1)
        if rng.random() < 0.8:
            run[f"q{q}"] = {d: rng.choice([0.1, 0.1 + 1e-15, 0.2, -0.0, 0.0]) for d in docs}
    judg = judgements(qrels)
    max_ret = rng.choice([None, 0, 3, 10])
    r = from_dicts(judg, run).cut(max_ret)
    if seed % 2:
        r = r.judged_only()
    dense = r.densified()
    for i, q in enumerate(r.query_ids):
        order = sorted(run[q], key=lambda d: (run[q][d], d), reverse=True)[:max_ret]
        values = [NOT_POOLED if d not in qrels[q] else qrels[q][d] if qrels[q][d] >= 0 else UNJUDGED for d in order]
        if seed % 2:
            values = [v for v in values if v >= 0]
        assert r.num_ret[i] == len(values)
        got = dict(zip(r.rank[r.bounds[i]:r.bounds[i + 1]].tolist(), r.value[r.bounds[i]:r.bounds[i + 1]].tolist()))
        assert got == {k + 1: v for k, v in enumerate(values) if v != NOT_POOLED}
        assert dense.value[dense.bounds[i]:dense.bounds[i + 1]].tolist() == values


def test_a_minus_one_gain_scores_the_not_pooled_documents(tmp_path):
    """ndcg.-1=2 gives every retrieved document the qrels lack a gain of 2 (the rankings list them)."""
    (tmp_path / "qrels").write_text("q 0 a 1\nq 0 b 0\n")
    (tmp_path / "run").write_text("q Q0 a 1 3 t\nq Q0 u 2 2 t\nq Q0 b 3 1 t\n")
    code, out = run_cli(["-q", "-m", "dcg.-1=2", tmp_path / "qrels", tmp_path / "run"])
    assert code == 0 and f"\tq\t{1 / math.log2(2) + 2 / math.log2(3):6.4f}" in out


def test_select_shares_dcg_parameters_as_m_ndcg_c():
    """dcg, ideal_dcg and ndcg are computed with the last parameters given to any of them, each named
    with those set when its turn comes (trec_eval's print order)."""
    got = {s.record.name: (s.names, s.params) for s in select(["ndcg", "dcg.1=5", "ideal_dcg.2=3", "ndcg_rel.1=9"])}
    assert got["dcg"] == (("dcg_1=5",), (("2", 3.0),))
    assert got["ideal_dcg"] == (("ideal_dcg_2=3",), (("2", 3.0),))
    assert got["ndcg"] == (("ndcg_2=3",), (("2", 3.0),))
    assert got["ndcg_rel"] == (("ndcg_rel_1=9",), (("1", 9.0),))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 10),
                          st.integers(0, 320000).map(lambda k: k / 32000)), max_size=50))
def test_per_query_values_print_as_printf(values):
    """The numpy digits of %6.4f equal C's (Python's) formatting, halves (k / 32000) and all."""
    from clirbench.trec_eval.report import _c_float, _fixed4

    got = [b.decode() for b in _fixed4(np.asarray(values, dtype=np.float64)).tolist()]
    assert got == [_c_float(v) for v in values]
