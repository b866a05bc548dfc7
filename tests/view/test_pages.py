"""The viewer's pages in process (Starlette's TestClient over the tiny run): a player's page links
its episodes with the player's context, and the episode opened so knows the player's seats
(ignoring a player not in the game); the search takes ``q=`` as its text (the usual name of a
search query in a URL). A decision of a seat table without its optional columns opens."""

from __future__ import annotations

import json
import re
import shutil

import pandas as pd
from starlette.testclient import TestClient

from marketarena.core.reader import read_episode
from marketarena.view.app import create_app

INSTANCE = "double_auction"


def hits(page) -> list[str]:
    return re.findall(r'<a class="hit" href="([^"]+)"', page.text)


def test_search_takes_q_for_text(client):
    """The newcomer's review: `?q=` was ignored silently and listed every answer."""
    everything = hits(client.get(f"/i/{INSTANCE}/search"))
    by_text = hits(client.get(f"/i/{INSTANCE}/search?text=half+of+my+value"))
    by_q = client.get(f"/i/{INSTANCE}/search?q=half+of+my+value")
    assert by_q.status_code == 200 and 0 < len(by_text) < len(everything)
    assert hits(by_q) == by_text
    assert 'name="text" value="half of my value"' in by_q.text  # the box shows what was asked
    both = client.get(f"/i/{INSTANCE}/search?text=half+of+my+value&q=Your+private")
    assert hits(both) == by_text  # text= wins


def test_a_players_episodes_open_on_its_seats(client, llm_runs):
    page = client.get(f"/i/{INSTANCE}/p/gpt_fake")
    links = re.findall(r'<tr><td><a href="(/i/double_auction/e/[^"]+)"', page.text)
    assert links == [f"/i/{INSTANCE}/e/x-gpt_fake-000{i}?player=gpt_fake" for i in range(3)]
    agents = read_episode(llm_runs["shards"] / INSTANCE, "x-gpt_fake-0000")[1]["agents"]
    mine = agents.loc[agents["name"] == "gpt_fake", "agent_id"].tolist()
    episode = client.get(links[0])
    focus = re.search(r'<script type="application/json" id="focus">(.*?)</script>', episode.text)
    assert json.loads(focus.group(1)) == {"player": "gpt_fake", "seats": mine}
    assert 'id="seat-only" checked' in episode.text
    for other in ("", "?player=nobody", "?player=%3Cb%3E"):  # none, or not in this game: no focus
        plain = client.get(f"/i/{INSTANCE}/e/x-gpt_fake-0000{other}")
        assert plain.status_code == 200 and 'id="focus"' not in plain.text
        assert 'id="seat-only"' not in plain.text and "<b>" not in plain.text


def test_a_decision_of_a_seat_table_without_its_optional_columns_opens(llm_runs, tmp_path):
    """An imported game's seats may lack kind, model, harness or role (the decision page read them
    under StrictUndefined, as the episode page read the meta's lineup: reliability_3 D7)."""
    shutil.copytree(llm_runs["folders"], tmp_path / "episodes")
    folder = tmp_path / "episodes" / INSTANCE / "x-gpt_fake-0000"
    seats = pd.read_parquet(folder / "agents.parquet")
    seats[["agent_id", "name"]].to_parquet(folder / "agents.parquet", index=False)
    decisions = read_episode(folder.parent, folder.name, names=("decisions",))[1]["decisions"]
    key = decisions.iloc[0]
    with TestClient(create_app(tmp_path / "episodes")) as client:
        page = client.get(
            f"/i/{INSTANCE}/e/{folder.name}/d?step={key['step']}&round={key['round']}"
            f"&phase={key['phase']}&agent={key['agent_id']}"
        )
    assert page.status_code == 200
    assert f"Seat {key['agent_id']}: player" in page.text and "kind not recorded" in page.text
