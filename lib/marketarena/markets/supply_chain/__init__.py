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

from marketarena.core.plugin import MarketPlugin, Seat
from marketarena.core.summary import per_agent_summary
from marketarena.embeddings import Embedder, quantize
from marketarena.markets._shared.boards import player_board
from marketarena.markets.supply_chain import metrics as sc_metrics
from marketarena.markets.supply_chain.baselines import STRATEGIES
from marketarena.markets.supply_chain.market import BuyerModel, SupplyChainMarket
from marketarena.markets.supply_chain.observations import render_messages
from marketarena.markets.supply_chain.params import SupplyChainParams


def load_persona_vectors(data_dir: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """Personas and their embeddings (quantised, as the embed stage writes them), aligned row by
    row."""
    personas = pd.read_parquet(data_dir / "personas.parquet")
    emb = pd.read_parquet(data_dir / "persona_embeddings.parquet").set_index("persona_id")
    vectors = quantize(np.stack(emb.loc[personas["persona_id"], "vector"].to_numpy()))
    return personas, vectors


@dataclass
class Resources:
    buyers: BuyerModel
    embedder: Embedder


TABLES = ("agents", "items", "states", "bids", "visits", "attention", "slogans", "buyers", "posts")


class SupplyChainPlugin(MarketPlugin):
    kind = "supply_chain"
    params_model = SupplyChainParams
    strategies = STRATEGIES
    uses = ("personas", "embedding.model")
    rank_by = "Pi"
    metric_columns = sc_metrics.AGENT_METRICS

    def seats(self, mp: SupplyChainParams, run: int) -> list[Seat]:
        """Every roster entry, every episode: retailers ``R01, R02, ...`` in roster order."""
        return [Seat(f"R{i + 1:02d}", e, "retailer") for i, e in enumerate(mp.roster)]

    def seating_period(self, mp: SupplyChainParams) -> int:
        return 1  # every episode seats the whole roster

    def leaderboard(self, agents: pd.DataFrame, mp: SupplyChainParams, ratings, stats) -> pd.DataFrame:
        return player_board(self, agents, ratings, stats)

    def input_files(self, mp: SupplyChainParams, data_dir: Path) -> list[Path]:
        return [data_dir / "personas.parquet", data_dir / "persona_embeddings.parquet"]

    def load_resources(self, mp: SupplyChainParams, data_dir: Path, shared) -> Resources:
        personas_params, embedding = shared["personas"], shared["embedding"]
        personas, vectors = load_persona_vectors(data_dir)
        tribes = list(personas_params.tribes)
        unknown = sorted(set(personas["tribe"]) - set(tribes))
        if unknown:
            raise ValueError(f"{data_dir / 'personas.parquet'}: tribes {unknown} are not in "
                             "params personas.tribes; re-run the personas stage")
        spec = personas_params.tribes
        buyers = BuyerModel(
            persona_ids=personas["persona_id"].to_numpy(),
            persona_tribe=personas["tribe"].map({t: i for i, t in enumerate(tribes)}).to_numpy(),
            persona_rho=personas["rho"].to_numpy(dtype=float),
            persona_vectors=vectors,
            tribe_names=tribes,
            tribe_weight=np.array([spec[t].weight for t in tribes]),
            tribe_lambda=np.array([spec[t].lam for t in tribes]),
            tribe_wtp_multiplier=np.array(
                [np.nan if spec[t].wtp_multiplier is None else spec[t].wtp_multiplier
                 for t in tribes]),
        )
        return Resources(buyers=buyers, embedder=Embedder(embedding.model, embedding.cache_dir))

    def build_market(self, mp: SupplyChainParams, resources: Resources, episode) -> SupplyChainMarket:
        return SupplyChainMarket(mp, [s.agent_id for s in episode.seats], resources.buyers,
                                 resources.embedder.encode)

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)

    def compute_metrics(self, reader, mp: SupplyChainParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        """agents / agent_steps / market frames over every finished episode (logs + persona files).
        The tribe weights are the personas file's own (its ``weight`` column, as generated)."""
        personas, vectors = load_persona_vectors(data_dir)
        weights = personas.groupby("tribe")["weight"].first().to_dict()
        agent_rows, step_rows, market_rows = [], [], []
        for episode_id, tables in reader.require().episodes(*TABLES):
            sims = sc_metrics.tribe_similarity(tables["slogans"], personas, vectors, weights)
            for rows, frame in (
                (agent_rows, sc_metrics.episode_agent_metrics(tables)),
                (step_rows, sc_metrics.episode_agent_steps(tables, sims)),
                (market_rows, sc_metrics.episode_market_indices(tables["states"])),
            ):
                frame.insert(0, "episode_id", episode_id)
                rows.append(frame)
        return {"agents": pd.concat(agent_rows, ignore_index=True),
                "agent_steps": pd.concat(step_rows, ignore_index=True),
                "market": pd.concat(market_rows, ignore_index=True)}

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: SupplyChainParams, instance: str) -> list[Path]:
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
        md, tex = tables_dir / f"{instance}_table2.md", tables_dir / f"{instance}_table2.tex"
        table2(agents, md, tex)
        return out + [md, tex]

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        """Per-agent totals of one played episode, most profitable first (``marketarena play``)."""
        states = result.tables["states"]
        totals = states.groupby("agent_id").agg(
            revenue=("revenue", "sum"), profit=("profit", "sum"), units_won=("units_won", "sum"),
            units_sold=("units_sold", "sum"))
        last = states[states["step"] == states["step"].max()].set_index("agent_id")
        totals["final_funds"] = last["funds"]
        totals["bankrupt"] = ~last["active"]
        return per_agent_summary(table, totals, result.decisions, sort_by="profit")


PLUGIN = SupplyChainPlugin()
