"""The language exposure measures on leaderboards: Share@10, AWRF@10 and alpha_nDCG@20 as
columns of the boards of multi pools (their tests a correction family of their own, so the main
measures' groups stay as they were), the top-10 share matrix beside each preference heatmap, and
boards whose entries were made before them valid and rendering ("–")."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from clirbench.cli import main
from clirbench.leaderboard import boards, load, store
from clirbench.leaderboard.page import EXPOSURE_NOTE, esc, render_page
from clirbench.leaderboard.submit import added
from clirbench.leaderboard.tables import render
from clirbench.leaderboard.validate import EXPOSURE_COLUMNS
from clirbench.runner import run

from conftest import BagOfCharsEncoder
from xquad_files import XQUAD

from chromium import start_chromium  # noqa: E402  (tests/chromium.py)

REPO = Path(__file__).resolve().parents[1]
LANGS = ("en", "zh", "ar")
MAIN = ("MaxR", "MaxR_norm", "MaxR_norm_of_mean", "Complete@10", "SameLangFirst")
MULTI = [f"multi/en-zh-ar/q-{q}" for q in LANGS]


def _dense(spec: str, dim: int):
    from clirbench.cache.embeddings import EmbeddingCache
    from clirbench.retrievers.dense import DenseRetriever

    return DenseRetriever(BagOfCharsEncoder(dim), EmbeddingCache(None), spec=spec)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A board of XQuAD en,zh,ar: bm25 (multi and mono-same) and test:bag (multi) with today's
    measures, test:old (multi) with the main measures only, as results made before the exposure measures."""
    out = tmp_path_factory.mktemp("lb-exposure")
    options = dict(task="xquad", langs="en,zh,ar", data_dir=XQUAD, output_dir=out / "results", resamples=50,
                   progress=False)
    run("bm25", scenarios="multi,mono-same", cache_dir=out / "c", **options)
    run(_dense("test:bag", 32), scenarios="multi", **options)
    run(_dense("test:old", 64), scenarios="multi", measures=list(MAIN), **options)
    assert main(["leaderboard", "build", str(out / "results"), "--dir", str(out / "lb"), "--data-dir", str(XQUAD),
                 "--command", "clirbench run --task xquad --langs en,zh,ar --scenario multi"]) == 0
    return out


def _record(work, system: str, pid: str) -> dict:
    q = pid.rsplit("q-", 1)[1]
    docs = pid.split("/")[1]
    (path,) = (work / "results" / system).rglob(f"{pid.split('/')[0]}/unique/{docs}.q-{q}.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _strip_exposure(data: dict, systems=None) -> dict:
    """``data`` as a board made before the exposure measures: no exposure measures, vectors or top-10 shares."""
    old = copy.deepcopy(data)
    for name, sysd in old["systems"].items():
        if systems is not None and name not in systems:
            continue
        for res in sysd["results"].values():
            for part in (res["measures"], res["per_query"]["measures"]):
                for m in [m for m in part if m.startswith(("Share", "AWRF", "alpha_nDCG", "Top1_"))]:
                    del part[m]
            (res.get("preference") or {}).pop("top10_share", None)
    return old


def test_the_board_keeps_exposure_vectors_on_pools_of_two_or_more_languages(work):
    data = load(work / "lb" / "xquad.json")
    assert set(data["systems"]) == {"bm25", "test:bag", "test:old"}
    for pid, res in data["systems"]["bm25"]["results"].items():
        kept = set(res["per_query"]["measures"])
        if pid.startswith("multi/"):
            assert kept >= set(EXPOSURE_COLUMNS) | {"MaxR", "SameLangFirst"}
            assert not any(m.startswith("Top1_") for m in kept)  # in the record, not a column
            n = data["pools"][pid]["num_queries"]
            for m in EXPOSURE_COLUMNS:  # the vector gives the record's own mean (float32 storage)
                vector = store.decode_vector(res["per_query"]["measures"][m], n, m)
                assert np.nanmean(vector) == pytest.approx(_record(work, "bm25", pid)["measures"][m]["value"],
                                                           rel=1e-6)
        else:  # mono-same: one document language, no exposure column
            assert pid.startswith("mono-same/") and not kept & set(EXPOSURE_COLUMNS)
    for res in data["systems"]["test:old"]["results"].values():
        assert not set(res["per_query"]["measures"]) & set(EXPOSURE_COLUMNS)
        assert "top10_share" not in res["preference"]


def test_exposure_columns_rank_in_a_family_of_their_own(work):
    data = load(work / "lb" / "xquad.json")
    multi = [b for b in boards(data) if b.scenario == "multi"]
    assert [b.measure for b in multi] == ["Complete@10", "MaxR", "MaxR_norm", "SameLangFirst", "AWRF@10",
                                          "Share@10", "alpha_nDCG@20"]  # main columns first, as before
    share = next(b for b in multi if b.measure == "Share@10")
    assert share.arrow == "best at 33.3" and share.target == pytest.approx(100 / 3)
    assert {r.system for r in share.rows} == {"bm25", "test:bag"}  # test:old has none: "–"
    for row in share.rows:  # the macro mean of the records' own values
        want = np.mean([_record(work, row.system.replace(":", "__"), pid)["measures"]["Share@10"]["value"]
                        for pid in MULTI])
        assert row.value == pytest.approx(want, rel=1e-6) and row.ci_low <= row.value <= row.ci_high
        assert row.rank is not None
    # the families: 3 systems x 4 main measures = 12 tests; 2 systems x 3 exposure measures = 3 tests
    exposure = [b for b in multi if b.measure in EXPOSURE_COLUMNS]
    assert {b.family_size for b in multi if b not in exposure} == {12} and {b.family_size for b in exposure} == {3}
    assert all("language exposure measure" in b.correction_note for b in exposure)
    raw = [b.pairs[0].p_value for b in exposure]
    holm = multipletests(raw, method="holm")[1]
    assert [b.pairs[0].p_adjusted for b in exposure] == pytest.approx(list(holm), abs=1e-12)
    # the main boards are those of the same board without the exposure measures, to the bit
    before = [b for b in boards(_strip_exposure(data)) if b.scenario == "multi"]
    assert before == [b for b in multi if b not in exposure]


def test_tables_show_the_columns_and_a_dash_for_results_made_before(work, capsys):
    text = render("xquad", work / "lb", scenario="multi", fmt="markdown")
    header = next(line for line in text.splitlines() if line.startswith("| System"))
    assert "Share@10 best at 33.3" in header and "AWRF@10 ↑" in header and "alpha\\_nDCG@20 ↑" in header
    old = next(line for line in text.splitlines() if line.startswith("| test:old"))
    cells = [c.strip() for c in old.strip("|").split("|")]
    assert cells[-3:] == ["–", "–", "–"] and all(c != "–" for c in cells[1:-3])
    csv = render("xquad", work / "lb", scenario="multi", measure="Share@10", fmt="csv").splitlines()
    assert len(csv) == 3 and {line.split(",")[6] for line in csv[1:]} == {"bm25", "test:bag"}
    assert main(["leaderboard", "show", "xquad", "--dir", str(work / "lb"), "--scenario", "multi",
                 "--measure", "alpha_nDCG@20"]) == 0
    assert "every language exposure measure of this scenario" in capsys.readouterr().out


def test_the_page_shows_the_columns_and_each_systems_top10_shares(work):
    data = load(work / "lb" / "xquad.json")
    page = render_page(data)
    assert 'Share@10 <span class="dir">best at 33.3</span>' in page
    assert page.count('<svg class="preference"') == 3 and page.count('<svg class="exposure"') == 2
    assert page.count('<div class="pair">') == 2 and esc(EXPOSURE_NOTE) in page
    assert "Groups (language exposure): paired bootstrap" in page
    for system in ("bm25", "test:bag"):
        svg = next(part for part in page.split('<svg class="exposure"')[1:]
                   if f"xquad/multi/en-zh-ar · {system} · top 10" in part).split("</svg>")[0]
        cells = svg.split('<g class="share')[1:]
        assert len(cells) == 9
        for i, q in enumerate(LANGS):
            row = _record(work, system.replace(":", "__"), f"multi/en-zh-ar/q-{q}")["preference"]["top10_share"]
            for j, d in enumerate(LANGS):
                cell = cells[3 * i + j]
                assert cell.startswith(" own\"" if d == q else "\""), (q, d)
                assert f'data-v="{row[d]["value"]!r}"' in cell
                assert f'[{row[d]["ci_low"]:.1f}, {row[d]["ci_high"]:.1f}]</text>' in cell
            assert sum(row[d]["value"] for d in LANGS) == pytest.approx(100.0)
    # test:old has a preference heatmap and no shares: not in a pair
    old = page.split("xquad/multi/en-zh-ar · test:old</text>")[0].rsplit("<svg", 1)[0]
    assert not old.endswith('<div class="pair">')


def test_boards_made_before_stay_valid_and_render(work):
    shipped = load(REPO / "leaderboards" / "xquad.json")
    assert [b for b in boards(shipped) if b.measure in EXPOSURE_COLUMNS]  # the reference board has them now
    shipped = store.validate(_strip_exposure(shipped), "reference board as made before")
    page = render_page(shipped)
    assert 'class="exposure"' not in page and "Share@10" not in page and "Groups (language exposure)" not in page
    assert not [b for b in boards(shipped) if b.measure in EXPOSURE_COLUMNS]
    old = store.validate(_strip_exposure(load(work / "lb" / "xquad.json")), "old board")
    page = render_page(old)
    assert 'class="exposure"' not in page and "Share@10" not in page and '<div class="pair">' not in page
    assert page.count('<svg class="preference"') == 3


def test_an_entry_made_before_gains_the_measures_from_the_same_run(work, tmp_path, capsys):
    data = load(work / "lb" / "xquad.json")
    (tmp_path / "lb").mkdir()
    store.save(_strip_exposure(data, {"bm25"}), tmp_path / "lb" / "xquad.json")
    path = next((work / "results" / "bm25").rglob("en-zh-ar.q-zh.json"))
    code = main(["leaderboard", "submit", str(path), "--dir", str(tmp_path / "lb")])
    out = capsys.readouterr().out
    assert code == 0 and "bm25 on multi/en-zh-ar/q-zh replaced" in out
    share = _record(work, "bm25", "multi/en-zh-ar/q-zh")["measures"]["Share@10"]["value"]
    assert f"Share@10 – → {share:.4g}" in out and "MaxR " not in out  # only what it gains
    entry = load(tmp_path / "lb" / "xquad.json")["systems"]["bm25"]["results"]["multi/en-zh-ar/q-zh"]
    assert entry == data["systems"]["bm25"]["results"]["multi/en-zh-ar/q-zh"]
    assert main(["leaderboard", "submit", str(path), "--dir", str(tmp_path / "lb")]) == 0
    assert "already there (unchanged)" in capsys.readouterr().out
    # a run that lacks a measure the entry has is still another entry: refused
    lacking = json.loads(path.read_text(encoding="utf-8"))
    del lacking["measures"]["Complete@10"]
    other = tmp_path / "lacking"
    other.mkdir()
    (other / path.name).write_text(json.dumps(lacking), encoding="utf-8")
    (other / lacking["per_query_file"]).write_bytes((path.parent / lacking["per_query_file"]).read_bytes())
    assert main(["leaderboard", "submit", str(other / path.name), "--dir", str(tmp_path / "lb")]) == 2
    assert "other values, not within their 95% intervals (Complete@10" in capsys.readouterr().err


def test_added_names_what_only_the_new_entry_has():
    old = {"measures": {"MaxR": {"value": 3.0}}, "preference": {"best_share": {}}}
    new = {"measures": {"MaxR": {"value": 3.0}, "Share@10": {"value": 90.0}, "AWRF@10": {"value": None}},
           "preference": {"best_share": {}, "top10_share": {}}}
    assert added(old, new) == [("AWRF@10", None, None), ("Share@10", None, 90.0), ("preference.top10_share", None, "…")]
    assert added(new, old) == [] and added(old, old) == []
    assert added({"measures": {}}, {"measures": {}, "preference": {"top10_share": {}}}) == []  # no preference before


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"), 1400, 1000, hide_scrollbars=True)
    yield driver
    driver.quit()


def test_the_share_matrices_fit_the_page_at_1400_and_800_px(work, browser, tmp_path):
    from test_leaderboard_html import LAYOUT_PROBLEMS, WORD_PROBLEMS

    assert main(["leaderboard", "html", "--dir", str(work / "lb"), "--out", str(tmp_path / "site")]) == 0
    page = tmp_path / "site" / "xquad.html"
    for width in (1400, 800):
        browser.set_window_size(width, 1000)
        browser.get(page.resolve().as_uri())
        assert browser.execute_script("return document.body.getAttribute('data-ready')") == "1"
        if width == 1400:  # at 800 px a wide table scrolls in its own box, as the page's own test allows
            assert browser.execute_script(LAYOUT_PROBLEMS) == []
        assert browser.execute_script(WORD_PROBLEMS) == []
        svgs = browser.find_elements("css selector", "svg.exposure")
        assert len(svgs) == 2
        for svg in svgs:
            browser.execute_script("arguments[0].scrollIntoView()", svg)
            assert svg.is_displayed()
            box, cells = browser.execute_script(
                "const r = arguments[0].getBoundingClientRect();"
                "return [[r.width, r.height], arguments[0].querySelectorAll('g.share').length]", svg)
            assert box[0] > 250 and box[1] > 120 and cells == 9
        # each heatmap and its shares side by side at 1400 px (one pair per row at most at 800)
        tops = browser.execute_script(
            "return Array.from(document.querySelectorAll('div.pair')).map(p => Array.from(p.children)"
            ".map(s => Math.round(s.getBoundingClientRect().top)))")
        assert len(tops) == 2
        if width == 1400:
            assert all(len(set(t)) == 1 for t in tops)
        fills = browser.execute_script(
            "return Array.from(document.querySelectorAll('svg.exposure g.share text')).map(t => getComputedStyle(t).fill)")
        assert "rgb(255, 255, 255)" in fills and "rgb(0, 0, 0)" in fills
    assert browser.save_screenshot(str(tmp_path / "exposure.png"))
