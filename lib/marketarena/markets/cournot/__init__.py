"""cournot: multi-product Cournot competition and market division (seed 003, DESIGN.md 7.3).

Economics (demand, profits, Nash by iterative best response, monopoly): ``economics.py``; one
round's rules: ``rules.py``; the episode: ``market.py``; what firms see and answer:
``observations.py`` + ``templates/``; scripted firms: ``baselines.py``; metrics: ``metrics.py``;
the specialisation test: ``specialisation_test.py``; what ``bertrand`` shares: ``common.py``.
This module wires them into the generic pipeline (:class:`~marketarena.core.registry.MarketPlugin`).

Reference stage: ``reference@cournot`` writes ``data/references/cournot/summary.json`` (Nash and
monopoly quantities, prices, profits and CVs of the configured game) and ``reference.md``; the
simulate stage reads it (``input_files``: episodes are fingerprinted on it) and copies it into
every episode's ``reference.parquet``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.config import Params
from marketarena.core.registry import MarketPlugin
from marketarena.core.summary import per_agent_summary
from marketarena.markets.cournot import metrics as cournot_metrics
from marketarena.markets.cournot.baselines import Game, make_baseline
from marketarena.agents.llm_agent import llm_seat
from marketarena.markets._shared.oligopoly import agents_table
from marketarena.markets.cournot.economics import reference_summary
from marketarena.markets.cournot.market import CournotMarket
from marketarena.markets.cournot.observations import render_messages
from marketarena.markets.cournot.params import CournotParams

NAME = "cournot"


def reference_path(data_dir: Path) -> Path:
    return Path(data_dir) / "references" / NAME / "summary.json"


def input_files(data_dir: Path) -> list[Path]:
    return [reference_path(data_dir)]


def shared_params(params: Params) -> dict:
    return {}


def compute_reference(params: Params, out_dir: Path) -> dict:
    """Nash (iterative best response, SLSQP; RuntimeError if not converged) and monopoly."""
    mp: CournotParams = params.markets[NAME]
    summary = reference_summary(mp.config(), tol=mp.nash_tol, max_iter=mp.nash_max_iter)
    summary["products"] = list(mp.products)
    from marketarena.plots.cournot import reference_table

    reference_table(summary, Path(out_dir) / "reference.md")
    return summary


def load_resources(params: Params, data_dir: Path) -> dict:
    """The reference summary, checked against the configured game.

    Without ``summary.json`` (e.g. ``marketarena play`` before any ``dvc repro``) the reference is
    computed in memory with the same function; the simulate stage itself refuses to run without
    the file (``input_files``), so recorded episodes always match a stored reference.
    """
    mp: CournotParams = params.markets[NAME]
    path = reference_path(data_dir)
    if not path.is_file():
        return reference_summary(mp.config(), tol=mp.nash_tol, max_iter=mp.nash_max_iter)
    ref = json.loads(path.read_text())["reference"]
    cfg = mp.config()
    same = (np.allclose(ref["config"]["costs"], cfg.cost_matrix)
            and np.allclose(ref["config"]["a"], cfg.a_vec) and np.allclose(ref["config"]["b"], cfg.b_vec)
            and [np.inf if c is None else c for c in ref["config"]["capacity"]] == cfg.capacity_vec.tolist())
    if not same:
        raise ValueError(f"{path} was computed for another configuration than "
                         f"params markets.{NAME}; re-run the reference stage (dvc repro)")
    return ref


def build_episode(params: Params, resources: dict, run: int, llm=None):
    mp: CournotParams = params.markets[NAME]
    lineup = mp.lineup(run)
    table = agents_table(lineup)
    cfg = mp.config()
    nash = np.asarray(resources["nash"]["quantities"])
    mono = np.asarray(resources["monopoly"]["quantities"])
    agents = {}
    for i, (agent_id, entry) in enumerate(zip(table["agent_id"], lineup)):
        if entry.kind == "llm":
            agents[agent_id] = llm_seat(llm, agent_id, entry, run, render_messages, NAME)
            continue
        agents[agent_id] = make_baseline(agent_id, entry, Game(cfg, i, tuple(mp.products), nash, mono))
    return CournotMarket(mp, list(table["agent_id"]), resources), agents, table


def compute_metrics(episodes_dir: Path, data_dir: Path, params: Params) -> dict[str, pd.DataFrame]:
    return cournot_metrics.compute(episodes_dir, params.markets[NAME].bootstrap)


def draw_figures(metrics_dir: Path, figures_dir: Path, tables_dir: Path, params: Params) -> list[Path]:
    from marketarena.plots import cournot as plots

    frames = {n: pd.read_parquet(Path(metrics_dir) / f"{n}.parquet")
              for n in ("product_rounds", "agent_rounds", "specialisation")}
    alpha = params.markets[NAME].bootstrap.alpha
    out = [
        plots.figure_quantities(frames["product_rounds"], figures_dir / "fig2_quantities.png"),
        plots.figure_cv(frames["agent_rounds"], figures_dir / "fig3_cv.png"),
    ]
    out += plots.specialisation_table(frames["specialisation"], tables_dir / f"{NAME}_specialisation.md",
                                      tables_dir / f"{NAME}_specialisation.tex", alpha)
    return out


def summarize(table: pd.DataFrame, result) -> pd.DataFrame:
    """Per-firm totals of one played episode, most profitable first (for `marketarena play`)."""
    firms, states = result.tables["firms"], result.tables["states"]
    totals = firms.groupby("agent_id").agg(profit=("profit", "sum"), mean_cv=("cv", "mean"),
                                           mean_quantity=("quantity", "mean"),
                                           scaled_rounds=("scaled", "sum"))
    shares = states.pivot_table(index="agent_id", columns="product", values="share", aggfunc="mean")
    totals = totals.join(shares.add_prefix("share_"))
    return per_agent_summary(table, totals, result.decisions, sort_by="profit", digits=3)


PLUGIN = MarketPlugin(
    name=NAME,
    params_model=CournotParams,
    shared_params=shared_params,
    input_files=input_files,
    build_episode=build_episode,
    load_resources=load_resources,
    compute_metrics=compute_metrics,
    draw_figures=draw_figures,
    summarize=summarize,
    render_messages=render_messages,
    rank_by="profit",
    metric_columns=cournot_metrics.AGENT_METRICS,
    compute_reference=compute_reference,
)
