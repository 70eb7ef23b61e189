"""Tie rule, ranks of relevant docs, exclusions, permutation invariance."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import clirbench.rank.rows as rows
import clirbench.rank.runs as runs
from clirbench.measures import RANK_MEASURES, compute
from clirbench.rank.rows import rank_relevant
from clirbench.rank.runs import rank_run, rank_run_arrays
from clirbench.rank.table import RankTable, tie_keys

IDS = ["d1", "d10", "D2", "d2", "é", "e", "日本", "z", "zz", "ß", "a b", "😀"]


def brute_rank(scores_row, doc_ids, target, excluded=()):
    """Rank by explicit sorting: float32 score desc, then UTF-8 bytes desc."""
    items = [(np.float32(s), d.encode()) for s, d in zip(scores_row, doc_ids) if d not in excluded]
    items.sort(reverse=True)
    return 1 + [d for _, d in items].index(target.encode())


def test_tie_keys_follow_utf8_bytes():
    keys = tie_keys(IDS)
    by_bytes = sorted(IDS, key=str.encode)
    assert [IDS[i] for i in np.argsort(keys)] == by_bytes
    assert sorted(keys.tolist()) == list(range(len(IDS)))
    with pytest.raises(ValueError, match="duplicate"):
        tie_keys(["a", "b", "a"])
    # long ids and ids with NUL take the pure-Python path; same rule
    odd = ["a\x00", "a", "x" * 100, "x" * 99 + "é", "😀" * 70]
    assert [odd[i] for i in np.argsort(tie_keys(odd))] == sorted(odd, key=str.encode)
    with pytest.raises(ValueError, match="duplicate"):
        tie_keys(["x" * 100, "b", "x" * 100])


def random_pool(seed, n_docs=25, n_q=9):
    rng = np.random.default_rng(seed)
    docs = [IDS[i % len(IDS)] + str(i // len(IDS)) * (i >= len(IDS)) for i in range(n_docs)]
    scores = rng.choice([0.0, 0.5, 1.0, -np.inf], size=(n_q, n_docs))
    qids = [f"q{i}" for i in range(n_q)]
    qrels = {q: {docs[j]: int(rng.integers(0, 4)) for j in rng.choice(n_docs, 4, replace=False)} for q in qids[:-1]}
    langs = ["en" if i % 2 else "fr" for i in range(n_docs)]
    return docs, qids, scores, qrels, langs


@pytest.mark.parametrize("seed", range(30))
def test_pool_ranks_equal_brute_force(seed):
    docs, qids, scores, qrels, langs = random_pool(seed)
    t = rank_relevant([(0, scores)], docs, qids, qrels, doc_langs=langs, query_lang="en")
    assert t.query_ids == tuple(qids[:-1])  # q8 has no qrels: not evaluated
    got = {(t.query_ids[q], r) for q, r in zip(t.qidx, t.rank)}
    want = {(q, brute_rank(scores[i], docs, d))
            for i, q in enumerate(qids) for d, g in qrels.get(q, {}).items() if g > 0}
    assert got == want
    assert (t.num_docs == len(docs)).all()
    row_docs = _docs_in_table(t, qrels, docs, scores, qids)
    assert t.same_lang.tolist() == [langs[docs.index(d)] == "en" for d in row_docs]


def _docs_in_table(t, qrels, docs, scores, qids):
    """The doc of each table row, recovered through its rank."""
    out = []
    for q, r in zip(t.qidx, t.rank):
        qid = t.query_ids[q]
        i = qids.index(qid)
        [d] = [d for d, g in qrels[qid].items() if g > 0 and brute_rank(scores[i], docs, d) == r]
        out.append(d)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_permuting_docs_and_queries_changes_nothing(seed):
    docs, qids, scores, qrels, langs = random_pool(seed)
    base = compute(RANK_MEASURES, rank_relevant([(0, scores)], docs, qids, qrels, doc_langs=langs, query_lang="en"))
    rng = np.random.default_rng(seed)
    dp, qp = rng.permutation(len(docs)), rng.permutation(len(qids))
    t = rank_relevant([(0, scores[qp][:, dp])], [docs[i] for i in dp], [qids[i] for i in qp], qrels,
                      doc_langs=[langs[i] for i in dp], query_lang="en")
    perm = compute(RANK_MEASURES, t)
    base_order = [q for q in qids if q in qrels]
    where = [t.query_ids.index(q) for q in base_order]
    for name, v in base.items():
        np.testing.assert_array_equal(perm[name][where], v, err_msg=name)


@pytest.mark.parametrize("seed", range(20))
def test_block_split_and_chunking_change_nothing(seed, monkeypatch):
    docs, qids, scores, qrels, _ = random_pool(seed)
    whole = rank_relevant([(0, scores)], docs, qids, qrels)
    monkeypatch.setattr(rows, "_CHUNK", 7)  # force several chunks per block
    blocks = [(i, scores[i:i + 2]) for i in range(0, len(qids), 2)][::-1]  # any block order
    split = rank_relevant(blocks, docs, qids, qrels)
    for f in ("qidx", "rank", "grade", "num_docs"):
        np.testing.assert_array_equal(getattr(split, f), getattr(whole, f))


@pytest.mark.parametrize("seed", range(20))
def test_exclusions_shrink_pool_and_ranks(seed):
    docs, qids, scores, qrels, _ = random_pool(seed)
    rng = np.random.default_rng(seed + 1)
    exclusions = {}
    for q in qids:
        non_rel = [d for d in docs if qrels.get(q, {}).get(d, 0) <= 0]
        exclusions[q] = set(rng.choice(non_rel, size=rng.integers(0, 5), replace=False).tolist())
    t = rank_relevant([(0, scores)], docs, qids, qrels, exclusions=exclusions)
    for qi, q in enumerate(t.query_ids):
        i = qids.index(q)
        assert t.num_docs[qi] == len(docs) - len(exclusions[q])
        want = sorted(brute_rank(scores[i], docs, d, exclusions[q]) for d, g in qrels[q].items() if g > 0)
        assert sorted(t.rank[t.qidx == qi].tolist()) == want


def test_exclusion_moves_relevant_doc_up():
    docs = ["a", "b", "c"]
    scores = np.array([[3.0, 2.0, 1.0]])
    qrels = {"q": {"c": 1}}
    assert rank_relevant([(0, scores)], docs, ["q"], qrels).rank.tolist() == [3.0]
    t = rank_relevant([(0, scores)], docs, ["q"], qrels, exclusions={"q": {"a"}})
    assert t.rank.tolist() == [2.0] and t.num_docs.tolist() == [2.0]


def test_minus_inf_docs_sort_after_returned_ones_by_id():
    docs = ["a", "b", "c", "d"]
    scores = np.array([[-np.inf, -5.0, -np.inf, -np.inf]])
    t = rank_relevant([(0, scores)], docs, ["q"], {"q": {"a": 1, "c": 1, "b": 1}})
    assert t.rank.tolist() == [1.0, 3.0, 4.0]  # b returned; then d, c, a by id descending


def test_inputs_not_mutated_and_errors():
    docs, qids, scores, qrels, _ = random_pool(0)
    excl = {qids[0]: {d for d in docs if qrels[qids[0]].get(d, 0) <= 0}}
    before = scores.copy()
    rank_relevant([(0, scores)], docs, qids, qrels, exclusions=excl)
    np.testing.assert_array_equal(scores, before)
    assert scores.flags.writeable
    bad = scores.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        rank_relevant([(0, bad)], docs, qids, qrels)
    with pytest.raises(ValueError, match="not in the pool"):
        rank_relevant([(0, scores)], docs, qids, {"q0": {"nope": 1}})
    with pytest.raises(ValueError, match="no scores"):
        rank_relevant([(0, scores[:2])], docs, qids, qrels)
    with pytest.raises(ValueError, match="shape"):
        rank_relevant([(0, scores[:, :3])], docs, qids, qrels)
    with pytest.raises(ValueError, match="excluded"):
        rank_relevant([(0, np.zeros((1, 2)))], ["a", "b"], ["q"], {"q": {"a": 1}}, exclusions={"q": {"a"}})
    with pytest.raises(ValueError, match="not in the pool"):
        rank_relevant([(0, np.zeros((1, 2)))], ["a", "b"], ["q"], {"q": {"a": 1}}, exclusions={"q": {"c"}})
    with pytest.raises(ValueError, match="overlap"):
        rank_relevant([(0, np.zeros((1, 2))), (0, np.zeros((1, 2)))], ["a", "b"], ["q"], {"q": {"a": 1}})
    with pytest.raises(ValueError, match="NaN"):
        rank_run({"q": {"a": float("nan")}}, {"q": {"a": 1}})


def test_query_with_only_zero_grades_is_kept_without_rows():
    t = rank_relevant([(0, np.zeros((2, 2)))], ["a", "b"], ["q1", "q2"], {"q1": {"a": 0}, "q2": {"b": 2}})
    assert t.query_ids == ("q1", "q2") and t.qidx.tolist() == [1] and t.grade.tolist() == [2.0]


def test_run_path_unretrieved_is_inf_and_pool_unknown():
    t = rank_run({"q": {"a": 1.0, "b": 2.0}, "x": {"a": 1.0}}, {"q": {"a": 1, "zz": 2}, "y": {"a": 1}})
    assert t.query_ids == ("q",)
    assert t.rank.tolist() == [2.0, np.inf] and np.isnan(t.num_docs).all()
    empty = rank_run({"q": {}}, {"q": {"a": 1}})  # pytrec_eval evaluates an empty run dict too
    assert empty.query_ids == ("q",) and empty.rank.tolist() == [np.inf]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_q", [12, 60])
@pytest.mark.parametrize("shuffle", [True, False])
def test_run_arrays_skewed_relevant_counts(seed, n_q, shuffle, monkeypatch):
    """One query with many relevant docs exercises the shrinking scan; chunks exercise the loop."""
    monkeypatch.setattr(runs, "_CHUNK", 13)
    rng = np.random.default_rng(seed)
    n_docs = 60
    docs = [f"d{i}" for i in range(n_docs)]
    qids = [f"q{i}" for i in range(n_q)]
    qidx = np.repeat(np.arange(n_q), 40)
    doc = np.concatenate([rng.choice(n_docs, 40, replace=False) for _ in range(n_q)])
    score = rng.choice([0.0, 1.0, 2.0], size=len(qidx)).astype(np.float32)
    perm = rng.permutation(len(qidx)) if shuffle else np.arange(len(qidx))
    qrels = {q: {docs[j]: 1 for j in rng.choice(n_docs, 2 if i else 35, replace=False)} for i, q in enumerate(qids)}
    t = rank_run_arrays(qidx[perm], doc[perm], score[perm], qids, docs, qrels)
    for qi, q in enumerate(qids):
        sel = qidx == qi
        row = {docs[d]: s for d, s in zip(doc[sel], score[sel])}
        want = sorted(brute_rank(list(row.values()), list(row), d) if d in row else np.inf for d in qrels[q])
        assert sorted(t.rank[t.qidx == qi].tolist()) == want


@pytest.mark.parametrize("pairs", [1, 1 << 20])
def test_run_arrays_all_tied_both_tie_strategies(pairs, monkeypatch):
    """A constant scorer: every entry ties; ids decide (pairwise, or vocabulary-wide keys)."""
    monkeypatch.setattr(runs, "_TIE_PAIRS", pairs)
    monkeypatch.setattr(runs, "_CHUNK", 7)
    docs = IDS + [f"x{i}" for i in range(20)]
    qidx = np.repeat(np.arange(3), len(docs))
    doc = np.tile(np.arange(len(docs)), 3)
    qrels = {"q0": {"d1": 1, "😀": 2}, "q1": {d: 1 for d in docs[::3]}, "q2": {"zz": 1}}
    t = rank_run_arrays(qidx, doc, np.zeros(len(qidx)), ["q0", "q1", "q2"], docs, qrels)
    for qi, q in enumerate(t.query_ids):
        want = sorted(brute_rank(np.zeros(len(docs)), docs, d) for d in qrels[q])
        assert sorted(t.rank[t.qidx == qi].tolist()) == want


def test_run_arrays_duplicate_relevant_pair_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        rank_run_arrays(np.array([0, 0]), np.array([1, 1]), np.array([1.0, 2.0]), ["q"], ["a", "b"], {"q": {"b": 1}})


def test_rank_table_validates_shapes():
    with pytest.raises(ValueError):
        RankTable(("q",), np.array([1.0]), np.array([1]), np.array([1.0]), np.array([1.0]))
    with pytest.raises(ValueError):
        RankTable(("q",), np.array([1.0]), np.array([0]), np.array([1.0]), np.array([0.0]))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_hypothesis_ranks_consistent_under_permutation(data):
    n_docs = data.draw(st.integers(1, 12))
    docs = data.draw(st.lists(st.text(st.sampled_from("aAé日😀1_"), min_size=1, max_size=3),
                              min_size=n_docs, max_size=n_docs, unique=True))
    row = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.5, -np.inf]), min_size=n_docs, max_size=n_docs)))
    perm = data.draw(st.permutations(range(n_docs)))
    qrels = {"q": {d: 1 for d in docs}}
    a = rank_relevant([(0, row[None])], docs, ["q"], qrels)
    b = rank_relevant([(0, row[None, perm])], [docs[i] for i in perm], ["q"], qrels)
    assert sorted(a.rank.tolist()) == list(range(1, n_docs + 1))  # all docs relevant: ranks 1..n
    assert a.rank.tolist() == b.rank.tolist()
    for d in docs:  # each doc's rank matches an explicit sort
        r = brute_rank(row, docs, d)
        t = rank_relevant([(0, row[None])], docs, ["q"], {"q": {d: 1}})
        assert t.rank.tolist() == [r]
