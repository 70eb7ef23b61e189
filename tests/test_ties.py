"""Ties never make a language preference (docs/measures.md#ranks-and-the-tie-rule).

Every ranking path keeps, beside each relevant document's rank (trec_eval's tie rule), its tie counts;
the language measures (SameLangFirst, PEER, the preference matrix) read expected ranks under uniformly
random tie-breaking, the standard measures keep trec_eval's ranks; a record says how much of its
ranking ties decided, and ``run`` and the leaderboard page say so where it is large.
"""
from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clirbench
from clirbench.collection import Pool, Text
from clirbench.display.report import format_outcomes, format_preference
from clirbench.evaluation import evaluate_pool
from clirbench.leaderboard.preference import preference_section
from clirbench.measures import PEER, RANK_MEASURES, SameLangFirst, compute, parse
from clirbench.rank.counting import rank_relevant_sharded
from clirbench.rank.exact import ExactRanker
from clirbench.rank.rows import rank_blocks, rank_relevant, run_blocks
from clirbench.rank.run_file import rank_run_file
from clirbench.rank.runs import rank_run
from clirbench.rank.sharded import rank_pool_sharded
from clirbench.rank.table import RankTable
from clirbench.results import Result
from clirbench.stats.preference import preference_columns, preference_matrix, tie_note
from clirbench.tasks import get_task

from conftest import BagOfCharsEncoder, torch_devices
from test_pytrec_eval_agreement import assert_agree, random_case
from test_sharded import _dense_pool, column_scorer, tie_pool
from xquad_files import XQUAD

LANGS = ("en", "zh", "ar")
STANDARD = tuple(parse(m) for m in ("nDCG@10", "nDCG", "AP@1000", "RR", "R@100", "P@5", "Success@10", "MaxR",
                                    "MaxR_norm", "Complete@10"))
TIE_FIELDS = ("qidx", "rank", "tied", "tied_before")


def untied(table: RankTable) -> RankTable:
    """``table`` without its tie counts: what trec_eval's rule alone gives every measure."""
    return dataclasses.replace(table, tied=None, tied_before=None)


def brute_counts(M, docs, queries, qrels, exclusions):
    """{(query, doc): (rank, tied, tied_before)} by a plain loop (float32 scores, doc ids byte-wise)."""
    M = np.asarray(M).astype(np.float32)
    out = {}
    for i, q in enumerate(queries):
        excl = exclusions.get(q, ())
        kept = [j for j, d in enumerate(docs) if d not in excl]
        for d, g in (qrels.get(q) or {}).items():
            if g <= 0:
                continue
            r = docs.index(d)
            s = M[i, r]
            greater = sum(M[i, j] > s for j in kept)
            tied = [j for j in kept if M[i, j] == s and j != r]
            before = sum(docs[j].encode() > d.encode() for j in tied)
            out[(q, d)] = (1 + greater + before, len(tied), before)
    return out


def assert_counts(table: RankTable, brute: dict, docs) -> None:
    got = {(table.query_ids[t], d): (r, n, b) for t, d, r, n, b in
           zip(table.qidx, table.doc_id, table.rank, table.tied, table.tied_before)}
    assert got == brute


# ------------------------------------------------------------------------------------ every path


def test_full_rows_count_ties_by_a_plain_loop():
    M, docs, queries, qrels, excl, langs = tie_pool()
    table = rank_relevant([(0, M)], docs, queries, qrels, excl, langs, "en")
    assert (table.tied > 0).sum() > 20  # a tie-heavy pool
    assert_counts(table, brute_counts(M, docs, queries, qrels, excl), docs)
    # expected rank: the tie group's first rank + half the others of the group
    greater = table.rank - table.tied_before - 1
    assert np.array_equal(table.expected_rank, 1 + greater + table.tied / 2)
    assert table.tie_share == pytest.approx(100 * np.mean(table.tied > 0))


@pytest.mark.parametrize("shards", [1, 3, 1000])
@pytest.mark.parametrize("mode", ["two passes", "relevant scores", "bounds"])
def test_sharded_counting_keeps_the_tie_counts(shards, mode):
    from test_sharded import _modes

    M, docs, queries, qrels, excl, langs = tie_pool(seed=5)
    want = rank_relevant([(0, M)], docs, queries, qrels, excl, langs, "en")
    got = rank_relevant_sharded(column_scorer(M), shards, docs, queries, qrels, excl, langs, "en",
                                **_modes(M, docs, queries, qrels, excl)[mode])
    for f in TIE_FIELDS:
        assert np.array_equal(getattr(got, f), getattr(want, f)), f


def test_runs_and_run_files_keep_the_tie_counts(tmp_path):
    M, docs, queries, qrels, _, _ = tie_pool(seed=2, values=(0.5, 0.25, 0.25, 1.0))
    want = rank_relevant([(0, M)], docs, queries, qrels)
    run = {q: {d: float(M[i, j]) for j, d in enumerate(docs)} for i, q in enumerate(queries)}
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q} Q0 {d} 1 {s!r} t\n" for q in run for d, s in run[q].items()))
    from_file, _ = rank_run_file(path, qrels)
    for got in (rank_run(run, qrels), from_file):
        for f in TIE_FIELDS:
            assert np.array_equal(getattr(got, f), getattr(want, f)), f


def test_a_run_laid_over_a_pool_ties_what_it_lacks_at_the_bottom():
    docs = tuple(Text(f"d{i}", "", ("en", "zh")[i % 2]) for i in range(6))
    pool = Pool("t", "multi", "unique", ("en", "zh"), "en", docs, (Text("q", "", "en"),),
                {"q": {"d1": 1, "d2": 1, "d3": 1}}, {})
    table = rank_blocks(run_blocks(pool, {"q": {"d1": 2.0, "d0": 1.0}}), pool)
    ranks = dict(zip(table.doc_id, zip(table.rank, table.tied, table.expected_rank)))
    # d1 first; d2..d5 are not in the run: tied at ranks 3..6 (d5 first by id), expected 4.5 each
    assert ranks == {"d1": (1.0, 0, 1.0), "d3": (5.0, 3, 4.5), "d2": (6.0, 3, 4.5)}
    # a run with the pool unknown: what it lacks has no rank and no tie
    alone = rank_run({"q": {"d1": 2.0, "d0": 1.0}}, pool.qrels)
    assert np.isinf(alone.expected_rank).sum() == 2 and alone.tied.tolist() == [0, 0, 0]


@pytest.mark.parametrize("device", torch_devices())
def test_dense_bounded_rows_and_dense_shards_keep_the_tie_counts(tmp_path, device):
    from clirbench.retrievers import DenseRetriever, EmbeddingCache

    pool = _dense_pool()  # copies of one text: exactly equal scores
    retriever = DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(tmp_path / "c"), spec="test:bag")
    want = ExactRanker().rank(retriever, pool, pool).table
    assert (want.tied > 0).any()
    M = np.concatenate([S for _, S in retriever.score(pool.queries, pool.docs)])
    ids, qids = [d.id for d in pool.docs], [q.id for q in pool.queries]
    assert_counts(want, brute_counts(M, ids, qids, pool.qrels, pool.exclusions), ids)
    for shards in (1, 2, 7):
        got = rank_pool_sharded(retriever, pool, pool, shards, device=device).table
        for f in TIE_FIELDS:
            assert np.array_equal(getattr(got, f), getattr(want, f)), (shards, f)


def test_the_table_checks_its_tie_counts():
    base = dict(query_ids=("q",), num_docs=np.array([5.0]), qidx=np.zeros(2, np.int64), rank=np.array([1.0, 2.0]),
                grade=np.ones(2))
    with pytest.raises(ValueError, match="come together"):
        RankTable(**base, tied=np.array([1, 1]))
    with pytest.raises(ValueError, match="tied_before <= tied"):
        RankTable(**base, tied=np.array([1, 1]), tied_before=np.array([0, 2]))
    plain = RankTable(**base)  # old constructors: no tie counts, trec_eval's ranks everywhere
    assert np.array_equal(plain.expected_rank, plain.rank) and plain.tie_share is None
    tied = RankTable(**base, tied=np.array([1, 1]), tied_before=np.array([0, 1]))
    assert tied.expected_rank.tolist() == [1.5, 1.5] and tied.tie_share == 100.0


# ------------------------------------------------------------------ random tie-breaking, checked


def _orders(scores: np.ndarray):
    """Every order of the documents by score descending, ties in every order (equally likely)."""
    for perm in itertools.permutations(range(len(scores))):
        yield sorted(range(len(scores)), key=lambda j: (-scores[j], perm.index(j)))


def test_expected_values_equal_their_mean_over_every_tie_order():
    scores = np.array([[1.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0], [0.0] * 7, [3.0, 1.0, 1.0, 1.0, 0.0, 1.0, 2.0]])
    docs = [f"d{j}" for j in range(7)]
    langs = ["en", "zh", "ar", "zh", "en", "ar", "zh"]
    qrels = {"q0": {"d1": 1, "d2": 1, "d4": 1}, "q1": {"d0": 1, "d1": 2, "d2": 1, "d3": 1},
             "q2": {"d1": 1, "d2": 1, "d4": 1, "d6": 1}}
    queries = list(qrels)
    table = rank_relevant([(0, scores)], docs, queries, qrels, doc_langs=langs, query_lang="en")
    cols = preference_columns(table, LANGS)
    slf = compute([SameLangFirst], table)["SameLangFirst"]
    for i, q in enumerate(queries):
        rel = [docs.index(d) for d in qrels[q]]
        ranks, firsts = [], []
        for order in _orders(scores[i]):
            pos = {j: order.index(j) + 1 for j in rel}
            ranks.append([pos[j] for j in rel])
            firsts.append(langs[min(rel, key=pos.get)])
        mean = np.mean(ranks, axis=0)
        got = {d: e for t, d, e in zip(table.qidx, table.doc_id, table.expected_rank) if t == i}
        assert [got[docs[j]] for j in rel] == pytest.approx(mean.tolist())
        for lang in LANGS:
            in_lang = [k for k, j in enumerate(rel) if langs[j] == lang]
            best = np.mean([min(r[k] for k in in_lang) for r in ranks]) if in_lang else np.nan
            assert cols[f"mean_rank:{lang}"][i] == pytest.approx(best, nan_ok=True), (q, lang)
            assert cols[f"best_share:{lang}"][i] == pytest.approx(100 * np.mean([f == lang for f in firsts]))
        assert slf[i] == pytest.approx(100 * np.mean([f == "en" for f in firsts]))


def test_expected_rank_equals_the_mean_rank_of_random_tie_breaks():
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 3, size=200).astype(float)
    docs = [f"d{j:03d}" for j in range(200)]
    rel = [int(j) for j in rng.choice(200, 8, replace=False)]
    table = rank_relevant([(0, scores[None, :])], docs, ["q"], {"q": {docs[j]: 1 for j in rel}})
    draws = 4000
    total = np.zeros(len(rel))
    for _ in range(draws):
        order = np.lexsort((rng.permutation(200), -scores))  # score descending, ties at random
        position = np.empty(200)
        position[order] = np.arange(1, 201)
        total += position[rel]
    got = dict(zip(table.doc_id, table.expected_rank))
    expected = np.array([got[docs[j]] for j in rel])
    # each tie group holds about 67 documents: the mean of 4,000 uniform positions is within 2 of its expectation
    assert np.abs(total / draws - expected).max() < 2.0
    assert not np.array_equal(table.rank, table.expected_rank)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 25))
def test_property_expected_values_do_not_depend_on_the_ids_within_a_tie(seed, n):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 3, size=(3, n)).astype(float)
    langs = [LANGS[j % 3] for j in range(n)]
    rel = {f"q{i}": [int(j) for j in rng.choice(n, min(n, 4), replace=False)] for i in range(3)}
    ids = [f"d{j:02d}" for j in range(n)]

    def measured(names):
        qrels = {q: {names[j]: 1 for j in js} for q, js in rel.items()}
        table = rank_relevant([(0, scores)], names, list(rel), qrels, doc_langs=langs, query_lang="en")
        by_doc = {names.index(d): (t, e, k) for t, d, e, k in
                  zip(table.qidx, table.doc_id, table.expected_rank, table.tied)}
        return by_doc, compute([SameLangFirst, PEER @ 5], table), preference_columns(table, LANGS)

    renamed = [ids[j] for j in rng.permutation(n)]  # any other ids: the ties now break another way
    a, b = measured(ids), measured(renamed)
    assert a[0] == b[0]
    for x, y in ((a[1], b[1]), (a[2], b[2])):
        for key in x:
            assert np.array_equal(x[key], y[key], equal_nan=True), key


def test_standard_measures_keep_trec_evals_rule():
    M, docs, queries, qrels, excl, langs = tie_pool(seed=9)
    table = rank_relevant([(0, M)], docs, queries, qrels, excl, langs, "en")
    assert not np.array_equal(table.rank, table.expected_rank)
    ours, plain = compute(STANDARD, table), compute(STANDARD, untied(table))
    for name in ours:
        assert np.array_equal(ours[name], plain[name], equal_nan=True), name
    for seed in range(40):  # and pytrec_eval's values on tie-heavy runs
        _, case_qrels, run = random_case(seed)
        assert_agree(rank_run(run, case_qrels), case_qrels, run)


# ------------------------------------------------------- a pool where other languages all score 0


class OwnPassageRetriever:
    """1 for the query's own passage in the query's language, 0 for every other passage (or 0 for
    all of them): nothing tells the other languages apart but their document ids."""

    spec = "test:own-passage"

    def __init__(self, own: float = 1.0):
        self.own = own

    def describe(self) -> dict:
        return {"spec": self.spec, "own": self.own}

    def score(self, queries, docs):
        rows = np.array([[self.own if (d.lang, d.item) == (q.lang, q.item) else 0.0 for d in docs]
                         for q in queries], dtype=np.float32)
        yield 0, rows


@pytest.fixture(scope="module")
def xquad_pools():
    return {p.query_lang: p for p in get_task("xquad").pools(",".join(LANGS), "multi", data_dir=XQUAD)}


def test_languages_that_all_score_zero_get_equal_expected_ranks(xquad_pools):
    pool = xquad_pools["ar"]
    evaluation = evaluate_pool(OwnPassageRetriever(), pool, [SameLangFirst], resamples=20)
    table = evaluation.table
    n_docs = len(pool.docs)
    cols = preference_columns(table, LANGS)
    # every other passage ties at 0 below the own one: ranks 2..|D|, expected 1 + |D| / 2 for both
    assert np.all(cols["mean_rank:en"] == 1 + n_docs / 2) and np.all(cols["mean_rank:zh"] == 1 + n_docs / 2)
    assert np.all(cols["mean_rank:ar"] == 1) and np.all(cols["best_share:ar"] == 100)
    assert np.all(cols["tie_share:en"] == 100) and np.all(cols["tie_share:ar"] == 0)
    # trec_eval's rule alone would order them by document id ("zh/..." sorts before "en/...")
    trec = preference_columns(untied(table), LANGS)
    assert trec["mean_rank:zh"].mean() + 200 < trec["mean_rank:en"].mean()
    assert evaluation.summary["SameLangFirst"].value == 100.0


def test_a_pool_where_everything_ties_has_no_preference(xquad_pools):
    pool = xquad_pools["zh"]
    table = evaluate_pool(OwnPassageRetriever(own=0.0), pool, [SameLangFirst], resamples=20).table
    cols = preference_columns(table, LANGS)
    for lang in LANGS:
        assert np.all(cols[f"mean_rank:{lang}"] == (1 + len(pool.docs)) / 2)
        assert np.allclose(cols[f"best_share:{lang}"], 100 / 3)
    assert np.allclose(compute([SameLangFirst], table)["SameLangFirst"], 100 / 3)
    assert np.all(compute([PEER @ 10], table)["PEER@10"] == 1.0)  # tied ranks: nothing unfair
    assert table.tie_share == 100.0


def test_bm25_on_xquad_no_longer_orders_untouched_languages_by_document_id(tmp_path, xquad_pools):
    report = clirbench.run("bm25", "xquad", langs="en,zh,ar", scenarios="multi", data_dir=XQUAD, resamples=20,
                           progress=False, cache_dir=tmp_path / "c")
    (matrix,) = preference_matrix(p.record for p in report)
    ar = matrix["query_langs"].index("ar")
    en, zh = (matrix["mean_rank"][ar][matrix["doc_langs"].index(lang)]["value"] for lang in ("en", "zh"))
    assert abs(en - zh) < 10  # trec_eval's order alone: zh passages hundreds of ranks above en ones
    tie_cells = [c["value"] for row in matrix["tie_share"] for c in row]
    assert max(tie_cells) > 50 and tie_note(matrix)
    record = report["xquad/multi/en-zh-ar/q-ar"].record
    assert record.tie_share > 10 and Result.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    # per query: where the en and zh passages tie, their expected ranks are equal
    table = evaluate_pool(clirbench.retrievers.make_retriever("bm25"), xquad_pools["ar"], [SameLangFirst],
                          resamples=20).table
    start = {(t, lang): s for t, lang, s in zip(table.qidx, table.doc_lang, table.tie_start)}
    cols = preference_columns(table, LANGS)
    both = [i for i in range(len(table.query_ids)) if start[(i, "en")] == start[(i, "zh")]]
    trec = preference_columns(untied(table), LANGS)
    assert len(both) > 500
    assert np.array_equal(cols["mean_rank:en"][both], cols["mean_rank:zh"][both])
    assert np.all(trec["mean_rank:zh"][both] < trec["mean_rank:en"][both])  # the doc-id order, gone
    # the standard measures are trec_eval's, exactly
    for name, values in compute(RANK_MEASURES, untied(table)).items():
        if name != "SameLangFirst":
            assert np.array_equal(compute([parse(name)], table)[name], values, equal_nan=True), name


# ------------------------------------------------------------------------- what run and the page say


def test_run_and_the_page_say_how_much_ties_decided(xquad_pools, tmp_path):
    report = clirbench.run(OwnPassageRetriever(), list(xquad_pools.values()), resamples=20, progress=False)
    text = format_outcomes(report)
    assert "ties: equal scores decided the rank of many relevant passages" in text
    assert "share their score with another document" in text
    records = [p.record.to_dict() for p in report]
    assert all(r["tie_share"] == pytest.approx(200 / 3) for r in records)  # 2 of 3 passages tied
    (matrix,) = preference_matrix(records)
    assert any(line.startswith("ties:") for line in format_preference(matrix))
    data = {"task": "xquad", "systems": {"own": {"results": {r["query_lang"]: {"preference": r["preference"]}
                                                             for r in records}}},
            "pools": {r["query_lang"]: {k: r[k] for k in ("scenario", "pool_mode", "doc_langs", "query_lang",
                                                          "subset", "pool_size")} for r in records}}
    html = preference_section(data, list(data["pools"]))
    assert 'class="note tie-note"' in html and "tied with another document for 100.0%" in html
    # rows recorded before the tie share was kept: no note, no tooltip part
    for r in records:
        del r["preference"]["tie_share"]
        r.pop("tie_share")
    (old,) = preference_matrix(records)
    assert not tie_note(old) and not any(line.startswith("ties:") for line in format_preference(old))
    assert all(Result.from_dict(r).tie_share is None for r in records)


def test_a_ranking_without_ties_gets_no_note():
    pool = Pool("t", "bilingual", "unique", ("en", "zh"), "en",
                (Text("en/1", "", "en", "1"), Text("zh/1", "", "zh", "1"), Text("en/2", "", "en", "2")),
                (Text("q1", "", "en", "1"),), {"q1": {"en/1": 1, "zh/1": 1}}, {})

    class Distinct:
        spec = "test:distinct"

        def describe(self):
            return {"spec": self.spec}

        def score(self, queries, docs):
            yield 0, np.array([[3.0, 2.0, 1.0]], dtype=np.float32)

    report = clirbench.run(Distinct(), [pool], resamples=10, progress=False)
    assert report[0].record.tie_share == 0.0 and "ties:" not in format_outcomes(report)
