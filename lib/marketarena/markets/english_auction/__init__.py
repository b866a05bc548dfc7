"""english_auction: AucArena's sequential English auction (seed 004; DESIGN.md 7.4).

Items are presented one at a time; bidders plan (item priorities), bid in open ascending rounds,
update a status JSON that is checked against the truth, and replan. The rules: ``rules.py``; the
state machine and its log tables: ``market.py``; what bidders see and answer: ``observations.py`` +
``templates/`` (the seed's appendix A.2 prompts, answers as strict JSON: no LLM parses bids); the
settings grid (budget x item order) and the lineups (the seed's standard competition: fixed
``baselines`` plus one challenger per auction): ``params.py``; scripted bidders, the seed's rule
bidder and the LLM stand-in ``planner`` among them: ``baselines.py``; metrics: ``metrics.py``;
figures: ``plots/english_auction.py``.

LLM bidders use the ``bdi`` harness (``agents/harnesses/bdi.py``: the desire, the adaptive /
static / no-plan variants of the seed's ablation, and the authors' conversation: the plan the
model wrote and its earlier bids on the item before every bid). Ratings: TrueSkill over the
auctions, ranked by profit (the seed's Figure 2): the board's mu is the median over
``rating_passes`` shuffled passes, and its interval a bootstrap over auctions of that same median
(each resample rated in ``rating_passes`` shuffled passes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.plugin import EpisodeSpec, MarketPlugin, Seat, episode_seed, read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets.english_auction import metrics as ea_metrics
from marketarena.markets.english_auction.baselines import STRATEGIES
from marketarena.markets.english_auction.market import EnglishAuctionMarket
from marketarena.markets.english_auction.observations import render_messages
from marketarena.markets.english_auction.params import EnglishAuctionParams

#: the board's columns of per-auction means besides profit
BOARD_RATES = ("items_won", "failed_bid_rate", "self_error_rate", "other_error_rate", "cfr",
               "self_answer_error_rate", "other_answer_error_rate", "format_failure_rate", "mean_bip")
#: bootstrap resamples of the per-cell and per-budget ratings in the figures (Figures 2 and 7)
FIGURE_BOOT = 50


def rate_players(agents: pd.DataFrame, ts, passes: int, n_boot: int, seed: int) -> pd.DataFrame:
    """TrueSkill by profit, one free-for-all per auction: per player the median mu and sigma over
    ``passes`` shuffled passes and the 95% bootstrap interval of that median (``n_boot`` resamples
    of the auctions, each rated in ``passes`` shuffled passes), so the interval belongs to the mu
    beside it. Columns player, mu, sigma, mu_lo, mu_hi, rank_lo, rank_hi, games."""
    from marketarena.ratings import bootstrap_intervals, multipass, player_games

    games = player_games(agents, "profit")
    board = multipass(games, ts, passes=passes, seed=seed).drop(columns=["mu_lo", "mu_hi"])
    return board.merge(bootstrap_intervals(games, ts, n_boot=n_boot, seed=seed, passes=passes),
                       on="player")


class EnglishAuctionPlugin(MarketPlugin):
    kind = "english_auction"
    params_model = EnglishAuctionParams
    strategies = STRATEGIES
    harnesses = ("bdi",)
    default_harness = "bdi"
    rank_by = "profit"
    metric_columns = ea_metrics.AGENT_METRICS

    def plan(self, mp: EnglishAuctionParams) -> list[EpisodeSpec]:
        """Each lineup's ``runs`` auctions, lineup by lineup (challengers in roster order)."""
        return [self._auction(mp, challenger, names, r)
                for challenger, names in mp.lineups() for r in range(mp.runs)]

    def seat_matrix(self, mp: EnglishAuctionParams) -> tuple[np.ndarray, list[str]]:
        """Every lineup's roster indices repeated over its ``runs`` auctions (the plan's order);
        the seat roles are those :meth:`_auction` gives every lineup's first auction."""
        index = {e.name: i for i, e in enumerate(mp.roster)}
        lineups = mp.lineups()
        matrix = np.repeat(np.array([[index[n] for n in names] for _, names in lineups]), mp.runs,
                           axis=0)
        return matrix, [seat.role for seat in self._auction(mp, *lineups[0], 0).seats]

    def episode(self, mp: EnglishAuctionParams, run: int) -> EpisodeSpec:
        """The ``run``-th auction of the plan (the first lineup's come first)."""
        challenger, names = mp.lineups()[run // mp.runs]
        return self._auction(mp, challenger, names, run % mp.runs)

    @staticmethod
    def _auction(mp: EnglishAuctionParams, challenger: str | None, names: list[str], r: int) -> EpisodeSpec:
        entries = {e.name: e for e in mp.roster}
        role = (lambda n: "bidder") if challenger is None else (
            lambda n: "challenger" if n == challenger else "baseline")
        seats = tuple(Seat(f"B{i + 1}", entries[n], role(n)) for i, n in enumerate(names))
        budget, order = mp.cell_of(r)
        episode_id = f"ep-{r:04d}" if challenger is None else f"ep-{challenger}-{r:04d}"
        return EpisodeSpec(episode_id, r, episode_seed(mp.seed, r), seats,
                           (("budget", budget), ("order", order)))

    def stop_players(self, mp: EnglishAuctionParams) -> dict[str, list[str]]:
        """Each LLM challenger's auctions, in order (the stopping rule: ``stopping.py``); with
        every bidder in every auction (no ``baselines``) there is no challenger: none."""
        entries = {e.name: e for e in mp.roster}
        return {c: [self._auction(mp, c, names, r).episode_id for r in range(mp.runs)]
                for c, names in mp.lineups() if c is not None and entries[c].kind == "llm"}

    def build_market(self, mp: EnglishAuctionParams, resources, episode: EpisodeSpec):
        return EnglishAuctionMarket(mp, [s.agent_id for s in episode.seats], episode.get("budget"),
                                    episode.get("order"))

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)

    def compute_metrics(self, reader, mp: EnglishAuctionParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        return ea_metrics.compute(reader)

    def leaderboard(self, agents: pd.DataFrame, mp: EnglishAuctionParams, ratings, stats) -> pd.DataFrame:
        """TrueSkill by profit (:func:`rate_players`), mean profit per auction with its bootstrap
        interval, and the per-auction means of the error rates."""
        from marketarena.ratings import TrueSkillParams
        from marketarena.stats import bootstrap_mean_ci

        ts = TrueSkillParams(**ratings.trueskill.model_dump())
        board = rate_players(agents, ts, mp.rating_passes, ratings.n_boot, ratings.seed)
        board = board.rename(columns={"player": "name"})
        info = agents.groupby("name").agg(kind=("kind", "first"), strategy=("strategy", "first"),
                                          model=("model", "first"), role=("role", "first"),
                                          plan_mode=("plan_mode", "first"),
                                          episodes=("episode_id", "nunique"))
        ci = pd.DataFrame(
            [(name, *bootstrap_mean_ci(v.to_numpy(), n_boot=stats.n_boot, seed=stats.seed))
             for name, v in agents.groupby("name")["profit"]],
            columns=["name", "profit_mean", "profit_lo", "profit_hi"])
        rates = agents.groupby("name")[list(BOARD_RATES)].mean().reset_index()
        board = board.merge(info.reset_index(), on="name").merge(ci, on="name").merge(rates, on="name")
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
                cls = self.strategies[entry.strategy]
                out[entry.name] = cls.objective(cls.Params.model_validate(entry.params))
        return out

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: EnglishAuctionParams, instance: str) -> list[Path]:
        from marketarena.plots import english_auction as plots
        from marketarena.ratings import TrueSkillParams

        frames = read_metrics(metrics_dir, ("agents", "engagement", "bids", "spearman", "states", "plans"))
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")

        def rate(agents: pd.DataFrame) -> pd.DataFrame:  # a figure's cell: default TrueSkill
            return rate_players(agents, TrueSkillParams(), mp.rating_passes, FIGURE_BOOT, 0)

        return plots.draw_all(frames, board, Path(figures_dir), Path(tables_dir), instance,
                              mp.rating_passes, rate,
                              [ea_metrics.bip_label(lo, hi) for lo, hi in ea_metrics.BIP_RANGES],
                              self.objectives(mp))

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        states = result.tables["states"]
        last = states[states["step"] == states["step"].max()].set_index("agent_id")
        totals = last[["profit", "budget_left", "items_won"]]
        return per_agent_summary(table, totals, result.decisions, sort_by="profit")


PLUGIN = EnglishAuctionPlugin()
