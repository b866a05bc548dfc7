"""supply_chain: Market-Bench's procurement auction + retail with persona-gated attention.

Rules: ``market.py`` (state machine) and ``rules.py`` (pure functions); what agents see and answer:
``observations.py`` + ``templates/``; scripted retailers: ``baselines.py``; metrics: ``metrics.py``.
This module wires them into the generic pipeline (:class:`~marketarena.core.registry.MarketPlugin`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.config import Params
from marketarena.core import logs
from marketarena.agents.llm_agent import llm_seat
from marketarena.core.registry import MarketPlugin
from marketarena.core.summary import per_agent_summary
from marketarena.embeddings import Embedder
from marketarena.markets.supply_chain import metrics as sc_metrics
from marketarena.markets.supply_chain.baselines import make_baseline
from marketarena.markets.supply_chain.market import BuyerModel, SupplyChainMarket
from marketarena.markets.supply_chain.observations import render_messages
from marketarena.markets.supply_chain.params import SupplyChainParams

NAME = "supply_chain"


def input_files(data_dir: Path) -> list[Path]:
    return [data_dir / "personas.parquet", data_dir / "persona_embeddings.parquet"]


def shared_params(params: Params) -> dict:
    return {"personas": params.personas.model_dump(mode="json", by_alias=True),
            "embedding": params.embedding.model_dump(mode="json", include={"model"})}


def load_persona_vectors(data_dir: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """Personas and their embeddings, aligned row by row."""
    personas = pd.read_parquet(data_dir / "personas.parquet")
    emb = pd.read_parquet(data_dir / "persona_embeddings.parquet").set_index("persona_id")
    vectors = np.stack(emb.loc[personas["persona_id"], "vector"].to_numpy()).astype(np.float32)
    return personas, vectors


@dataclass
class Resources:
    buyers: BuyerModel
    embedder: Embedder


def load_resources(params: Params, data_dir: Path) -> Resources:
    personas, vectors = load_persona_vectors(data_dir)
    tribes = list(params.personas.tribes)
    unknown = sorted(set(personas["tribe"]) - set(tribes))
    if unknown:
        raise ValueError(f"{data_dir / 'personas.parquet'}: tribes {unknown} are not in "
                         "params personas.tribes; re-run the personas stage")
    spec = params.personas.tribes
    buyers = BuyerModel(
        persona_ids=personas["persona_id"].to_numpy(),
        persona_tribe=personas["tribe"].map({t: i for i, t in enumerate(tribes)}).to_numpy(),
        persona_rho=personas["rho"].to_numpy(dtype=float),
        persona_vectors=vectors,
        tribe_names=tribes,
        tribe_weight=np.array([spec[t].weight for t in tribes]),
        tribe_lambda=np.array([spec[t].lam for t in tribes]),
        tribe_wtp_multiplier=np.array(
            [np.nan if spec[t].wtp_multiplier is None else spec[t].wtp_multiplier for t in tribes]),
    )
    return Resources(buyers=buyers,
                     embedder=Embedder(params.embedding.model, params.embedding.cache_dir))


def agents_table(mp: SupplyChainParams) -> pd.DataFrame:
    rows = [{"agent_id": f"R{i + 1:02d}", "name": e.name, "kind": e.kind,
             "model": e.model or "", "strategy": e.strategy or e.harness, "role": "retailer"}
            for i, e in enumerate(mp.roster)]
    return pd.DataFrame(rows)


def build_episode(params: Params, resources: Resources, run: int, llm=None):
    mp: SupplyChainParams = params.markets[NAME]
    table = agents_table(mp)
    agents = {}
    for agent_id, entry in zip(table["agent_id"], mp.roster):
        if entry.kind == "baseline":
            agents[agent_id] = make_baseline(agent_id, entry)
        else:
            agents[agent_id] = llm_seat(llm, agent_id, entry, run, render_messages, NAME)
    market = SupplyChainMarket(mp, list(table["agent_id"]), resources.buyers,
                               resources.embedder.encode)
    return market, agents, table


TABLES = ("agents", "items", "states", "bids", "visits", "attention", "slogans")


def compute_metrics(episodes_dir: Path, data_dir: Path, params: Params) -> dict[str, pd.DataFrame]:
    """agents / agent_steps / market frames over every finished episode (logs + persona files)."""
    personas, vectors = load_persona_vectors(data_dir)
    weights = {t: s.weight for t, s in params.personas.tribes.items()}
    agent_rows, step_rows, market_rows = [], [], []
    for folder in logs.episode_folders(episodes_dir):
        tables = {name: pd.read_parquet(folder / f"{name}.parquet") for name in TABLES}
        sims = sc_metrics.tribe_similarity(tables["slogans"], personas, vectors, weights)
        for rows, frame in (
            (agent_rows, sc_metrics.episode_agent_metrics(tables)),
            (step_rows, sc_metrics.episode_agent_steps(tables, sims)),
            (market_rows, sc_metrics.episode_market_indices(tables["states"])),
        ):
            frame.insert(0, "episode_id", folder.name)
            rows.append(frame)
    if not agent_rows:
        raise FileNotFoundError(f"{episodes_dir}: no finished episodes; run the simulate stage")
    return {"agents": pd.concat(agent_rows, ignore_index=True),
            "agent_steps": pd.concat(step_rows, ignore_index=True),
            "market": pd.concat(market_rows, ignore_index=True)}


def draw_figures(metrics_dir: Path, figures_dir: Path, tables_dir: Path, params: Params) -> list[Path]:
    from marketarena.plots import supply_chain as plots
    from marketarena.plots.tables import table2

    agents = pd.read_parquet(metrics_dir / "agents.parquet")
    steps = pd.read_parquet(metrics_dir / "agent_steps.parquet")
    market = pd.read_parquet(metrics_dir / "market.parquet")
    out = [
        plots.figure3_market_indices(market, figures_dir / "fig3_market_indices.png"),
        plots.figure4_economics(steps, figures_dir / "fig4_economics.png"),
        plots.figure5_operations(steps, figures_dir / "fig5_operations.png"),
        plots.figure6_slogan_similarity(steps, figures_dir / "fig6_slogan_similarity.png"),
        plots.figure7_slogan_map(steps, figures_dir / "fig7_slogan_map.png"),
    ]
    table2(agents, tables_dir / f"{NAME}_table2.md", tables_dir / f"{NAME}_table2.tex")
    return out + [tables_dir / f"{NAME}_table2.md", tables_dir / f"{NAME}_table2.tex"]


def summarize(table: pd.DataFrame, result) -> pd.DataFrame:
    """Per-agent totals of one played episode, most profitable first (for `marketarena play`)."""
    states = result.tables["states"]
    totals = states.groupby("agent_id").agg(
        revenue=("revenue", "sum"), profit=("profit", "sum"), units_won=("units_won", "sum"),
        units_sold=("units_sold", "sum"))
    last = states[states["step"] == states["step"].max()].set_index("agent_id")
    totals["final_funds"] = last["funds"]
    totals["bankrupt"] = ~last["active"]
    return per_agent_summary(table, totals, result.decisions, sort_by="profit")


PLUGIN = MarketPlugin(
    name=NAME,
    params_model=SupplyChainParams,
    shared_params=shared_params,
    input_files=input_files,
    build_episode=build_episode,
    load_resources=load_resources,
    compute_metrics=compute_metrics,
    draw_figures=draw_figures,
    summarize=summarize,
    render_messages=render_messages,
    rank_by="Pi",
    metric_columns=sc_metrics.AGENT_METRICS,
)
