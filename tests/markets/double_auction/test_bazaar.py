"""BAZAAR's published games as data (``sources/reader.py``, ``sources/bazaar.py``), on two games
written by hand in its schema, imported as ``marketarena import-bazaar`` imports them (the
pipeline's layout: ``pipeline.import_folder``).

fixtures/bazaar/auction_fixture_1.jsonl (uniform, 3 rounds): buyers B1 90 (an LLM), B2 70, B3 40,
B4 20; sellers S1 10, S2 30, S3 60, S4 80; competitive surplus 80 + 40 = 120 a round, 360.
  round 1, everyone truthful: B1-S1 and B2-S2 at 50                     -> 40, 40, 20, 20
  round 2, B1 bids 60, S1 asks 20: B2 (70) - S1 (20) at 45, B1 (60) - S2 (30) at 45
                                                                         -> B2 25, S1 35, B1 45, S2 15
  round 3, S1 asks 70: B2 (65) - S2 (30) at 47.5, logged 48; B1 (55) < S3 (60) -> B2 22, S2 18
  surplus B1 85, B2 67, S1 75, S2 53: 280 of 360 = 0.7778; potentials (v - 10, 90 - c): 80, 60,
  30, 10 | 80, 60, 30, 10, so shares 85/240, 67/180, 0, 0 | 75/240, 53/180, 0, 0.
fixtures/bazaar/auction_fixture_2.jsonl (heavy_tailed, 2 rounds): B1 30 (an LLM, bids through
its value), B2 50, B3 60, B4 15; S1 55, S2 65, S3 40, S4 70; CE 60 - 40 = 20 a round, 40.
  round 1: B3 (58) - S3 (42) at 50                                        -> B3 10, S3 10
  round 2: B3 sits out; B1 (57) - S3 (42) at 49.5, logged 49              -> B1 -19, S3 9
  realised 10 of 40 = 0.25; B3's share 10/(2 x 20), S3's 19/(2 x 20), B1's 0 (potential 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketarena.core.params import RosterEntry
from marketarena.core.reader import EpisodeReader
from marketarena.markets.double_auction.baselines import STRATEGIES
from marketarena.markets.double_auction.sources import bazaar, reader
from marketarena.markets.double_auction.sources.analysis import import_summary
from marketarena.pipeline import Paths

FIXTURES = Path(__file__).parent / "fixtures" / "bazaar"


def import_bazaar(logs: Path, out: Path, *options: str):
    """``marketarena import-bazaar logs --out out`` (in process); its result."""
    from typer.testing import CliRunner

    from marketarena.cli import app

    return CliRunner().invoke(app, ["import-bazaar", str(logs), "--out", str(out), *options])


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The two games imported (every seat's CSα logged: our reference only stands beside it, so
    a small one), the summary of what was written, and the project folder."""
    out = tmp_path_factory.mktemp("bazaar") / "bz"
    res = import_bazaar(FIXTURES, out, "--passes", "5", "--reference-games", "10")
    assert res.exit_code == 0, res.output
    return import_summary(out), out


def test_game_tables_hold_the_hand_computed_game():
    g = reader.read_game(FIXTURES / "auction_fixture_1.jsonl")
    assert g.seats == ["B1", "B2", "B3", "B4", "S1", "S2", "S3", "S4"]
    assert g.name("B1") == "gemini-2.5-pro" and g.name("S3") == "aa" and g.name("S2") == "shade_5"
    t = {name: table.frame() for name, table in bazaar.game_tables(g).items()}
    assert list(
        t["trades"][["step", "buyer", "seller", "price"]].itertuples(index=False, name=None)
    ) == [
        (0, "B1", "S1", 50),
        (0, "B2", "S2", 50),
        (1, "B2", "S1", 45),
        (1, "B1", "S2", 45),
        (2, "B2", "S2", 48),
    ]
    final = t["states"][t["states"]["step"] == 2].set_index("agent_id")["surplus"].to_dict()
    assert final == {"B1": 85, "B2": 67, "B3": 0, "B4": 0, "S1": 75, "S2": 53, "S3": 0, "S4": 0}
    assert t["game"].iloc[0][["ce_surplus_round", "ce_surplus"]].tolist() == [120, 360]
    agents = t["agents"].set_index("agent_id")
    assert agents.loc["B1", "kind"] == "llm" and agents.loc["S1", "strategy"] == "collusive"
    g2 = bazaar.game_tables(reader.read_game(FIXTURES / "auction_fixture_2.jsonl"))
    st = g2["states"].frame().set_index(["step", "agent_id"])
    assert st.loc[(1, "B3"), "quote"] == -1 and st.loc[(1, "B1"), "payoff"] == -19


def test_our_metrics_reproduce_the_logged_efficiency_and_surplus_shares(imported):
    summary, out = imported
    assert summary["games"] == 2 and summary["seats"] == 16 and summary["llm_seats"] == 2
    check = pd.read_parquet(Paths(out).metrics("double_auction") / "check.parquet")
    assert np.allclose(check["game_efficiency"], check["logged_efficiency"], rtol=0, atol=1e-12)
    assert np.allclose(check["surplus_share"], check["logged_surplus_share"], rtol=0, atol=1e-12)
    assert (
        summary["max_abs_diff_efficiency"] < 1e-12 and summary["max_abs_diff_surplus_share"] < 1e-12
    )
    eff = dict(zip(check["episode_id"], check["game_efficiency"]))
    assert eff == pytest.approx({"bz-0000": 280 / 360, "bz-0001": 0.25})
    share = check.set_index(["episode_id", "agent_id"])["surplus_share"]
    assert share[("bz-0000", "B1")] == pytest.approx(85 / 240)
    assert share[("bz-0001", "S3")] == pytest.approx(0.475) and share[("bz-0001", "B1")] == 0


def test_imported_games_are_an_instance_of_logs(imported):
    _, out = imported
    paths = Paths(out)
    episodes = EpisodeReader(paths.episodes("double_auction"))
    assert episodes.episode_ids() == ["bz-0000", "bz-0001"]
    assert episodes.meta("bz-0001")["game_id"] == "fixture_2"
    agents = pd.read_parquet(paths.metrics("double_auction") / "agents.parquet")
    assert agents.set_index(["episode_id", "agent_id"]).loc[("bz-0000", "B1"), "csa"] == 0.9
    board = pd.read_csv(paths.reports / "leaderboards" / "double_auction.csv")
    assert set(board["name"]) == {
        "gemini-2.5-pro",
        "o3",
        "truthful",
        "gd",
        "sniper",
        "collusive",
        "shade_5",
        "aa",
        "random",
        "momentum",
        "q_learning",
        "zic_plus",
        "linear_eq",
        "adaptive",
        "fictitious_play",
        "tit_for_tat",
    }
    assert (board["games"] == 1).all() and board["mu"].is_monotonic_decreasing
    # each game's highest logged CSα (gemini 0.9, fictitious play 1.1) wins it: the top two
    assert set(board["name"][:2]) == {"gemini-2.5-pro", "fictitious_play"}


def test_teacher_forcing_hands_a_strategy_the_logged_history():
    g = reader.read_game(FIXTURES / "auction_fixture_1.jsonl")
    truthful = STRATEGIES.make(
        "B2", RosterEntry(name="truthful", kind="baseline", strategy="truthful")
    )
    tf = bazaar.teacher_forced(g, "B2", truthful)
    assert tf["ours"].tolist() == [70, 70, 70] and tf["theirs"].tolist() == [70, 70, 65]
    assert tf["theirs_fills"].tolist() == [True, True, True] and tf["ours_fills"].all()
    shade = STRATEGIES.make(
        "S4", RosterEntry(name="s", kind="baseline", strategy="shade", params={"delta": 30})
    )
    tf = bazaar.teacher_forced(g, "S4", shade)  # asks 100 (cost 80 + 30, capped): never fills
    assert tf["ours"].tolist() == [100] * 3 and not tf["ours_fills"].any()
    # GD best-responds to the asks it saw: round 2 (10, 30, 60, 80), v = 40: (2v - b) n - S is
    # 60 at b = 10 and at b = 30, the tie goes up; round 3 (+ 20, 30, 60, 80): 110 at b = 30
    gd = STRATEGIES.make("B3", RosterEntry(name="gd", kind="baseline", strategy="gd"))
    assert bazaar.teacher_forced(g, "B3", gd)["ours"].tolist() == [40, 30, 30]


def test_bad_logs_are_named(tmp_path):
    good = (FIXTURES / "auction_fixture_1.jsonl").read_text().splitlines()
    rec = json.loads(good[3])
    rec["price"] = "high"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(good[:3] + [json.dumps(rec)] + good[4:]) + "\n")
    with pytest.raises(reader.LogError, match=r"bad.jsonl:4: .*quote 'high'"):
        reader.read_game(bad)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(good[:-1]) + "\n")
    with pytest.raises(reader.LogError, match="no 'final' record"):
        reader.read_game(cut)
    with pytest.raises(reader.LogError, match="lechmazur/bazaar"):
        reader.log_files(tmp_path / "nope")


def test_import_bazaar_command(tmp_path):
    res = import_bazaar(FIXTURES, tmp_path / "bz", "--passes", "3", "--reference-games", "10")
    assert res.exit_code == 0, res.output
    assert "2 games, 16 seats (2 LLM)" in res.output and "efficiency 0" in res.output
    assert (Paths(tmp_path / "bz").reports / "leaderboards" / "double_auction.csv").is_file()
    res = import_bazaar(tmp_path / "nothing", tmp_path / "none")
    assert res.exit_code == 2 and "lechmazur/bazaar" in res.output


def test_teacher_forced_benchmark_says_how_to_get_the_logs(monkeypatch, tmp_path):
    import importlib.util
    import sys

    bench = Path(__file__).resolve().parents[3] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    spec = importlib.util.spec_from_file_location("_tf", bench / "bench_da_teacher_forced.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", ["bench", "--logs", str(tmp_path / "absent")])
    with pytest.raises(SystemExit, match="git clone --depth 1 https://github.com/lechmazur/bazaar"):
        module.main()
    monkeypatch.setattr(sys, "argv", ["bench", "--logs", str(FIXTURES)])
    module.main()  # the two hand-written games: runs and prints
