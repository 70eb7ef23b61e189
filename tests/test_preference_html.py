"""The language-preference heatmap on the leaderboard page, opened in headless Chromium (as
tests/test_leaderboard_html.py does): visible, every cell and label inside the drawing (not
clipped), and the SVG string itself escaped and sized."""
from __future__ import annotations


import pytest

from clirbench.cli import main
from clirbench.leaderboard.preference import preference_svg, share_colour
from clirbench.runner import run

from xquad_files import XQUAD


from chromium import start_chromium  # noqa: E402  (tests/chromium.py)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"), 1200, 1600)
    yield driver
    driver.quit()


def _matrix(pool: str = "xquad/multi/en-zh-ar", langs=("en", "zh", "ar")) -> dict:
    cell = lambda v: {"value": v, "ci_low": v, "ci_high": v, "n": 10}  # noqa: E731
    shares = [[100.0 if i == j else 0.0 for j in range(len(langs))] for i in range(len(langs))]
    return {"pool": pool, "doc_langs": list(langs), "query_langs": list(langs),
            "best_share": [[cell(v) for v in row] for row in shares],
            "mean_rank": [[cell(1.0 + 100 * (i != j)) for j in range(len(langs))] for i in range(len(langs))]}


def test_svg_string_is_escaped_sized_and_coloured():
    svg = preference_svg(_matrix("x/<b>", ("en", "zh")), system='<script>"')
    assert svg.startswith('<svg class="preference"') and "<script>" not in svg and "&lt;b&gt;" in svg
    assert svg.count('class="cell"') == 4 and 'width="' in svg and 'height="' in svg
    assert share_colour(0.0) == "#f7fbff" and share_colour(100.0) == "#08306b" and share_colour(None) == "#eeeeee"


def test_the_page_shows_the_heatmap_unclipped(browser, tmp_path):
    results = tmp_path / "results"
    run("bm25", task="xquad", langs="en,zh,ar", scenarios="multi", data_dir=XQUAD, output_dir=results,
        resamples=20, progress=False, cache_dir=tmp_path / "c")
    assert main(["leaderboard", "build", str(results), "--dir", str(tmp_path / "lb"), "--data-dir", str(XQUAD),
                 "--command", "clirbench run --model bm25 --langs en,zh,ar --scenario multi"]) == 0
    assert main(["leaderboard", "html", "--dir", str(tmp_path / "lb"), "--out", str(tmp_path / "site")]) == 0
    page = tmp_path / "site" / "xquad.html"
    assert page.read_text().count('<svg class="preference"') == 1
    browser.get(page.resolve().as_uri())
    assert browser.execute_script("return document.body.getAttribute('data-ready')") == "1"
    svg = browser.find_element("css selector", "svg.preference")
    browser.execute_script("arguments[0].scrollIntoView()", svg)
    assert svg.is_displayed()
    box, cells, outside = browser.execute_script("""
        const s = arguments[0], r = s.getBoundingClientRect();
        const out = [];
        for (const e of s.querySelectorAll('rect, text')) {
          const b = e.getBBox();
          if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > s.width.baseVal.value + 0.5
              || b.y + b.height > s.height.baseVal.value + 0.5) out.push(e.textContent || e.tagName);
        }
        return [[r.width, r.height], s.querySelectorAll('g.cell').length, out];""", svg)
    assert box[0] > 250 and box[1] > 120 and cells == 9 and outside == []
    # the page's CSS must not hide the cells' text: the diagonal (99%+ shares) is written in white
    fills = browser.execute_script(
        "return Array.from(arguments[0].querySelectorAll('g.cell text')).map(t => getComputedStyle(t).fill)", svg)
    assert "rgb(255, 255, 255)" in fills and "rgb(0, 0, 0)" in fills
    shot = tmp_path / "preference.png"
    svg.screenshot(str(shot))
    assert shot.stat().st_size > 2_000
