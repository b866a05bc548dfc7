"""english_auction's analysis: the metrics (``metrics.py``: error rates, BIP, engagement, the
Spearman of Table 1), the board, the figures and tables (``plots.py``: Figures 2-8, Table 1) and
``marketarena play``'s summary.

Ratings: TrueSkill over the auctions, ranked by profit (the seed's Figure 2), by
:func:`rate_players`: the board's mu is the median over ``rating_passes`` shuffled passes, and its
interval a bootstrap over auctions of that same median (each resample rated in ``rating_passes``
shuffled passes). The figures rate subsets of the auctions (a cell, a budget) the same way, with
the default TrueSkill environment and :data:`FIGURE_BOOT` resamples.

The roster's objectives (:meth:`EnglishAuctionAnalysis.objectives`: who bids for profit, who for
items) are read by the figures only (the seed's Figure 8), so they live here, not in the rules.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.analysis import MarketAnalysis, read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets.english_auction.analysis import metrics as ea_metrics
from marketarena.markets.english_auction.params import EnglishAuctionParams

#: the board's columns of per-auction means besides profit
BOARD_RATES = (
    "items_won",
    "failed_bid_rate",
    "self_error_rate",
    "other_error_rate",
    "cfr",
    "self_answer_error_rate",
    "other_answer_error_rate",
    "format_failure_rate",
    "mean_bip",
)
#: bootstrap resamples of the per-cell and per-budget ratings in the figures (Figures 2 and 7)
FIGURE_BOOT = 50


def rate_players(agents: pd.DataFrame, ts, passes: int, n_boot: int, seed: int) -> pd.DataFrame:
    """TrueSkill by profit, one free-for-all per auction: per player the median mu and sigma over
    ``passes`` shuffled passes and the 95% bootstrap interval of that median (``n_boot`` resamples
    of the auctions, each rated in ``passes`` shuffled passes), so the interval belongs to the mu
    beside it, and the rank interval read from it (``ratings.rank_intervals``). Columns player,
    mu, sigma, mu_lo, mu_hi, rank_lo, rank_hi, games."""
    from marketarena.ratings import bootstrap_intervals, multipass, player_games, rank_intervals

    games = player_games(agents, "profit")
    board = multipass(games, ts, passes=passes, seed=seed).drop(columns=["mu_lo", "mu_hi"])
    return rank_intervals(
        board.merge(
            bootstrap_intervals(games, ts, n_boot=n_boot, seed=seed, passes=passes), on="player"
        )
    )


class EnglishAuctionAnalysis(MarketAnalysis):
    rank_by = "profit"
    metric_columns = ea_metrics.AGENT_METRICS

    def compute_metrics(
        self, reader, mp: EnglishAuctionParams, data_dir: Path
    ) -> dict[str, pd.DataFrame]:
        return ea_metrics.compute(reader, {"bid": mp.bid_attempts, "belief": mp.belief_attempts})

    def leaderboard(
        self, agents: pd.DataFrame, mp: EnglishAuctionParams, ratings, stats
    ) -> pd.DataFrame:
        """TrueSkill by profit (:func:`rate_players`), mean profit per auction with its bootstrap
        interval, and the per-auction means of the error rates."""
        from marketarena.ratings import TrueSkillParams
        from marketarena.stats import bootstrap_mean_ci

        ts = TrueSkillParams(**ratings.trueskill.model_dump())
        board = rate_players(agents, ts, mp.rating_passes, ratings.n_boot, ratings.seed)
        board = board.rename(columns={"player": "name"})
        info = agents.groupby("name").agg(
            kind=("kind", "first"),
            strategy=("strategy", "first"),
            model=("model", "first"),
            role=("role", "first"),
            plan_mode=("plan_mode", "first"),
            episodes=("episode_id", "nunique"),
        )
        ci = pd.DataFrame(
            [
                (name, *bootstrap_mean_ci(v.to_numpy(), n_boot=stats.n_boot, seed=stats.seed))
                for name, v in agents.groupby("name")["profit"]
            ],
            columns=["name", "profit_mean", "profit_lo", "profit_hi"],
        )
        rates = agents.groupby("name")[list(BOARD_RATES)].mean().reset_index()
        board = (
            board.merge(info.reset_index(), on="name").merge(ci, on="name").merge(rates, on="name")
        )
        board = board.sort_values("mu", ascending=False, kind="stable").reset_index(drop=True)
        board.insert(0, "rank", range(1, len(board) + 1))
        return board

    def objectives(self, mp: EnglishAuctionParams) -> dict[str, str | None]:
        """Roster name -> the objective it bids for (the seed's profit bidders and item bidders,
        its Figure 8): an LLM's ``bdi`` ``desire`` (default maximize_profit), a scripted
        strategy's (``ScriptedBidder.objective``: the planner's ``desire``, the collector's items);
        None when the strategy states none."""
        out = {}
        for entry in mp.roster:
            if entry.kind == "llm":
                out[entry.name] = entry.params.get("desire", "maximize_profit")
            else:
                cls = self.rules.strategies[entry.strategy]
                out[entry.name] = cls.objective(cls.Params.model_validate(entry.params))
        return out

    def draw_figures(
        self,
        metrics_dir: Path,
        figures_dir: Path,
        tables_dir: Path,
        mp: EnglishAuctionParams,
        instance: str,
    ) -> list[Path]:
        from marketarena.markets.english_auction.analysis import plots
        from marketarena.ratings import TrueSkillParams

        frames = read_metrics(
            metrics_dir, ("agents", "engagement", "bids", "spearman", "states", "plans")
        )
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")

        def rate(agents: pd.DataFrame) -> pd.DataFrame:  # a figure's cell: default TrueSkill
            return rate_players(agents, TrueSkillParams(), mp.rating_passes, FIGURE_BOOT, 0)

        return plots.draw_all(
            frames,
            board,
            Path(figures_dir),
            Path(tables_dir),
            instance,
            mp.rating_passes,
            rate,
            [ea_metrics.bip_label(lo, hi) for lo, hi in ea_metrics.BIP_RANGES],
            self.objectives(mp),
        )

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        states = result.tables["states"]
        last = states[states["step"] == states["step"].max()].set_index("agent_id")
        totals = last[["profit", "budget_left", "items_won"]]
        return per_agent_summary(table, totals, result.decisions, sort_by="profit")
