"""double_auction's analysis: the CSα reference, truthful games against the pool built by the
market's rules (``reference.py``), the metrics (``metrics.py``), the board (``board.py``), the
figures and tables (``plots.py``), the calibration against the seed's table and BAZAAR's
published games (``calibration.py``) and ``marketarena play``'s summary. An instance imported
from BAZAAR's logs is analysed by its source's subclass (``double_auction/sources/analysis.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.analysis import MarketAnalysis
from marketarena.core.summary import per_agent_summary
from marketarena.markets.double_auction.analysis import board as da_board
from marketarena.markets.double_auction.analysis import metrics as da_metrics
from marketarena.markets.double_auction.analysis.reference import compute_reference
from marketarena.markets.double_auction.params import DoubleAuctionParams


class DoubleAuctionAnalysis(MarketAnalysis):
    rank_by = "csa"
    metric_columns = da_metrics.AGENT_METRICS

    def compute_reference(self, mp: DoubleAuctionParams, out_dir: Path, workers: int = 1) -> dict:
        return compute_reference(mp, out_dir, workers, self.rules)

    def compute_metrics(
        self, reader, mp: DoubleAuctionParams, data_dir: Path
    ) -> dict[str, pd.DataFrame]:
        return da_metrics.compute(reader, mp, data_dir)

    def leaderboard(
        self, agents: pd.DataFrame, mp: DoubleAuctionParams, ratings, stats
    ) -> pd.DataFrame:
        """Multi-pass TrueSkill by CSα with bootstrap intervals (``board.py``)."""
        return da_board.leaderboard(agents, mp, ratings, stats, self.board_columns(agents))

    def board_columns(self, agents: pd.DataFrame) -> dict[str, tuple]:
        """Per-trader columns of the board beyond the market's own (named aggregations of
        ``agents``): none for played games."""
        return {}

    def stop_rating(self, mp: DoubleAuctionParams) -> dict[str, float]:
        """The board's environment (``board.rating_env``) with the ratings section's defaults."""
        from marketarena.config import RatingsParams

        return da_board.rating_env(mp, RatingsParams()).model_dump()

    def draw_figures(
        self,
        metrics_dir: Path,
        figures_dir: Path,
        tables_dir: Path,
        mp: DoubleAuctionParams,
        instance: str,
    ) -> list[Path]:
        from marketarena.markets.double_auction.analysis import calibration as cal  # scipy: 0.8 s
        from marketarena.markets.double_auction.analysis import plots
        from marketarena.plots.tables import write_frame

        agents = pd.read_parquet(Path(metrics_dir) / "agents.parquet")
        rounds = pd.read_parquet(Path(metrics_dir) / "agent_rounds.parquet")
        market = pd.read_parquet(Path(metrics_dir) / "market.parquet")
        board = read_board(tables_dir, instance)
        out = plots.draw_all(board, agents, rounds, Path(figures_dir))
        cols = [
            "rank",
            "name",
            "mu",
            "sigma",
            "mu_lo",
            "mu_hi",
            "rank_lo",
            "rank_hi",
            "games",
            "csa_mean",
            "trade_freq",
            "mean_offset",
            "game_efficiency",
        ]
        shown = board[[c for c in cols if c in board.columns]].copy()
        shown["name"] = shown["name"] + np.where(board["baseline"], " (baseline)", "")
        out += list(write_frame(shown, Path(tables_dir) / f"{instance}_leaderboard"))
        summary, side = cal.calibration(board)
        behaviour = cal.behaviour(agents, rounds)
        caption = (
            "Calibration against BAZAAR's table (seed 002): Spearman ρ of the matched "
            "baselines' μ and mean CSα with the seed's, 95% bootstrap interval over "
            "baselines; baselines within the bounds of BAZAAR's logged behaviour"
        )
        if len(behaviour):
            summary = pd.concat(
                [
                    summary,
                    pd.DataFrame(
                        [
                            {
                                "statistic": "within bounds (shade ±2 per bucket, fill ±0.05)",
                                "spearman": np.nan,
                                "baselines": int(behaviour["within"].sum()),
                                "of": len(behaviour),
                                "within_raw": int(behaviour["within_raw"].sum()),
                            }
                        ]
                    ),
                ],
                ignore_index=True,
            )
        tables = Path(tables_dir)
        out += list(write_frame(summary, tables / f"{instance}_calibration", caption))
        out += list(
            write_frame(
                side,
                tables / f"{instance}_calibration_baselines",
                "Matched baselines, ours beside the seed's (rank among them)",
            )
        )
        out += list(
            write_frame(
                behaviour,
                tables / f"{instance}_calibration_behaviour",
                "Baselines against BAZAAR's published games: mean shade by round "
                "bucket (ours, bz_ BAZAAR's), trade frequency, fill rate when "
                "intra-marginal; within = every bucket within 2 and fill within "
                "0.05 of BAZAAR's at our intra-marginal share (fq_target)",
            )
        )
        out += list(
            write_frame(
                cal.efficiency(market),
                tables / f"{instance}_calibration_efficiency",
                "Mean market efficiency per value distribution, ours and BAZAAR's published games",
            )
        )
        out.append(
            plots.calibration_shade(
                cal.shade_by_round(rounds), behaviour, Path(figures_dir) / "calibration_shade.png"
            )
        )
        return out

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        """Per-seat totals of one played game, highest surplus first (``marketarena play``)."""
        states = result.tables["states"]
        seats = result.tables["seats"]
        totals = states.groupby("agent_id").agg(
            surplus=("payoff", "sum"),
            trades=("traded", "sum"),
            quoted=("quote", lambda q: int((q >= 0).sum())),
        )
        totals = seats.set_index("agent_id")[["role", "value"]].join(totals)
        return per_agent_summary(table, totals, result.decisions, sort_by="surplus")


def read_board(tables_dir: Path, instance: str) -> pd.DataFrame:
    """The instance's leaderboard (the ratings stage's ``reports/leaderboards/<instance>.csv``)
    beside the figures stage's tables folder (``reports/tables/<instance>``)."""
    return pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
