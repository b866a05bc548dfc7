"""The viewer over imported runs of every source, in a real browser: Agent Bazaar's lemon runs
(``tests/markets/lemon/ab_fixture.py``) and crash runs (``tests/markets/crash/
agent_bazaar_fixture.py``), BAZAAR's double-auction games and emergent_collusion's games with chat
(``tests/markets/double_auction/fixtures/``), each imported as its tests do. Every instance page,
every episode page and the first decision page of each episode that has decisions answer 200,
draw their tables with no console error, and the server logs no traceback.

The audit's D7 (reliability_3): every imported lemon episode page was a 500 (its meta.json has no
``lineup``, and the episode template read it under StrictUndefined)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from marketarena.config import parse_params
from marketarena.markets.crash.sources import agent_bazaar as crash_ab
from marketarena.markets.double_auction.sources.reader import games_setting
from marketarena.markets.lemon.sources import agent_bazaar as lemon_ab
from marketarena.pipeline import import_folder
from tests.browser import browser_page
from tests.markets.crash import agent_bazaar_fixture as crash_fx
from tests.markets.lemon import ab_fixture as lemon_fx
from tests.view.server import serving

DA_FIXTURES = Path(__file__).resolve().parents[1] / "markets" / "double_auction" / "fixtures"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    """A project folder whose ``data/episodes`` holds one instance per import."""
    root = tmp_path_factory.mktemp("imported")
    episodes = root / "data" / "episodes"
    episodes.mkdir(parents=True)
    logs = lemon_fx.write_logs(root / "lemon-logs")
    block = lemon_fx.params_block(logs)
    mp = parse_params({"markets": {"lemon_authors": block}}).markets["lemon_authors"]
    lemon_ab.import_runs(mp, logs, episodes / "lemon_authors", workers=1)
    (episodes / "crash_authors").mkdir()
    crash_ab.import_runs(crash_fx.write(root / "crash-logs"), episodes / "crash_authors", workers=1)
    for name, folder in (("bazaar", "bazaar"), ("collusion", "collusion")):
        logs = DA_FIXTURES / folder  # as marketarena import-bazaar imports them
        block = {
            **games_setting(logs),
            "rating_passes": 5,
            "reference": {"games_per_distribution": 100},
        }
        import_folder("double_auction", "bazaar", logs, root / name, block=block, board=True)
        (root / name / "data" / "episodes" / "double_auction").rename(episodes / name)
    return root


def test_every_page_of_every_imported_source_opens(imported):
    opened: dict[str, int] = {}
    with serving(imported) as (base, proc), browser_page() as (page, console):
        for instance in ("lemon_authors", "crash_authors", "bazaar", "collusion"):
            response = page.goto(f"{base}/i/{instance}")
            assert response.status == 200, instance
            links = page.locator("table.episodes a[href*='/e/']").evaluate_all(
                "(links) => links.map((a) => a.getAttribute('href'))"
            )
            assert links, instance
            for link in links:
                response = page.goto(base + link)
                assert response.status == 200, (link, response.status)
                page.wait_for_selector("#decisions-table_wrapper")  # DataTables drew it
                decisions = page.locator("#decisions-table tbody a")
                if decisions.count():
                    decisions.first.click()
                    page.wait_for_selector("h2:has-text('Attempt')")
                    opened[instance] = opened.get(instance, 0) + 1
                    assert re.search(r"/d\?step=", page.url)
            assert console.errors == [], (instance, console.errors)
        # the imported lemon runs' players come from their seats (their metas have no lineup):
        # buyer-1 in 3 runs, buyer-1+base in the _base run
        response = page.goto(f"{base}/i/lemon_authors/p/buyer-1")
        assert response.status == 200
        assert page.locator("table.episodes tbody tr").count() == 3
    log = proc.stdout.read()
    assert "Traceback" not in log and "Error" not in log, log
    assert opened.get("lemon_authors") == 1  # the one run with a prompt log has decisions
