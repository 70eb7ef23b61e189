"""The reranked ranking against a brute-force list: random pools (exclusions, documents a first stage
leaves at -inf, plenty of float32 ties in both stages), the first stage ranked by the real rankers,
the second stage scoring pairs. The oracle builds each query's whole ranked list by hand (the first
stage's order by sorting (score, doc id) descending, its top K re-sorted by the second stage's
scores the same way, the rest kept) and reads every relevant document's rank, tie counts and the head
off it; a candidates run is checked the same way (documents it lacks unranked)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirbench.collection import Pool, Text
from clirbench.rank.exact import ExactRanker
from clirbench.rank.rerank import Candidates, RerankRanker
from clirbench.rank.sharded import ShardedRanker
from clirbench.util.errors import ClirbenchError


class TableScorer:
    """First stage: score rows from a fixed matrix (float64 values that often tie in float32)."""

    spec = "test:first"

    def __init__(self, S: np.ndarray) -> None:
        self.S = S

    def describe(self) -> dict:
        return {"spec": self.spec}

    def score(self, queries, docs):
        yield 0, self.S.copy()


class PairScorer:
    """Second stage: ``score_pairs`` from a fixed matrix; counts the pairs it was asked."""

    spec = "test:second"

    def __init__(self, S: np.ndarray) -> None:
        self.S, self.asked = S, 0

    def describe(self) -> dict:
        return {"spec": self.spec, "model_id": "m", "revision": "1"}

    def score_pairs(self, queries, docs, pairs):
        self.asked += len(pairs)
        return self.S[pairs[:, 0], pairs[:, 1]]


def _pool(n_q, n_d, data, exclude):
    docs = tuple(Text(f"d{j:03d}" if j % 3 else f"x{j}", f"doc {j}", "en" if j % 2 else "zh") for j in range(n_d))
    queries = tuple(Text(f"q{i}", f"query {i}", "en") for i in range(n_q))
    qrels, excl = {}, {}
    for i, q in enumerate(queries):
        picked = data.draw(st.lists(st.integers(0, n_d - 1), min_size=0, max_size=min(4, n_d), unique=True))
        grades = data.draw(st.lists(st.integers(0, 2), min_size=len(picked), max_size=len(picked)))
        qrels[q.id] = {docs[j].id: g for j, g in zip(picked, grades)}
        if exclude:
            free = [j for j in range(n_d) if docs[j].id not in qrels[q.id] or qrels[q.id][docs[j].id] <= 0]
            gone = data.draw(st.lists(st.sampled_from(free), max_size=2, unique=True)) if free else []
            excl[q.id] = frozenset(docs[j].id for j in gone)
    return Pool("t", "multi", "unique", ("en", "zh"), "en", docs, queries, qrels, excl)


def _order(scores: dict[str, float]) -> list[str]:
    """Doc ids by float32 score descending, then id descending (the tie rule)."""
    return sorted(scores, key=lambda d: (np.float32(scores[d]), d), reverse=True)


def _oracle(pool, first: dict[str, dict[str, float]], second: dict[str, dict[str, float]], k):
    """Per query: the whole reranked list, the number of head entries, and a rank/tie reader."""
    lists = {}
    for q in pool.queries:
        ranked = _order(first[q.id])
        head = ranked[:len(ranked) if k is None else k]
        top = _order({d: second[q.id][d] for d in head})
        lists[q.id] = (top + ranked[len(head):], len(head))
    return lists


def _expected(pool, first, second, k, unranked=frozenset()):
    """(query, doc) -> (rank, tied, tied_before) from the oracle's lists."""
    lists = _oracle(pool, first, second, k)
    out = {}
    for q in pool.queries:
        whole, n_head = lists[q.id]
        for d, g in pool.qrels[q.id].items():
            if g <= 0:
                continue
            if (q.id, d) in unranked:
                out[(q.id, d)] = (np.inf, 0, 0)
                continue
            pos = whole.index(d)
            if pos < n_head:
                group = [e for e in whole[:n_head] if np.float32(second[q.id][e]) == np.float32(second[q.id][d])]
            else:
                group = [e for e in whole[n_head:] if np.float32(first[q.id][e]) == np.float32(first[q.id][d])]
            out[(q.id, d)] = (pos + 1, len(group) - 1, group.index(d))
    return out, lists


def _got(table):
    return {(table.query_ids[t], d): (r, a, b) for t, d, r, a, b in
            zip(table.qidx.tolist(), table.doc_id, table.rank.tolist(), table.tied.tolist(), table.tied_before.tolist())}


def _matrices(data, n_q, n_d, with_inf):
    levels = st.sampled_from([0.0, 0.5, 1.0, 1.0 + 1e-9, 2.0, 3.0])  # 1 and 1 + 1e-9 tie in float32
    first = np.array(data.draw(st.lists(levels, min_size=n_q * n_d, max_size=n_q * n_d)), dtype=np.float64)
    first = first.reshape(n_q, n_d)
    if with_inf:
        mask = np.array(data.draw(st.lists(st.booleans(), min_size=n_q * n_d, max_size=n_q * n_d))).reshape(n_q, n_d)
        first[mask] = -np.inf
    second = np.array(data.draw(st.lists(levels, min_size=n_q * n_d, max_size=n_q * n_d)), dtype=np.float32)
    return first, second.reshape(n_q, n_d)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_reranked_ranks_and_head_equal_a_brute_force_list(data):
    n_q, n_d = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 9))
    pool = _pool(n_q, n_d, data, exclude=data.draw(st.booleans()))
    S1, S2 = _matrices(data, n_q, n_d, with_inf=data.draw(st.booleans()))
    k = data.draw(st.one_of(st.none(), st.integers(1, n_d + 2)))
    sharded = data.draw(st.booleans())
    depth = 1 << 62 if k is None else k
    first_ranker = ShardedRanker(2, None, depth) if sharded else ExactRanker(depth)
    ranker = RerankRanker(PairScorer(S2), k, first_ranker, depth=data.draw(st.integers(1, n_d + 2)))
    ranked = ranker.rank(TableScorer(S1), pool, pool)

    ids = [d.id for d in pool.docs]
    first = {q.id: {ids[j]: S1[i, j] for j in range(n_d) if ids[j] not in pool.exclusions.get(q.id, ())}
             for i, q in enumerate(pool.queries)}
    second = {q.id: {ids[j]: float(S2[i, j]) for j in range(n_d)} for i, q in enumerate(pool.queries)}
    # the first stage's own ranking holds every document, -inf ones last by the tie rule (as the
    # ranker ranks them alone); its head (and so the reranked part) only the finite ones
    finite = {q: {d: s for d, s in docs.items() if s > -np.inf} for q, docs in first.items()}
    expected, lists = {}, {}  # the oracle's head: the finite part of the first stage's top K
    for q in pool.queries:
        ranked_all = _order(first[q.id])
        n_fin = len(finite[q.id])
        n_head = min(n_fin, n_fin if k is None else k)
        top = _order({d: second[q.id][d] for d in ranked_all[:n_head]})
        whole = top + ranked_all[n_head:]
        lists[q.id] = (whole, n_head)
        for d, g in pool.qrels[q.id].items():
            if g > 0:
                pos = whole.index(d)
                if pos < n_head:
                    group = [e for e in whole[:n_head] if np.float32(second[q.id][e]) == np.float32(second[q.id][d])]
                else:
                    group = [e for e in whole[n_head:] if np.float32(first[q.id][e]) == np.float32(first[q.id][d])]
                expected[(q.id, d)] = (pos + 1, len(group) - 1, group.index(d))
    assert _got(ranked.table) == expected
    out = ranked.head
    for i, q in enumerate(out.query_ids):
        whole, n_head = lists[q]
        listed = [out.doc_ids[j] for j in out.docs[i] if j >= 0]
        assert listed == whole[:min(n_head, out.depth)]
        assert [float(s) for s in out.scores[i][:len(listed)]] == [float(np.float32(second[q][d])) for d in listed]
    info = ranked.info.rerank
    assert info["pairs"] == sum(n for _, n in lists.values()) == ranker.second.asked
    assert ranked.first is not None and ranked.first.head.depth >= max(n for _, n in lists.values())


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_candidates_rank_in_the_runs_order_and_leave_the_rest_unranked(data):
    n_q, n_d = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 9))
    pool = _pool(n_q, n_d, data, exclude=data.draw(st.booleans()))
    _, S2 = _matrices(data, n_q, n_d, with_inf=False)
    levels = st.sampled_from([0.5, 1.0, 1.0 + 1e-9, 2.0])
    run = {}
    for q in pool.queries:
        chosen = data.draw(st.lists(st.sampled_from([d.id for d in pool.docs]), unique=True, max_size=n_d))
        run[q.id] = {d: data.draw(levels) for d in chosen}
    k = data.draw(st.one_of(st.none(), st.integers(1, n_d + 1)))
    ranker = RerankRanker(PairScorer(S2), k, None, depth=n_d + 1)
    candidates = Candidates(run, "run.txt")
    candidates.check_pools([pool])
    ranked = ranker.rank(candidates, pool, pool)

    ids = [d.id for d in pool.docs]
    second = {q.id: {ids[j]: float(S2[i, j]) for j in range(n_d)} for i, q in enumerate(pool.queries)}
    first = {q: {d: s for d, s in docs.items() if d not in pool.exclusions.get(q, ())} for q, docs in run.items()}
    unranked = {(q.id, d) for q in pool.queries for d in pool.qrels[q.id] if d not in first[q.id]}
    expected, lists = _expected(pool, first, second, k, unranked)
    assert _got(ranked.table) == expected
    listed = {len(docs) for docs in first.values()}
    assert ranked.info.rerank["short_lists"] == sum(
        len(first[q.id]) < min(len(pool.docs) - len(pool.exclusions.get(q.id, ())), k or 1 << 62) for q in pool.queries)
    assert listed  # every query has its (possibly empty) list


def _small_pool():
    docs = tuple(Text(f"d{j}", f"doc {j}", "en") for j in range(4))
    queries = (Text("q0", "a", "en"), Text("q1", "b", "en"))
    return Pool("t", "mono-same", "unique", ("en",), "en", docs, queries, {"q0": {"d1": 1}, "q1": {"d2": 1}})


def test_candidates_problems_are_one_line_each():
    pool = _small_pool()
    with pytest.raises(ClirbenchError, match=r"^--candidates r\.txt: 1 query in no pool of this run \(e\.g\. 'q9'\)"):
        Candidates({"q0": {"d1": 1}, "q1": {"d2": 1}, "q9": {"d1": 1}}, "r.txt").check_pools([pool])
    with pytest.raises(ClirbenchError, match=r"no candidates for 1 of the 2 queries of pool t/mono-same/en/q-en "
                                             r"\(e\.g\. 'q1'\)"):
        Candidates({"q0": {"d1": 1}}, "r.txt").check_pools([pool])
    with pytest.raises(ClirbenchError, match=r"2 candidates of pool t/mono-same/en/q-en not among its documents "
                                             r"\(e\.g\. 'zz' for query 'q0'\)"):
        Candidates({"q0": {"zz": 1, "d1": 2}, "q1": {"yy": 1}}, "r.txt").check_pools([pool])
    for error in (ClirbenchError,):
        try:
            Candidates({"q0": {"d1": 1}}, "r.txt").check_pools([pool])
        except error as exc:
            assert "\n" not in str(exc)


def test_the_ranker_refuses_what_it_cannot_give_before_any_work():
    from clirbench.measures import parse

    second = PairScorer(np.zeros((2, 4), np.float32))
    complete = RerankRanker(second, 10, ExactRanker(10))
    complete.supports([parse("MaxR"), parse("SameLangFirst"), parse("Share@10")])  # the first stage ranked everything
    with pytest.raises(ClirbenchError, match=r"^alpha_nDCG@20 reads below the reranked top K=10"):
        complete.supports([parse("alpha_nDCG@20")])
    with pytest.raises(ClirbenchError, match=r"^MLRS@10 re-scores passages with one retriever"):
        complete.supports([parse("MLRS@10")])
    RerankRanker(second, None, ExactRanker(1 << 62)).supports([parse("alpha_nDCG@20")])  # @all: no limit
    candidates = RerankRanker(second, 10, None)
    with pytest.raises(ClirbenchError, match=r"^MaxR, SameLangFirst need every relevant document's rank, which a "
                                             r"first stage read from --candidates does not give"):
        candidates.supports([parse("nDCG@10"), parse("MaxR"), parse("SameLangFirst")])
    with pytest.raises(ClirbenchError, match=r"cannot rerank: it scores no \(query, document\) pairs"):
        RerankRanker(object(), 10, ExactRanker(10)).accepts(TableScorer(np.zeros((2, 4))))
    with pytest.raises(ClirbenchError, match=r"reads --candidates, not test:first"):
        candidates.accepts(TableScorer(np.zeros((2, 4))))
