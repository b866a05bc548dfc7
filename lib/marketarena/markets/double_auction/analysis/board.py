"""double_auction's board: multi-pass TrueSkill by CSα with bootstrap intervals.

One free-for-all TrueSkill game per episode, seats ranked by CSα (equal CSα = tie),
``rating_passes`` (200) passes in shuffled order (``ratings.multipass``, seed ``ratings.seed``),
median μ and σ per trader in the environment of :func:`rating_env` (τ = ``rating_tau``, 0.001 by
default, so σ reflects the games played); the 95% bootstrap interval over games of μ
(``rating_boot`` resamples, each rated in ``rating_boot_passes`` shuffled passes:
``ratings.bootstrap_intervals``) and the rank interval read from it against the others' μ
(``ratings.rank_intervals``: it covers the true rank, judged against known skills), games played, mean CSα (95% bootstrap interval over seats), mean
surplus, trade frequency, offset and game efficiency, baselines marked. An imported instance's
board adds columns of its own (``double_auction/sources/analysis.py``: whose CSα rated each
trader's games, its chat).
"""

from __future__ import annotations

import pandas as pd

from marketarena.markets.double_auction.params import DoubleAuctionParams


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


def leaderboard(
    agents: pd.DataFrame,
    mp: DoubleAuctionParams,
    ratings,
    stats,
    extra: dict[str, tuple] | None = None,
) -> pd.DataFrame:
    """The board of the module docstring from the metrics' ``agents``; ``extra``: more per-trader
    columns, as named aggregations of ``agents`` (column -> (source column, function)), placed
    after ``game_efficiency``."""
    from marketarena.ratings import bootstrap_intervals, multipass, player_games, rank_intervals
    from marketarena.stats import bootstrap_mean_ci

    ts = rating_env(mp, ratings)
    games = player_games(agents, "csa")
    try:
        board = multipass(games, ts, passes=mp.rating_passes, seed=ratings.seed)
        board = board.drop(columns=["mu_lo", "mu_hi"])  # spread over passes: order, not sampling
        if mp.rating_boot:
            board = rank_intervals(
                board.merge(
                    bootstrap_intervals(
                        games, ts, mp.rating_boot, ratings.seed, mp.rating_boot_passes
                    ),
                    on="player",
                )
            )
    except FloatingPointError as exc:
        raise FloatingPointError(
            f"markets.{mp.instance}.rating_tau = {ts.tau}: {exc}. With τ at or near 0, σ "
            "collapses over many games until one upset breaks the update; raise rating_tau "
            "(0.001 keeps σ reflecting the games)"
        ) from None
    board = board.rename(columns={"player": "name"})
    info = agents.groupby("name").agg(
        kind=("kind", "first"),
        strategy=("strategy", "first"),
        model=("model", "first"),
        csa_mean=("csa", "mean"),
        surplus_mean=("surplus", "mean"),
        trade_freq=("trade_freq", "mean"),
        mean_offset=("mean_offset", "mean"),
        game_efficiency=("game_efficiency", "mean"),
        **(extra or {}),
    )
    ci = pd.DataFrame(
        [
            (name, *bootstrap_mean_ci(v.to_numpy(), n_boot=stats.n_boot, seed=stats.seed)[1:])
            for name, v in agents.groupby("name")["csa"]
        ],
        columns=["name", "csa_lo", "csa_hi"],
    )
    board = board.merge(info.reset_index(), on="name").merge(ci, on="name")
    board["baseline"] = board["kind"] == "baseline"
    board["conservative"] = board["mu"] - 3 * board["sigma"]
    board = board.sort_values("mu", ascending=False, kind="stable").reset_index(drop=True)
    board.insert(0, "rank", range(1, len(board) + 1))
    return board
