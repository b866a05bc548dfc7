"""A joint instance (issue 53): a new model played in BAZAAR's setting, on BAZAAR's prompts read
from the user's copy, rated on one board beside the published games' players.

Fixtures: ``fixtures/bazaar/auction_fixture_1.jsonl`` (one published game, 4x4 seats, 3 rounds,
uniform values; gemini-2.5-pro in B1) and ``fixtures/bazaar_prompts/`` (two templates written for
these tests in the layout of BAZAAR's ``prompts/`` folder: the same file names and placeholders,
our own words). The entrant is the mock provider, scripted: every answer one of three texts, two
of them a valid ``<price>`` tag and one without any (a forfeited round).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from starlette.testclient import TestClient

from marketarena.config import load_params
from marketarena.core.sources import SourceError
from marketarena.markets.double_auction import bazaar_prompts
from marketarena.markets.double_auction.observations import QuoteObservation, RoundRecord, Trade
from marketarena.pipeline import Paths, run_metrics, run_ratings, run_reference, run_simulate
from marketarena.view.app import create_app

FIXTURES = Path(__file__).parent / "fixtures"
ANSWERS = ["<price>50</price>", "I bid <price>45</price>", "fifty"]


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose params name one joint instance over a copy of the fixtures: (params
    file, the copy of BAZAAR's repository)."""
    repo = tmp_path / "bazaar"
    (repo / "logs").mkdir(parents=True)
    shutil.copy(FIXTURES / "bazaar" / "auction_fixture_1.jsonl", repo / "logs")
    shutil.copytree(FIXTURES / "bazaar_prompts", repo / "prompts")
    path = tmp_path / "params.yaml"
    path.write_text(f"""llm: {{cache_dir: {tmp_path / "llm-cache"}}}
models:
  mock-bz: {{model: mock-bz, provider: mock, mock: {{policy: scripted, answers: {json.dumps(ANSWERS)}}}}}
markets:
  joint:
    market: double_auction
    source: {{format: bazaar, path: {repo / "logs"}}}
    rounds: 3
    distributions: [uniform]
    entrant_games: 4
    reference: {{games_per_distribution: 300}}
    rating_passes: 5
    rating_boot: 0
    roster:
      - {{name: my_llm, kind: llm, model: mock-bz}}
""")
    return path, repo


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_the_roster_gets_bazaars_pool_and_the_entrant_bazaars_prompts(tmp_path):
    path, repo = project(tmp_path)
    mp = load_params(path).markets["joint"]
    assert mp.joint
    names = [e.name for e in mp.roster]
    assert len(names) == 30 and names[-1] == "my_llm"  # BAZAAR's 29 baselines, then the entrant
    entrant = mp.roster[-1]
    assert entrant.harness == "bazaar"
    assert entrant.params == {"prompts": str(repo / "prompts")}
    assert [mp.roster[i].name for i in mp.entrant_indices()] == ["my_llm"]


def test_the_template_is_filled_from_the_seats_state():
    """S2 (cost 30) in round 3 of 3, 2 buyers and 2 sellers, after two rounds; hand-written."""
    obs = QuoteObservation(
        agent_id="S2",
        role="seller",
        value=30,
        round=3,
        rounds=3,
        n_buyers=2,
        n_sellers=2,
        max_quote=100,
        surplus=12,
        history=[
            RoundRecord(
                round=1,
                bids={"B1": 60, "B2": None},
                asks={"S1": 50, "S2": 40},
                trades=[Trade(buyer="B1", seller="S2", price=50)],
            ),
            RoundRecord(round=2, bids={"B1": 20, "B2": 25}, asks={"S1": 50, "S2": 40}, trades=[]),
        ],
    )
    text = bazaar_prompts.render(FIXTURES / "bazaar_prompts", obs)
    assert text == (
        "Answer with one <price>XX</price> tag only.\n\n"
        "You are S2, selling, cost 30, payoff so far 12.\n"
        "4 traders: buyers B1, B2 (2), sellers S1, S2 (2).\n"
        "Round 3 of 3.\n\n"
        "History:\n"
        "Round 1: bids B1=60 B2=- | asks S1=50 S2=40 | trades B1-S2@50 | your payoff 20\n"
        "Round 2: bids B1=20 B2=25 | asks S1=50 S2=40 | trades none | your payoff 0\n\n"
        "Your payoff at price P is P - 30.\n"
    )
    first = bazaar_prompts.fill(obs.model_copy(update={"round": 1, "history": []}))
    assert first["HISTORY_SNIPPET"] == "No rounds completed yet."
    # a seat's round lines kept between its prompts (the harness's way) change no prompt
    lines: dict = {}
    for r in (1, 2, 3):
        step = obs.model_copy(update={"round": r, "history": obs.history[: r - 1]})
        kept = bazaar_prompts.render(FIXTURES / "bazaar_prompts", step, lines=lines)
        assert kept == bazaar_prompts.render(FIXTURES / "bazaar_prompts", step)
    assert len(lines) == 2 and text == kept


def test_the_answer_is_read_as_bazaar_asks_for_it():
    read = bazaar_prompts.BazaarPrice.from_text
    assert read("<price>50</price>")[0].price == 50
    assert read("I bid <price> 7 </price>.")[0].price == 7
    assert read("fifty") == (None, "expected exactly one <price>XX</price> tag, found 0")
    assert read("<price>1</price><price>2</price>")[0] is None
    assert read("<price>101</price>")[1] == "the price 101 is not an integer 0-100"
    assert bazaar_prompts.BazaarPrice.max_reasks == 0  # a forfeited round, never a re-ask


def test_a_template_with_a_placeholder_we_do_not_fill_is_refused(tmp_path):
    shutil.copytree(FIXTURES / "bazaar_prompts", tmp_path / "p")
    seller = tmp_path / "p" / "bidding_seller_no_comm.txt"
    seller.write_text(seller.read_text() + "{{COMM_STEP}}\n")
    with pytest.raises(bazaar_prompts.PromptsMissing, match=r"does not fill: COMM_STEP"):
        bazaar_prompts.check_folder(tmp_path / "p")


def test_a_hostile_template_is_one_error_naming_it(tmp_path):
    """A FIFO in a template's place is refused, not waited on; so is a link out of the folder."""
    shutil.copytree(FIXTURES / "bazaar_prompts", tmp_path / "p")
    buyer = tmp_path / "p" / "bidding_buyer_no_comm.txt"
    buyer.unlink()
    os.mkfifo(buyer)
    with pytest.raises(bazaar_prompts.PromptsMissing, match=r"bidding_buyer_no_comm\.txt: "):
        bazaar_prompts.check_folder(tmp_path / "p")
    buyer.unlink()
    (tmp_path / "elsewhere.txt").write_text("{{ROUND}}")
    buyer.symlink_to(tmp_path / "elsewhere.txt")
    with pytest.raises(bazaar_prompts.PromptsMissing, match=r"bidding_buyer_no_comm\.txt: "):
        bazaar_prompts.check_folder(tmp_path / "p")


def test_the_entrant_plays_in_the_sources_setting_and_is_rated_beside_its_players(tmp_path):
    path, _ = project(tmp_path)
    params = load_params(path)
    paths = Paths(tmp_path)
    run_reference("joint", params, paths)
    first = run_simulate("joint", params, paths, progress=False)
    assert first["imported"] == 1 and first["played"] == 4
    episodes = paths.episodes("joint")
    units = sorted(p.name for p in episodes.iterdir() if p.is_dir())
    assert units[0] == "bz-0000..bz-0000"  # the imported shard, then a unit per new game
    assert units[1:] == [f"x-my_llm-{k:04d}..x-my_llm-{k:04d}" for k in range(4)]
    again = run_simulate("joint", params, paths, progress=False)
    assert again["imported"] == 0 and again["played"] == 0
    before = digest(episodes)

    metrics = run_metrics("joint", params, paths)
    agents = metrics["agents"]
    assert (agents["csa_source"] == "ours").all() and agents["csa"].notna().all()
    new = agents[agents["name"] == "my_llm"]
    assert len(new) == 4 and new["episode_id"].str.startswith("x-my_llm-").all()
    assert (new["harness"] == "bazaar").all()
    published = agents[agents["episode_id"].str.startswith("bz-")]
    assert published["logged_csa"].notna().all()  # BAZAAR's CSα kept beside ours
    # the entrant's calls: BAZAAR's text as the one user message, no schema, no re-ask
    decisions = pd.concat(pd.read_parquet(p) for p in episodes.rglob("decisions.parquet"))
    seats = new[["episode_id", "agent_id"]]
    rows = decisions.merge(seats, on=["episode_id", "agent_id"])
    assert len(rows) == 4 * 3  # one decision a round
    forfeited = rows[~rows["valid"]]
    assert len(forfeited) and (forfeited["action"] == "null").all()  # "fifty": sits the round out
    assert set(forfeited["error"]) == {"llm: expected exactly one <price>XX</price> tag, found 0"}
    sent = pd.concat(pd.read_parquet(p) for p in episodes.rglob("llm_messages.parquet"))
    sent = sent.merge(seats, on=["episode_id", "agent_id"])
    assert len(sent) == 12 and (sent["reask"] == 0).all()  # never re-asked
    for text in sent["messages"]:
        (message,) = json.loads(text)  # the template, as the one user message
        assert message["role"] == "user"
        assert message["content"].startswith("Answer with one <price>XX</price> tag only.")

    board = run_ratings("joint", params, paths).set_index("name")
    assert {"my_llm", "gemini-2.5-pro", "truthful"} <= set(board.index)
    assert board.loc["my_llm", "origin"] == "new"
    assert board.loc["gemini-2.5-pro", "origin"] == "published"
    assert board.loc["my_llm", "prompts"] == "BAZAAR's templates (your copy)"
    assert board.loc["gemini-2.5-pro", "prompts"] == "BAZAAR's (their game)"
    assert digest(episodes) == before

    # the viewer: the new games are episodes as any others, beside the published one
    client = TestClient(create_app(paths.episodes("joint").parent))
    page = client.get("/i/joint")
    assert page.status_code == 200 and "x-my_llm-0000" in page.text and "bz-0000" in page.text
    game = client.get("/i/joint/e/x-my_llm-0001")
    assert game.status_code == 200 and "my_llm" in game.text
    assert client.get("/i/joint/e/bz-0000").status_code == 200


def test_a_missing_prompts_folder_is_one_error_naming_the_key(tmp_path):
    path, repo = project(tmp_path)
    shutil.rmtree(repo / "prompts")
    params = load_params(path)
    with pytest.raises(SourceError, match=r"set markets\.joint\.source\.prompts to the prompts/"):
        run_simulate("joint", params, Paths(tmp_path), progress=False)
    assert not (tmp_path / "data" / "episodes" / "joint").exists()  # nothing imported or played
    # a folder given on the entry itself is named there (by name: BAZAAR's pool comes first)
    path.write_text(
        path.read_text().replace("model: mock-bz}", "model: mock-bz, params: {prompts: /nowhere}}")
    )
    with pytest.raises(
        SourceError, match=r"set markets\.joint\.roster \(my_llm\)\.params\.prompts"
    ):
        run_simulate("joint", load_params(path), Paths(tmp_path), progress=False)


def test_an_edited_template_replays_the_new_games_and_keeps_the_import(tmp_path):
    """The templates are the entrant's input files: their text is in its games' fingerprint."""
    path, repo = project(tmp_path)
    params = load_params(path)
    paths = Paths(tmp_path)
    run_simulate("joint", params, paths, progress=False)
    again = run_simulate("joint", params, paths, progress=False)
    assert again["played"] == 0 and again["imported"] == 0
    buyer = repo / "prompts" / "bidding_buyer_no_comm.txt"
    buyer.write_text(buyer.read_text() + "Think before you bid.\n")
    edited = run_simulate("joint", params, paths, progress=False)
    assert edited["played"] == 4 and edited["imported"] == 0
    assert (paths.episodes("joint") / "bz-0000..bz-0000").is_dir()


def test_dropping_the_entrant_drops_its_games(tmp_path):
    """With the LLM entry gone the instance is a plain import again (the same pool, so the same
    import fingerprint): its folder is imported again whole, without the former entrant's games."""
    path, _ = project(tmp_path)
    paths = Paths(tmp_path)
    run_simulate("joint", load_params(path), paths, progress=False)
    assert any(p.name.startswith("x-") for p in paths.episodes("joint").iterdir())
    text = path.read_text()
    path.write_text(text[: text.index("    roster:")])
    plain = load_params(path)
    assert not plain.markets["joint"].joint
    assert run_simulate("joint", plain, paths, progress=False)["imported"] == 1
    assert sorted(p.name for p in paths.episodes("joint").iterdir() if p.is_dir()) == [
        "bz-0000..bz-0000"
    ]
