"""reference -> simulate -> metrics -> leaderboard -> figures on a tiny tournament: byte-identical
episodes, metrics from logs, and multi-pass TrueSkill equal to the trueskill package pass by pass."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from marketarena.config import parse_params
from marketarena.markets.double_auction import KIND
from marketarena.markets.double_auction.analysis.board import rating_env
from marketarena.pipeline import Paths, run_metrics, run_reference, run_simulate
from marketarena.ratings import pass_orders, player_games, rate_orders, rate_sequential

NAMES = [
    "truthful",
    "shade",
    "zic",
    "gd",
    "sniper",
    "penny_jumper",
    "bandit",
    "adaptive",
    "aa",
    "momentum",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("da")
    params = parse_params(
        {
            "markets": {
                "double_auction": {
                    "games_per_distribution": 3,
                    "rounds": 12,
                    "rating_passes": 4,
                    "shard_episodes": 5,
                    "reference": {"games_per_distribution": 400, "min_count": 20},
                    "roster": [{"name": n, "kind": "baseline", "strategy": n} for n in NAMES],
                }
            }
        }
    )
    paths = Paths(root)
    run_reference("double_auction", params, paths)
    run_simulate("double_auction", params, paths, progress=False)
    frames = run_metrics("double_auction", params, paths)
    return params, paths, frames


def test_episodes_are_byte_identical(tiny, tmp_path):
    params, paths, _ = tiny
    from marketarena.simulate import simulate

    simulate("double_auction", params, paths.data, tmp_path / "b", progress=False)
    a_root = paths.episodes("double_auction")
    files = sorted(p.relative_to(a_root) for p in a_root.rglob("*") if p.is_file())
    # 12 games in shards of 5, 5 and 2, each of meta.json + 9 tables (run information, such as
    # llm_costs, goes to the run log)
    assert sorted({f.parent.name for f in files}) == [
        "ep-0000..ep-0004",
        "ep-0005..ep-0009",
        "ep-0010..ep-0011",
    ]
    assert len(files) == 3 * 10
    for rel in files:  # every file, meta.json included
        assert (a_root / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_metrics_from_logs(tiny):
    params, paths, frames = tiny
    agents, market = frames["agents"], frames["market"]
    assert len(agents) == 12 * 8 and len(market) == 12
    assert agents["csa"].between(-5, 5).all() and agents["csa"].notna().all()
    assert not agents.duplicated(["episode_id", "name"]).any()  # one seat per trader per game
    by_game = agents.groupby("episode_id")["surplus"].sum()
    np.testing.assert_allclose(market.set_index("episode_id")["realised_surplus"], by_game)
    eff = market["realised_surplus"] / market["ce_surplus"]
    np.testing.assert_allclose(market["efficiency"], eff.where(market["ce_surplus"] > 0))
    assert market["distribution"].value_counts().to_dict() == {
        "uniform": 3,
        "correlated": 3,
        "semi_bimodal": 3,
        "heavy_tailed": 3,
    }
    truthful = agents[agents["name"] == "truthful"]
    assert (truthful["mean_offset"] == 0).all()
    summary = json.loads((paths.reports / "metrics" / "double_auction.json").read_text())
    assert summary["episodes"] == 12


def test_multipass_equals_the_package_pass_by_pass(tiny):
    params, _, frames = tiny
    games = player_games(frames["agents"], "csa")
    mp = params.markets["double_auction"]
    ts = rating_env(mp, params.ratings)
    assert ts.tau == 0.001 and ts.mu == 5.0  # rating_tau, the default scale (the seed's)
    orders = pass_orders(len(games), 4, params.ratings.seed)
    players, mu, sigma = rate_orders(games, orders, ts)
    for lane, order in enumerate(orders):
        oracle = rate_sequential(games, ts, order)
        for j, name in enumerate(players):
            assert mu[lane, j] == pytest.approx(oracle[name][0], abs=1e-9)
            assert sigma[lane, j] == pytest.approx(oracle[name][1], abs=1e-9)
    board = KIND.analysis.leaderboard(
        frames["agents"], params.markets["double_auction"], params.ratings, params.stats
    ).set_index("name")
    for j, name in enumerate(players):
        assert board.loc[name, "mu"] == pytest.approx(np.median(mu[:, j]))
        assert board.loc[name, "sigma"] == pytest.approx(np.median(sigma[:, j]))
    assert board["baseline"].all()
    assert (board["games"] == frames["agents"].groupby("name").size().reindex(board.index)).all()
    assert {"csa_mean", "csa_lo", "csa_hi", "game_efficiency", "trade_freq"} <= set(board.columns)
    # bootstrap intervals over games: μ inside its interval, ranks inside 1..players
    assert (board["mu_lo"] <= board["mu_hi"]).all()
    assert (
        (board["rank_lo"] >= 1)
        & (board["rank_hi"] <= len(board))
        & (board["rank_lo"] <= board["rank_hi"])
    ).all()


def test_bazaar_scale_and_tau():
    params = parse_params(
        {
            "markets": {
                "double_auction": {
                    "rating_scale": "bazaar",
                    "rating_tau": None,
                    "roster": [{"name": n, "kind": "baseline", "strategy": n} for n in NAMES],
                }
            }
        }
    )
    env = rating_env(params.markets["double_auction"], params.ratings)
    # the seed's scale: BAZAAR's own logs rated with it land on its table (test_bazaar.py)
    assert (env.mu, env.sigma, env.beta) == pytest.approx((5.0, 25 / 3, 25 / 6))
    assert env.tau == pytest.approx(params.ratings.trueskill.tau)
    mp = params.markets["double_auction"].model_copy(update={"rating_tau": 0.001})
    assert rating_env(mp, params.ratings).tau == 0.001


def test_figures_render(tiny, tmp_path):
    params, paths, _ = tiny
    board = KIND.analysis.leaderboard(
        pd.read_parquet(paths.metrics("double_auction") / "agents.parquet"),
        params.markets["double_auction"],
        params.ratings,
        params.stats,
    )
    (tmp_path / "leaderboards").mkdir()
    board.to_csv(tmp_path / "leaderboards" / "double_auction.csv", index=False)
    out = KIND.analysis.draw_figures(
        paths.metrics("double_auction"),
        tmp_path / "fig",
        tmp_path / "tables" / "double_auction",
        params.markets["double_auction"],
        "double_auction",
    )
    pngs = [p for p in out if p.suffix == ".png"]
    assert len(pngs) == 8 and all(p.stat().st_size > 5000 for p in pngs)
    assert (
        "| rank |"
        in (tmp_path / "tables" / "double_auction" / "double_auction_leaderboard.md").read_text()
    )
