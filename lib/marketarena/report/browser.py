"""A real browser for the screenshots (``marketarena.screenshots``) and the browser tests
(``tests/browser.py``): Debian's Chromium (``/usr/bin/chromium``, or ``MARKETARENA_CHROMIUM``)
driven by Playwright for Python (the ``dev`` extra). Playwright's own browser download cannot run
on these machines, so it drives the system's Chromium with the flags a closed network needs (no
background networking, no component updates). ``make install-browser`` installs Chromium."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


class NoBrowser(RuntimeError):
    """Playwright or Chromium is missing (the message says which and how to install it)."""


def chromium() -> str | None:
    path = os.environ.get("MARKETARENA_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return path if Path(path).is_file() else None


@contextmanager
def open_page(width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A Playwright page of a fresh headless Chromium, ``width`` × ``height`` CSS pixels;
    :class:`NoBrowser` when either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise NoBrowser(
            "playwright is not installed (pip install playwright, or the dev extra)"
        ) from None
    exe = chromium()
    if exe is None:
        raise NoBrowser("no Chromium at /usr/bin/chromium (make install-browser)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(60_000)  # a busy 2-core machine
            yield page
        finally:
            browser.close()
