"""double_auction: BAZAAR's repeated call market with a baseline zoo, CSα and multi-pass TrueSkill.

Rules: ``market.py`` (state machine) and ``rules.py`` (pure functions); what traders see and answer:
``observations.py`` + ``templates/``; scripted traders: ``baselines.py``; the CSα reference:
``reference.py``; metrics: ``metrics.py``; figures: ``marketarena.plots.double_auction``. This
module wires them into the generic pipeline (:class:`~marketarena.core.registry.MarketPlugin`).

Tournament: episode ``r`` is one game of ``distributions[r mod D]``; its 8 seats are drawn from the
roster without replacement with ``default_rng(SeedSequence([seed, r, 7]))``, the first ``n_buyers``
drawn buy (``B1..``), the others sell (``S1..``).

Leaderboard (:func:`leaderboard`): one free-for-all TrueSkill game per episode, seats ranked by CSα
(equal CSα = tie), ``rating_passes`` (200) passes in shuffled order (``ratings.multipass``, seed
``ratings.seed``), median μ and σ per trader, with games played, mean CSα (95% bootstrap interval
over games), mean surplus, trade frequency, offset and game efficiency, baselines marked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.agents.llm_agent import llm_seat
from marketarena.core.registry import MarketPlugin
from marketarena.core.summary import per_agent_summary
from marketarena.markets.double_auction import metrics as da_metrics
from marketarena.markets.double_auction.baselines import make_baseline
from marketarena.markets.double_auction.market import DoubleAuctionMarket, seat_ids
from marketarena.markets.double_auction.observations import render_messages
from marketarena.markets.double_auction.params import DoubleAuctionParams
from marketarena.markets.double_auction.reference import compute_reference

NAME = "double_auction"


def input_files(data_dir: Path) -> list[Path]:
    """The CSα reference table: episodes fingerprint it (a new reference replays the games)."""
    return [da_metrics.reference_path(data_dir)]


def shared_params(params) -> dict:
    return {}


def load_resources(params, data_dir: Path):
    return None


def lineup(mp: DoubleAuctionParams, run: int) -> list[int]:
    """Roster indices seated in game ``run`` (buyers first), a pure function of (seed, run)."""
    rng = np.random.default_rng(np.random.SeedSequence([mp.seed, run, 7]))
    return [int(i) for i in rng.permutation(len(mp.roster))[: mp.seats]]


def agents_table(mp: DoubleAuctionParams, run: int) -> pd.DataFrame:
    ids = seat_ids(mp.n_buyers, mp.n_sellers)
    rows = []
    for k, (agent_id, i) in enumerate(zip(ids, lineup(mp, run))):
        e = mp.roster[i]
        rows.append({"agent_id": agent_id, "name": e.name, "kind": e.kind, "model": e.model or "",
                     "strategy": e.strategy or e.harness,
                     "role": "buyer" if k < mp.n_buyers else "seller"})
    return pd.DataFrame(rows)


def build_episode(params, resources, run: int, llm=None):
    mp: DoubleAuctionParams = params.markets[NAME]
    table = agents_table(mp, run)
    by_name = {e.name: e for e in mp.roster}
    agents = {}
    for agent_id, name in zip(table["agent_id"], table["name"]):
        entry = by_name[name]
        if entry.kind == "llm":
            agents[agent_id] = llm_seat(llm, agent_id, entry, run, render_messages, NAME)
        else:
            agents[agent_id] = make_baseline(agent_id, entry)
    return DoubleAuctionMarket(mp, mp.distribution_of(run)), agents, table


def compute_metrics(episodes_dir: Path, data_dir: Path, params) -> dict[str, pd.DataFrame]:
    return da_metrics.compute(episodes_dir, data_dir, params)


def rating_games(agents: pd.DataFrame) -> list[dict[str, float]]:
    """One free-for-all per game (episode, in id order): trader name -> CSα (equal CSα = tie)."""
    return [dict(zip(g["name"], g["csa"].astype(float)))
            for _, g in agents.sort_values(["episode_id", "agent_id"]).groupby("episode_id")]


def leaderboard(agents: pd.DataFrame, params) -> pd.DataFrame:
    """Multi-pass TrueSkill by CSα (see module docstring)."""
    from marketarena.ratings import TrueSkillParams, multipass
    from marketarena.stats import bootstrap_mean_ci

    mp: DoubleAuctionParams = params.markets[NAME]
    ts = TrueSkillParams(**params.ratings.trueskill.model_dump())
    board = multipass(rating_games(agents), ts, passes=mp.rating_passes, seed=params.ratings.seed)
    board = board.rename(columns={"player": "name"})
    info = agents.groupby("name").agg(
        kind=("kind", "first"), strategy=("strategy", "first"), model=("model", "first"),
        csa_mean=("csa", "mean"), surplus_mean=("surplus", "mean"),
        trade_freq=("trade_freq", "mean"), mean_offset=("mean_offset", "mean"),
        game_efficiency=("game_efficiency", "mean"))
    ci = pd.DataFrame(
        [(name, *bootstrap_mean_ci(v.to_numpy(), n_boot=params.stats.n_boot,
                                   seed=params.stats.seed)[1:])
         for name, v in agents.groupby("name")["csa"]], columns=["name", "csa_lo", "csa_hi"])
    board = board.merge(info.reset_index(), on="name").merge(ci, on="name")
    board["baseline"] = board["kind"] == "baseline"
    board["conservative"] = board["mu"] - 3 * board["sigma"]
    board = board.sort_values("mu", ascending=False, kind="stable").reset_index(drop=True)
    board.insert(0, "rank", range(1, len(board) + 1))
    return board


def draw_figures(metrics_dir: Path, figures_dir: Path, tables_dir: Path, params) -> list[Path]:
    from marketarena.plots import double_auction as plots
    from marketarena.plots.tables import latex_table, markdown_table, write_tables

    agents = pd.read_parquet(Path(metrics_dir) / "agents.parquet")
    rounds = pd.read_parquet(Path(metrics_dir) / "agent_rounds.parquet")
    board_csv = Path(tables_dir).parent / "leaderboards" / f"{NAME}.csv"
    board = pd.read_csv(board_csv) if board_csv.is_file() else leaderboard(agents, params)
    out = plots.draw_all(board, agents, rounds, Path(figures_dir))
    cols = ["rank", "name", "mu", "sigma", "games", "csa_mean", "trade_freq", "mean_offset",
            "game_efficiency"]
    shown = board[cols].copy()
    shown["name"] = shown["name"] + np.where(board["baseline"], " (baseline)", "")
    tables_dir = Path(tables_dir)
    return out + list(write_tables(tables_dir / f"{NAME}_leaderboard.md", markdown_table(shown) + "\n",
                                   tables_dir / f"{NAME}_leaderboard.tex", latex_table(shown) + "\n"))


def summarize(table: pd.DataFrame, result) -> pd.DataFrame:
    """Per-seat totals of one played game, highest surplus first (for `marketarena play`)."""
    states = result.tables["states"]
    seats = result.tables["seats"]
    totals = states.groupby("agent_id").agg(surplus=("payoff", "sum"), trades=("traded", "sum"),
                                            quoted=("quote", lambda q: int((q >= 0).sum())))
    totals = seats.set_index("agent_id")[["role", "value"]].join(totals)
    return per_agent_summary(table, totals, result.decisions, sort_by="surplus")


PLUGIN = MarketPlugin(
    name=NAME,
    params_model=DoubleAuctionParams,
    shared_params=shared_params,
    input_files=input_files,
    build_episode=build_episode,
    load_resources=load_resources,
    compute_metrics=compute_metrics,
    draw_figures=draw_figures,
    summarize=summarize,
    render_messages=render_messages,
    rank_by="csa",
    metric_columns=da_metrics.AGENT_METRICS,
    compute_reference=compute_reference,
    leaderboard=leaderboard,
)
