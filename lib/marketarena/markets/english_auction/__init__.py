"""english_auction: AucArena's sequential English auction (seed 004; DESIGN.md 7.4).

Items are presented one at a time; bidders plan (item priorities), bid in open ascending rounds,
update a status JSON that is checked against the truth, and replan. The rules: ``rules.py``; the
state machine and its log tables: ``market.py``; what bidders see and answer: ``observations.py`` +
``templates/`` (the seed's appendix A.2 prompts, answers as strict JSON: no LLM parses bids); the
settings grid (budget x item order): ``params.py``; scripted bidders, the seed's rule bidder among
them: ``baselines.py``; metrics: ``metrics.py``; figures: ``plots/english_auction.py``.

LLM bidders use the ``bdi`` harness (``agents/harnesses/bdi.py``: the desire and the adaptive /
static / no-plan variants of the seed's ablation). Ratings: multi-pass TrueSkill over the auctions,
ranked by profit, as the seed's Figure 2 (and double_auction's board).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.plugin import EpisodeSpec, MarketPlugin, Seat, read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets.english_auction import metrics as ea_metrics
from marketarena.markets.english_auction.baselines import STRATEGIES
from marketarena.markets.english_auction.market import EnglishAuctionMarket
from marketarena.markets.english_auction.observations import render_messages
from marketarena.markets.english_auction.params import EnglishAuctionParams

RATING_PASSES = 200


class EnglishAuctionPlugin(MarketPlugin):
    kind = "english_auction"
    params_model = EnglishAuctionParams
    strategies = STRATEGIES
    harnesses = ("bdi",)
    default_harness = "bdi"
    rank_by = "profit"
    metric_columns = ea_metrics.AGENT_METRICS

    def seats(self, mp: EnglishAuctionParams, run: int) -> list[Seat]:
        return [Seat(f"B{i + 1}", e, "bidder") for i, e in enumerate(mp.roster)]

    def seating_period(self, mp: EnglishAuctionParams) -> int:
        return len(mp.cells)

    def episode(self, mp: EnglishAuctionParams, run: int) -> EpisodeSpec:
        e = super().episode(mp, run)
        budget, order = mp.cell_of(run)
        return EpisodeSpec(e.episode_id, run, e.seed, e.seats, (("budget", budget), ("order", order)))

    def build_market(self, mp: EnglishAuctionParams, resources, episode: EpisodeSpec):
        return EnglishAuctionMarket(mp, [s.agent_id for s in episode.seats], episode.get("budget"),
                                    episode.get("order"))

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)

    def compute_metrics(self, reader, mp: EnglishAuctionParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        return ea_metrics.compute(reader)

    def leaderboard(self, agents: pd.DataFrame, mp: EnglishAuctionParams, ratings, stats) -> pd.DataFrame:
        """Multi-pass TrueSkill by profit (200 shuffled passes, median mu and sigma, the spread
        over passes as an interval) with the generic board's bootstrap interval of mu, mean profit
        with its interval, and the error rates."""
        from marketarena.ratings import TrueSkillParams, leaderboard, multipass, player_games

        board = leaderboard(agents, "profit", ratings, stats)
        ts = TrueSkillParams(**ratings.trueskill.model_dump())
        multi = multipass(player_games(agents, "profit"), ts, passes=RATING_PASSES, seed=ratings.seed)
        multi = multi.rename(columns={"player": "name", "mu": "mu_multipass", "sigma": "sigma_multipass",
                                      "mu_lo": "mu_pass_lo", "mu_hi": "mu_pass_hi"}).drop(columns="games")
        rates = agents.groupby("name")[["items_won", "failed_bid_rate", "self_error_rate",
                                        "other_error_rate", "cfr", "mean_bip"]].mean()
        board = board.merge(multi, on="name").merge(rates.reset_index(), on="name")
        board = board.sort_values("mu_multipass", ascending=False, kind="stable").reset_index(drop=True)
        board["rank"] = range(1, len(board) + 1)
        return board

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: EnglishAuctionParams, instance: str) -> list[Path]:
        from marketarena.plots import english_auction as plots

        frames = read_metrics(metrics_dir, ("agents", "engagement", "bids", "spearman", "states", "plans"))
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        return plots.draw_all(frames, board, Path(figures_dir), Path(tables_dir), instance)

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        states = result.tables["states"]
        last = states[states["step"] == states["step"].max()].set_index("agent_id")
        totals = last[["profit", "budget_left", "items_won"]]
        return per_agent_summary(table, totals, result.decisions, sort_by="profit")


PLUGIN = EnglishAuctionPlugin()
