"""PEER@k: agreement with scipy.stats.kruskal, and each difference from peer_measure 0.0.1."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from clirbench.measures import PEER, compute, parse, peer
from clirbench.measures.peer import chi2_sf
from clirbench.rank.rows import rank_relevant
from clirbench.rank.table import RankTable
from clirbench.results import read_per_query
from clirbench.runner import run

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)


def table(rows, num_docs=100.0) -> RankTable:
    """rows: (query index, rank, grade, lang); query ids q0..q{max}."""
    rows = sorted(rows, key=lambda r: (r[0], r[1]))
    n = max(r[0] for r in rows) + 1
    return RankTable(
        query_ids=tuple(f"q{i}" for i in range(n)), num_docs=np.full(n, num_docs),
        qidx=np.array([r[0] for r in rows], dtype=np.int64), rank=np.array([r[1] for r in rows], float),
        grade=np.array([r[2] for r in rows], float), doc_lang=np.array([r[3] for r in rows]))


def scipy_level_p(ranks_by_lang: dict[str, list[float]], k: int) -> float:
    """The definition, through scipy: outside the top k -> tied at (2k+U+1)/2; <2 languages or all tied -> 1."""
    u = sum(r > k for rs in ranks_by_lang.values() for r in rs)
    samples = [[r if r <= k else (2 * k + u + 1) / 2 for r in rs] for rs in ranks_by_lang.values() if rs]
    if len(samples) < 2 or len({v for s in samples for v in s}) == 1:
        return 1.0
    return float(stats.kruskal(*samples).pvalue)


def test_name_round_trips_and_needs_a_cutoff():
    assert parse("PEER@10") == PEER @ 10 and str(PEER @ 10) == "PEER@10"
    assert (PEER @ 10).higher_is_better
    with pytest.raises(ValueError, match="cutoff"):
        parse("PEER")


def test_chi2_sf_matches_scipy():
    x = np.array([0.0, 1e-3, 0.5, 2.4, 8 / 3, 30.0, 800.0, 1e7])
    for df in range(1, 15):
        np.testing.assert_allclose(chi2_sf(x, df), stats.chi2.sf(x, df), rtol=1e-9, atol=1e-15)


def test_reference_defect_unretrieved_docs_are_tied_after_k():
    # two English relevant docs at ranks 5 and 6, both French ones not in the top 10
    t = table([(0, 5, 1, "en"), (0, 6, 1, "en"), (0, 40, 1, "fr"), (0, 77, 1, "fr")])
    # by hand: values 5, 6, 11.5, 11.5 -> mid-ranks 1, 2, 3.5, 3.5; R_en = 3, R_fr = 7, N = 4
    h = 12 / (4 * 5) * (3 ** 2 / 2 + 7 ** 2 / 2) - 3 * 5  # 2.4
    h /= 1 - (2 ** 3 - 2) / (4 ** 3 - 4)  # tie correction 0.9 -> 8/3
    by_hand = math.erfc(math.sqrt(h / 2))  # chi2(1) survival
    assert h == pytest.approx(8 / 3)
    assert by_hand == pytest.approx(0.10247, abs=1e-5)
    assert peer(t, 10)[0] == pytest.approx(by_hand, rel=1e-12)
    assert by_hand == pytest.approx(stats.kruskal([5, 6], [11.5, 11.5]).pvalue, rel=1e-12)
    assert peer(t, 10)[0] < 0.2  # peer_measure 0.0.1 reports 1.0 ("perfectly fair") here


def test_ties_are_corrected_like_scipy_not_raw_positions():
    # unretrieved docs tie; the reference's H on raw positions without correction differs
    t = table([(0, 1, 1, "en"), (0, 2, 1, "de"), (0, 3, 1, "en"), (0, 50, 1, "de"), (0, 60, 1, "de"),
               (0, 70, 1, "en")])
    want = stats.kruskal([1, 3, 7.5], [2, 7.5, 7.5]).pvalue
    assert peer(t, 5)[0] == pytest.approx(want, rel=1e-12)
    raw = [np.array([1, 3, 7.5]), np.array([2, 7.5, 7.5])]  # peer_measure: H = (N-1) SSG / SST on raw values
    alld = np.concatenate(raw)
    ssg = sum(len(s) * (s.mean() - alld.mean()) ** 2 for s in raw)
    h_raw = (len(alld) - 1) * ssg / ((alld - alld.mean()) ** 2).sum()
    assert stats.chi2.sf(h_raw, 1) != pytest.approx(want, rel=1e-3)


def test_agrees_with_scipy_on_random_queries():
    rng = np.random.default_rng(7)
    rows, expect = [], []
    for q in range(300):
        n = int(rng.integers(1, 12))
        langs = rng.choice(["en", "de", "zh"][: int(rng.integers(1, 4))], size=n)
        ranks = rng.choice(np.arange(1, 40), size=n, replace=False)
        grades = rng.integers(1, 4, size=n)
        k = 10
        rows += [(q, int(r), int(g), str(l)) for r, g, l in zip(ranks, grades, langs)]
        ps = []
        for g in sorted(set(grades.tolist())):
            sel = grades == g
            by_lang = {str(l): ranks[sel & (langs == l)].tolist() for l in set(langs[sel].tolist())}
            ps.append(scipy_level_p(by_lang, k))
        expect.append(np.mean(ps))
    got = peer(table(rows), 10)
    np.testing.assert_allclose(got, expect, rtol=1e-9, atol=1e-12)
    assert (got < 0.5).any() and (got == 1.0).any() and ((got > 0) & (got < 1)).sum() > 100


def test_single_language_or_single_doc_level_is_one_and_all_unretrieved_is_one():
    t = table([(0, 3, 1, "en"), (0, 4, 1, "en"),  # one language
               (1, 2, 2, "de"),  # one document
               (2, 30, 1, "en"), (2, 40, 1, "de"),  # both outside the top 10: all tied
               (3, 1, 1, "en"), (3, 90, 1, "de")])
    got = peer(t, 10)
    assert got[:3].tolist() == [1.0, 1.0, 1.0]
    assert got[3] == pytest.approx(stats.kruskal([1], [10.5]).pvalue)  # scipy: all values tied otherwise


def test_weights_are_renormalised_over_the_levels_a_query_has():
    level1 = [(0, 1, 1, "en"), (0, 2, 1, "en"), (0, 3, 1, "de"), (0, 20, 1, "de")]
    level2 = [(0, 4, 2, "en"), (0, 5, 2, "de"), (0, 6, 2, "en"), (0, 7, 2, "de")]
    only1 = [(1, r, g, l) for _, r, g, l in level1]
    t = table(level1 + level2 + only1)
    p1 = stats.kruskal([1, 2], [3, 10.5]).pvalue
    p2 = stats.kruskal([4, 6], [5, 7]).pvalue
    w = {1: 0.25, 2: 0.75}
    got = peer(t, 10, w)
    assert got[0] == pytest.approx(0.25 * p1 + 0.75 * p2)
    assert got[1] == pytest.approx(p1)  # peer_measure 0.0.1: 0.25 * p1 (missing level counts as 0)
    eq = peer(t, 10)
    assert eq[0] == pytest.approx((p1 + p2) / 2) and eq[1] == pytest.approx(p1)
    assert np.isnan(peer(t, 10, {3: 1.0})).all()  # no weight on any level the query has


def test_interleaved_ranking_is_fair_and_segregated_is_not():
    inter = [(0, r, 1, "en" if r % 2 else "de") for r in range(1, 21)]
    seg = [(1, r, 1, "en" if r <= 10 else "de") for r in range(1, 21)]
    got = peer(table(inter + seg), 20)
    assert got[0] > 0.7
    assert got[1] < 1e-3
    assert got[1] == pytest.approx(stats.kruskal(range(1, 11), range(11, 21)).pvalue)


def test_nan_without_languages_or_relevant_docs():
    t = table([(0, 1, 1, "en"), (0, 2, 1, "de")])
    bare = RankTable(query_ids=t.query_ids, num_docs=t.num_docs, qidx=t.qidx, rank=t.rank, grade=t.grade)
    assert np.isnan(compute(["PEER@10"], bare)["PEER@10"]).all()
    empty = RankTable(query_ids=("a",), num_docs=np.array([5.0]), qidx=np.zeros(0, np.int64),
                      rank=np.zeros(0), grade=np.zeros(0), doc_lang=np.zeros(0, str))
    assert np.isnan(peer(empty, 10)).all()


def test_rank_relevant_fills_doc_lang_and_keeps_same_lang():
    docs, langs = ["a", "b", "c", "d"], ["en", "de", "en", "de"]
    scores = np.array([[0.9, 0.8, 0.1, 0.7]])
    qrels = {"q": {"a": 1, "b": 1, "c": 0, "d": 2}}
    t = rank_relevant([(0, scores)], docs, ["q"], qrels, doc_langs=langs, query_lang="en")
    assert t.doc_lang.tolist() == ["en", "de", "de"] and t.same_lang.tolist() == [True, False, False]
    assert t.rank.tolist() == [1, 2, 3]
    t2 = rank_relevant([(0, scores)], docs, ["q"], qrels, doc_langs=langs)
    assert t2.doc_lang.tolist() == ["en", "de", "de"] and t2.same_lang is None
    assert rank_relevant([(0, scores)], docs, ["q"], qrels).doc_lang is None
    with pytest.raises(ValueError, match="doc_lang"):
        RankTable(query_ids=("q",), num_docs=np.array([4.0]), qidx=np.zeros(2, np.int64), rank=np.ones(2),
                  grade=np.ones(2), doc_lang=np.array(["en"]))


def test_end_to_end_on_real_xquad(tmp_path, bag_retriever):
    retriever, _ = bag_retriever()
    report = run(retriever, task="xquad", langs="en,de", scenarios="multi",
                 measures=["PEER@10", "MaxR", "SameLangFirst"], data_dir=XQUAD, output_dir=tmp_path, resamples=50,
                 progress=False)
    assert len(report.pools) == 2
    two_docs = math.erfc(math.sqrt(0.5))  # N = 2, distinct values: H = 1, p = 0.3173 (the least possible)
    for outcome in report.pools:
        value = outcome.record.to_dict()["measures"]["PEER@10"]["value"]
        assert 0.0 <= value <= 1.0
        _, per_q = read_per_query(outcome.path)
        v, maxr = per_q["PEER@10"], per_q["MaxR"]
        assert len(v) == 1190 and value == pytest.approx(np.mean(v))
        # one en + one de relevant doc per query: p = 1 only when both are outside the top 10, or when
        # their scores tie (expected ranks, docs/measures.md: equal, so no language is ranked first;
        # SameLangFirst then says 50)
        assert np.all(np.isclose(v, two_docs) | (v == 1.0))
        tied = per_q["SameLangFirst"] == 50.0
        assert np.all((maxr[v == 1.0] > 10) | tied[v == 1.0]) and (v < 1).any() and (v == 1).any()
        assert np.all(v[tied] == 1.0)
