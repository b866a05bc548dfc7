"""A real browser for the tests of the results site and the episode viewer:
``marketarena.report.browser`` (Debian's Chromium driven by Playwright for Python, with the flags a
closed network needs), with what the tests add: pages' errors collected, and the skip.

Without Chromium or Playwright the browser tests skip, unless ``MARKETARENA_REQUIRE_BROWSER=1``
(CI sets it, and ``.ci/run`` installs the browser), which turns the skip into a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

from marketarena.report.browser import NoBrowser, open_page


def unavailable(why: str) -> None:
    if os.environ.get("MARKETARENA_REQUIRE_BROWSER") == "1":
        pytest.fail(
            f"{why}; MARKETARENA_REQUIRE_BROWSER=1 says the browser tests must run "
            "(apt-get install chromium; pip install playwright)"
        )
    pytest.skip(why)


class Console:
    """Errors a page reported: console messages of type error and uncaught exceptions."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        page.on(
            "console",
            lambda m: (
                self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
            ),
        )
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


@contextmanager
def browser_page(width: int = 1400, height: int = 1000) -> Iterator[tuple[object, Console]]:
    """(page, its Console) in a fresh headless Chromium."""
    with ExitStack() as stack:
        try:
            page = stack.enter_context(open_page(width, height))
        except NoBrowser as exc:
            unavailable(str(exc))
        yield page, Console(page)
