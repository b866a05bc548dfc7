"""The results site and the episode viewer together, in a real browser (tests/browser.py), on the
tiny project the screenshots are made from (``screenshots.build_project``: double_auction
with an offline mock LLM entrant whose answers are sometimes no JSON): from a board row to the
player's page, one of its games, a decision and back; sorting; a search hit; the 390 px layout
without a horizontal scroll; the dark scheme; no console error on any page; and the committed
screenshots still showing what their pages show."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from marketarena import screenshots
from tests.browser import browser_page

ROOT = Path(__file__).resolve().parents[2]
PLAYER = screenshots.ENTRANT


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return screenshots.build_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def viewer(project):
    with screenshots.viewer(project) as base:
        yield base


def site(project: Path, page: str = "double_auction.html") -> str:
    return (project / "reports" / "site" / page).as_uri()


def test_from_a_board_row_to_a_decision_and_back(project, viewer):
    with browser_page() as (page, console):
        screenshots.route_viewer(page, viewer)  # the site links to the viewer's default port
        page.goto(site(project))
        page.click(f'table.board a.player >> text="{PLAYER}"')
        page.wait_for_selector("h1")
        assert page.url.endswith(f"/i/double_auction/p/{PLAYER}")
        rows = page.locator("table.episodes tbody tr")
        assert rows.count() == screenshots.ENTRANT_GAMES  # its games, each with its outcome
        first = rows.first.locator("td").all_inner_texts()
        assert re.fullmatch(r"[1-8] of 8", first[3]) and first[7].startswith("$")
        page.click('table.episodes th a >> text="rank in game"')  # sorted on the server
        ranks = [
            int(t.split()[0])
            for t in page.locator("table.episodes tbody td:nth-child(4)").all_inner_texts()
        ]
        assert ranks == sorted(ranks, reverse=True) and "sort=rank" in page.url
        page.locator("table.episodes tbody a").first.click()
        page.wait_for_selector("#decisions-table tbody tr")
        page.check("#llm-only")
        page.locator("a.llm-decision").first.click()
        page.wait_for_selector("pre.raw-answer")
        assert "decision 1 of 6" in page.locator("nav.steps").inner_text()
        page.click("a.next-decision")
        page.wait_for_selector("pre.raw-answer")
        assert "decision 2 of 6" in page.locator("nav.steps").inner_text()
        page.go_back()
        assert "decision 1 of 6" in page.locator("nav.steps").inner_text()
        page.click(f'p.caption a >> text="{PLAYER}"')  # the seat's player
        assert page.url.endswith(f"/i/double_auction/p/{PLAYER}")
        page.go_back()
        page.click("p.crumbs a >> nth=2")  # the decision's episode
        page.wait_for_selector("#decisions-table tbody tr")
        assert console.errors == []


def test_a_board_sorts_shows_all_columns_and_compares_two_players(project):
    with browser_page() as (page, console):
        page.goto(site(project))
        board = page.locator("table.board")
        visible = board.locator("thead th:visible")
        shown = visible.count()
        heads = board.locator("thead th").all_inner_texts()
        header = board.locator("thead th").nth(heads.index("games"))
        cells = board.locator(f"tbody tr td:nth-child({heads.index('games') + 1})")
        header.click()
        games = [int(t) for t in cells.all_inner_texts()]
        assert (
            games == sorted(games, reverse=True)
            and header.get_attribute("aria-sort") == "descending"
        )
        header.click()
        games = [int(t) for t in cells.all_inner_texts()]
        assert games == sorted(games) and len(set(games)) > 1
        page.click("label.switch")  # every other column of the CSV
        assert visible.count() > shown
        page.select_option("#compare select[name=a]", PLAYER)
        page.select_option("#compare select[name=b]", "truthful")
        compared = page.locator("#compare .compared")
        assert re.search(
            rf"{PLAYER} (scored above truthful in \d+%|and truthful never met)",
            compared.inner_text(),
        )
        assert compared.locator("tbody tr").count() == 2
        versus = page.locator("table.versus")
        assert versus.locator("tbody tr").count() == 9  # every player, in board order
        assert console.errors == []


def test_a_search_hit_opens_its_decision(viewer):
    with browser_page() as (page, console):
        page.goto(f"{viewer}/i/double_auction/search?text=half+of+my+value")
        page.wait_for_selector("#found", timeout=120_000)  # the page reloads while it indexes
        hits = page.locator("ol.hits a.hit")
        assert hits.count() > 0
        assert page.locator("ol.hits mark").first.inner_text().lower() == "half of my value"
        hits.first.click()
        page.wait_for_selector("pre.raw-answer")
        assert (
            "I would quote about half of my value"
            in page.locator("pre.raw-answer").all_inner_texts()
        )
        page.goto(f"{viewer}/i/double_auction/search?invalid=1&player={PLAYER}")
        page.wait_for_selector("#found")
        assert page.locator("ol.hits .badge.bad").count() == page.locator("ol.hits li").count() > 0
        assert console.errors == []


#: the site's page of the mock entrant's model (its endpoint id, ``mock-scripted``)
MODEL_PAGE = "model-mock-scripted.html"


def test_from_the_models_matrix_to_a_models_page_and_its_instance(project):
    with browser_page() as (page, console):
        page.goto(site(project, "index.html"))
        matrix = page.locator("#matrix table")
        assert matrix.locator("th").all_inner_texts()[:3] == ["player", "studies", "double_auction"]
        page.click('#matrix a.player >> text="mock-scripted"')
        page.wait_for_selector("h1")
        assert page.url.endswith(MODEL_PAGE) and page.locator("h1").inner_text() == "mock-scripted"
        facts = dict(
            zip(
                page.locator("table.facts th").all_inner_texts(),
                page.locator("table.facts td").all_inner_texts(),
            )
        )
        assert facts["names as written"] == "mock-scripted" and facts["placed by"] == "unplaced"
        row = page.locator("#studies tbody tr")
        assert row.count() == 1  # one instance, one board row: the entrant
        cells = dict(
            zip(page.locator("#studies th").all_inner_texts(), row.locator("td").all_inner_texts())
        )
        assert cells["instance"] == "double_auction" and cells["board row"] == PLAYER
        assert cells["rank on the board"] == "9" and cells["among models"] == "1 of 1"
        page.click('p.crumbs a >> text="all instances"')
        assert page.url.endswith("index.html")
        assert console.errors == []


def pages(project: Path, viewer: str) -> list[str]:
    """One page of each kind: the site's index, an instance and a model, the viewer's every
    page."""
    with browser_page() as (page, _):
        page.goto(f"{viewer}/i/double_auction/p/{PLAYER}")
        episode = page.locator("table.episodes tbody a").first.get_attribute("href")
    return [
        site(project, "index.html"),
        site(project),
        site(project, MODEL_PAGE),
        f"{viewer}/",
        f"{viewer}/i/double_auction",
        f"{viewer}/i/double_auction/p/{PLAYER}",
        viewer + episode,
        f"{viewer}/i/double_auction/compare?a={PLAYER}&b=truthful",
        f"{viewer}/i/double_auction/search?text=quote",
    ]


def test_every_page_fits_a_phone_and_has_a_dark_scheme(project, viewer):
    urls = pages(project, viewer)
    with browser_page(width=390, height=844) as (page, console):
        for url in urls:
            page.goto(url)
            page.wait_for_load_state("load")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{url}: {width} px wide at 390 px"
            main = page.locator("main").bounding_box()
            assert main["width"] >= 350, url  # the navigation sits on top, not beside
        page.emulate_media(color_scheme="dark")
        for url in urls[:3] + urls[5:6]:
            page.goto(url)
            background = page.evaluate("getComputedStyle(document.body).backgroundColor")
            assert background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"), url
        assert console.errors == []


def test_the_hero_board_shows_the_weak_entrant_where_such_a_run_puts_it(project):
    """The README's hero (docs/site.png) photographs this board, and its caption says the mock
    entrant, half of whose answers are no JSON, is last of the 9: the board must say so (with
    the 4 + 4 games it was made from before, the entrant led it, an accident of seed 1)."""
    import pandas as pd

    board = pd.read_csv(project / "reports" / "leaderboards" / f"{screenshots.INSTANCE}.csv")
    assert len(board) == 9 and board["name"].iloc[-1] == PLAYER
    assert "last of the 9 players" in (ROOT / "README.md").read_text()


def test_the_committed_screenshots_show_what_their_pages_show(project, viewer):
    """Each docs/*.png of marketarena.screenshots.SHOTS carries the signature of what it showed (its
    headings, columns, labels and links, digits masked); the same page today must give the same
    signature, else `make screenshots` makes them afresh."""
    with browser_page():
        pass  # skips (or fails under MARKETARENA_REQUIRE_BROWSER=1) without a browser
    today = screenshots.take(project, base=viewer)
    for shot in screenshots.SHOTS:
        committed = screenshots.committed(ROOT / "docs" / shot.name)
        assert committed == today[shot.name], (
            f"docs/{shot.name} no longer shows what its page shows; run `make screenshots` and "
            f"commit docs/*.png.\ncommitted:\n{committed}\ntoday:\n{today[shot.name]}"
        )
    linked = set(re.findall(r"\(docs/([\w-]+\.png)\)", (ROOT / "README.md").read_text()))
    for doc in (ROOT / "docs").glob("*.md"):
        linked |= set(re.findall(r"\(([\w-]+\.png)\)", doc.read_text()))
    assert linked <= {s.name for s in screenshots.SHOTS}, "a screenshot no command makes"
