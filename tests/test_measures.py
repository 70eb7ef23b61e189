"""Measure names, parsing, and hand-computed values of the rank-set measures."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from clirbench.measures import (AP, DEFAULT_MEASURES, EXPOSURE_MEASURES, MAIN_MEASURES, RANK_MEASURES, MRR, RR, Complete, MaxR, MaxR_norm,
                                MaxR_norm_of_mean, P, R, SameLangFirst, Success, compute, maxr_norm_of_mean,
                                nDCG, parse)
from clirbench.rank.table import RankTable
from trec_keys import pytrec_key


def table(ranks_per_query, num_docs, grades=None, same=None) -> RankTable:
    q = np.repeat(np.arange(len(ranks_per_query)), [len(r) for r in ranks_per_query])
    rank = np.array([x for r in ranks_per_query for x in r], dtype=float)
    grade = np.ones(len(rank)) if grades is None else np.array([x for g in grades for x in g], dtype=float)
    sl = None if same is None else np.array([x for s in same for x in s], dtype=bool)
    return RankTable(tuple(f"q{i}" for i in range(len(ranks_per_query))), np.asarray(num_docs, float), q, rank, grade, sl)


@pytest.mark.parametrize("name", ["nDCG@10", "nDCG", "AP@1000", "AP", "R@100", "P@10", "Success@10", "RR", "RR@10",
                                  "MaxR", "MaxR_norm", "MaxR_norm_of_mean", "Complete@10", "SameLangFirst", "nDCG@1"])
def test_names_round_trip(name):
    m = parse(name)
    assert str(m) == name and m.name == name and parse(str(m)) == m and hash(parse(name)) == hash(m)


@pytest.mark.parametrize("alias,canonical", [("MRR", "RR"), ("MRR@10", "RR@10"), ("MAP@1000", "AP@1000"),
                                             ("MAP", "AP"), ("Recall@100", "R@100"), ("NDCG@10", "nDCG@10"),
                                             ("Max@R", "MaxR"), ("Max@R_norm", "MaxR_norm"),
                                             ("Max@R_norm_of_mean", "MaxR_norm_of_mean"), (" nDCG@3 ", "nDCG@3")])
def test_aliases(alias, canonical):
    assert str(parse(alias)) == canonical


def test_python_side_objects():
    assert parse("nDCG@10") == nDCG @ 10 and nDCG @ 10 != nDCG @ 5 and nDCG @ 10 != AP @ 10
    assert parse("MRR") == MRR == RR and str(R @ 100) == "R@100" and str(P @ 5) == "P@5"
    assert parse("Complete@10") == Complete @ 10 and parse("Success@1") == Success @ 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        (nDCG @ 10).cutoff = 5
    with pytest.raises(ValueError):
        (nDCG @ 10) @ 5
    with pytest.raises(ValueError):
        MaxR @ 10
    with pytest.raises(ValueError):
        nDCG @ 0
    assert not MaxR.higher_is_better and nDCG.higher_is_better and MaxR_norm.higher_is_better
    assert MaxR_norm_of_mean.of_mean and not MaxR_norm.of_mean and not MaxR.of_mean
    assert pytrec_key(nDCG @ 10) == "ndcg_cut_10" and pytrec_key(AP) == "map" and pytrec_key(AP @ 5) == "map_cut_5"
    assert pytrec_key(RR @ 10) is None and pytrec_key(R @ 3) == "recall_3" and pytrec_key(MaxR) is None


@pytest.mark.parametrize("bad", ["ndcg@10", "nDCG@0", "nDCG@-1", "nDCG@x", "Foo", "R", "P", "Complete", "MaxR@10",
                                 "SameLangFirst@5", "", "nDCG@10@10", "Max@R@3", "nDCG @10"])
def test_unknown_names_one_line_error(bad):
    with pytest.raises(ValueError) as e:
        parse(bad)
    msg = str(e.value)
    assert "\n" not in msg and "nDCG[@k]" in msg and "MaxR_norm_of_mean" in msg


def test_template_without_cutoff_refuses_to_compute():
    with pytest.raises(ValueError, match="cutoff"):
        R.per_query(table([[1]], [10]))


def test_paper_values_for_maxr_norm_of_mean():
    """Table 1 of the Max@R paper: the formula applied to the mean Max@R (2-decimal inputs)."""
    assert round(maxr_norm_of_mean(650.95, 2380, 2), 2) == 18.31
    assert round(maxr_norm_of_mean(476.45, 1800, 2), 2) == 19.54
    # 9.30 is itself rounded: the exact 78.29 lies within its rounding interval [9.295, 9.305]
    assert maxr_norm_of_mean(9.30, 2380, 2) == pytest.approx(78.29, abs=0.01)
    assert maxr_norm_of_mean(9.305, 2380, 2) <= 78.295 <= maxr_norm_of_mean(9.295, 2380, 2)
    np.testing.assert_allclose(maxr_norm_of_mean(np.array([2.0, 2380.0]), 2380, 2), [100.0, 0.0])


def test_maxr_and_maxr_norm_by_hand():
    t = table([[1, 2], [3, 40], [100], []], [100, 100, 100, 100], grades=[[1, 2], [1, 1], [3], []])
    v = compute([MaxR, MaxR_norm, MaxR_norm_of_mean, Complete @ 10, Complete @ 40], t)
    np.testing.assert_array_equal(v["MaxR"], [2, 40, 100, np.nan])
    np.testing.assert_array_equal(v["MaxR_norm_of_mean"], v["MaxR"])
    lg = np.log2
    np.testing.assert_allclose(v["MaxR_norm"], [100.0, 100 * (lg(100) - lg(40)) / (lg(100) - 1), 0.0, np.nan])
    np.testing.assert_array_equal(v["Complete@10"], [100, 0, 0, np.nan])
    np.testing.assert_array_equal(v["Complete@40"], [100, 100, 0, np.nan])
    # of-mean value: mean MaxR over queries with a relevant doc, mean |D|, mean |R| (5/3)
    assert MaxR_norm_of_mean.from_mean(np.nanmean(v["MaxR"]), t) == pytest.approx(
        100 * (lg(100) - lg(142 / 3)) / (lg(100) - lg(5 / 3)))
    boot = MaxR_norm_of_mean.from_mean(np.array([2.0, 100.0]), t)  # bootstrap means, vectorised
    np.testing.assert_allclose(boot, [100 * (lg(100) - 1) / (lg(100) - lg(5 / 3)), 0.0])
    with pytest.raises(ValueError):
        MaxR.from_mean(1.0, t)


def test_maxr_norm_uses_per_query_pool_size_and_unknown_pool():
    t = table([[4], [4]], [16, 8])
    np.testing.assert_allclose(MaxR_norm.per_query(t), [50.0, 100 / 3])
    run_like = table([[4, np.inf]], [np.nan])
    assert MaxR.per_query(run_like)[0] == np.inf and np.isnan(MaxR_norm.per_query(run_like)[0])
    assert (Complete @ 10).per_query(run_like)[0] == 0


def test_same_lang_first_by_hand():
    t = table([[1, 2], [1, 2], [3, 7], [5], [2, 4, 9], []], [10] * 6,
              same=[[True, False], [False, True], [True, True], [False], [False, True, False], []])
    np.testing.assert_array_equal(SameLangFirst.per_query(t), [100, 0, np.nan, np.nan, 0, np.nan])
    assert np.isnan(SameLangFirst.per_query(table([[1, 2]], [10]))).all()  # languages unknown


def test_trec_measures_by_hand_with_grades():
    # ranks 1 (grade 1) and 3 (grade 2) of |R| = 3 (third relevant grade 3 not retrieved)
    t = table([[1, 3, np.inf]], [np.nan], grades=[[1, 2, 3]])
    v = compute([RR, AP, AP @ 1, P @ 3, R @ 3, Success @ 1, nDCG @ 3, nDCG, RR @ 1], t)
    assert v["RR"][0] == 1.0 and v["RR@1"][0] == 1.0
    assert v["AP"][0] == pytest.approx((1 + 2 / 3) / 3) and v["AP@1"][0] == pytest.approx(1 / 3)
    assert v["P@3"][0] == pytest.approx(2 / 3) and v["R@3"][0] == pytest.approx(2 / 3) and v["Success@1"][0] == 1
    dcg = 1 + 2 / np.log2(4)
    idcg = 3 + 2 / np.log2(3) + 1 / np.log2(4)
    assert v["nDCG@3"][0] == pytest.approx(dcg / idcg) and v["nDCG"][0] == pytest.approx(dcg / idcg)


def test_query_without_relevant_doc():
    t = table([[], [2]], [5, 5])
    v = compute(RANK_MEASURES, t)
    for name in ("nDCG@1", "nDCG@10", "RR", "AP@1000", "R@100"):
        assert v[name][0] == 0.0, name  # as trec_eval / pytrec_eval
    for name in ("MaxR", "MaxR_norm", "Complete@10", "SameLangFirst"):
        assert np.isnan(v[name][0]), name


def test_unsorted_rows_within_query_give_same_values():
    a = table([[1, 5, 2], [7, 3]], [10, 10], grades=[[1, 3, 2], [2, 1]])
    b = table([[1, 2, 5], [3, 7]], [10, 10], grades=[[1, 2, 3], [1, 2]])
    va, vb = compute(RANK_MEASURES, a), compute(RANK_MEASURES, b)
    for k in va:
        np.testing.assert_array_equal(va[k], vb[k], err_msg=k)


def test_default_and_main_measures():
    assert [str(m) for m in RANK_MEASURES] == ["MaxR", "MaxR_norm", "MaxR_norm_of_mean", "Complete@10", "nDCG@1",
                                               "nDCG@10", "RR", "AP@1000", "R@100", "SameLangFirst"]
    assert [str(m) for m in EXPOSURE_MEASURES] == ["Share@10", "AWRF@10", "alpha_nDCG@20", "Top1_rel_qlang",
                                                   "Top1_rel_other", "Top1_nonrel_qlang", "Top1_nonrel_other"]
    assert DEFAULT_MEASURES == RANK_MEASURES + EXPOSURE_MEASURES
    assert not any(m.record.needs_head for m in RANK_MEASURES) and all(m.record.needs_head for m in EXPOSURE_MEASURES)
    assert set(MAIN_MEASURES) == {"multi", "multi-1", "mono-same", "mono-cross"}
    assert [str(m) for m in MAIN_MEASURES["multi"]] == ["MaxR", "MaxR_norm", "MaxR_norm_of_mean", "Complete@10",
                                                       "SameLangFirst"]
    assert all(MAIN_MEASURES[s] == (nDCG @ 1, RR) for s in ("multi-1", "mono-same", "mono-cross"))
    assert set(compute(["nDCG@10", MRR], table([[1]], [3]))) == {"nDCG@10", "RR"}
