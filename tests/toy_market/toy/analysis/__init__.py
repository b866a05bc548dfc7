"""The toy market's analysis: profit per seller and episode from the ``sales`` log, the usual
TrueSkill board, one figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from marketarena.core.analysis import MarketAnalysis, read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets._shared.analysis.boards import player_board
from marketarena.plots.style import save


class ToyAnalysis(MarketAnalysis):
    rank_by = "profit"
    metric_columns = ("profit", "sales")

    def compute_metrics(self, reader, mp, data_dir: Path) -> dict[str, pd.DataFrame]:
        sales, agents = reader.table("sales"), reader.table("agents")
        per = sales.groupby(["episode_id", "agent_id"]).agg(
            profit=("profit", "sum"), sales=("sold", "sum")
        )
        # every column of the agents table (the board reads kind, model, strategy), its metrics
        out = agents.join(per, on=["episode_id", "agent_id"])
        return {"agents": out.fillna({"profit": 0.0, "sales": 0}).astype({"sales": int})}

    def leaderboard(self, agents, mp, ratings, stats):
        return player_board(self, agents, ratings, stats)

    def draw_figures(
        self, metrics_dir: Path, figures_dir: Path, tables_dir: Path, mp, instance: str
    ) -> list[Path]:
        agents = read_metrics(metrics_dir, ("agents",))["agents"]
        fig, ax = plt.subplots(figsize=(4, 3))
        mean = agents.groupby("name")["profit"].mean()
        ax.bar(mean.index, mean.to_numpy())
        ax.set_ylabel("profit per episode")
        return [save(fig, Path(figures_dir) / "profit.png")]

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        sales = result.tables["sales"]
        totals = sales.groupby("agent_id").agg(profit=("profit", "sum"), sales=("sold", "sum"))
        return per_agent_summary(table, totals, result.decisions, sort_by="profit")
