"""`marketarena view` for real: the command serves the tiny LLM run (shards) on loopback; plain
HTTP checks (read-only, 404s, the libraries served from their packages), then a real browser
(tests/browser.py) picks the instance, filters by player, opens an episode and a decision, and
reads its prompt, raw answer and re-ask, with no console error on the way. Ids that are no plain
name are not found, and a damaged episode is a page naming its file, with no traceback in the
server's log."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.browser import browser_page
from tests.view.conftest import NOT_JSON

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, method: str = "GET") -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@contextlib.contextmanager
def serving(root: Path):
    """(base URL, process) of `marketarena view --root <root>` on a free loopback port; the
    process's output (its log) is read once it is stopped."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    proc = subprocess.Popen([sys.executable, "-m", "marketarena.cli", "view", "--root", str(root),
                             "--port", str(port)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                if get(base + "/")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"the viewer did not start:\n{proc.stdout.read()}")
            time.sleep(0.2)
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def viewer(llm_runs):
    """The base URL of `marketarena view --root <tiny run>` on a free loopback port."""
    with serving(llm_runs["shards"].parents[1]) as (base, _):
        yield base


def test_serves_read_only_pages_and_its_libraries(viewer):
    status, body = get(viewer + "/i/double_auction?player=gpt_fake")
    assert status == 200
    listed = re.findall(rb'href="/i/double_auction/e/([^"]+)"', body)
    assert listed == [b"x-gpt_fake-0000", b"x-gpt_fake-0001", b"x-gpt_fake-0002"]
    assert get(viewer + "/i/double_auction/e/x-gpt_fake-0001")[0] == 200
    assert get(viewer + "/i/double_auction/e/x-gpt_fake-0042")[0] == 404
    assert get(viewer + "/i/nothing")[0] == 404
    assert get(viewer + "/i/double_auction/e/x-gpt_fake-0001/d?step=x")[0] == 404
    assert get(viewer + "/i/double_auction/e/x-gpt_fake-0001", method="POST")[0] == 405
    for name, start in (("plotly.min.js", b"/**"), ("dt_bundle.js", b"var ")):
        status, body = get(f"{viewer}/vendor/{name}")
        assert status == 200 and body.startswith(start) and len(body) > 100_000


def test_odd_ids_are_not_found_and_a_damaged_episode_is_a_page_not_a_traceback(llm_runs, tmp_path):
    """The audit's V4: an id over 255 bytes and a truncated table answered 500 with a traceback."""
    shutil.copytree(llm_runs["folders"].parents[1] / "data", tmp_path / "data")
    table = tmp_path / "data" / "episodes" / "double_auction" / "ep-0001" / "decisions.parquet"
    table.write_bytes(table.read_bytes()[:200])  # truncated
    with serving(tmp_path) as (base, proc):
        decision = "/d?step=0&round=0&phase=quote&agent=S1"
        for odd in ("ep-" + "1" * 5000, "e" * 300, "ep-" + "1" * 5000 + decision):
            assert get(f"{base}/i/double_auction/e/{odd}")[0] == 404
        assert get(f"{base}/i/{'x' * 300}")[0] == 404
        assert get(f"{base}/i/double_auction/e/ep-0002")[0] == 200  # the other episodes open
        for url in ("/i/double_auction/e/ep-0001", "/i/double_auction/e/ep-0001" + decision):
            status, body = get(base + url)
            page = body.decode()
            assert status == 500 and page.startswith("<!doctype html>"), page[:300]
            assert f"{table} of episode ep-0001 cannot be read (ArrowInvalid" in page
            assert "changed after it was written" in page
    log = proc.stdout.read()
    assert "Traceback" not in log and "Errno 36" not in log, log
    warnings = [line for line in log.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2 and f"{table} of episode ep-0001 cannot be read" in warnings[0], log


def test_open_an_episode_and_a_decision_in_a_browser(viewer):
    with browser_page() as (page, console):
        page.goto(viewer + "/")
        page.click("text=double_auction")
        page.select_option("select[name=player]", "gpt_fake")
        page.click("button[type=submit]")
        rows = page.locator("table.episodes tbody tr")
        assert rows.count() == 3
        page.click("text=x-gpt_fake-0000")
        page.wait_for_selector("#table-states .plot .main-svg")  # plotly drew the state plots
        assert page.locator("#table-states .plot").count() >= 4
        page.select_option("#step", "2")  # the timeline at one step: 8 seats
        assert page.locator("#table-states tbody tr").count() == 8
        page.check("#llm-only")
        page.locator("a.llm-decision").first.click()
        page.wait_for_selector("pre.raw-answer")
        prompt = page.locator("div.message pre.prompt").first.inner_text()  # the user message
        assert "Your private" in prompt and "Submit your" in prompt
        page.click("details.message summary")  # the system message, folded by default
        assert "double-auction market" in page.locator("details.message pre").first.inner_text()
        answers = page.locator("pre.raw-answer").all_inner_texts()
        assert answers[0] == NOT_JSON and '"quote"' in answers[1]  # the re-ask and its answer
        assert "not valid JSON" in page.locator("p.error").first.inner_text()
        assert page.locator("text=Re-ask 1").count() == 1
        assert console.errors == []
