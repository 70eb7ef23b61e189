"""The README's and docs' picture of the reference XQuAD board: docs/leaderboard-xquad.png.

    python benchmarks/leaderboard_screenshot.py [--board-dir leaderboards] [--out docs/leaderboard-xquad.png]

Writes the page as ``clirbench leaderboard html --dir leaderboards`` does (into a temporary folder),
opens it in headless Chromium at 1,400 px (Debian's chromium and chromium-driver, through selenium,
as the browser tests do) and saves the top of the page, ``--height`` px tall (the overall table and
the multi scenario's table with its bars).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from clirbench.leaderboard import html

REPO = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def screenshot(page: Path, out: Path, width: int, height: int, profile: Path) -> None:
    """Save ``page`` as Chromium shows it in a ``width`` × ``height`` window (no scroll bars)."""
    from selenium import webdriver  # lazy: selenium, only for this script
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(page.resolve().as_uri())
        if driver.execute_script("return document.body.getAttribute('data-ready')") != "1":
            raise SystemExit(f"{page}: the page's script did not finish")
        driver.set_window_size(width, height)
        inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
        if inner != [width, height]:  # the window's frame takes some: make the page itself width x height
            driver.set_window_size(2 * width - inner[0], 2 * height - inner[1])
        if not driver.save_screenshot(str(out)):
            raise SystemExit(f"could not write {out}")
    finally:
        driver.quit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--board-dir", default=str(REPO / "leaderboards"), help="folder holding xquad.json")
    parser.add_argument("--out", default=str(REPO / "docs" / "leaderboard-xquad.png"))
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        html(site, Path(args.board_dir), ["xquad"])
        screenshot(site / "xquad.html", Path(args.out), args.width, args.height, Path(tmp) / "profile")
    print(f"{args.out}: {args.width} x {args.height} px of {Path(args.board_dir) / 'xquad.json'}'s page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
