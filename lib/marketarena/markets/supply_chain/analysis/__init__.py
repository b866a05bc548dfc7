"""supply_chain's analysis: the metrics (``metrics.py``, Market-Bench appendix C) from the logs and
the persona files, the board (TrueSkill by retailer, ranked by profit Π:
``markets/_shared/analysis/boards.py``), Figures 3-7 (``plots.py``), Table 2 (``tables.py``) and
``marketarena play``'s summary. No reference: the metrics need none."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.analysis import MarketAnalysis, read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets._shared.analysis.boards import player_board
from marketarena.markets.supply_chain.analysis import metrics as sc_metrics
from marketarena.markets.supply_chain.market import load_persona_vectors
from marketarena.markets.supply_chain.params import SupplyChainParams

#: the log tables the metrics read
TABLES = ("agents", "items", "states", "bids", "visits", "attention", "slogans", "buyers", "posts")


class SupplyChainAnalysis(MarketAnalysis):
    rank_by = "Pi"
    metric_columns = sc_metrics.AGENT_METRICS

    def leaderboard(
        self, agents: pd.DataFrame, mp: SupplyChainParams, ratings, stats
    ) -> pd.DataFrame:
        return player_board(self, agents, ratings, stats)

    def compute_metrics(
        self, reader, mp: SupplyChainParams, data_dir: Path
    ) -> dict[str, pd.DataFrame]:
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
        return {
            "agents": pd.concat(agent_rows, ignore_index=True),
            "agent_steps": pd.concat(step_rows, ignore_index=True),
            "market": pd.concat(market_rows, ignore_index=True),
        }

    def draw_figures(
        self,
        metrics_dir: Path,
        figures_dir: Path,
        tables_dir: Path,
        mp: SupplyChainParams,
        instance: str,
    ) -> list[Path]:
        from marketarena.markets.supply_chain.analysis import plots
        from marketarena.markets.supply_chain.analysis.tables import table2

        frames = read_metrics(metrics_dir, ("agents", "agent_steps", "market"))
        steps, market = frames["agent_steps"], frames["market"]
        out = [
            plots.figure3_market_indices(market, figures_dir / "fig3_market_indices.png"),
            plots.figure4_economics(steps, figures_dir / "fig4_economics.png"),
            plots.figure5_operations(steps, figures_dir / "fig5_operations.png"),
            plots.figure6_slogan_similarity(steps, figures_dir / "fig6_slogan_similarity.png"),
            plots.figure7_slogan_map(steps, figures_dir / "fig7_slogan_map.png"),
        ]
        md, tex = tables_dir / f"{instance}_table2.md", tables_dir / f"{instance}_table2.tex"
        table2(frames["agents"], md, tex)
        return out + [md, tex]

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        """Per-agent totals of one played episode, most profitable first (``marketarena play``)."""
        states = result.tables["states"]
        totals = states.groupby("agent_id").agg(
            revenue=("revenue", "sum"),
            profit=("profit", "sum"),
            units_won=("units_won", "sum"),
            units_sold=("units_sold", "sum"),
        )
        last = states[states["step"] == states["step"].max()].set_index("agent_id")
        totals["final_funds"] = last["funds"]
        totals["bankrupt"] = ~last["active"]
        return per_agent_summary(table, totals, result.decisions, sort_by="profit")
