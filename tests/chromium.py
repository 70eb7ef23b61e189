"""Headless Chromium for the browser tests (Debian's chromium + chromium-driver, via selenium)."""
from __future__ import annotations

from pathlib import Path

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def start_chromium(profile: Path, width: int, height: int, console_log: bool = False, hide_scrollbars: bool = False):
    """A selenium driver on a fresh ``profile`` folder, the window ``width`` × ``height``; the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(), \
        "needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                f"--window-size={width},{height}") + (("--hide-scrollbars",) if hide_scrollbars else ()):
        options.add_argument(arg)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
