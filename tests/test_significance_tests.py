"""The paired-test table (stats/significance_tests.py) and measures.direction: the seam a new test plugs into."""
from __future__ import annotations

import numpy as np
import pytest

from clirbench.display.paper import comparison_table
from clirbench.measures import direction
from clirbench.stats import randomization_test
from clirbench.stats import significance_tests
from clirbench.stats.paired import compare, format_comparison, paired_rows
from clirbench.stats.significance_tests import DEFAULT_TEST, PAIRED_TESTS, PairedTest, paired_test
from clirbench.util.errors import UnknownNameError
from test_compare import write


@pytest.fixture
def two(tmp_path):
    rng = np.random.default_rng(1)
    a = {"nDCG@10": rng.random(150), "MaxR": rng.integers(1, 480, 150).astype(float)}
    b = {"nDCG@10": np.clip(a["nDCG@10"] + 0.05, 0, 1), "MaxR": a["MaxR"] - 1}
    return write(tmp_path, "A", a), write(tmp_path, "B", b)


def test_the_default_is_the_randomisation_test():
    assert DEFAULT_TEST == "randomization" and list(PAIRED_TESTS) == ["randomization"]
    test = paired_test()
    assert test.p_values is randomization_test
    assert test.describe(10000) == "randomisation test (10000 sign flips)"


def test_paired_rows_p_is_the_registered_test():
    rng = np.random.default_rng(2)
    a, b = rng.random((40, 2)), rng.random((40, 2))
    rows = paired_rows(a, b, ["nDCG@10", "MaxR"], resamples=50, seed=5, permutations=300)
    p = randomization_test(a, b, resamples=300, seed=5)
    assert [rows["nDCG@10"].p_value, rows["MaxR"].p_value] == list(p)


def test_an_unknown_test_is_refused_before_reading(tmp_path):
    with pytest.raises(UnknownNameError, match="unknown paired test 'nope'; known: randomization"):
        compare(tmp_path / "missing-a.json", tmp_path / "missing-b.json", test="nope")


def test_a_registered_test_is_used_by_compare_and_named(two, monkeypatch):
    def half(a, b, *, resamples, seed, name="resamples"):
        return np.full(np.shape(a)[1:], 0.5)[()]

    monkeypatch.setitem(PAIRED_TESTS, "half", PairedTest("half", half, "always-half", "draws"))
    pa, pb = two
    default = compare(pa, pb, resamples=50, permutations=100)
    other = compare(pa, pb, resamples=50, permutations=100, test="half")
    assert {r.p_value for r in other.measures.values()} == {0.5}
    assert [r.diff for r in other.measures.values()] == [r.diff for r in default.measures.values()]
    assert "test" not in default.to_dict() and other.to_dict()["test"] == "half"
    assert "randomisation p (100 sign flips)" in format_comparison(default)
    assert "always-half p (100 draws)" in format_comparison(other)
    assert "paired always-half test (100 draws)" in comparison_table(other)
    assert significance_tests.paired_test("half").label == "always-half"


def test_direction_by_name():
    assert [direction(n) for n in ("nDCG@10", "MaxR", "Max@R", "SameLangFirst")] == ["up", "down", "down", "target"]
    assert direction("bogus") is None and direction("R") is None  # unknown; a family that needs its cutoff
