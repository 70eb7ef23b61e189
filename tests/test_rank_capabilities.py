"""The rankers ask what a retriever can do (``clirbench.rank.capabilities``), not its class: a retriever
of its own class that embeds gets document shards, Ray's driver-side path and an ANN index with the
exact ranks; one that cannot be ranked that way is refused with one line before any work; and the
record's ``ranking`` dict keeps its keys and their order (``RankingInfo.to_dict``)."""
from __future__ import annotations

import numpy as np
import pytest

import clirbench
from clirbench.runner import run
from clirbench.measures import parse
from clirbench.rank.capabilities import Embeds, EmbedsIntoCache, ScoresPairs, ScoresRows
from clirbench.rank.choose import choose_ranker
from clirbench.rank.distributed import rank_pool_ray
from clirbench.rank.exact import ExactRanker
from clirbench.rank.products import exact_scores
from clirbench.rank.ranked import RankingInfo
from clirbench.rank.sharded import ShardedRanker, rank_pool_sharded
from clirbench.run_config import RankingOptions
from clirbench.util.errors import ClirbenchError

from conftest import assert_same_table
from xquad_files import XQUAD

CUTOFF = ["nDCG@10", "nDCG@1", "RR", "AP@1000", "R@100", "Complete@10", "PEER@10"]


class CharEmbedder:
    """Not a DenseRetriever: a numpy bag of characters (counts of code points modulo ``dim``). Small
    integer vectors: float32 products are exact, so scores tie often (the tie rule decides)."""

    spec = "test:chars"
    score_dtype = np.float32

    def __init__(self, dim: int = 48) -> None:
        self.dim = dim

    def describe(self) -> dict:
        return {"spec": self.spec, "dim": self.dim}

    def embed(self, texts, role: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            np.add.at(out[i], np.fromiter((ord(c) % self.dim for c in text), np.int64, len(text)), 1.0)
        return out

    def score(self, queries, docs):
        Q = self.embed([q.text for q in queries], "query")
        D = self.embed([d.text for d in docs], "document")
        for start in range(0, len(Q), 256):
            yield start, exact_scores(Q[start:start + 256], D)


class PairsOnly:
    """A reranker: scores candidate pairs, neither embeds nor gives full score rows."""

    spec = "test:pairs-only"

    def describe(self) -> dict:
        return {"spec": self.spec}

    def score_pairs(self, queries, docs, pairs):
        return np.zeros(len(pairs), dtype=np.float32)


class RowsOnly:
    """Full score rows only (as BM25): no embeddings to shard or index."""

    spec = "test:rows-only"

    def describe(self) -> dict:
        return {"spec": self.spec}

    def score(self, queries, docs):
        yield 0, np.zeros((len(queries), len(docs)), dtype=np.float32)


@pytest.fixture(scope="module")
def pool():
    pools = clirbench.get_task("xquad").pools("en,zh", "multi", data_dir=XQUAD)
    return next(p for p in pools if p.query_lang == "zh")


def test_capabilities_are_asked_of_the_object_not_its_class(tmp_path):
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever
    from conftest import BagOfCharsEncoder

    dense = DenseRetriever(BagOfCharsEncoder(), EmbeddingCache(tmp_path / "c"), spec="test:bag")
    assert isinstance(dense, Embeds) and isinstance(dense, EmbedsIntoCache) and isinstance(dense, ScoresRows)
    custom = CharEmbedder()
    assert isinstance(custom, Embeds) and isinstance(custom, ScoresRows) and not isinstance(custom, EmbedsIntoCache)
    assert isinstance(PairsOnly(), ScoresPairs) and not isinstance(PairsOnly(), (Embeds, ScoresRows))
    assert isinstance(RowsOnly(), ScoresRows) and not isinstance(RowsOnly(), Embeds)


@pytest.mark.parametrize("shards", [1, 3, 7])
def test_an_embedder_of_its_own_class_gets_the_exact_ranks_by_document_shard(pool, shards):
    retriever = CharEmbedder()
    want = ExactRanker().rank(retriever, pool, pool).table
    assert len(set(want.rank.tolist())) > 5
    got = rank_pool_sharded(retriever, pool, pool, shards)
    assert got.path == "dense document shards" and got.exact and got.shards == shards
    assert_same_table(got.table, want)
    ranked = ShardedRanker(shards).rank(retriever, pool, pool)
    assert_same_table(ranked.table, want)
    assert ranked.info.to_dict() == {"path": "sharded counting", "shards": shards, "scoring": "dense document shards",
                                     "exact": True, "precision": "float32"}
    assert list(ranked.info.to_dict()) == ["path", "shards", "scoring", "exact", "precision"]
    assert not ranked.info.approximate


def test_on_ray_an_embedder_without_a_shared_cache_is_ranked_on_the_driver(pool):
    retriever = CharEmbedder()
    got = rank_pool_ray(retriever, pool, pool, 3)  # starts no Ray: nothing to share with workers
    assert got.path == "dense document shards (on the driver)" and got.shards == 3
    assert_same_table(got.table, ExactRanker().rank(retriever, pool, pool).table)


def test_a_run_with_shards_or_an_index_of_an_embedder_of_its_own_class():
    retriever = CharEmbedder()
    kw = dict(task="xquad", langs="en,zh", scenarios="multi", data_dir=XQUAD, output_dir=None, resamples=20,
              progress=False, measures=CUTOFF)
    full = run(retriever, **kw)
    values = {o.name: {k: v["value"] for k, v in o.record.to_dict()["measures"].items()} for o in full.pools}
    for options, path in (({"shards": 3}, "sharded counting"), ({"index": "faiss:Flat"}, "approximate top-k")):
        other = run(retriever, **options, **kw)
        assert {o.name: {k: v["value"] for k, v in o.record.to_dict()["measures"].items()}
                for o in other.pools} == values
        assert other.pools[0].record.to_dict()["retriever"]["ranking"]["path"] == path


def test_what_cannot_be_ranked_so_is_refused_in_one_line_before_any_work():
    nDCG = [parse("nDCG@10")]
    for options in (RankingOptions(shards=2), RankingOptions(executor="ray"), RankingOptions()):
        with pytest.raises(ClirbenchError) as err:
            choose_ranker(options, measures=nDCG, retriever=PairsOnly())
        assert "test:pairs-only" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ClirbenchError, match="--shards needs a retriever that embeds texts"):
        choose_ranker(RankingOptions(shards=2), measures=nDCG, retriever=PairsOnly())
    with pytest.raises(ClirbenchError, match="--index faiss:Flat needs a dense retriever .* not test:rows-only"):
        choose_ranker(RankingOptions(index="faiss:Flat"), measures=nDCG, retriever=RowsOnly())
    # full score rows can still be split by column (exact, no memory saved)
    assert isinstance(choose_ranker(RankingOptions(shards=2), measures=nDCG, retriever=RowsOnly()), ShardedRanker)


def test_the_cli_refuses_shards_of_a_pairs_only_retriever_with_one_line(tmp_path, capsys, monkeypatch):
    from clirbench.cli import main
    from clirbench.retrievers import spec

    monkeypatch.setitem(spec.FAMILIES, "pairsonly", spec.Family("pairsonly", lambda arg, options: PairsOnly()))
    code = main(["run", "--model", "pairsonly", "--task", "xquad", "--langs", "en,zh", "--scenario", "multi",
                 "--data-dir", str(XQUAD), "--output", str(tmp_path / "out"), "--no-progress", "--shards", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("clirbench: error: --shards needs"), err


def test_ranking_info_keeps_the_record_form():
    ann = RankingInfo("approximate top-k", approximate=True, index={"index": "faiss:Flat"}, k=10, candidates=20,
                      rescored="exact inner products", boundary_ties_unresolved=0, recall={"k": 10, "recall": 1.0})
    assert list(ann.to_dict()) == ["path", "index", "k", "candidates", "rescored", "boundary_ties_unresolved", "recall"]
    ray = RankingInfo("sharded counting on Ray", shards=3, scoring="dense document shards on Ray", exact=True,
                      precision="float32", shards_computed=2, shards_reused=1, address="local")
    assert list(ray.to_dict()) == ["path", "shards", "scoring", "exact", "precision", "shards_computed",
                                   "shards_reused", "address"]
    assert ann.approximate and not ray.approximate
