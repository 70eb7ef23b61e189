"""Issue 14 through the runner: exact ranks by sharded counting (``shards=N``) and approximate
top-k lists from a faiss index (``index="faiss:…"``), on real XQuAD en+zh."""
from __future__ import annotations

import json

import numpy as np
import pytest

from clirbench.util.errors import ClirbenchError
from clirbench.runner import run
from xquad_files import XQUAD

CUTOFF = ["nDCG@10", "nDCG@1", "RR", "AP@1000", "R@100", "Complete@10", "PEER@10"]


def _values(report) -> dict:
    return {o.name: {k: v["value"] for k, v in o.record.to_dict()["measures"].items()} for o in report.pools}


def _per_query(report) -> dict:
    return {o.name: (o.per_query[0], {k: np.asarray(v) for k, v in o.per_query[1].items()})
            for o in report.pools}


@pytest.mark.parametrize("shards", [1, 2, 7])
def test_sharded_run_equals_full_rows_on_every_measure(bag_retriever, shards):
    retriever, _ = bag_retriever()
    kw = dict(task="xquad", langs="en,zh", data_dir=XQUAD, output_dir=None, resamples=20, progress=False,
              measures=["MaxR", "MaxR_norm", "MaxR_norm_of_mean", "Complete@10", "nDCG@10", "RR", "AP@1000",
                        "R@100", "SameLangFirst", "PEER@10"])
    full = run(retriever, **kw)
    sharded = run(retriever, shards=shards, **kw)
    assert _values(sharded) == _values(full)
    for name, (ids, cols) in _per_query(full).items():
        ids2, cols2 = _per_query(sharded)[name]
        assert ids2 == ids and all(np.array_equal(cols[m], cols2[m], equal_nan=True) for m in cols)
    ranking = sharded.pools[0].record.to_dict()["retriever"]["ranking"]
    assert ranking["path"] == "sharded counting" and ranking["exact"] is True
    assert ranking["shards"] == min(shards, sharded.pools[0].record.to_dict()["pool_size"])
    assert "ranking" not in full.pools[0].record.to_dict()["retriever"]


def test_sharded_run_with_bm25_splits_full_rows(tmp_path):
    kw = dict(task="xquad", langs="en,zh", scenarios="multi", data_dir=XQUAD, output_dir=None, resamples=20,
              progress=False)
    full, sharded = run("bm25", **kw), run("bm25", shards=3, **kw)
    assert _values(sharded) == _values(full)
    assert sharded.pools[0].record.to_dict()["retriever"]["ranking"]["scoring"] == "column split of full rows"


def test_flat_index_gives_the_exact_cutoff_measures_and_records_recall(bag_retriever, tmp_path):
    retriever, _ = bag_retriever()
    kw = dict(task="xquad", langs="en,zh", scenarios="multi-1,mono-cross", data_dir=XQUAD, resamples=20,
              progress=False, measures=CUTOFF)
    exact = run(retriever, output_dir=None, **kw)
    approx = run(retriever, index="faiss:Flat", output_dir=tmp_path / "out", **kw)
    assert _values(approx) == _values(exact)
    record = json.loads(approx.pools[0].path.read_text())
    ranking = record["retriever"]["ranking"]
    assert ranking["path"] == "approximate top-k" and ranking["index"]["factory"] == "Flat"
    assert ranking["recall"]["recall"] == 1.0 and ranking["k"] == 1000
    assert "+ann-Flat" in str(approx.pools[0].path)


def test_index_without_measures_drops_the_rank_set_ones(bag_retriever):
    retriever, _ = bag_retriever()
    report = run(retriever, task="xquad", langs="en,zh", scenarios="multi", data_dir=XQUAD, output_dir=None,
                 resamples=20, progress=False, index="faiss:Flat")
    names = set(report.pools[0].record.to_dict()["measures"])
    assert "nDCG@10" in names and "Complete@10" in names and not names & {"MaxR", "MaxR_norm", "SameLangFirst"}


def test_index_refuses_rank_set_measures_and_shards_together(bag_retriever):
    retriever, _ = bag_retriever()
    kw = dict(task="xquad", langs="en,zh", data_dir=XQUAD, output_dir=None, progress=False)
    with pytest.raises(ClirbenchError, match="MaxR needs every relevant document's exact rank"):
        run(retriever, index="faiss:Flat", measures=["MaxR", "nDCG@10"], **kw)
    with pytest.raises(ClirbenchError, match="--index excludes --shards"):
        run(retriever, index="faiss:Flat", shards=2, measures=["nDCG@10"], **kw)


def test_auto_sharding_above_the_threshold(bag_retriever, monkeypatch):
    import clirbench.rank.shards as sharded

    monkeypatch.setattr(sharded, "AUTO_SHARD_DOCS", 100)  # XQuAD's en+zh pools hold 480 passages
    retriever, _ = bag_retriever()
    report = run(retriever, task="xquad", langs="en,zh", scenarios="multi", data_dir=XQUAD, output_dir=None,
                 resamples=20, progress=False)
    assert report.pools[0].record.to_dict()["retriever"]["ranking"]["path"] == "sharded counting"


def test_ray_executor_gives_the_same_ranks_and_records_it(tiny_bert_dir, tmp_path):
    """`run(executor="ray")` on a local Ray with 2 workers: documents encoded by Ray actors into the
    shared cache, shards counted by Ray tasks; every value equal to the in-process full-rows path."""
    kw = dict(task="xquad", langs="en,zh", scenarios="multi", data_dir=XQUAD, output_dir=None, resamples=20,
              progress=False, cache_dir=tmp_path / "cache")
    full = run(f"dense:{tiny_bert_dir}", **kw)
    on_ray = run(f"dense:{tiny_bert_dir}", executor="ray", workers=2, shards=3, **kw)
    assert _values(on_ray) == _values(full)
    ranking = on_ray.pools[0].record.to_dict()["retriever"]["ranking"]
    assert ranking["path"] == "sharded counting on Ray" and ranking["address"] == "local"
    assert ranking["shards"] == 3 and ranking["shards_computed"] + ranking["shards_reused"] == 3


def test_executor_and_index_options_are_checked(bag_retriever):
    retriever, _ = bag_retriever()
    kw = dict(task="xquad", langs="en,zh", data_dir=XQUAD, output_dir=None, progress=False, measures=["nDCG@10"])
    with pytest.raises(ClirbenchError, match="unknown executor 'spark'"):
        run(retriever, executor="spark", **kw)
    with pytest.raises(ClirbenchError, match="--address needs --executor ray"):
        run(retriever, address="127.0.0.1:6379", **kw)
    with pytest.raises(ClirbenchError, match="--index excludes"):
        run(retriever, index="faiss:Flat", executor="ray", **kw)


def test_cli_shards_index_and_one_line_errors(tmp_path, capsys):
    """`clirbench run … --shards N` / `--index faiss:…` through the real parser; bad values: one line, exit 2."""
    from clirbench.cli import main

    common = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "multi",
              "--data-dir", str(XQUAD), "--resamples", "20", "--no-progress"]
    assert main(common + ["--output", str(tmp_path / "full")]) == 0
    assert main(common + ["--output", str(tmp_path / "sharded"), "--shards", "7"]) == 0
    capsys.readouterr()
    full = sorted((tmp_path / "full").rglob("*.q-*.json"))
    sharded = sorted((tmp_path / "sharded").rglob("*.q-*.json"))
    assert len(full) == len(sharded) == 2
    for a, b in zip(full, sharded):
        ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
        assert {k: v["value"] for k, v in ra["measures"].items()} == {k: v["value"] for k, v in rb["measures"].items()}
        assert rb["retriever"]["ranking"]["shards"] == 7
    for argv, needle in [(["--shards", "0"], "--shards"), (["--index", "faiss:bogus"], "bogus"),
                         (["--index", "faiss:Flat"], "needs a dense retriever"),
                         (["--executor", "spark"], "--executor"),
                         (["--address", "127.0.0.1:1"], "--address needs --executor ray"),
                         (["--executor", "ray", "--address", "127.0.0.1:1"], "127.0.0.1:1")]:
        code = main(common + ["--output", str(tmp_path / "x"), "--measures", "nDCG@10"] + argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("clirbench: error:") and needle in err[0], (argv, err)
