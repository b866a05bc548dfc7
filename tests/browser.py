"""A real browser for the tests of the results site and the episode viewer: Debian's Chromium
(``/usr/bin/chromium``, or ``MARKETARENA_CHROMIUM``) driven by Playwright for Python. Playwright's
own browser download cannot run on these machines, so it drives the system's Chromium with
the flags a closed network needs (no background networking, no component updates).

Without Chromium or Playwright the browser tests skip, unless ``MARKETARENA_REQUIRE_BROWSER=1``
(CI sets it, and ``.ci/run`` installs the browser), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


def chromium() -> str | None:
    path = os.environ.get("MARKETARENA_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return path if Path(path).is_file() else None


def unavailable(why: str) -> None:
    if os.environ.get("MARKETARENA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{why}; MARKETARENA_REQUIRE_BROWSER=1 says the browser tests must run "
                    "(apt-get install chromium; pip install playwright)")
    pytest.skip(why)


class Console:
    """Errors a page reported: console messages of type error and uncaught exceptions."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


@contextmanager
def browser_page(width: int = 1400, height: int = 1000) -> Iterator[tuple[object, Console]]:
    """(page, its Console) in a fresh headless Chromium."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed")
    exe = chromium()
    if exe is None:
        unavailable("no Chromium at /usr/bin/chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(60_000)  # a busy 2-core machine
            yield page, Console(page)
        finally:
            browser.close()
