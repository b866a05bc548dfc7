"""crash's analysis: the metrics and the EAS (``metrics.py``), the board (TrueSkill by firm kind
with its EAS, ``markets/_shared/analysis/boards.py`` and ``metrics/eas.py``), the figures and tables
(``plots.py``) and ``marketarena play``'s summary. An imported instance of the authors' runs is
analysed by ``crash/sources/analysis.py`` instead."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.analysis import MarketAnalysis, read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets.crash.analysis import metrics as crash_metrics
from marketarena.markets.crash.params import CrashParams


class CrashAnalysis(MarketAnalysis):
    rank_by = "profit"
    metric_columns = crash_metrics.AGENT_METRICS
    seat_score = "mean"  # a firm kind holding several seats is ranked by its mean profit per seat

    def compute_metrics(self, reader, mp: CrashParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        return crash_metrics.compute(reader, mp.eas, stable_price=mp.stable_price)

    def leaderboard(self, agents: pd.DataFrame, mp: CrashParams, ratings, stats) -> pd.DataFrame:
        """TrueSkill by firm kind (mean profit per seat in each episode), with the kind's EAS
        components and EAS from its own firms (fixed anchors, 95% bootstrap interval over its
        episodes), the seed's relative EAS and the market's components of its episodes, named
        ``market_*`` (``metrics.eas.eas_board``). The pipeline adds the validity columns."""
        from marketarena.markets._shared.analysis.boards import player_board
        from marketarena.metrics.eas import eas_board

        board = player_board(self, agents, ratings, stats)
        return board.merge(
            eas_board(agents, mp.eas, stats.n_boot, stats.seed), on="name", how="left"
        )

    def draw_figures(
        self, metrics_dir: Path, figures_dir: Path, tables_dir: Path, mp: CrashParams, instance: str
    ) -> list[Path]:
        from marketarena.markets.crash.analysis import plots

        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        frames = read_metrics(metrics_dir, ("market", "days", "survival", "agents"))
        return plots.draw_all(frames, board, mp, Path(figures_dir), Path(tables_dir), instance)

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        states = result.tables["states"]
        totals = states.groupby("agent_id").agg(
            profit=("profit", "sum"),
            final_cash=("cash_end", "last"),
            days=("step", "count"),
            mean_price=("price", "mean"),
            units_sold=("units_sold", "sum"),
            bankrupt=("bankrupt", "max"),
        )
        return per_agent_summary(table, totals, result.decisions, sort_by="profit", digits=3)
