"""Paired comparison of two result files."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from clirbench.stats.paired import compare, format_comparison
from clirbench.util.errors import ClirbenchError
from clirbench.results import Result, write_result
from clirbench.stats.summary import summarise
from clirbench.stats import paired_bootstrap, randomization_test

N = 150


def write(tmp_path, name, per_query, ids=None, **overrides):
    ids = ids if ids is not None else [f"q{i:03d}" for i in range(N)]
    fields = dict(
        task={"id": "xquad", "source": "google/xquad", "revision": "r1"}, qrels_sha256="h1",
        scenario="multi", pool_mode="unique", pool_size=480, doc_langs=("en", "zh"), query_lang="zh",
        num_queries=len(ids), retriever={"spec": name},
        measures=summarise(list(per_query), per_query, resamples=100),
        hardware={"platform": "p", "python": "3.11.7", "cpu": "c", "cores": 2},
    )
    fields.update(overrides)
    path = tmp_path / f"{name}.json"
    write_result(Result(**fields), (ids, per_query), path)
    return path


@pytest.fixture
def systems():
    rng = np.random.default_rng(0)
    a = {"nDCG@10": rng.random(N), "RR": rng.random(N), "MaxR": rng.integers(1, 480, N).astype(float)}
    b = {"nDCG@10": np.clip(a["nDCG@10"] + 0.1 + 0.05 * rng.normal(size=N), 0, 1),
         "RR": rng.random(N), "MaxR": a["MaxR"].copy(), "Complete@10": rng.random(N)}
    a["RR"][7] = b["RR"][7] = np.nan  # no value for this query (the qrels decide): on both sides
    return a, b


def test_compare_reports_b_minus_a(tmp_path, systems):
    a, b = systems
    pa, pb = write(tmp_path, "A", a), write(tmp_path, "B", b)
    report = compare(pa, pb, resamples=500, seed=3, permutations=2000)
    assert report.to_dict()["direction"] == "B - A"
    assert report.a.retriever == "A" and report.b.retriever == "B"
    assert report.num_queries == N and report.pool["doc_langs"] == ["en", "zh"]
    assert list(report.measures) == ["nDCG@10", "RR", "MaxR"]  # common columns, A's order
    nd = report.measures["nDCG@10"]
    assert nd.mean_a == pytest.approx(a["nDCG@10"].mean()) and nd.mean_b == pytest.approx(b["nDCG@10"].mean())
    assert nd.diff == pytest.approx(nd.mean_b - nd.mean_a) and nd.diff > 0.05
    assert 0 < nd.ci_low < nd.diff < nd.ci_high
    assert nd.p_value == pytest.approx(1 / 2001)
    # the numbers are stats' paired bootstrap and randomisation test on the aligned vectors
    both = paired_bootstrap(np.stack([a[m] for m in ("nDCG@10", "RR", "MaxR")], 1),
                            np.stack([b[m] for m in ("nDCG@10", "RR", "MaxR")], 1), resamples=500, seed=3)
    assert nd.ci_low == pytest.approx(both["ci_low"][0]) and nd.ci_high == pytest.approx(both["ci_high"][0])
    rr = report.measures["RR"]
    assert rr.n == N - 1
    keep = ~np.isnan(a["RR"])
    assert rr.mean_a == pytest.approx(a["RR"][keep].mean()) and rr.mean_b == pytest.approx(b["RR"][keep].mean())
    assert rr.p_value == randomization_test(a["RR"], b["RR"], resamples=2000, seed=3)
    mr = report.measures["MaxR"]  # identical columns
    assert mr.diff == 0.0 and mr.ci_low == mr.ci_high == 0.0 and mr.p_value == 1.0


def test_compare_aligns_by_query_id(tmp_path, systems):
    a, _ = systems
    ids = [f"q{i:03d}" for i in range(N)]
    perm = np.random.default_rng(1).permutation(N)
    pa = write(tmp_path, "A", a, ids=ids)
    pb = write(tmp_path, "B", {k: v[perm] for k, v in a.items()}, ids=[ids[i] for i in perm])
    report = compare(pa, pb, permutations=500)
    for row in report.measures.values():  # the same values in another row order: no difference
        assert row.diff == 0.0 and row.p_value == 1.0


def test_compare_is_antisymmetric(tmp_path, systems):
    a, b = systems
    pa, pb = write(tmp_path, "A", a), write(tmp_path, "B", b)
    ab = compare(pa, pb, measures=["nDCG@10"], permutations=1000).measures["nDCG@10"]
    ba = compare(pb, pa, measures=["nDCG@10"], permutations=1000).measures["nDCG@10"]
    assert ba.diff == pytest.approx(-ab.diff)
    assert ba.ci_low == pytest.approx(-ab.ci_high) and ba.p_value == ab.p_value


@pytest.mark.parametrize("override, field", [
    ({"scenario": "multi-1"}, "scenario"),
    ({"pool_mode": "per-query"}, "pool_mode"),
    ({"doc_langs": ("en", "de")}, "doc_langs"),
    ({"query_lang": "en"}, "query_lang"),
    ({"qrels_sha256": "other"}, "qrels_sha256"),
    ({"task": {"id": "belebele", "source": "facebook/belebele"}}, "task"),
])
def test_compare_refuses_different_pools(tmp_path, systems, override, field):
    a, b = systems
    pa, pb = write(tmp_path, "A", a), write(tmp_path, "B", b, **override)
    with pytest.raises(ClirbenchError, match="not the same pool") as info:
        compare(pa, pb)
    msg = str(info.value)
    assert isinstance(info.value, ValueError) and field in msg and "\n" not in msg


def test_compare_refuses_different_query_sets(tmp_path, systems):
    a, b = systems
    pa = write(tmp_path, "A", a)
    pb = write(tmp_path, "B", b, ids=[f"x{i:03d}" if i < 3 else f"q{i:03d}" for i in range(N)])
    with pytest.raises(ValueError, match="different query sets .3 queries only in A, 3 only in B"):
        compare(pa, pb)


def test_compare_measure_selection(tmp_path, systems):
    a, b = systems
    pa, pb = write(tmp_path, "A", a), write(tmp_path, "B", b)
    report = compare(pa, pb, measures=["RR"], permutations=100)
    assert list(report.measures) == ["RR"]
    with pytest.raises(ValueError, match="Complete@10"):
        compare(pa, pb, measures=["Complete@10"])


def test_format_comparison(tmp_path, systems):
    a, b = systems
    pa, pb = write(tmp_path, "A", a), write(tmp_path, "B", b)
    report = compare(pa, pb, permutations=999)
    text = format_comparison(report)
    lines = text.splitlines()
    assert lines[0].startswith("A: A") and lines[1].startswith("B: B") and "B - A" in lines[2]
    table, legend = lines[4:-1], lines[-1]
    assert table[0].split() == ["measure", "A", "B", "B-A", "95%", "CI", "p", "p", "adj", "d_z", "B", "better/tie/worse",
                                "n"]
    assert len(table) == 4 and table[1].startswith("nDCG@10")
    nd = report.measures["nDCG@10"]
    assert f"{nd.diff:.4f}" in table[1] and "0.0010" in table[1] and table[1].endswith(str(N))
    assert f"{nd.b_better}/{nd.ties}/{nd.b_worse}" in table[1] and f"{nd.d_z:.2f}" in table[1]
    assert len({len(line) for line in table}) == 1  # aligned columns
    assert legend.startswith("p adjusted by Holm over a family of 3 tests (the measures of this comparison)")


# ------------------------------------------------------------------ multiple testing and effect sizes


@pytest.mark.parametrize("method, theirs", [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_p_values_equal_statsmodels(method, theirs):
    from statsmodels.stats.multitest import multipletests

    from clirbench.stats.correction import adjust

    rng = np.random.default_rng(11)
    for size in (1, 2, 5, 17, 200):
        p = rng.random(size) ** 3
        p[rng.random(size) < 0.2] = p[0]  # ties
        np.testing.assert_allclose(adjust(p, method), multipletests(p, method=theirs)[1], rtol=0, atol=1e-12)
    with_nan = np.array([0.01, np.nan, 0.04, 0.03])
    got = adjust(with_nan, method)
    assert np.isnan(got[1])
    np.testing.assert_allclose(got[[0, 2, 3]], multipletests(with_nan[[0, 2, 3]], method=theirs)[1], atol=1e-12)
    assert np.array_equal(adjust(with_nan, "none"), with_nan, equal_nan=True)


def test_compare_adjusts_its_measures_as_one_family_and_gives_effect_sizes(tmp_path, systems):
    from statsmodels.stats.multitest import multipletests

    a, b = systems
    pa, pb = write(tmp_path, "A", a), write(tmp_path, "B", b)
    report = compare(pa, pb, resamples=200, permutations=500)
    raw = [row.p_value for row in report.measures.values()]
    assert [row.p_adjusted for row in report.measures.values()] == pytest.approx(multipletests(raw, method="holm")[1],
                                                                                 abs=1e-12)
    assert report.correction == "holm" and "Holm over a family of 3 tests" in report.family
    as_json = report.to_dict()["measures"]["nDCG@10"]
    assert {"p_value", "p_adjusted", "correction", "d_z", "b_better", "ties", "b_worse", "direction"} <= set(as_json)
    d = b["nDCG@10"] - a["nDCG@10"]
    nd = report.measures["nDCG@10"]
    assert nd.d_z == pytest.approx(np.mean(d) / np.std(d, ddof=1), abs=1e-12)
    assert (nd.b_better, nd.ties, nd.b_worse) == (int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum()))
    assert math.isnan(report.measures["MaxR"].d_z)  # identical columns: no variation, no standardised effect
    assert compare(pa, pb, permutations=500, correction="none").measures["RR"].p_adjusted == report.measures["RR"].p_value
    bh = compare(pa, pb, permutations=500, correction="bh")
    assert [r.p_adjusted for r in bh.measures.values()] == pytest.approx(multipletests(raw, method="fdr_bh")[1], abs=1e-12)


def test_compare_cli_prints_and_writes_the_correction(tmp_path, systems, capsys):
    from clirbench.cli import main

    a, b = systems
    pa, pb = write(tmp_path, "A", a), write(tmp_path, "B", b)
    assert main(["compare", str(pa), str(pb), "--resamples", "100", "--permutations", "200", "--correction", "bh"]) == 0
    text = capsys.readouterr().out
    assert "p adj" in text and "Benjamini-Hochberg over a family of 3 tests" in text and "B better/tie/worse" in text
    assert main(["compare", str(pa), str(pb), "--resamples", "100", "--permutations", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["correction"]["method"] == "holm" and out["measures"]["RR"]["correction"] == "holm"
    assert out["measures"]["RR"]["p_adjusted"] >= out["measures"]["RR"]["p_value"]


def test_better_and_worse_follow_each_measures_direction_through_the_cli(tmp_path, capsys):
    """MaxR is a rank (lower is better): B ranking the last relevant document higher up is B better,
    in the text table, the JSON and the flips; SameLangFirst (best at a target) has no per-query
    direction."""
    from clirbench.cli import main

    ids = [f"q{i:03d}" for i in range(6)]
    a = {"RR": np.array([0.5, 0.5, 1.0, 0.2, 0.2, 1.0]), "MaxR": np.array([10.0, 3, 3, 7, 2, 9]),
         "SameLangFirst": np.array([100.0, 0, 100, 0, 100, 0])}
    b = {"RR": np.array([1.0, 0.5, 0.5, 0.25, 1.0, 1.0]), "MaxR": np.array([2.0, 3, 8, 4, 1, 4]),
         "SameLangFirst": np.array([0.0, 0, 100, 100, 100, 0])}
    pa, pb = write(tmp_path, "A", a, ids=ids), write(tmp_path, "B", b, ids=ids)
    assert main(["compare", str(pa), str(pb), "--resamples", "50", "--permutations", "50", "--json",
                 "--flips", "2", "--flip-measure", "MaxR"]) == 0
    out = json.loads(capsys.readouterr().out)
    rr, maxr, slf = (out["measures"][m] for m in ("RR", "MaxR", "SameLangFirst"))
    assert (rr["b_better"], rr["ties"], rr["b_worse"], rr["direction"]) == (3, 2, 1, "up")
    # MaxR: B lower (better) on q000, q003, q004, q005; equal on q001; higher (worse) on q002
    assert (maxr["b_better"], maxr["ties"], maxr["b_worse"], maxr["direction"]) == (4, 1, 1, "down")
    assert "b_better" not in slf and slf["direction"] == "target"
    assert [(f["query_id"], f["change"]) for f in out["flips"]["queries"]] == [("q000", "B better"),
                                                                              ("q002", "B worse")]
    assert main(["compare", str(pa), str(pb), "--resamples", "50", "--permutations", "50",
                 "--flips", "2", "--flip-measure", "MaxR"]) == 0
    text = capsys.readouterr().out
    row = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith(("RR ", "MaxR ", "Same"))}
    assert row["MaxR"][-2] == "4/1/1" and row["RR"][-2] == "3/2/1" and row["SameLangFirst"][-2] == "-"
    assert "lower is better: MaxR" in text
    assert "MaxR A 10 -> B 2 (B - A -8, B better)" in text and "(B - A 5, B worse)" in text
