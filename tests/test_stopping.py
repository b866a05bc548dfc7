"""The stopping rule: a look rates a player's games against a field held fixed; ``simulate`` plays
an LLM entrant's (or challenger's) games in batches and stops once its rank is settled, or at the
cap; a resumed run takes the same decisions; the rule changes which games are played, never an
episode's id, seed or logs; a market without players' games refuses it naming the key. How good
the rule is: benchmarks/bench_stopping.py on BAZAAR's games (docs/cost.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from marketarena.config import ParamsError, parse_params
from marketarena.core.reader import EpisodeReader
from marketarena.llm.fake import FakeEndpoint, schema_answer
from marketarena.pipeline import Paths, run_reference
from marketarena.ratings import TrueSkillParams
from marketarena.simulate import simulate
from marketarena.stopping import look, settled
from tests.test_estimate import sensible

ROOT = Path(__file__).resolve().parents[1]
FIELD = {"a": (30.0, 1.0), "b": (25.0, 1.0), "c": (20.0, 1.0)}


def test_a_look_ranks_the_player_among_the_field_with_an_interval_that_shrinks():
    wins = [{"p": 1.0, "a": 0.0, "b": -1.0, "c": -2.0}] * 40
    middling = [{"a": 1.0, "p": 0.0, "b": -1.0, "c": -2.0} if i % 2 else
                {"b": 1.0, "p": 0.0, "a": -1.0, "c": -2.0} for i in range(40)]
    ts = TrueSkillParams()
    top = look(wins, "p", FIELD, ts, boot=50, passes=5)
    assert top.rank == 1 and top.rank_lo == 1 and top.games == 40
    mid = look(middling, "p", FIELD, ts, boot=50, passes=5)
    assert mid.rank in (2, 3) and mid.mu_lo <= mid.mu <= mid.mu_hi
    assert look(middling[:8], "p", FIELD, ts, boot=50, passes=5).mu_width > mid.mu_width
    capped = look(middling, "p", FIELD, ts, boot=50, passes=5, cap=41)
    assert capped.mu == mid.mu and capped.mu_width < mid.mu_width / 5  # one game left to play
    assert settled(top, rank_width=0) and not settled(top, rank_width=0, min_games=50)
    assert settled(mid, mu_width=100.0) and not settled(mid, mu_width=1e-9)


def da_params(tmp_path: Path, stop: dict | None, entrant_games: int = 12):
    block = yaml.safe_load((ROOT / "lib/marketarena/markets/double_auction/tiny_params.yaml")
                           .read_text())
    block.update(pool=[e["name"] for e in block["roster"]], entrant_games=entrant_games, runs=8,
                 rounds=6, stop=stop)
    block["roster"].append({"name": "gpt", "kind": "llm", "model": "fake"})
    return parse_params({"models": {"fake": {"model": "f", "base_url": "http://fake.invalid/v1",
                                             "api_key_env": None}},
                         "llm": {"cache_dir": str(tmp_path / "llm")},
                         "markets": {"double_auction": block}})


def entrant_games(eps: Path) -> list[str]:
    return sorted(e for e in EpisodeReader(eps).episode_ids() if e.startswith("x-"))


def play(tmp_path: Path, params, fake: FakeEndpoint) -> dict:
    return simulate("double_auction", params, Paths(tmp_path).data, tmp_path / "eps",
                    progress=False, openai_factory=fake.factory)


def test_an_entrant_stops_once_settled_and_a_resume_keeps_the_decision(tmp_path):
    loose = {"batch": 4, "min_games": 4, "rank_width": 100, "boot": 20, "passes": 3}
    params = da_params(tmp_path, loose)
    run_reference("double_auction", params, Paths(tmp_path))
    fake = FakeEndpoint(responder=sensible)
    summary = play(tmp_path, params, fake)
    assert summary["stopped"] == {"gpt": 4}  # settled at the first look
    assert len(entrant_games(tmp_path / "eps")) == 4
    assert any("gpt: 4 of 12 games (settled)" in line for line in summary["stop_lines"])
    requests = fake.n_calls
    again = play(tmp_path, params, fake)  # resumed: the same look, nothing to play
    assert again["played"] == 0 and again["stopped"] == {"gpt": 4} and fake.n_calls == requests

    strict = dict(loose, rank_width=0, min_games=100)  # never settled: every game, to the cap
    units = [p for p in (tmp_path / "eps").iterdir() if p.name.startswith("x-gpt")]
    first = {p.name: (p / "meta.json").read_bytes() for p in units}
    assert len(first) == 4
    summary = play(tmp_path, da_params(tmp_path, strict), fake)
    assert summary["stopped"] == {"gpt": 12} and summary["played"] == 8
    assert len(entrant_games(tmp_path / "eps")) == 12
    for unit, meta in first.items():  # the rule changed which games, not a game
        assert (tmp_path / "eps" / unit / "meta.json").read_bytes() == meta
    summary = play(tmp_path, params, fake)  # the loose rule again: games past its stop go
    assert summary["played"] == 0 and len(summary["pruned"]) == 8
    assert len(entrant_games(tmp_path / "eps")) == 4


def test_without_a_rule_every_game_is_played_and_the_default_is_no_rule(tmp_path):
    params = da_params(tmp_path, None, entrant_games=5)
    assert params.markets["double_auction"].stop is None
    run_reference("double_auction", params, Paths(tmp_path))
    summary = play(tmp_path, params, FakeEndpoint(responder=sensible))
    assert "stopped" not in summary and len(entrant_games(tmp_path / "eps")) == 5


def test_english_auction_challengers_stop_in_batches(tmp_path):
    block = yaml.safe_load((ROOT / "lib/marketarena/markets/english_auction/tiny_params.yaml")
                           .read_text())
    block.update(runs=6, baselines=["rule", "increment"],
                 stop={"batch": 2, "min_games": 2, "rank_width": 100, "boot": 20, "passes": 3})
    block["roster"].append({"name": "gpt", "kind": "llm", "model": "fake"})
    params = parse_params({"models": {"fake": {"model": "f", "base_url": "http://fake.invalid/v1",
                                               "api_key_env": None}},
                           "llm": {"cache_dir": str(tmp_path / "llm")},
                           "markets": {"english_auction": block}})
    summary = simulate("english_auction", params, tmp_path, tmp_path / "eps", progress=False,
                       openai_factory=FakeEndpoint(responder=schema_answer).factory)
    ids = EpisodeReader(tmp_path / "eps").episode_ids()
    assert summary["stopped"] == {"gpt": 2}
    assert sorted(e for e in ids if "-gpt-" in e) == ["ep-gpt-0000", "ep-gpt-0001"]
    assert sum("-planner-" in e for e in ids) == 6  # a scripted challenger: every auction


def test_a_market_without_players_games_refuses_a_rule_naming_the_key():
    block = yaml.safe_load((ROOT / "lib/marketarena/markets/cournot/tiny_params.yaml").read_text())
    block["stop"] = {"batch": 5}
    with pytest.raises(ParamsError, match=r"markets\.cournot\.stop: cournot plays no player"):
        parse_params({"markets": {"cournot": block}})
    block["stop"] = {"batch": 5, "rank_width": None}
    with pytest.raises(ParamsError, match="rank_width or mu_width"):
        parse_params({"markets": {"cournot": block}})
