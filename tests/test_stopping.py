"""The stopping rule: a look rates a player's games against a field held fixed (TrueSkill, or its
mean score when it meets nobody); ``simulate`` plays an LLM player's games in batches (double
auction entrants, english_auction challengers, the oligopolies' lineups, crash's and lemon's
cells) and stops once its rank is settled, or at the cap; a resumed run takes the same
decisions; the rule changes which games are played, never an episode's id, seed or logs; an
instance whose every episode seats an LLM player (no field) refuses it naming the key. How good
the rule is: benchmarks/bench_stopping.py on BAZAAR's games (docs/cost.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from marketarena.config import ParamsError, parse_params
from marketarena.core.reader import EpisodeReader
from marketarena.core.registry import rules_for
from marketarena.llm.fake import FakeEndpoint, schema_answer
from marketarena.pipeline import Paths, run_reference
from marketarena.ratings import TrueSkillParams
from marketarena.simulate import simulate
from marketarena.simulate.stopping import Interval, look, look_mean, settled, top_k_answer
from tests.test_estimate import changed, sensible

ROOT = Path(__file__).resolve().parents[1]
FIELD = {"a": (30.0, 1.0), "b": (25.0, 1.0), "c": (20.0, 1.0)}


def test_a_look_ranks_the_player_among_the_field_with_an_interval_that_shrinks():
    wins = [{"p": 1.0, "a": 0.0, "b": -1.0, "c": -2.0}] * 40
    middling = [
        {"a": 1.0, "p": 0.0, "b": -1.0, "c": -2.0}
        if i % 2
        else {"b": 1.0, "p": 0.0, "a": -1.0, "c": -2.0}
        for i in range(40)
    ]
    ts = TrueSkillParams()
    top = look(wins, "p", FIELD, ts, boot=50, passes=5)
    assert top.rank == 1 and top.rank_lo == 1 and top.games == 40
    mid = look(middling, "p", FIELD, ts, boot=50, passes=5)
    assert mid.rank in (2, 3) and mid.mu_lo <= mid.mu <= mid.mu_hi
    assert look(middling[:8], "p", FIELD, ts, boot=50, passes=5).mu_width > mid.mu_width
    assert settled(top, rank_width=0) and not settled(top, rank_width=0, min_games=50)
    assert settled(mid, mu_width=100.0) and not settled(mid, mu_width=1e-9)
    # top-k: the winner's [1, 1] is in the top 1; the middling player, second in every game,
    # lies at [2, 2]: out of the top 1, in the top 2; an interval [2, 5] straddles 3: unanswered
    assert top_k_answer(top, 1) == "in" and settled(top, top_k=1)
    assert (mid.rank_lo, mid.rank_hi) == (2, 2)
    assert top_k_answer(mid, 1) == "out" and top_k_answer(mid, 2) == "in"
    straddles = Interval(40, 0.0, -1.0, 1.0, 3, 2, 5)
    assert top_k_answer(straddles, 3) is None and not settled(straddles, top_k=3)
    assert top_k_answer(straddles, 1) == "out" and top_k_answer(straddles, 5) == "in"


def da_params(tmp_path: Path, stop: dict | None, entrant_games: int = 12):
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets/double_auction/tiny_params.yaml").read_text()
    )
    block.update(
        pool=[e["name"] for e in block["roster"]],
        entrant_games=entrant_games,
        runs=8,
        rounds=6,
        stop=stop,
    )
    block["roster"].append({"name": "gpt", "kind": "llm", "model": "fake"})
    return parse_params(
        {
            "models": {
                "fake": {"model": "f", "base_url": "http://fake.invalid/v1", "api_key_env": None}
            },
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {"double_auction": block},
        }
    )


def entrant_games(eps: Path) -> list[str]:
    return sorted(e for e in EpisodeReader(eps).episode_ids() if e.startswith("x-"))


def play(tmp_path: Path, params, fake: FakeEndpoint) -> dict:
    return simulate(
        "double_auction",
        params,
        Paths(tmp_path).data,
        tmp_path / "eps",
        progress=False,
        openai_factory=fake.factory,
    )


def test_an_entrant_stops_once_settled_and_a_resume_keeps_the_decision(tmp_path):
    loose = {"batch": 4, "min_games": 4, "rank_width": 100, "boot": 20, "passes": 3}
    params = da_params(tmp_path, loose)
    run_reference("double_auction", params, Paths(tmp_path))
    fake = FakeEndpoint(responder=sensible)
    summary = play(tmp_path, params, fake)
    assert summary["stopped"] == {"gpt": 4}  # settled at the first look
    assert len(entrant_games(tmp_path / "eps")) == 4
    assert any("gpt: 4 of 12 games (answered)" in line for line in summary["stop_lines"])
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
    # the other question: a field of fewer than 100 puts every interval within the top 100
    top = dict(loose, rank_width=None, top_k=100)
    summary = play(tmp_path, da_params(tmp_path, top), fake)
    assert summary["stopped"] == {"gpt": 4} and summary["played"] == 0
    assert any("gpt: 4 of 12 games (answered: in the top 100)" in s for s in summary["stop_lines"])


def test_without_a_rule_every_game_is_played_and_the_default_is_no_rule(tmp_path):
    params = da_params(tmp_path, None, entrant_games=5)
    assert params.markets["double_auction"].stop is None
    run_reference("double_auction", params, Paths(tmp_path))
    summary = play(tmp_path, params, FakeEndpoint(responder=sensible))
    assert "stopped" not in summary and len(entrant_games(tmp_path / "eps")) == 5


def test_english_auction_challengers_stop_in_batches(tmp_path):
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets/english_auction/tiny_params.yaml").read_text()
    )
    block.update(
        runs=6,
        baselines=["rule", "increment"],
        stop={"batch": 2, "min_games": 2, "rank_width": 100, "boot": 20, "passes": 3},
    )
    block["roster"].append({"name": "gpt", "kind": "llm", "model": "fake"})
    params = parse_params(
        {
            "models": {
                "fake": {"model": "f", "base_url": "http://fake.invalid/v1", "api_key_env": None}
            },
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {"english_auction": block},
        }
    )
    summary = simulate(
        "english_auction",
        params,
        tmp_path,
        tmp_path / "eps",
        progress=False,
        openai_factory=FakeEndpoint(responder=schema_answer).factory,
    )
    ids = EpisodeReader(tmp_path / "eps").episode_ids()
    assert summary["stopped"] == {"gpt": 2}
    assert sorted(e for e in ids if "-gpt-" in e) == ["ep-gpt-0000", "ep-gpt-0001"]
    assert sum("-planner-" in e for e in ids) == 6  # a scripted challenger: every auction


def test_a_look_by_mean_ranks_the_mean_among_the_fields_means():
    values = [0.2, 0.4, 0.6, 0.8]  # mean 0.5
    at = look_mean(values, {"a": 0.9, "b": 0.45, "c": 0.1}, boot=200)
    assert at.games == 4 and at.mu == pytest.approx(0.5) and at.rank == 2  # only a above
    assert 0.2 <= at.mu_lo < 0.45 and 0.5 < at.mu_hi <= 0.8  # resampled means of four values
    assert (at.rank_lo, at.rank_hi) == (2, 3)  # below a at best; below b too at worst
    assert look_mean(values * 25, {"a": 0.9}, boot=200).mu_width < at.mu_width / 3


LOOSE = {"batch": 2, "min_games": 2, "rank_width": 100, "boot": 20, "passes": 3}


def played_params(tmp_path: Path, kind: str, stop: dict | None, llms=("gpt",)):
    """The market's tiny instance with LLM player(s) ``llms`` seated in some episodes only: a
    cournot lineup, crash's stabilizing cells, a lemon buyer group of its own."""
    block = yaml.safe_load((ROOT / f"lib/marketarena/markets/{kind}/tiny_params.yaml").read_text())
    entries = [{"name": n, "kind": "llm", "model": "fake"} for n in llms]
    if kind == "cournot":
        firms = len(block["roster"]) + len(llms)
        block.update(runs=firms * (firms - 1), rounds=3)  # two round robins of pairs
    elif kind == "crash":
        block.update(stabilizers=["stabilizer", *llms], runs=12, days=6)
        del block["stabilizer"]
    elif kind == "lemon":
        block["roster"] = [e for e in block["roster"] if e["name"] not in ("reputation", "random")]
        block.update(buyer_groups=[["naive"], ["guardian"], *([n] for n in llms)], runs=24, steps=3)
    block["roster"] += entries
    block["stop"] = stop
    return parse_params(
        {
            "models": {
                "fake": {"model": "f", "base_url": "http://fake.invalid/v1", "api_key_env": None}
            },
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {kind: block},
        }
    )


def seated(eps: Path, name: str) -> list[str]:
    """The episodes on disk that seat ``name``."""
    reader = EpisodeReader(eps)
    agents = reader.table("agents")
    return sorted(agents.loc[agents["name"] == name, "episode_id"].unique())


@pytest.mark.parametrize("kind", ["cournot", "crash", "lemon"])
def test_a_player_seated_in_some_episodes_stops_in_batches_and_a_resume_keeps_it(tmp_path, kind):
    params = played_params(tmp_path, kind, LOOSE)
    plugin, mp = rules_for(params, kind)[0], params.markets[kind]
    planned = plugin.stop_players(mp)["gpt"]
    assert 4 <= len(planned) < mp.runs  # a cap of several batches, and a field
    run_reference(kind, params, Paths(tmp_path))
    fake = FakeEndpoint(responder=sensible)

    def play(p):
        return simulate(
            kind,
            p,
            Paths(tmp_path).data,
            tmp_path / "eps",
            progress=False,
            openai_factory=fake.factory,
        )

    summary = play(params)
    assert summary["stopped"] == {"gpt": 2}
    assert seated(tmp_path / "eps", "gpt") == planned[:2]
    assert summary["played"] == mp.runs - len(planned) + 2  # the whole field, and two of its
    what = "mean score" if kind == "lemon" else "μ"  # lemon's buyers of one kind meet nobody
    assert any(
        f"gpt: 2 of {len(planned)} games (answered)" in line and what in line
        for line in summary["stop_lines"]
    )
    calls = fake.n_calls
    again = play(params)
    assert again["played"] == 0 and again["stopped"] == {"gpt": 2} and fake.n_calls == calls

    capped = play(played_params(tmp_path, kind, dict(LOOSE, rank_width=0, min_games=100)))
    assert capped["stopped"] == {"gpt": len(planned)}
    assert seated(tmp_path / "eps", "gpt") == planned


def test_an_episode_two_players_share_is_played_once_and_kept_while_one_needs_it(tmp_path):
    def params_with(stop):
        params = played_params(tmp_path, "cournot", stop, llms=("gpt", "opus"))
        roster = [
            e.model_dump(mode="json", exclude_defaults=True)
            for e in params.markets["cournot"].roster
        ]
        return changed(
            params,
            "cournot",  # gpt first, opus last
            roster=[roster[-2], *roster[:-2], roster[-1]],
        )

    one = dict(LOOSE, batch=1, min_games=1)
    params = params_with(dict(one, rank_width=0, min_games=100))  # to the cap
    mp = params.markets["cournot"]
    players = rules_for(params, "cournot")[0].stop_players(mp)
    shared = sorted(set(players["gpt"]) & set(players["opus"]))
    assert len(shared) == 2  # their lineup, in each of two round robins
    assert players["gpt"][0] == shared[0] == players["opus"][1]  # gpt's 1st game, opus's 2nd
    run_reference("cournot", params, Paths(tmp_path))
    fake = FakeEndpoint(responder=sensible)

    def play(p):
        return simulate(
            "cournot",
            p,
            Paths(tmp_path).data,
            tmp_path / "eps",
            progress=False,
            openai_factory=fake.factory,
        )

    summary = play(params)
    assert summary["played"] == mp.runs  # round 2 does not play opus's 2nd game again
    assert set(EpisodeReader(tmp_path / "eps").episode_ids()) == {
        f"ep-{r:04d}" for r in range(mp.runs)
    }
    summary = play(params_with(one))  # both stop after one game
    assert summary["stopped"] == {"gpt": 1, "opus": 1} and summary["played"] == 0
    on_disk = set(EpisodeReader(tmp_path / "eps").episode_ids())
    field = {f"ep-{r:04d}" for r in range(mp.runs)} - set(players["gpt"]) - set(players["opus"])
    assert on_disk == field | {players["gpt"][0], players["opus"][0]}  # past opus's stop, but
    assert shared[0] in on_disk and shared[1] not in on_disk  # gpt's first: kept
    assert len(summary["pruned"]) == len(set(players["gpt"]) | set(players["opus"])) - 2


def test_a_field_that_rates_nobody_on_the_players_board_stops_the_run_naming_the_key(tmp_path):
    """A lemon buyer group of the LLM and naive, and one of guardian alone: the field's buyer
    games hold one kind each, so no rating places anyone to rank the LLM against."""
    params = changed(
        played_params(tmp_path, "lemon", LOOSE),
        "lemon",
        buyer_groups=[["naive", "gpt"], ["guardian"]],
        runs=16,
    )
    run_reference("lemon", params, Paths(tmp_path))
    with pytest.raises(
        ParamsError,
        match=r"markets\.lemon\.stop: the field's episodes rate "
        "nobody on gpt's board",
    ):
        simulate(
            "lemon",
            params,
            Paths(tmp_path).data,
            tmp_path / "eps",
            progress=False,
            openai_factory=FakeEndpoint(responder=sensible).factory,
        )
    assert len(EpisodeReader(tmp_path / "eps").episode_ids()) == 8 + 2  # the field, one batch


def test_an_instance_whose_every_episode_seats_an_llm_refuses_a_rule_naming_the_key():
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets/supply_chain/tiny_params.yaml").read_text()
    )
    block["roster"].append({"name": "gpt", "kind": "llm", "model": "fake"})
    block["stop"] = {"batch": 5, "rank_width": 3}
    models = {"fake": {"model": "f", "base_url": "http://fake.invalid/v1", "api_key_env": None}}
    with pytest.raises(
        ParamsError,
        match=r"markets\.supply_chain\.stop: every planned episode "
        r"of supply_chain seats an LLM player \(gpt\)",
    ):
        parse_params({"models": models, "markets": {"supply_chain": block}})
    block["roster"].pop()  # no LLM player: the rule has nothing to stop, and is accepted
    assert parse_params({"markets": {"supply_chain": block}}).markets["supply_chain"].stop
