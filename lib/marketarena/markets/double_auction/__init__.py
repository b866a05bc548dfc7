"""double_auction: BAZAAR's repeated call market with a baseline zoo, CSα and multi-pass TrueSkill.

Rules: ``market.py`` (state machine) and ``rules.py`` (pure functions); what traders see and answer:
``observations.py`` + ``templates/``; scripted traders: ``baselines/__init__.py``; the CSα reference:
``reference.py``; metrics: ``metrics.py``; figures: ``marketarena.plots.double_auction``. This
module wires them into the generic pipeline (:class:`~marketarena.core.registry.MarketPlugin`).

Tournament (``params.py``): pool game ``r`` (``ep-<r>``) is one game of ``distributions[r mod D]``;
its 8 seats are drawn from the pool without replacement with
``default_rng(SeedSequence([seed, r, 7]))``, the first ``n_buyers`` drawn buy (``B1..``), the others
sell (``S1..``). Entrant ``X``'s game ``k`` (``x-<X>-<k>``) is a game of ``distributions[k mod D]``
with ``X`` in a drawn seat and the pool in the others (``schedule.py``). The CSα reference
table is read by the metrics only, so it is not an input of the simulation.

Leaderboard (:func:`leaderboard`): one free-for-all TrueSkill game per episode, seats ranked by CSα
(equal CSα = tie), ``rating_passes`` (200) passes in shuffled order (``ratings.multipass``, seed
``ratings.seed``), median μ and σ per trader in the environment of :func:`rating_env` (τ =
``rating_tau``, 0.001 by default, so σ reflects the games played); 95% bootstrap intervals over
games of μ and of the rank (``rating_boot`` resamples, each rated in ``rating_boot_passes``
shuffled passes: ``ratings.bootstrap_intervals``), games played, mean CSα (95% bootstrap interval
over seats), mean surplus, trade frequency, offset and game efficiency, baselines marked. The
figures stage adds the calibration against the seed's table and BAZAAR's published games
(``calibration.py``): the Spearman of μ with the table, every baseline's shade by round and fill
rate beside its logged namesake's, and efficiency per distribution.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.plugin import EpisodeSpec, MarketPlugin, Seat
from marketarena.core.summary import per_agent_summary
from marketarena.markets.double_auction import metrics as da_metrics
from marketarena.markets.double_auction.baselines import STRATEGIES
from marketarena.markets.double_auction.bazaar import bazaar_pool
from marketarena.markets.double_auction.market import DoubleAuctionMarket
from marketarena.markets.double_auction.observations import render_messages
from marketarena.markets.double_auction.params import DoubleAuctionParams
from marketarena.markets.double_auction.reference import compute_reference
from marketarena.markets.double_auction.schedule import (
    entrant_episode_id,
    entrant_game,
    entrant_lineup,
    lineup,
    seats_of,
)


def rating_env(mp: DoubleAuctionParams, ratings):
    """The TrueSkill environment of the board: the ratings section's, on the seed's scale when
    ``rating_scale: bazaar`` (``ratings.BAZAAR_SCALE``: μ0 5, σ0 25/3, β 25/6), with τ =
    ``rating_tau`` when set."""
    from marketarena.ratings import BAZAAR_SCALE, TrueSkillParams

    env = ratings.trueskill.model_dump()
    if mp.rating_scale == "bazaar":
        env.update(BAZAAR_SCALE)
    if mp.rating_tau is not None:
        env["tau"] = mp.rating_tau
    return TrueSkillParams(**env)


class DoubleAuctionPlugin(MarketPlugin):
    kind = "double_auction"
    params_model = DoubleAuctionParams
    strategies = STRATEGIES
    rank_by = "csa"
    metric_columns = da_metrics.AGENT_METRICS
    source_formats = ("bazaar",)
    #: BAZAAR's games were played against its 29 baselines: an imported instance without a roster
    #: gets them, the pool its CSα reference plays against (truthful self-play never meets some
    #: of the values BAZAAR's sellers held)
    source_params = {"bazaar": {"roster": [e.model_dump(mode="json", exclude_defaults=True)
                                           for e in bazaar_pool()]}}

    def seats(self, mp: DoubleAuctionParams, run: int) -> list[Seat]:
        return list(seats_of(mp, [mp.roster[i] for i in lineup(mp, run)]))

    def seat_matrix(self, mp: DoubleAuctionParams) -> tuple[np.ndarray, list[str]]:
        """The plan's seats without planning it: the pool games' lineups drawn in bulk, bit for
        bit as :func:`~.schedule.lineup` draws each (``core/draws.py``), then the entrants'."""
        from marketarena.core.draws import first_of_permutations

        pool = np.asarray(mp.pool_indices())
        games = [pool[first_of_permutations([mp.seed], np.arange(mp.runs), 7, len(pool), mp.seats)]]
        games += [np.array([entrant_lineup(mp.seats, list(pool), i, mp.roster[i].name, mp.seed, k)
                            for k in range(mp.entrant_games)]) for i in mp.entrant_indices()]
        return np.vstack(games), ["buyer"] * mp.n_buyers + ["seller"] * mp.n_sellers

    def seating_hint(self, mp: DoubleAuctionParams, entry) -> str:
        return (f"raise markets.{mp.instance}.games_per_distribution (each pool game draws "
                f"{mp.seats} of the {len(mp.pool_indices())} pool traders), or "
                f"entrant_games for an entrant")

    def episode(self, mp: DoubleAuctionParams, run: int) -> EpisodeSpec:
        """Pool game ``run``."""
        e = super().episode(mp, run)
        return EpisodeSpec(e.episode_id, run, e.seed, e.seats,
                           (("distribution", mp.distribution_of(run)),))

    def entrant_episode(self, mp: DoubleAuctionParams, entrant: int, k: int) -> EpisodeSpec:
        """Game ``k`` of the entrant at roster index ``entrant``; ``run`` = k (the LLM sample)."""
        return entrant_game(mp, mp.roster, mp.pool_indices(), entrant, mp.seed, k,
                            entrant_episode_id(mp.roster[entrant].name, k))

    def plan(self, mp: DoubleAuctionParams) -> list[EpisodeSpec]:
        """The pool games, then each entrant's games (roster order)."""
        return super().plan(mp) + [self.entrant_episode(mp, i, k) for i in mp.entrant_indices()
                                   for k in range(mp.entrant_games)]

    def stop_players(self, mp: DoubleAuctionParams) -> dict[str, list[str]]:
        """Each LLM entrant's games, in order (the stopping rule: ``stopping.py``)."""
        return {mp.roster[i].name: [entrant_episode_id(mp.roster[i].name, k)
                                    for k in range(mp.entrant_games)]
                for i in mp.entrant_indices() if mp.roster[i].kind == "llm"}

    def stop_rating(self, mp: DoubleAuctionParams) -> dict[str, float]:
        """The board's environment (:func:`rating_env`) with the ratings section's defaults."""
        from marketarena.config import RatingsParams

        return rating_env(mp, RatingsParams()).model_dump()

    def build_market(self, mp: DoubleAuctionParams, resources, episode) -> DoubleAuctionMarket:
        return DoubleAuctionMarket(mp, episode.get("distribution"))

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)

    def import_source(self, mp: DoubleAuctionParams, source: Path, out: Path) -> dict:
        """BAZAAR's published games (``bazaar.py``): every ``*.jsonl`` under ``source``, each in
        the instance's setting (rounds, seats, one of its distributions), as episodes
        ``bz-<k>`` in shards of ``shard_episodes``."""
        from marketarena.markets.double_auction import bazaar

        games = bazaar.read_games(source)
        for game, path in zip(games, bazaar.log_files(source)):
            bazaar.check_setting(game, path, mp.rounds, mp.n_buyers, mp.n_sellers,
                                 mp.distributions)
        bazaar.import_games(games, out, mp.shard_episodes)
        return bazaar.import_report(games)

    def compute_reference(self, mp: DoubleAuctionParams, out_dir: Path, workers: int = 1) -> dict:
        return compute_reference(mp, out_dir, workers)

    def compute_metrics(self, reader, mp: DoubleAuctionParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        return da_metrics.compute(reader, mp, data_dir)

    def leaderboard(self, agents: pd.DataFrame, mp: DoubleAuctionParams, ratings, stats) -> pd.DataFrame:
        """Multi-pass TrueSkill by CSα with bootstrap intervals (see module docstring)."""
        from marketarena.ratings import bootstrap_intervals, multipass, player_games
        from marketarena.stats import bootstrap_mean_ci

        ts = rating_env(mp, ratings)
        games = player_games(agents, "csa")
        try:
            board = multipass(games, ts, passes=mp.rating_passes, seed=ratings.seed)
            board = board.drop(columns=["mu_lo", "mu_hi"])  # spread over passes: order, not sampling
            if mp.rating_boot:
                board = board.merge(bootstrap_intervals(games, ts, mp.rating_boot, ratings.seed,
                                                        mp.rating_boot_passes), on="player")
        except FloatingPointError as exc:
            raise FloatingPointError(
                f"markets.{mp.instance}.rating_tau = {ts.tau}: {exc}. With τ at or near 0, σ "
                "collapses over many games until one upset breaks the update; raise rating_tau "
                "(0.001 keeps σ reflecting the games)") from None
        board = board.rename(columns={"player": "name"})
        extra = {}
        if "csa_source" in agents:  # imported games: whose CSα rated the player's games
            extra["csa_source"] = ("csa_source", lambda s: "+".join(sorted(set(s))))
        for col in ("messages_sent", "messages_private", "messages_to_rivals"):  # a chat
            if col in agents:
                extra[f"{col}_mean"] = (col, "mean")
        info = agents.groupby("name").agg(
            kind=("kind", "first"), strategy=("strategy", "first"), model=("model", "first"),
            csa_mean=("csa", "mean"), surplus_mean=("surplus", "mean"),
            trade_freq=("trade_freq", "mean"), mean_offset=("mean_offset", "mean"),
            game_efficiency=("game_efficiency", "mean"), **extra)
        ci = pd.DataFrame(
            [(name, *bootstrap_mean_ci(v.to_numpy(), n_boot=stats.n_boot, seed=stats.seed)[1:])
             for name, v in agents.groupby("name")["csa"]], columns=["name", "csa_lo", "csa_hi"])
        board = board.merge(info.reset_index(), on="name").merge(ci, on="name")
        board["baseline"] = board["kind"] == "baseline"
        board["conservative"] = board["mu"] - 3 * board["sigma"]
        board = board.sort_values("mu", ascending=False, kind="stable").reset_index(drop=True)
        board.insert(0, "rank", range(1, len(board) + 1))
        return board

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: DoubleAuctionParams, instance: str) -> list[Path]:
        from marketarena.markets.double_auction import calibration as cal  # scipy.stats: 0.8 s
        from marketarena.plots import double_auction as plots
        from marketarena.plots.tables import write_frame

        agents = pd.read_parquet(Path(metrics_dir) / "agents.parquet")
        rounds = pd.read_parquet(Path(metrics_dir) / "agent_rounds.parquet")
        market = pd.read_parquet(Path(metrics_dir) / "market.parquet")
        # the instance's leaderboard (ratings stage): reports/leaderboards/<instance>.csv
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        out = plots.draw_all(board, agents, rounds, Path(figures_dir), market)
        cols = ["rank", "name", "mu", "sigma", "mu_lo", "mu_hi", "rank_lo", "rank_hi", "games",
                "csa_mean", "trade_freq", "mean_offset", "game_efficiency"]
        shown = board[[c for c in cols if c in board.columns]].copy()
        shown["name"] = shown["name"] + np.where(board["baseline"], " (baseline)", "")
        out += list(write_frame(shown, Path(tables_dir) / f"{instance}_leaderboard"))
        summary, side = cal.calibration(board)
        behaviour = cal.behaviour(agents, rounds)
        caption = ("Calibration against BAZAAR's table (seed 002): Spearman ρ of the matched "
                   "baselines' μ and mean CSα with the seed's, 95% bootstrap interval over "
                   "baselines; baselines within the bounds of BAZAAR's logged behaviour")
        if len(behaviour):
            summary = pd.concat([summary, pd.DataFrame([{
                "statistic": "within bounds (shade ±2 per bucket, fill ±0.05)",
                "spearman": np.nan, "baselines": int(behaviour["within"].sum()),
                "of": len(behaviour), "within_raw": int(behaviour["within_raw"].sum())}])],
                ignore_index=True)
        tables = Path(tables_dir)
        out += list(write_frame(summary, tables / f"{instance}_calibration", caption))
        out += list(write_frame(side, tables / f"{instance}_calibration_baselines",
                                "Matched baselines, ours beside the seed's (rank among them)"))
        out += list(write_frame(behaviour, tables / f"{instance}_calibration_behaviour",
                                "Baselines against BAZAAR's published games: mean shade by round "
                                "bucket (ours, bz_ BAZAAR's), trade frequency, fill rate when "
                                "intra-marginal; within = every bucket within 2 and fill within "
                                "0.05 of BAZAAR's at our intra-marginal share (fq_target)"))
        out += list(write_frame(cal.efficiency(market), tables / f"{instance}_calibration_efficiency",
                                "Mean market efficiency per value distribution, ours and BAZAAR's "
                                "published games"))
        out.append(plots.calibration_shade(cal.shade_by_round(rounds), behaviour,
                                           Path(figures_dir) / "calibration_shade.png"))
        return out

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        """Per-seat totals of one played game, highest surplus first (``marketarena play``)."""
        states = result.tables["states"]
        seats = result.tables["seats"]
        totals = states.groupby("agent_id").agg(surplus=("payoff", "sum"), trades=("traded", "sum"),
                                                quoted=("quote", lambda q: int((q >= 0).sum())))
        totals = seats.set_index("agent_id")[["role", "value"]].join(totals)
        return per_agent_summary(table, totals, result.decisions, sort_by="surplus")


PLUGIN = DoubleAuctionPlugin()
