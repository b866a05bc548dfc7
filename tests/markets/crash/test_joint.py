"""A joint crash instance (issue 53): a new model played in the authors' exp1 grid, in every firm
seat under their firm names, on their own firm's prompts and bookkeeping rendered by their code
from the user's copy, rated on one board beside the authors' models.

Fixtures: two of the authors' published runs (``fixtures/agent_bazaar_outputs``, MIT, unchanged)
as the import, and ``fixtures/ab_firm/`` (firm code written for these tests in the layout of their
``ai_bazaar/agents/firm.py``, ``llm_agent.py``, ``market_core/market_core.py`` and
``utils/common.py``: the same classes and methods, our own words). The new model is the mock
provider, scripted: two answers in the fixture's format and one that is no JSON (their engine's
fallback, counted invalid).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient
from typer.testing import CliRunner

from marketarena.cli import app
from marketarena.config import load_params
from marketarena.core.reader import EpisodeReader
from marketarena.core.sources import SourceError
from marketarena.markets.crash.authors_firm import FirmJSON, judge
from marketarena.markets.crash.market import CrashRules
from marketarena.markets.crash.observations import FirmAction
from marketarena.pipeline import Paths, run_metrics, run_ratings, run_simulate
from marketarena.view.app import create_app

HERE = Path(__file__).parent
CODE = HERE / "fixtures" / "ab_firm"
LOGS = HERE / "fixtures" / "agent_bazaar_outputs" / "logs-data"
ANSWERS = [
    '{"thought": "steady", "buy_food": 30, "make_food": 100, "price_food": 1.4}',
    '{"buy_food": 20, "make_food": 100, "price_food": 1.2}',
    "I would rather not say.",
]
PUBLISHED = {"llama-3.1-8b-instruct-k3-d3-s8", "llama-3.1-nemotron-70b-instruct-k3-d3-s16"}
NEW = {"new-my_llm-k0-d3-s8", "new-my_llm-k2-d3-s8"}


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A project with one joint instance over the fixture's two runs, the firm code beside the
    logs as in a clone of their repository: (params file, the repository's copy)."""
    repo = tmp_path / "AI-Bazaar"
    shutil.copytree(LOGS, repo / "logs-data")
    shutil.copytree(CODE / "ai_bazaar", repo / "ai_bazaar")
    params = {
        "llm": {"cache_dir": str(tmp_path / "llm-cache")},
        "models": {
            "mock-ab": {
                "model": "mock-ab",
                "provider": "mock",
                "mock": {"policy": "scripted", "answers": ANSWERS},
            }
        },
        "markets": {
            "joint": {
                "market": "crash",
                "source": {"format": "agent_bazaar", "path": str(repo / "logs-data")},
                "roster": [{"name": "my_llm", "kind": "llm", "model": "mock-ab"}],
                "joint_grid": {
                    "stabilizing": [0, 2],
                    "discovery_limits": [3],
                    "seeds": [8],
                    "days": 4,
                },
            }
        },
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


def test_the_entry_takes_every_firm_seat_of_the_authors_grid_under_their_names(tmp_path):
    path, repo = project(tmp_path)
    mp = load_params(path).markets["joint"]
    assert [e.name for e in mp.roster] == ["stabilizer", "undercut", "myopic", "markup", "my_llm"]
    entry = mp.roster[-1]
    assert entry.harness == "agent_bazaar" and entry.params == {"code": str(repo)}
    plan = CrashRules().plan(mp)
    assert [e.episode_id for e in plan] == sorted(NEW)
    assert [(s.agent_id, s.role) for s in plan[1].seats] == [
        ("stabilizing_firm_1", "stabilizing"),
        ("stabilizing_firm_2", "stabilizing"),
        ("competitive_1", "competitor"),
        ("competitive_2", "competitor"),
        ("competitive_3", "competitor"),
    ]
    assert {s.entry.name for s in plan[1].seats} == {"my_llm"}
    assert plan[1].seed == 8 and plan[1].get("days") == 4 and plan[1].get("discovery_limit") == 3
    said = CliRunner().invoke(app, ["validate", "--params", str(path)])
    assert said.exit_code == 0, said.output
    assert "joint: my_llm (mock-ab, harness agent_bazaar) plays 2 games (10 seats)" in said.output
    one = mp.model_copy(
        update={"joint_grid": mp.joint_grid.model_copy(update={"stabilizing": [1]})}
    )
    assert [s.agent_id for s in CrashRules().plan(one)[0].seats][0] == "stabilizing_firm"


def test_an_answer_is_judged_as_their_engine_reads_it():
    assert judge('{"supply_quantity_food": 5, "produce_food": 100, "price_food": 1.5}', 5, 1.5) == (
        "",
        "",
    )
    assert judge("no json", 0, 1.0)[1] == "format"
    assert judge('{"supply_quantity_food": 5, "price_food": 1.5}', 5, 1.5)[1] == "format"
    assert judge('{"supply_quantity_food": 5, "produce_food": 9, "price_food": 0}', 5, 0)[1] == (
        "rule"
    )
    said = FirmJSON.from_action(FirmAction(price=1.3, supply=12.0), None, [])
    assert json.loads(said.text)["price_food"] == 1.3
    assert json.loads(said.text)["supply_quantity_food"] == 12.0


def test_the_entry_plays_the_grid_and_is_rated_beside_the_authors_models(tmp_path):
    path, _ = project(tmp_path)
    params = load_params(path)
    paths = Paths(tmp_path)
    first = run_simulate("joint", params, paths, progress=False)
    assert first["imported"] == 2 and first["played"] == 2
    again = run_simulate("joint", params, paths, progress=False)
    assert again["imported"] == 0 and again["played"] == 0
    episodes = paths.episodes("joint")
    before = digest(episodes)

    reader = EpisodeReader(episodes)
    decisions = reader.table("decisions")
    new = decisions[decisions["episode_id"].isin(NEW)]
    assert len(new) == 4 * 5 * 2  # 4 days x 5 firms x 2 runs, none bankrupt in 4 days
    bad = new[~new["valid"]]
    assert len(bad) and set(bad["failure"]) == {"format"}
    assert (bad["action"] == "null").all()  # the market's fallback: yesterday's price, no supply
    sent = reader.table("llm_messages")
    sent = sent[sent["episode_id"].isin(NEW)]
    assert (sent["reask"] == 0).all() and len(sent) == len(new)
    for text in sent["messages"]:
        system, user = json.loads(text)  # their system prompt and user message
        assert system["content"].startswith("You run ") and "50 buyers" in system["content"]
        assert user["content"].startswith("Past days:\nDay 0:\n")
    late = sent[(sent["episode_id"] == "new-my_llm-k2-d3-s8") & (sent["step"] == 3)]
    user = json.loads(late["messages"].iloc[0])[1]["content"]
    assert "'last_prices': {'stabilizing_firm_1': {'food': " in user  # their names, own first
    assert "Sold " in user and "Priced {'food': " in user  # their reflection and their action

    metrics = run_metrics("joint", params, paths)
    agents = metrics["agents"]
    mine = agents[agents["episode_id"].isin(NEW)]
    assert len(mine) == 10 and (mine["origin"] == "new").all()
    assert (mine["prompts"] == "Agent Bazaar's firm code (your copy)").all()
    theirs = agents[agents["episode_id"].isin(PUBLISHED)]
    assert len(theirs) and (theirs["origin"] == "published").all()
    assert set(metrics["replay_runs"]["episode_id"]) == PUBLISHED  # their engine's runs only

    board = run_ratings("joint", params, paths).set_index("name")
    assert set(board.index) == {
        "my_llm",
        "llama-3.1-8b-instruct",
        "llama-3.1-nemotron-70b-instruct",
    }
    assert board.loc["my_llm", "origin"] == "new" and board.loc["my_llm", "runs"] == 2
    assert board.loc["my_llm", "harness"] == "agent_bazaar"
    assert board.loc["llama-3.1-8b-instruct", "origin"] == "published"
    assert board.loc["my_llm", "fallback"] == pytest.approx((~new["valid"]).mean())
    assert digest(episodes) == before

    client = TestClient(create_app(episodes.parent))
    page = client.get("/i/joint")
    assert page.status_code == 200 and "new-my_llm-k2-d3-s8" in page.text
    for episode in (*NEW, *PUBLISHED):
        assert client.get(f"/i/joint/e/{episode}").status_code == 200


def test_an_edited_firm_file_replays_only_the_new_runs(tmp_path):
    path, repo = project(tmp_path)
    params, paths = load_params(path), Paths(tmp_path)
    run_simulate("joint", params, paths, progress=False)
    episodes = paths.episodes("joint")
    before = digest(episodes)
    firm = repo / "ai_bazaar" / "agents" / "firm.py"
    firm.write_text(firm.read_text().replace("Hold a steady price", "Hold one steady price"))
    again = run_simulate("joint", load_params(path), paths, progress=False)
    assert again["imported"] == 0 and again["played"] == 2
    after = digest(episodes)
    for name in before:
        if name.split("/")[0] in PUBLISHED:
            assert after[name] == before[name]


def test_a_missing_code_folder_is_one_error_naming_the_key(tmp_path):
    path, repo = project(tmp_path)
    shutil.rmtree(repo / "ai_bazaar")
    with pytest.raises(
        SourceError, match=r"firm\.py: is missing .*set markets\.joint\.source\.prompts"
    ):
        run_simulate("joint", load_params(path), Paths(tmp_path), progress=False)
    assert not (tmp_path / "data" / "episodes" / "joint").exists()  # nothing imported or played
