"""A joint lemon instance (issue 53): a new model played in the authors' grid, in every buyer seat,
on their own buyer's prompts rendered by their code from the user's copy, rated on one board
beside the authors' buyer models.

Fixtures: ``ab_fixture.py`` (the authors' runs, hand-written) and ``fixtures/ab_code/`` (buyer
code written for these tests in the layout of their ``ai_bazaar/agents/buyer.py``,
``llm_agent.py`` and ``utils/common.py``: the same classes and methods, our own words). The new
model is the mock provider, scripted: every answer one of four texts (a pass, a bid on the first
listing shown, a down-vote, and one that is no JSON: their engine's fallback, counted invalid).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from marketarena.config import load_params
from marketarena.core.reader import EpisodeReader
from marketarena.core.sources import SourceError
from marketarena.markets.lemon.authors_buyer import AuthorsJSON, Seat, listings
from marketarena.markets.lemon.observations import (
    BuyAction,
    BuyerObservation,
    ListingView,
    ReviewAction,
)
from marketarena.pipeline import Paths, run_metrics, run_ratings, run_reference, run_simulate
from marketarena.view.app import create_app

from . import ab_fixture as fx

CODE = Path(__file__).parent / "fixtures" / "ab_code"
ANSWERS = [
    '{"thought": "too dear", "decision": "pass", "listing_id": null}',
    '{"decision": "bid", "listing_id": "seller_0_listing_0"}',
    '{"vote": "downvote"}',
    "I would rather not say.",
]


def project(tmp_path: Path, grid: dict | None = None) -> tuple[Path, Path]:
    """A project with one joint instance over the fixture's runs, its code beside the logs as
    in a clone of their repository: (params file, the repository's copy)."""
    repo = tmp_path / "AI-Bazaar"
    logs = fx.write_logs(repo)
    shutil.copytree(CODE / "ai_bazaar", repo / "ai_bazaar")
    block = fx.params_block(logs)
    block["roster"] = [{"name": "my_llm", "kind": "llm", "model": "mock-ab"}]
    block["joint_grid"] = grid or {
        "sybil": [0, 2],
        "reputation_visible": [True],
        "seeds": [8],
        "steps": 3,
    }
    params = {
        "llm": {"cache_dir": str(tmp_path / "llm-cache")},
        "models": {
            "mock-ab": {
                "model": "mock-ab",
                "provider": "mock",
                "mock": {"policy": "scripted", "answers": ANSWERS},
            }
        },
        "markets": {"joint": block},
    }
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path, repo


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "run.log"
    }


def test_the_roster_gets_the_sweeps_baselines_and_the_entry_their_buyer(tmp_path):
    path, repo = project(tmp_path)
    mp = load_params(path).markets["joint"]
    assert [e.name for e in mp.roster] == ["honest", "sybil", "guardian", "naive", "my_llm"]
    entry = mp.roster[-1]
    assert entry.harness == "agent_bazaar" and entry.params == {"code": str(repo)}
    from marketarena.markets.lemon.plan import LemonRules

    plan = LemonRules().plan(mp)
    assert [e.episode_id for e in plan] == ["new-my_llm-k0-rep1-s8", "new-my_llm-k2-rep1-s8"]
    seats = plan[1].seats
    assert [s.agent_id for s in seats if s.role == "buyer"] == ["B1", "B2", "B3"]
    assert {s.entry.name for s in seats if s.role == "buyer"} == {"my_llm"}
    assert {s.entry.name for s in seats if s.role in ("honest", "principal")} == {"honest", "sybil"}
    assert plan[1].get("steps") == 3 and plan[1].seed == 8


def test_their_code_renders_the_prompt_of_a_state_and_reads_the_answer():
    """Hand-computed from ``fixtures/ab_code``: the system prompt from ``_create_system_prompt``
    (V_MAX 40,000), the observation as their ``_build_observation`` dumps it, seller ids in the
    order first seen, the history of the steps before, the cot suffix."""
    seat = Seat(CODE, "consumer_0", "saver", True)
    shown = listings([("H1", 20000.0, "Nice car", 0.8), ("S1", 30000.0, 'A "mint" car', 0.7)])
    system, user = seat.prompt("make_orders", 0, shown, 2, True)
    assert system == (
        "You are consumer_0 (saver), shopping for a used car. Mint cars sell for $34,000 to "
        "$40,000."
    )
    observation = {
        "round": 0,
        "listings": [
            {
                "listing_id": "seller_0_listing_0",
                "price": 20000.0,
                "text": "Nice car",
                "reputation": 0.8,
            },
            {
                "listing_id": "seller_1_listing_1",
                "price": 30000.0,
                "text": 'A "mint" car',
                "reputation": 0.7,
            },
        ],
        "mean_quality": None,
        "recent": [],
    }
    answer_format = 'Answer {"decision": "bid"|"pass", "listing_id": "<id>"}.'
    assert user == (
        f"Earlier rounds:\nRound 0:\nNow:\n{json.dumps(observation, indent=2)}\n\n"
        f"{answer_format} Reason briefly first."
    )
    assert seat.prompt("make_orders", 0, shown, 2, True) == (system, user)  # state unchanged
    orders = seat.finish(
        '{"decision": "bid", "listing_id": "seller_1_listing_1"}', "make_orders", 0, shown, 2, True
    )
    assert orders[0].attrs["listing_id"] == "S1"
    review = dict(
        seller_id="S1",
        description='A "mint" car',
        quality_received=0.1,
        quality_label="poor",
        timestep=0,
    )
    _, asked = seat.prompt("review_transaction", **review)
    assert asked.endswith(
        'seller_1 said: "A "mint" car". You got a poor car. '
        'Answer {"vote": "upvote"|"downvote"|"abstain"}. Reason briefly first.'
    )
    assert "Round 0:\nYou chose bid (seller_1_listing_1)\n" in asked
    assert seat.finish("no json here", "review_transaction", **review) is None  # their fallback
    seat.record("S1", 30000.0, "poor", 0)
    _, later = seat.prompt("make_orders", 1, listings([("S1", 25000.0, "Good", None)]), 1, False)
    assert "You voted abstain\nRound 1:\nNow:" in later
    assert '"mean_quality": 0.1' in later and '"surplus": -26000.0' in later
    assert '"listing_id": "seller_1_listing_0"' in later and "reputation" not in later


def test_a_stand_in_says_a_bid_in_their_format():
    """``marketarena estimate``'s stand-ins answer through the harness: a bid on our listing
    becomes the id the prompt shows at its position."""
    seat = Seat(CODE, "consumer_1", "saver", True)
    shown = listings([("seller_7", 20000.0, "x", 0.8), ("seller_2", 30000.0, "y", 0.7)])
    _, user = seat.prompt("make_orders", 0, shown, 2, True)
    obs = BuyerObservation(
        agent_id="B2",
        step=1,
        history=[],
        mean_quality=None,
        tiers=[],
        reputation_visible=True,
        listings=[
            ListingView(listing=a, price=1.0, description='"x"', reputation=0.5)
            for a in ("seller_7", "seller_2")
        ],
    )
    said = AuthorsJSON.from_action(
        BuyAction(decision="bid", listing="seller_2"), obs, [{"role": "user", "content": user}]
    )
    assert json.loads(said.text) == {"decision": "bid", "listing_id": "seller_1_listing_1"}
    vote = AuthorsJSON.from_action(ReviewAction(vote="down"), None, [])
    assert json.loads(vote.text) == {"vote": "downvote"}


def test_the_entry_plays_the_grid_and_is_rated_beside_the_authors_models(tmp_path):
    path, _ = project(tmp_path)
    params = load_params(path)
    paths = Paths(tmp_path)
    run_reference("joint", params, paths)
    first = run_simulate("joint", params, paths, progress=False)
    assert first["imported"] == 4 and first["played"] == 2
    again = run_simulate("joint", params, paths, progress=False)
    assert again["imported"] == 0 and again["played"] == 0
    episodes = paths.episodes("joint")
    before = digest(episodes)

    reader = EpisodeReader(episodes)
    decisions = reader.table("decisions")
    new = decisions[decisions["episode_id"].str.startswith("new-my_llm-")]
    buys = new[new["phase"] == "buy"]
    assert len(buys) == 2 * 3 * 3  # 2 runs x 3 steps x 3 buyer seats, one answer each
    bad = new[~new["valid"]]
    assert len(bad) and set(bad["error"]) <= {
        "llm: no JSON object in the answer (their engine re-asks, then passes)",
        "llm: no JSON object in the answer (their engine re-asks, then abstains)",
        "llm: no decision in the answer (their engine: a pass)",  # a vote to a bid request
        "llm: vote '' is not upvote, downvote or abstain (their engine: an abstention)",
        # seller_0 is a listing's first seller seen, not always shown first (their ids)
        "llm: a bid on 'seller_0_listing_0', not a listing shown (their engine: no order, a pass)",
    }
    assert (bad["action"] == "null").all()  # no action of its own: the fallback (pass, abstain)
    sent = reader.table("llm_messages")
    sent = sent[sent["episode_id"].str.startswith("new-")]
    assert (sent["reask"] == 0).all()
    for text in sent["messages"]:
        system, user = json.loads(text)  # their system prompt and user message
        assert system["content"].startswith("You are consumer_") and "shopping" in system["content"]
        assert user["content"].startswith("Earlier rounds:\nRound ")

    metrics = run_metrics("joint", params, paths)
    agents = metrics["agents"]
    mine = agents[agents["name"] == "my_llm"]
    assert len(mine) == 6 and (mine["origin"] == "new").all()
    assert (mine["prompts"] == "Agent Bazaar's buyer code (your copy)").all()
    theirs = agents[agents["name"] == "buyer-1"]
    assert len(theirs) and (theirs["origin"] == "published").all()
    replayed = set(metrics["replay_steps"]["episode_id"])
    assert replayed and replayed <= set(agents.loc[agents["origin"] == "published", "episode_id"])

    board = run_ratings("joint", params, paths)
    buyers = board[board["role"] == "buyer"].set_index("name")
    assert {"my_llm", "buyer-1"} <= set(buyers.index)
    assert (
        buyers.loc["my_llm", "origin"] == "new" and buyers.loc["buyer-1", "origin"] == "published"
    )
    assert buyers.loc["my_llm", "invalid_answer_rate"] == pytest.approx((~buys["valid"]).mean())
    sellers = board[board["role"] == "seller"].set_index("name")
    assert sellers.loc["honest", "origin"] == "new"  # our scripted sellers of the new runs
    assert sellers.loc["seller-1+honest", "origin"] == "published"  # their LLM sellers
    assert digest(episodes) == before

    client = TestClient(create_app(episodes.parent))
    page = client.get("/i/joint")
    assert page.status_code == 200 and "new-my_llm-k2-rep1-s8" in page.text
    assert client.get("/i/joint/e/new-my_llm-k2-rep1-s8").status_code == 200


def test_the_same_seed_gives_the_same_games(tmp_path):
    runs = []
    for name in ("a", "b"):
        path, _ = project(tmp_path / name)
        paths = Paths(tmp_path / name)
        run_simulate("joint", load_params(path), paths, progress=False)
        folder = paths.episodes("joint")
        new = sorted(p for p in folder.iterdir() if p.name.startswith("new-"))
        tables = [{k: v for k, v in digest(p).items() if k.endswith(".parquet")} for p in new]
        runs.append(dict(zip([p.name for p in new], tables)))
    # every table the same (meta.json's fingerprint holds the project's own paths)
    assert runs[0] == runs[1] and len(runs[0]) == 2 and all(len(t) > 5 for t in runs[0].values())


def test_a_missing_code_folder_is_one_error_naming_the_key(tmp_path):
    path, repo = project(tmp_path)
    shutil.rmtree(repo / "ai_bazaar")
    with pytest.raises(
        SourceError, match=r"buyer\.py: is missing .*set markets\.joint\.source\.prompts"
    ):
        run_simulate("joint", load_params(path), Paths(tmp_path), progress=False)
    assert not (tmp_path / "data" / "episodes" / "joint").exists()  # nothing imported or played
    params = yaml.safe_load(path.read_text())
    params["markets"]["joint"]["roster"][0]["params"] = {"code": "/nowhere"}
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(SourceError, match=r"set markets\.joint\.roster \(my_llm\)\.params\.code"):
        run_simulate("joint", load_params(path), Paths(tmp_path), progress=False)


def test_code_it_cannot_read_is_refused_before_any_game(tmp_path):
    path, repo = project(tmp_path)
    buyer = repo / "ai_bazaar" / "agents" / "buyer.py"
    buyer.write_text(
        buyer.read_text().replace("        if not listings:\n", "        while not listings:\n")
    )
    with pytest.raises(SourceError, match=r"buyer\.py:\d+: statement While is not interpreted"):
        run_simulate("joint", load_params(path), Paths(tmp_path), progress=False)
    assert not (tmp_path / "data" / "episodes" / "joint").exists()


def test_an_edited_file_of_their_code_replays_the_new_runs_only(tmp_path):
    path, repo = project(tmp_path)
    params, paths = load_params(path), Paths(tmp_path)
    run_simulate("joint", params, paths, progress=False)
    buyer = repo / "ai_bazaar" / "agents" / "buyer.py"
    buyer.write_text(buyer.read_text().replace("shopping for a used car", "buying a used car"))
    edited = run_simulate("joint", params, paths, progress=False)
    assert edited["played"] == 2 and edited["imported"] == 0
