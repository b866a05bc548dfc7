"""A tiny double_auction run with an LLM entrant on the fake OpenAI endpoint, in both log layouts
(shards, a folder per game), and one game of the default 30 rounds: what the viewer's tests
read."""

from __future__ import annotations

import re
import time
from importlib import resources
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from marketarena.config import parse_params
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import simulate
from marketarena.view.app import create_app

NOT_JSON = "I would bid about half of my value"


def quote(body) -> Reply:
    """The LLM trader's answers: the first ask of the first round is not JSON (so it is re-asked, with
    the reason); every other answer shades the private value by 7."""
    messages = body["messages"]
    text = messages[1]["content"]
    if "Round: 1 of" in text and not any(m["role"] == "assistant" for m in messages):
        return Reply(NOT_JSON)
    value = int(re.search(r"Your private (?:value|cost): (\d+)", text).group(1))
    return Reply(
        {"quote": max(0, value - 7) if "(buyer)" in text else min(100, value + 7)},
        prompt_tokens=300,
        completion_tokens=9,
    )


def tiny_llm_params(tmp_path: Path, shard_episodes: int | None, **over):
    block = yaml.safe_load(
        resources.files("marketarena.markets.double_auction")
        .joinpath("tiny_params.yaml")
        .read_text()
    )
    block["roster"].append({"name": "gpt_fake", "kind": "llm", "model": "fake"})
    block.update({"entrant_games": 3, "shard_episodes": shard_episodes, **over})
    return parse_params(
        {
            "models": {
                "fake": {
                    "model": "fake-model",
                    "api_key_env": None,
                    "price_in_per_mtok": 1.0,
                    "price_out_per_mtok": 4.0,
                }
            },
            "llm": {"cache_dir": str(tmp_path / "llm-cache")},
            "execution": {"workers": 1},
            "markets": {"double_auction": block},
        }
    )


def make_run(root: Path, shard_episodes: int | None, **over) -> Path:
    """``root/data/episodes/double_auction`` of the tiny run (``over``: its block's keys changed);
    returns ``root/data/episodes``."""
    params = tiny_llm_params(root, shard_episodes, **over)
    paths = Paths(root)
    paths.data.mkdir(parents=True, exist_ok=True)
    run_reference("double_auction", params, paths)
    simulate(
        "double_auction",
        params,
        paths.data,
        progress=False,
        openai_factory=FakeEndpoint(responder=quote).factory,
    )
    return paths.data / "episodes"


@pytest.fixture(scope="session")
def llm_runs(tmp_path_factory) -> dict[str, Path]:
    """{"shards": episodes root, "folders": episodes root} of the same tiny run."""
    return {
        layout: make_run(tmp_path_factory.mktemp(layout), shard)
        for layout, shard in (("shards", 600), ("folders", None))
    }


@pytest.fixture(scope="session")
def long_run(tmp_path_factory) -> Path:
    """The episodes root of one pool game and one game of the LLM entrant, of the default 30
    rounds (the viewer's page weight is measured on such a game)."""
    return make_run(tmp_path_factory.mktemp("long"), None, rounds=30, runs=1, entrant_games=1)


@pytest.fixture(scope="session")
def client(llm_runs):
    """The viewer's app over the tiny run (shards) in Starlette's TestClient (in process; an
    exception in a page is raised in the test), its search index built."""
    with TestClient(
        create_app(llm_runs["shards"]), raise_server_exceptions=True, follow_redirects=False
    ) as c:
        deadline = time.time() + 120  # the search index is built in a thread: wait for it
        while 'id="indexing"' in c.get("/i/double_auction/search").text and time.time() < deadline:
            time.sleep(0.1)
        yield c
