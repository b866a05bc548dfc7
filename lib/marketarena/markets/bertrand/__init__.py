"""bertrand: logit Bertrand pricing and collusion (Calvano / Fish et al.; seed 003's start-up market).

Economics (logit demand, Nash, monopoly, collusion index): ``economics.py``; one period's rules and
the investment options: ``rules.py``; the episode: ``market.py``; what firms see and answer:
``observations.py`` + ``templates/`` (the notes macro and the action models are shared with cournot,
``markets/_shared/oligopoly.py``); scripted firms incl. the Q-learning pricer: ``baselines.py``;
metrics: ``metrics.py``.

Reference stage: ``reference@bertrand`` writes ``summary.json`` with the Nash and monopoly prices,
quantities and profits of the starting game (and, for the start-up preset, of every symmetric
investment level); the simulate stage is fingerprinted on it. Episodes log the references of each
period's own cost configuration in ``states`` (they move with investments).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.config import Params
from marketarena.core.registry import MarketPlugin
from marketarena.core.summary import per_agent_summary
from marketarena.markets.bertrand import metrics as bertrand_metrics
from marketarena.markets.bertrand.baselines import Game, make_baseline
from marketarena.markets.bertrand.economics import reference_summary
from marketarena.markets.bertrand.market import BertrandMarket
from marketarena.markets.bertrand.observations import render_messages
from marketarena.markets.bertrand.params import BertrandParams
from marketarena.agents.llm_agent import llm_seat
from marketarena.markets._shared.oligopoly import agents_table

NAME = "bertrand"


def input_files(data_dir: Path) -> list[Path]:
    return [Path(data_dir) / "references" / NAME / "summary.json"]


def shared_params(params: Params) -> dict:
    return {}


def compute_reference(params: Params, out_dir: Path) -> dict:
    mp: BertrandParams = params.markets[NAME]
    cfg = mp.config()
    summary = reference_summary(cfg)
    summary["preset"] = mp.preset
    summary["products"] = list(mp.products)
    if mp.invest:
        summary["by_level"] = {
            str(level): reference_summary(cfg.model_copy(update={"costs": (
                (cfg.cost_ladder[level],) * cfg.n_products,) * cfg.n_firms}))
            for level in range(len(cfg.cost_ladder))}
    return summary


def load_resources(params: Params, data_dir: Path) -> None:
    return None


def build_episode(params: Params, resources, run: int, llm=None):
    mp: BertrandParams = params.markets[NAME]
    lineup = mp.lineup(run)
    table = agents_table(lineup)
    cfg = mp.config()
    agents = {}
    for i, (agent_id, entry) in enumerate(zip(table["agent_id"], lineup)):
        if entry.kind == "llm":
            agents[agent_id] = llm_seat(llm, agent_id, entry, run, render_messages, NAME)
            continue
        agents[agent_id] = make_baseline(agent_id, entry, Game(cfg, i, tuple(mp.products), mp.invest))
    return BertrandMarket(mp, list(table["agent_id"])), agents, table


def compute_metrics(episodes_dir: Path, data_dir: Path, params: Params) -> dict[str, pd.DataFrame]:
    return bertrand_metrics.compute(episodes_dir, params.markets[NAME].collusion_window)


def draw_figures(metrics_dir: Path, figures_dir: Path, tables_dir: Path, params: Params) -> list[Path]:
    from marketarena.plots import bertrand as plots

    mp: BertrandParams = params.markets[NAME]
    frames = {n: pd.read_parquet(Path(metrics_dir) / f"{n}.parquet")
              for n in ("product_rounds", "market_rounds", "market")}
    out = [plots.figure_prices(frames["product_rounds"], figures_dir / "fig_prices.png"),
           plots.figure_collusion(frames["market_rounds"], mp.collusion_window,
                                  figures_dir / "fig_collusion_index.png")]
    # the interval reads only markets.bertrand (the figures stage lists `markets`, not `stats`)
    out += plots.collusion_table(frames["market"], tables_dir / f"{NAME}_collusion.md",
                                 tables_dir / f"{NAME}_collusion.tex", mp.collusion_window,
                                 n_boot=2000, seed=mp.seed)
    return out


def summarize(table: pd.DataFrame, result) -> pd.DataFrame:
    firms, states = result.tables["firms"], result.tables["states"]
    totals = firms.groupby("agent_id").agg(profit=("profit", "sum"), final_funds=("funds", "last"),
                                           investments=("investment", lambda s: int((s != "").sum())))
    totals["mean_price"] = states.groupby("agent_id")["price"].mean()
    return per_agent_summary(table, totals, result.decisions, sort_by="profit", digits=3)


PLUGIN = MarketPlugin(
    name=NAME,
    params_model=BertrandParams,
    shared_params=shared_params,
    input_files=input_files,
    build_episode=build_episode,
    load_resources=load_resources,
    compute_metrics=compute_metrics,
    draw_figures=draw_figures,
    summarize=summarize,
    render_messages=render_messages,
    rank_by="profit",
    metric_columns=bertrand_metrics.AGENT_METRICS,
    compute_reference=compute_reference,
)


