"""The head of a ranking (rank/head.py): each query's top-K documents under the tie rule, equal to an
independent sort of the full score rows, from every ranking path."""
from __future__ import annotations

import numpy as np
import pytest

from clirbench.rank.exact import ExactRanker
from clirbench.rank.head import DEFAULT_DEPTH, Head, HeadBuilder, head_of_run
from clirbench.rank.table import tie_keys
from clirbench.retrievers import DenseRetriever, EmbeddingCache
from clirbench.retrievers.bm25 import BM25Retriever
from clirbench.scenarios import build_pools
from clirbench.tasks import get_task

from conftest import BagOfCharsEncoder
from xquad_files import XQUAD  # noqa: E402


def sorted_head(M, doc_ids, k, exclusions=None, query_ids=None):
    """The reference: per row a numpy lexsort on (-float32 score, doc id descending), excluded and -inf
    documents dropped, the first k kept (padded with -1 / -inf)."""
    M = np.asarray(M).astype(np.float32)
    keys = np.argsort(np.argsort(np.array(doc_ids, dtype=object), kind="stable"), kind="stable")
    docs = np.full((len(M), k), -1, dtype=np.int64)
    scores = np.full((len(M), k), -np.inf, dtype=np.float32)
    col = {d: i for i, d in enumerate(doc_ids)}
    for r, row in enumerate(M):
        row = row.copy()
        if exclusions and query_ids is not None:
            for d in exclusions.get(query_ids[r], ()):
                row[col[d]] = -np.inf
        order = np.lexsort((-keys, -row.astype(np.float64)))
        order = order[row[order] > -np.inf][:k]
        docs[r, :len(order)], scores[r, :len(order)] = order, row[order]
    return docs, scores


def full_rows(retriever, pool):
    return np.concatenate([np.asarray(S) for _, S in retriever.score(pool.queries, pool.docs)])


@pytest.fixture(scope="module")
def xquad_pools():
    collection = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    return [p for p in build_pools(collection, [("en", "zh")]) if p.scenario in ("multi", "multi-1")]


def bag(tmp_path):
    return DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(tmp_path / "cache"), spec="test:bag")


def assert_head(head: Head, want_docs, want_scores):
    assert np.array_equal(head.docs, want_docs)
    assert np.array_equal(head.scores, want_scores)


@pytest.mark.parametrize("depth", [1, 10, DEFAULT_DEPTH])
def test_full_rows_head_equals_an_independent_sort_on_xquad(tmp_path, xquad_pools, depth):
    retriever = bag(tmp_path)
    for pool in xquad_pools:
        M = full_rows(retriever, pool)
        ids = [d.id for d in pool.docs]
        head = ExactRanker(depth).rank(retriever, pool, pool).head
        k = min(depth, len(ids))
        assert head.depth == k and head.query_ids == tuple(q.id for q in pool.queries)
        assert_head(head, *sorted_head(M, ids, k, pool.exclusions, [q.id for q in pool.queries]))
