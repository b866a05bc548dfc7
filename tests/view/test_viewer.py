"""`marketarena view` for real: the command serves the tiny LLM run (shards) on loopback; plain
HTTP checks (read-only, 404s, the library served from its package), then a real browser
(tests/browser.py) picks the instance, filters by player, opens an episode and a decision, and
reads its prompt, raw answer and re-ask, with no console error on the way. From a player's page,
an episode opens on that player's seats. Ids that are no plain name are not found, and a damaged
episode is a page naming its file, with no traceback in the server's log. A 30-round game's page
draws its charts as SVG and loads under 1 MB of script (no plotly.js)."""

from __future__ import annotations

import json
import re
import shutil
from urllib.parse import parse_qs, urlsplit

import pytest

from marketarena.core.reader import read_episode
from tests.browser import browser_page
from tests.view.conftest import NOT_JSON
from tests.view.server import get, serving

ONE_MB = 1_000_000


@pytest.fixture(scope="module")
def viewer(llm_runs):
    """The base URL of `marketarena view --root <tiny run>` on a free loopback port."""
    with serving(llm_runs["shards"].parents[1]) as (base, _):
        yield base


def test_serves_read_only_pages_and_its_libraries(viewer):
    status, body = get(viewer + "/i/double_auction?player=gpt_fake")
    assert status == 200
    listed = re.findall(rb'href="/i/double_auction/e/([^"?]+)', body)
    assert listed == [b"x-gpt_fake-0000", b"x-gpt_fake-0001", b"x-gpt_fake-0002"]
    assert get(viewer + "/i/double_auction/e/x-gpt_fake-0001")[0] == 200
    assert get(viewer + "/i/double_auction/e/x-gpt_fake-0042")[0] == 404
    assert get(viewer + "/i/nothing")[0] == 404
    assert get(viewer + "/i/double_auction/e/x-gpt_fake-0001/d?step=x")[0] == 404
    assert get(viewer + "/i/double_auction/e/x-gpt_fake-0001", method="POST")[0] == 405
    status, body = get(f"{viewer}/vendor/dt_bundle.js")
    assert status == 200 and body.startswith(b"var ") and len(body) > 100_000
    assert get(f"{viewer}/vendor/plotly.min.js")[0] == 404  # the charts are our own SVG


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
        page.wait_for_selector("#table-states .plot svg.chart")  # the state charts are drawn
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


def test_an_episode_opened_from_a_players_page_opens_on_its_seats(viewer, llm_runs):
    """The newcomer's review: from my_llm's page, the first decision link of its episode opened
    seat B1, a baseline, not my_llm's seat."""
    seats = read_episode(llm_runs["shards"] / "double_auction", "x-gpt_fake-0000")[1]["agents"]
    mine = seats.loc[seats["name"] == "gpt_fake", "agent_id"].tolist()
    assert mine and mine != [seats["agent_id"].iloc[0]]  # not the seat listed first
    with browser_page() as (page, console):
        page.goto(viewer + "/i/double_auction/p/gpt_fake")
        page.click("table.episodes a:text-is('x-gpt_fake-0000')")
        page.wait_for_selector("#decisions-table a.decision, #decisions-table a.llm-decision")
        assert page.locator("#seat-only").is_checked()
        agents = [
            parse_qs(urlsplit(a).query)["agent"][0]
            for a in page.locator("#decisions-table tbody a").evaluate_all(
                "(links) => links.map((a) => a.href)"
            )
        ]
        assert agents and set(agents) == set(mine), agents
        assert page.locator("tr.focus").first.inner_text().startswith(mine[0])  # its seat marked
        assert page.locator("p.crumbs a", has_text="gpt_fake").count() == 1  # back to its page
        page.locator("#decisions-table tbody a").first.click()
        page.wait_for_selector("pre.raw-answer")
        assert page.locator("h1").inner_text().startswith(mine[0])
        page.go_back()
        page.uncheck("#seat-only")  # every seat again: the first decision is the first seat's
        first = page.locator("#decisions-table tbody a").first.get_attribute("href")
        assert parse_qs(urlsplit(first).query)["agent"] == [seats["agent_id"].iloc[0]]
        assert console.errors == []


def test_a_30_round_episode_draws_svg_charts_with_under_1_mb_of_script(long_run):
    """The newcomer's review: the episode page loaded the 4.8 MB plotly.min.js for a few small
    line charts. Bytes, not time, are asserted: they do not depend on the machine's load."""
    root = long_run / "double_auction"
    with serving(long_run.parents[1]) as (base, _), browser_page() as (page, console):
        asked = []
        page.on("request", lambda r: asked.append(r.url))
        page.goto(f"{base}/i/double_auction/e/x-gpt_fake-0000", wait_until="load")
        scripts = page.evaluate("""() => performance.getEntriesByType("resource")
            .filter((e) => e.name.endsWith(".js")).map((e) => [e.name, e.transferSize])""")
        assert not [u for u in asked if "plotly" in u], asked
        assert {urlsplit(u).path for u, _ in scripts} >= {
            "/vendor/dt_bundle.js",
            "/static/viewer.js",
            "/static/chart.js",
        }
        assert all(size > 0 for _, size in scripts), scripts  # transferred, not from a cache
        assert sum(size for _, size in scripts) < ONE_MB, scripts
        page.wait_for_selector("#table-states svg.chart")
        plots = json.loads(page.locator("#p-states").text_content())
        seats = len(read_episode(root, "x-gpt_fake-0000")[1]["agents"])
        charts = page.locator("#table-states svg.chart")
        assert charts.count() == len(plots) >= 4
        for i, plot in enumerate(plots):
            chart = charts.nth(i)
            assert chart.locator("text.title").text_content() == plot["title"]
            assert chart.locator("path.line").count() == len(plot["lines"]) == seats == 8
            assert chart.locator("g.legend").count() == seats  # a legend: 2 to 12 lines
            assert chart.locator("text.tick.x").count() >= 3
            assert chart.locator("text.tick.y").count() >= 2
        value = charts.nth([p["title"] for p in plots].index("value"))  # a seat's value: no gap
        drawn = value.locator("path.line").evaluate_all(
            "(ps) => ps.map((p) => p.getAttribute('d'))"
        )
        assert [(d.count("M"), d.count("L")) for d in drawn] == [(1, 29)] * seats  # 30 steps
        marker = charts.first.locator("line.marker")
        assert marker.get_attribute("visibility") == "hidden"
        page.select_option("#step", "12")
        x12 = float(marker.get_attribute("x1"))
        page.select_option("#step", "13")
        assert marker.get_attribute("visibility") == "visible"
        assert float(marker.get_attribute("x1")) > x12
        page.select_option("#step", "")
        assert marker.get_attribute("visibility") == "hidden"
        assert console.errors == []
