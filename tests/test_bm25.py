"""Embedded BM25: agreement with bm25s and the formula, per-language analysis, exact ties, top-k
rows that still give exact measures, and the runner end to end on real XQuAD."""
from __future__ import annotations

import math

import bm25s
import numpy as np
import pytest
import pytrec_eval

from clirbench.retrievers.analyzers import analyze
from clirbench.collection import Text
from clirbench.util.errors import UnknownNameError
from clirbench.measures import AP, RR, MaxR, Success, compute, nDCG
from clirbench.rank.rows import rank_relevant
from clirbench.retrievers import make_retriever
from clirbench.retrievers.bm25 import BM25Retriever
from clirbench.runner import run
from clirbench.scenarios import build_pool
from clirbench.tasks import get_task

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)

EN_DOCS = [
    "The quick brown fox jumps over the lazy dog.",
    "Foxes are small omnivorous mammals; a fox hunts at night.",
    "Dogs and cats are common pets in many houses.",
    "Paris is the capital of France and its largest city.",
    "The lazy cat sleeps all day long in the house.",
]


def texts(strings, lang, prefix="d"):
    return [Text(f"{prefix}{i}", s, lang) for i, s in enumerate(strings)]


def rows(retriever, queries, docs):
    blocks = list(retriever.score(queries, docs))
    assert [s for s, _ in blocks] == sorted(s for s, _ in blocks)
    return np.concatenate([b for _, b in blocks]) if blocks else np.zeros((0, len(docs)))


def test_scores_equal_a_direct_bm25s_call_and_the_lucene_formula():
    docs = texts(EN_DOCS, "en")
    queries = texts(["lazy fox", "fox fox house", "capital of France", "unknownword"], "en", "q")
    got = rows(BM25Retriever(), queries, docs)
    assert got.dtype == np.float32 and got.shape == (4, 5)

    corpus = [analyze(d.text, "en") for d in docs]
    direct = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    direct.index(corpus, show_progress=False)
    for i, q in enumerate(queries):
        want = direct.get_scores(analyze(q.text, "en") or [""])  # "" is bm25s's empty token
        np.testing.assert_array_equal(got[i], want)

    # independently: idf = ln(1 + (N - df + .5)/(df + .5)), tf / (tf + k1 (1 - b + b |d|/avgdl))
    n, avgdl = len(corpus), np.mean([len(c) for c in corpus])
    for i, q in enumerate(queries):
        for j, terms in enumerate(corpus):
            want = 0.0
            for t in analyze(q.text, "en"):
                df = sum(t in c for c in corpus)
                tf = terms.count(t)
                if tf:
                    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                    want += idf * tf / (tf + 0.9 * (1 - 0.4 + 0.4 * len(terms) / avgdl))
            assert got[i, j] == pytest.approx(want, rel=1e-5)
    assert got[3].tolist() == [0.0] * 5  # no query term in the index
    assert got[1, 1] > got[1, 0] > 0  # "fox" twice in the query counts twice


def test_each_document_is_analysed_with_its_own_language():
    docs = [Text("de", "Die Häuser der Stadt", "de"), Text("en", "Die Häuser der Stadt", "en"),
            Text("zh", "北京大学的房子", "zh"), Text("th", "การประชุมสหประชาชาติ", "th")]
    retriever = BM25Retriever()
    s = rows(retriever, [Text("q1", "Haus", "de")], docs)[0]
    # German stemming maps Häuser to haus in the German document only
    assert s[0] > 0 and s[1] == 0
    # a Chinese query finds the Chinese document through bigrams, a Thai query the Thai one
    s = rows(retriever, [Text("q2", "北京大学在哪里", "zh"), Text("q3", "สหประชาชาติ", "th")], docs)
    assert np.argmax(s[0]) == 2 and s[0, [0, 1, 3]].tolist() == [0, 0, 0]
    assert np.argmax(s[1]) == 3 and s[1, [0, 1, 2]].tolist() == [0, 0, 0]
    settings = retriever.describe()
    assert settings["analyzers"]["de"].startswith("snowball german") and settings["analyzers"]["th"].startswith("thai")
    assert (settings["k1"], settings["b"], settings["variant"]) == (0.9, 0.4, "lucene")
    assert settings["library_versions"]["bm25s"] == bm25s.__version__


def test_identical_texts_get_identical_scores():
    base = texts(EN_DOCS, "en")
    docs = [base[0], base[1], Text("copy-a", EN_DOCS[1], "en"), base[2], base[3], Text("copy-b", EN_DOCS[1], "en"),
            base[4]]
    queries = texts(["fox hunts at night", "small mammals fox", "lazy"], "en", "q")
    s = rows(BM25Retriever(), queries, docs)
    assert (s[:, 1] == s[:, 2]).all() and (s[:, 1] == s[:, 5]).all() and s[0, 1] > 0
    # the same text as a query twice gives the same row
    q2 = rows(BM25Retriever(), [queries[0], Text("q9", queries[0].text, "en")], docs)
    assert (q2[0] == q2[1]).all()


def test_empty_pools_and_texts_without_terms_score_zero():
    r = BM25Retriever()
    assert rows(r, texts(["fox"], "en", "q"), []).shape == (1, 0)
    assert rows(r, texts(["fox"], "en", "q"), texts(["", "the of"], "en")).tolist() == [[0.0, 0.0]]
    assert rows(r, [], texts(EN_DOCS, "en")).shape == (0, 5)


def test_spec_builds_the_embedded_backend_and_rejects_unknown_ones():
    r = make_retriever("bm25")
    assert isinstance(r, BM25Retriever) and r.spec == "bm25"
    with pytest.raises(UnknownNameError, match="bm25:pyserini"):
        make_retriever("bm25:nonsense")


@pytest.fixture(scope="module")
def multi_pool():
    collection = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    return build_pool(collection, ("en", "zh"), "multi", "zh")


def _table(blocks, pool):
    return rank_relevant(blocks, [d.id for d in pool.docs], [q.id for q in pool.queries], pool.qrels,
                         pool.exclusions, [d.lang for d in pool.docs], pool.query_lang)


def test_top_k_rows_with_minus_inf_give_exact_measures(multi_pool):
    pool, k = multi_pool, 10
    full = rows(BM25Retriever(), pool.queries, pool.docs)
    top = rows(BM25Retriever(top_k=k), pool.queries, pool.docs)
    returned = np.isfinite(top)
    assert (returned.sum(axis=1) <= k).all() and returned.sum() > k * len(pool.queries) // 2
    assert (top[returned] == full[returned]).all() and (full[returned] > 0).all()
    t_full, t_top = _table([(0, full)], pool), _table([(0, top)], pool)
    shallow = [nDCG @ 1, nDCG @ 10, Success @ 10]
    a, b = compute(shallow, t_full), compute(shallow, t_top)
    for m in shallow:  # the top k of the full ranking is what was returned: same values
        np.testing.assert_array_equal(a[str(m)], b[str(m)])
    deep = compute([RR, AP, MaxR], t_top)
    assert not np.array_equal(deep["MaxR"], compute([MaxR], t_full)["MaxR"])  # deeper ranks do differ

    # pytrec_eval on the same ranking: every pool doc, the unreturned ones below all returned ones
    run_dict = {q.id: {d.id: (float(top[i, j]) if returned[i, j] else -1.0) for j, d in enumerate(pool.docs)}
                for i, q in enumerate(pool.queries)}
    ref = pytrec_eval.RelevanceEvaluator({q: dict(v) for q, v in pool.qrels.items()},
                                         {"recip_rank", "map", "ndcg_cut.10"}).evaluate(run_dict)
    ours = compute([RR, AP, nDCG @ 10], t_top)
    for name, trec in (("RR", "recip_rank"), ("AP", "map"), ("nDCG@10", "ndcg_cut_10")):
        want = np.array([ref[q][trec] for q in t_top.query_ids])
        np.testing.assert_allclose(ours[name], want, rtol=0, atol=1e-12, err_msg=name)
    # and the relevant docs beyond the top k rank after all returned ones
    beyond = t_top.rank[t_top.rank > k]
    assert len(beyond) and (beyond > k).all()


def test_per_query_pools_give_copies_of_a_passage_equal_scores():
    collection = get_task("xquad").load(["en", "zh"], data_dir=XQUAD)
    pool = build_pool(collection, ("en", "zh"), "multi", "en", pool_mode="per-query")
    s = rows(BM25Retriever(), pool.queries[:50], pool.docs)
    by_text: dict[tuple[str, str], list[int]] = {}
    for j, d in enumerate(pool.docs):
        by_text.setdefault((d.lang, d.text), []).append(j)
    groups = [g for g in by_text.values() if len(g) > 1]
    assert len(groups) > 100
    for g in groups:
        assert (s[:, g] == s[:, g[:1]]).all()


def test_runner_end_to_end_on_real_xquad(tmp_path):
    report = run("bm25", task="xquad", langs="en,zh", data_dir=XQUAD, output_dir=tmp_path, resamples=50,
                 progress=False)
    got = {o.name: o.record.to_dict() for o in report.pools}
    assert len(got) == 8
    chance_rr = sum(1 / r for r in range(1, 241)) / 240  # a random ranking of 240 passages
    for lang in ("en", "zh"):
        same = got[f"xquad/mono-same/{lang}/q-{lang}"]["measures"]
        assert same["RR"]["value"] > 0.9 > 20 * chance_rr
        assert same["nDCG@1"]["value"] > 0.85
        # the multi pool: the same-language passage comes first for nearly every query
        multi = got[f"xquad/multi/en-zh/q-{lang}"]["measures"]
        assert multi["SameLangFirst"]["value"] > 95 and multi["nDCG@1"]["value"] > 0.85
    # lexical matching across English and Chinese works only through names and numbers
    cross = got["xquad/mono-cross/zh/q-en"]["measures"]["RR"]["value"]
    assert 2 * chance_rr < cross < 0.5
    # multi-1 excludes the same-language passage: the remaining target is in the other language
    assert got["xquad/multi-1/en-zh/q-zh"]["measures"]["RR"]["value"] < 0.2
    settings = got["xquad/mono-same/zh/q-zh"]["retriever"]
    assert settings["spec"] == "bm25" and settings["k1"] == 0.9 and settings["b"] == 0.4
    assert settings["analyzers"]["zh"].startswith("cjk bigrams") and settings["revision"].startswith("fingerprint:")
    assert settings["library_versions"]["bm25s"]  # the versions are provenance, the fingerprint the identity
    # a second run reuses every result
    again = run("bm25", task="xquad", langs="en,zh", data_dir=XQUAD, output_dir=tmp_path, resamples=50,
                progress=False)
    assert all(o.reused for o in again.pools)


def test_top_k_keeps_matching_documents_in_trec_eval_order():
    docs = [Text(i, "the fox sleeps", "en") for i in ("b", "c", "a")] + [Text("z", "no match here", "en")]
    s = rows(BM25Retriever(top_k=2), texts(["fox"], "en", "q"), docs)[0]
    # three copies tie: trec_eval's order puts the greater id first, so c and b are returned
    assert np.isfinite(s).tolist() == [True, True, False, False] and s[0] == s[1] > 0
    s = rows(BM25Retriever(top_k=10), texts(["fox"], "en", "q"), docs)[0]
    assert np.isfinite(s).tolist() == [True, True, True, False]  # a document that matches nothing is not returned
    with pytest.raises(ValueError, match="top_k"):
        BM25Retriever(top_k=0)
