"""Bootstrap intervals and paired tests: agreement with naive loops, scipy and exact enumeration."""
from __future__ import annotations

import itertools
import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from clirbench.stats import bootstrap_ci, bootstrap_means, paired_bootstrap, randomization_test


def naive_bootstrap_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The textbook loop: draw n query indices with replacement, take the (nan)mean."""
    rng = np.random.default_rng(seed)
    n = len(values)
    out = []
    for _ in range(resamples):
        idx = rng.integers(0, n, size=n)
        out.append(np.nanmean(values[idx], axis=0))
    return np.array(out)


def exact_sign_flip_p(d: np.ndarray) -> float:
    """Exact two-sided p over all 2^n sign flips (the identity included)."""
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
    stats = np.abs(signs @ d)
    return float(np.mean(stats >= abs(d.sum()) - 1e-12))


# --- bootstrap_means / bootstrap_ci ---------------------------------------------------------------


def test_bootstrap_means_match_naive_loop_with_same_stream():
    x = np.random.default_rng(0).random(57)
    ours = bootstrap_means(x, resamples=300, seed=7)
    ref = naive_bootstrap_means(x, 300, 7)
    assert ours.shape == (300,)
    np.testing.assert_allclose(ours, ref, rtol=1e-13, atol=1e-15)


def test_bootstrap_means_2d_and_nan_match_naive_loop():
    v = np.random.default_rng(1).normal(size=(40, 3))
    v[::5, 1] = np.nan
    v[:, 2] = np.nan
    v[7, 2] = 3.0  # a single defined value: resamples that miss it have NaN mean
    ours = bootstrap_means(v, resamples=200, seed=3, chunk=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = naive_bootstrap_means(v, 200, 3)
    np.testing.assert_allclose(ours, ref, rtol=1e-13, atol=1e-15)
    assert np.isnan(ours[:, 2]).any() and (ours[~np.isnan(ours[:, 2]), 2] == 3.0).all()


def test_columns_resampled_with_same_indices_as_1d():
    v = np.random.default_rng(2).random((30, 4))
    v[3, 2] = np.nan
    joint = bootstrap_means(v, 100, seed=5)
    for j in range(4):
        np.testing.assert_allclose(joint[:, j], bootstrap_means(v[:, j], 100, seed=5), rtol=1e-13)


def test_chunk_size_does_not_change_the_stream():
    x = np.random.default_rng(3).random(101)
    ref = bootstrap_means(x, 250, seed=11)
    for chunk in (1, 7, 250, 10_000):
        np.testing.assert_allclose(bootstrap_means(x, 250, seed=11, chunk=chunk), ref, rtol=1e-13)


def test_reproducible_with_seed_and_different_seed_differs():
    x = np.random.default_rng(4).random(200)
    assert bootstrap_ci(x, seed=42) == bootstrap_ci(x, seed=42)
    assert bootstrap_ci(x, seed=42) != bootstrap_ci(x, seed=43)


def test_ci_contains_mean_and_is_ordered():
    rng = np.random.default_rng(5)
    for x in (rng.random(50), rng.exponential(size=300), (rng.random(80) < 0.3).astype(float)):
        low, high = bootstrap_ci(x)
        assert low < x.mean() < high


def test_ci_width_shrinks_with_n():
    rng = np.random.default_rng(6)
    widths = []
    for n in (100, 1_000, 10_000):
        low, high = bootstrap_ci(rng.random(n))
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    # roughly 1/sqrt(n): a factor of about 3.16 per step
    assert 2.0 < widths[0] / widths[1] < 5.0 and 2.0 < widths[1] / widths[2] < 5.0


def test_ci_per_column_for_2d():
    rng = np.random.default_rng(7)
    v = np.stack([rng.random(500), 10 + rng.random(500)], axis=1)
    low, high = bootstrap_ci(v)
    assert low.shape == high.shape == (2,)
    assert (low < v.mean(axis=0)).all() and (v.mean(axis=0) < high).all()
    assert low[1] > 9.0 and high[0] < 1.0


def test_confidence_widens_interval():
    x = np.random.default_rng(8).random(300)
    l90, h90 = bootstrap_ci(x, confidence=0.90)
    l99, h99 = bootstrap_ci(x, confidence=0.99)
    assert l99 < l90 and h90 < h99


def test_agrees_with_scipy_percentile_bootstrap_in_distribution():
    import scipy.stats as scipy_stats

    x = np.random.default_rng(9).exponential(size=400)
    low, high = bootstrap_ci(x, resamples=5000, seed=1)
    ref = scipy_stats.bootstrap((x,), np.mean, n_resamples=5000, method="percentile",
                                confidence_level=0.95, random_state=np.random.default_rng(2))
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert abs(low - ref.confidence_interval.low) < 0.1 * width
    assert abs(high - ref.confidence_interval.high) < 0.1 * width
    assert abs((high - low) - width) < 0.1 * width


def test_all_nan_column_gives_nan_interval_not_error():
    v = np.column_stack([np.arange(10.0), np.full(10, np.nan)])
    low, high = bootstrap_ci(v, resamples=50)
    assert np.isfinite(low[0]) and np.isnan(low[1]) and np.isnan(high[1])


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        bootstrap_means(np.array([]))
    with pytest.raises(ValueError, match="infinite"):
        bootstrap_means(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="1-D"):
        bootstrap_means(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(np.ones(3), confidence=95)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_means(np.ones(3), resamples=0)


def test_does_not_mutate_input():
    x = np.array([0.1, np.nan, 0.7, 0.3])
    before = x.copy()
    bootstrap_ci(x)
    paired_bootstrap(x, x[::-1].copy())
    randomization_test(x, x[::-1].copy(), resamples=100)
    np.testing.assert_array_equal(x, before)


def test_large_n_runs_in_bounded_chunks():
    # 357,710 queries as in the largest pool: must not allocate resamples × n at once
    x = np.random.default_rng(10).random(357_710)
    means = bootstrap_means(x, resamples=20, seed=1)
    assert means.shape == (20,) and np.all(np.abs(means - x.mean()) < 0.005)


# --- paired bootstrap -------------------------------------------------------------------------------


def test_paired_bootstrap_is_b_minus_a_with_shared_indices():
    rng = np.random.default_rng(11)
    a = rng.random(120)
    b = a + 0.05 + 0.01 * rng.normal(size=120)
    out = paired_bootstrap(a, b, resamples=500, seed=4)
    assert out["diff"] == pytest.approx(b.mean() - a.mean())
    assert out["n"] == 120
    # same indices for both systems: the interval is that of the per-query differences
    low, high = bootstrap_ci(b - a, resamples=500, seed=4)
    assert (out["ci_low"], out["ci_high"]) == (low, high)
    # and it is much tighter than an unpaired one (independent indices would not cancel a's noise)
    ma = bootstrap_means(a, 500, seed=4)
    mb = bootstrap_means(b, 500, seed=4)
    np.testing.assert_allclose(np.quantile(mb - ma, [0.025, 0.975]), [low, high], rtol=1e-9)
    assert 0.04 < low < out["diff"] < high < 0.06


def test_paired_bootstrap_drops_queries_undefined_for_either():
    a = np.array([0.1, np.nan, 0.5, 0.2, 0.9])
    b = np.array([0.3, 0.4, np.nan, 0.2, 1.0])
    out = paired_bootstrap(a, b, resamples=200)
    assert out["n"] == 3
    assert out["diff"] == pytest.approx(np.mean([0.2, 0.0, 0.1]))


def test_paired_bootstrap_2d():
    rng = np.random.default_rng(12)
    a = rng.random((60, 2))
    b = a + np.array([0.1, -0.2])
    out = paired_bootstrap(a, b)
    np.testing.assert_allclose(out["diff"], [0.1, -0.2])
    np.testing.assert_allclose(out["ci_low"], [0.1, -0.2], atol=1e-12)
    np.testing.assert_array_equal(out["n"], [60, 60])


def test_identical_systems_diff_zero_p_one():
    a = np.random.default_rng(13).random(80)
    out = paired_bootstrap(a, a.copy())
    assert out["diff"] == 0.0 and out["ci_low"] == 0.0 and out["ci_high"] == 0.0
    assert randomization_test(a, a.copy()) == 1.0


def test_paired_bootstrap_shape_mismatch():
    with pytest.raises(ValueError, match="same shape"):
        paired_bootstrap(np.ones(3), np.ones(4))


# --- randomisation test -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_randomization_matches_exact_enumeration(seed):
    rng = np.random.default_rng(100 + seed)
    a = rng.random(10)
    b = a + rng.normal(0.15 * seed, 0.2, size=10)
    exact = exact_sign_flip_p(b - a)
    resamples = 20_000
    p = randomization_test(a, b, resamples=resamples, seed=seed)
    se = np.sqrt(exact * (1 - exact) / resamples) + 1 / resamples
    assert abs(p - exact) < 5 * se, (p, exact)


def test_randomization_counts_exact_ties():
    # d = ±1 values: many flips tie the observed |sum| exactly and must count as "as extreme"
    d = np.array([1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0])
    exact = exact_sign_flip_p(d)
    p = randomization_test(np.zeros(8), d, resamples=20_000, seed=5)
    assert abs(p - exact) < 0.015


def test_randomization_strong_effect_gives_minimum_p():
    rng = np.random.default_rng(14)
    a = rng.random(500)
    b = a + 0.2
    assert randomization_test(a, b, resamples=999) == pytest.approx(1 / 1000)


def test_randomization_2d_columns_equal_1d_calls():
    rng = np.random.default_rng(15)
    a = rng.random((50, 3))
    b = a + rng.normal(0.02, 0.1, size=(50, 3))
    b[4, 1] = np.nan
    joint = randomization_test(a, b, resamples=2000, seed=9)
    for j in range(3):
        assert joint[j] == randomization_test(a[:, j], b[:, j], resamples=2000, seed=9)


def test_randomization_nan_equals_dropping_the_query():
    # a NaN difference is zero-filled, and a zero is unchanged by a flip: p is as if it were dropped
    rng = np.random.default_rng(16)
    a, b = rng.random(12), rng.random(12)
    a_nan = a.copy()
    a_nan[5] = np.nan
    keep = np.arange(12) != 5
    p_nan = randomization_test(a_nan, b, resamples=20_000, seed=1)
    exact = exact_sign_flip_p(b[keep] - a[keep])
    assert abs(p_nan - exact) < 0.02


def test_randomization_chunk_and_seed():
    rng = np.random.default_rng(17)
    a, b = rng.random(70), rng.random(70) + 0.05
    p = randomization_test(a, b, resamples=3000, seed=2)
    assert p == randomization_test(a, b, resamples=3000, seed=2, chunk=1)
    assert p == randomization_test(a, b, resamples=3000, seed=2, chunk=333)
    assert p != randomization_test(a, b, resamples=3000, seed=3)


# --- properties -------------------------------------------------------------------------------------

finite = st.floats(min_value=-100, max_value=100, allow_nan=False, allow_infinity=False)


@st.composite
def paired_samples(draw):
    n = draw(st.integers(min_value=1, max_value=40))
    a = draw(arrays(np.float64, n, elements=finite))
    b = draw(arrays(np.float64, n, elements=finite))
    perm = draw(st.permutations(list(range(n))))
    return a, b, np.array(perm, dtype=np.int64)


@settings(max_examples=60, deadline=None)
@given(paired_samples())
def test_property_joint_permutation_keeps_paired_diff(sample):
    a, b, perm = sample
    out = paired_bootstrap(a, b, resamples=50)
    out_perm = paired_bootstrap(a[perm], b[perm], resamples=50)
    assert out_perm["diff"] == pytest.approx(out["diff"], rel=1e-9, abs=1e-9)
    assert out["ci_low"] <= out["ci_high"]


@settings(max_examples=60, deadline=None)
@given(paired_samples(), st.integers(min_value=1, max_value=300), st.integers(min_value=0, max_value=2**32))
def test_property_p_in_unit_interval_and_symmetric(sample, resamples, seed):
    a, b, _ = sample
    p = randomization_test(a, b, resamples=resamples, seed=seed)
    assert 0.0 < p <= 1.0
    assert p >= 1.0 / (1 + resamples)
    # |mean(s·(−d))| = |mean(s·d)| for every flip: swapping the systems leaves p unchanged
    assert randomization_test(b, a, resamples=resamples, seed=seed) == p


@settings(max_examples=60, deadline=None)
@given(paired_samples())
def test_property_swapping_systems_negates_diff_and_interval(sample):
    a, b, _ = sample
    ab = paired_bootstrap(a, b, resamples=100, seed=1)
    ba = paired_bootstrap(b, a, resamples=100, seed=1)
    assert ba["diff"] == pytest.approx(-ab["diff"], abs=1e-9)
    assert ba["ci_low"] == pytest.approx(-ab["ci_high"], abs=1e-9)
    assert ba["ci_high"] == pytest.approx(-ab["ci_low"], abs=1e-9)


def test_bootstrap_is_bit_identical_whatever_the_blas_thread_count():
    """A Ray worker runs BLAS on one thread, the driver on all cores: the same intervals, to the bit."""
    import subprocess
    import sys


    code = ("import numpy as np, sys; from clirbench.stats import bootstrap_means, randomization_test; "
            "v = np.random.default_rng(3).random((1190, 10)) * 100; v[::7, 2] = np.nan; "
            "sys.stdout.buffer.write(bootstrap_means(v, 1000).tobytes() + randomization_test(v[:, :5], v[:, 5:], 2000).tobytes())")
    values = np.random.default_rng(3).random((1190, 10)) * 100
    values[::7, 2] = np.nan
    here = bootstrap_means(values, 1000).tobytes() + randomization_test(values[:, :5], values[:, 5:], 2000).tobytes()
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              check=True).stdout == here
