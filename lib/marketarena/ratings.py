"""TrueSkill ratings for free-for-all games: the ``trueskill`` package as oracle, a numpy twin.

What is computed
----------------
A *game* is a free-for-all among individual players, given as a mapping ``player -> score``: a
higher score is a better rank, equal scores are a tie (equal ranks). Every player is a one-player
team. Ratings are those of the ``trueskill`` package (0.4.5) with its default (pure Python)
backend: ``TrueSkill(mu, sigma, beta, tau, draw_probability).rate(groups, ranks=...)``, game after
game. :class:`TrueSkillParams` defaults are design section 8's: mu 25, sigma 25/3, beta 25/6,
tau 25/300, draw probability 0, and ``min_delta`` 1e-4 (the package's ``DELTA``). They are the
fields of ``config.TrueSkillSettings`` plus ``min_delta``: ``TrueSkillParams(**s.model_dump())``.

- :func:`rate_sequential` is the oracle: the package itself, one game after another.
- :func:`rate_orders` is the fast implementation. It runs many independent *lanes*, lane ``l``
  rating the games in the order ``orders[l]`` (any index sequence, repeats allowed), in a compiled
  kernel (numba, :mod:`marketarena._trueskill_kernel`) with the lanes spread over threads.
- :func:`multipass` rates ``passes`` shuffled orders (rows of :func:`pass_orders`) and reports,
  per player, the median mu and sigma over passes and the 2.5 / 97.5 percentiles of mu (design
  7.2: 200 passes in shuffled order, median mu and sigma).
- :func:`bootstrap_ratings` reports mu and sigma from one pass in the given order, the 95%
  percentile interval of mu over bootstrap resamples of the games (:func:`bootstrap_orders`) and
  the rank interval :func:`rank_intervals` reads from it; :func:`bootstrap_intervals` gives the
  intervals alone (for boards whose mu comes from :func:`multipass`, which then call
  :func:`rank_intervals` on the merged board).

Equivalence with the package
----------------------------
:func:`rate_orders` replays ``TrueSkill.run_schedule`` for ``n`` one-player teams sorted by rank,
keeping each variable's value and each factor-to-variable message as the package does and doing
the same floating-point operations in the same order:

1. the prior (``sigma**2 + tau**2``), likelihood (``beta**2``) and team-sum factors send down;
2. on the chain of ``n - 1`` difference factors ``d_k = t_k - t_{k+1}``, each with a truncation
   factor (``v_win``/``w_win``; ``v_draw``/``w_draw`` where ``ranks[k] == ranks[k+1]``), up to 10
   sweeps: for two players ``down, trunc``; otherwise ``down, trunc, up(right)`` for k = 0..n-3
   and then ``down, trunc, up(left)`` for k = n-2..1. A sweep's delta is the largest variable change
   ``max(|d tau|, sqrt |d pi|)`` of its truncations; the loop stops when it is ``<= min_delta``;
3. ``up(0)`` on the first difference, ``up(1)`` on the last, then team sums and likelihoods up.

cdf and pdf are ports of the package's default backend (its erfc approximation, fractional error
~1e-7, not ``scipy.special.ndtr``), with ``exp`` and ``pow`` taken from the C library as Python
does (numpy's vectorised ``exp``/``power``, and a compiler's ``x * x`` for ``pow(x, 2.0)``, differ
in the last bit for some arguments). Between games a rating is kept as the ``(mu, sigma)`` the package stores, and
the results are read as ``Rating.mu``/``Rating.sigma`` read them. The outcome is bit-for-bit the
package's result (the tests check every lane against :func:`rate_sequential`, to 1e-9 and in
practice to 0). Bit-equality matters because of ties, below. Where the package raises
``FloatingPointError`` (``w_win`` outside (0, 1), a zero ``w_draw`` denominator) this module raises
it too, naming the step and lane. States with NaN/inf, which the package would not survive
meaningfully either, are not replicated.

Choices
-------
- Seats are ordered as the package orders them: by rank, best first, by a stable sort, so tied
  players keep the mapping's order. Ranks are dense ranks of the scores (the package only looks at
  their order and equality). Scores must be finite and a game needs at least two players.
- A draw probability of 0 does *not* give the package a zero draw margin: its ppf is an
  approximation, ``ppf(0.5) = 3.8e-8``, so the margin is ``2.2e-7`` (:func:`draw_margin`, ported
  in ``ratings_normal.py``). A tie is then rated as a draw inside a window that narrow, which is
  ill-conditioned: ``cdf(a) - cdf(b)`` cancels to ~1e-8 and ``w_draw`` lands slightly above 1, so
  a tie between two fresh players *raises* both sigmas (8.333 -> 9.588), and a one-ulp change
  anywhere upstream moves the result by ~1e-8. This module reproduces the package, warts
  included; it does not "fix" ties.
- :func:`pass_orders`: pass ``p`` is the ``p``-th ``rng.permutation(n_games)`` of
  ``numpy.random.default_rng(seed)``.
- Intervals are percentile intervals (numpy's default linear interpolation). In :func:`multipass`
  they show how much the order of the games matters (spread over passes); in
  :func:`bootstrap_ratings` they show sampling uncertainty: each resample draws ``n_games`` games
  with replacement, and those iid draws, taken in draw order, are already a uniformly random order
  of the resampled games. A player missing from a resample has no rating there (NaN) and the
  interval uses the resamples in which the player played.
- Frames have one row per player, sorted by mu (best first); ``games`` counts the player's games in
  the input.
- Speed: the package takes 3-4 ms per eight-seat game; the kernel about 15 us per game on one
  thread, and lanes run in parallel (200 passes over 90,000 games: minutes instead of a day). An
  earlier version vectorised across lanes with numpy; its cost was set by the number of numpy
  calls per game (tens of microseconds each), about ten times the kernel's. See
  ``benchmarks/bench_trueskill.py``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from marketarena.ratings_normal import draw_margin

__all__ = [
    "TrueSkillParams",
    "PreparedGames",
    "prepare_games",
    "rate_sequential",
    "rate_orders",
    "pass_orders",
    "bootstrap_orders",
    "multipass",
    "bootstrap_ratings",
    "bootstrap_intervals",
    "rank_intervals",
    "draw_margin",
]

Game = Mapping[Hashable, float]


#: TrueSkill's scale in BAZAAR's published table (seed 002): μ0 5, σ0 25/3, β 25/6, with τ near 0.
#: Multipass TrueSkill over BAZAAR's own logs on this scale puts its LLMs on the table's μ range
#: (4.2-7.4) in the table's order (``markets/double_auction/sources/bazaar.py``); the package's defaults
#: (μ0 25) or the table's numbers scaled by 1/5 do not.
BAZAAR_SCALE = {"mu": 5.0, "sigma": 25.0 / 3, "beta": 25.0 / 6}


class TrueSkillParams(BaseModel):
    """TrueSkill environment constants (the package's meaning, design section 8 defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mu: float = 25.0
    sigma: float = Field(default=25.0 / 3, gt=0)
    beta: float = Field(default=25.0 / 6, gt=0)
    tau: float = Field(default=25.0 / 300, ge=0)
    draw_probability: float = Field(default=0.0, ge=0, lt=1)
    min_delta: float = Field(default=1e-4, gt=0)

    def env(self):
        """The equivalent ``trueskill.TrueSkill`` environment (default backend)."""
        import trueskill

        return trueskill.TrueSkill(
            mu=self.mu,
            sigma=self.sigma,
            beta=self.beta,
            tau=self.tau,
            draw_probability=self.draw_probability,
        )


# --------------------------------------------------------------------------------------------
# Games
# --------------------------------------------------------------------------------------------


def _ranked(game: Game) -> tuple[list, list[int]]:
    """Players of one game in mapping order and their dense ranks (0 = best)."""
    if len(game) < 2:
        raise ValueError(f"a game needs at least two players, got {dict(game)!r}")
    names = list(game)
    scores = [float(game[name]) for name in names]
    if not all(math.isfinite(s) for s in scores):
        raise ValueError(f"scores must be finite, got {dict(game)!r}")
    levels = {s: r for r, s in enumerate(sorted(set(scores), reverse=True))}
    return names, [levels[s] for s in scores]


@dataclass(frozen=True)
class PreparedGames:
    """Games as arrays: seats sorted by rank (stable), padded with ``len(players)``."""

    players: list  # index -> name, in order of first appearance
    seats: np.ndarray  # (n_games, max_size) int, player index per seat, pad = len(players)
    sizes: np.ndarray  # (n_games,) int
    ties: np.ndarray  # (n_games, max_size - 1) bool: seat k tied with seat k + 1
    counts: np.ndarray  # (len(players),) games played

    @property
    def n_games(self) -> int:
        return len(self.sizes)


def prepare_games(games: Sequence[Game]) -> PreparedGames:
    if len(games) == 0:
        raise ValueError("no games to rate")
    index: dict = {}
    ranked = []
    for game in games:
        names, ranks = _ranked(game)
        ids = [index.setdefault(name, len(index)) for name in names]
        order = sorted(range(len(names)), key=ranks.__getitem__)  # stable, like the package
        ranked.append(([ids[i] for i in order], [ranks[i] for i in order]))
    n_players = len(index)
    width = max(len(ids) for ids, _ in ranked)
    seats = np.full((len(games), width), n_players, dtype=np.int64)
    ties = np.zeros((len(games), width - 1), dtype=bool)
    sizes = np.empty(len(games), dtype=np.int64)
    for g, (ids, ranks) in enumerate(ranked):
        seats[g, : len(ids)] = ids
        sizes[g] = len(ids)
        ties[g, : len(ids) - 1] = np.asarray(ranks[:-1]) == np.asarray(ranks[1:])
    counts = np.bincount(seats[seats < n_players], minlength=n_players)
    return PreparedGames(list(index), seats, sizes, ties, counts)


# --------------------------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------------------------


def rate_sequential(
    games: Sequence[Game],
    params: TrueSkillParams | None = None,
    order: Sequence[int] | None = None,
    initial: Mapping[Hashable, tuple[float, float]] | None = None,
) -> dict[Hashable, tuple[float, float]]:
    """Rate ``games`` one by one with the ``trueskill`` package, in ``order`` (default: as given).

    ``initial`` gives starting ``(mu, sigma)`` for some players (others start at the prior).
    Returns ``{player: (mu, sigma)}`` for every player of the games that were rated.
    """
    params = params or TrueSkillParams()
    env = params.env()
    # Python floats: a numpy float would take numpy's pow in Rating(), not the C library's
    start = {n: env.create_rating(float(m), float(s)) for n, (m, s) in (initial or {}).items()}
    ratings: dict = {}

    def current(name):
        if name in ratings:
            return ratings[name]
        return start[name] if name in start else env.create_rating()

    for g in range(len(games)) if order is None else order:
        names, ranks = _ranked(games[int(g)])
        groups = [(current(name),) for name in names]
        rated = env.rate(groups, ranks=ranks, min_delta=params.min_delta)
        for name, (rating,) in zip(names, rated):
            ratings[name] = rating
    return {name: (r.mu, r.sigma) for name, r in ratings.items()}


# --------------------------------------------------------------------------------------------
# The fast implementation
# --------------------------------------------------------------------------------------------


def rate_orders(
    games: Sequence[Game] | PreparedGames,
    orders: np.ndarray,
    params: TrueSkillParams | None = None,
    initial: Mapping[Hashable, tuple[float, float]] | None = None,
) -> tuple[list, np.ndarray, np.ndarray]:
    """Rate the games in every row of ``orders`` (lanes x steps game indices), all lanes at once.

    ``initial`` gives starting ``(mu, sigma)`` for some players (others start at the prior).

    Lane ``l`` gives what ``rate_sequential(games, params, orders[l])`` gives, bit for bit (the
    compiled kernel, :mod:`marketarena._trueskill_kernel`, calls the C library's ``exp`` and
    ``pow`` as Python does). Lanes run in parallel threads. Returns ``(players, mu,
    sigma)``, players in order of first appearance, ``mu``/``sigma`` of shape (lanes, players); a
    player who never played in a lane has NaN there.
    """
    params = params or TrueSkillParams()
    prep = games if isinstance(games, PreparedGames) else prepare_games(games)
    orders = np.atleast_2d(np.asarray(orders))
    if orders.ndim != 2 or not np.issubdtype(orders.dtype, np.integer):
        raise ValueError("orders must be a (lanes, steps) array of game indices")
    if orders.size and (orders.min() < 0 or orders.max() >= prep.n_games):
        raise ValueError(f"game indices must lie in [0, {prep.n_games})")
    P = len(prep.players)
    # NaN until a player's first game (which uses the prior)
    mu = np.full((orders.shape[0], P), np.nan)
    sg = np.full((orders.shape[0], P), np.nan)
    index = {name: j for j, name in enumerate(prep.players)}
    for name, (m0, s0) in (initial or {}).items():
        m0, s0 = float(m0), float(s0)
        if not (s0 > 0 and math.isfinite(m0 + s0)):
            raise ValueError(f"initial rating of {name!r} needs a finite mu and sigma > 0")
        if name in index:
            mu[:, index[name]], sg[:, index[name]] = m0, s0
    with np.errstate(all="ignore"):
        pi = _run_kernel(prep, orders, params, mu, sg)
        return prep.players, (pi * mu) / pi, np.sqrt(1 / pi)


def _run_kernel(prep: PreparedGames, orders: np.ndarray, params: TrueSkillParams, mu, sg):
    """Rate every lane in place in ``mu``/``sg`` (lanes x players); returns ``pi = sg ** -2`` with
    the C library's pow, through which the package's Rating objects report mu and sigma."""
    from marketarena import _trueskill_kernel as kernel  # numba loads only when ratings run

    err = np.zeros((orders.shape[0], 3), dtype=np.int64)
    kernel.rate_lanes(
        np.ascontiguousarray(orders, dtype=np.int64),
        prep.seats,
        prep.sizes,
        prep.ties,
        mu,
        sg,
        float(params.mu),
        float(params.sigma),
        float(params.tau) ** 2,
        float(params.beta) ** 2,
        draw_margin(params.draw_probability, params.beta),
        float(params.min_delta),
        err,
    )
    failed = np.flatnonzero(err[:, 0])
    if failed.size:
        lane = int(failed[0])
        code, step, k = (int(v) for v in err[lane])
        what = "w_win outside (0, 1)" if code == kernel.ERR_W_WIN else "w_draw denominator is 0"
        raise FloatingPointError(
            f"{what} in lane {lane}, step {step} (game {int(orders[lane, step])}), seat pair {k}; "
            "the trueskill package raises here too (it suggests its mpmath backend)"
        )
    return kernel.pow_array(sg, -2.0)


def pass_orders(n_games: int, passes: int = 200, seed=0) -> np.ndarray:
    """(passes, n_games): pass p is the p-th ``permutation(n_games)`` of ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    orders = np.empty((passes, n_games), dtype=np.int32)
    for p in range(passes):
        orders[p] = rng.permutation(n_games)
    return orders


def bootstrap_orders(n_games: int, n_boot: int = 200, seed=0) -> np.ndarray:
    """(n_boot, n_games) iid game indices: resamples with replacement, each in its own order."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_games, size=(n_boot, n_games), dtype=np.int32)


def _frame(players, mu, sigma, lo, hi, counts) -> pd.DataFrame:
    frame = pd.DataFrame(
        {"player": players, "mu": mu, "sigma": sigma, "mu_lo": lo, "mu_hi": hi, "games": counts}
    )
    return frame.sort_values("mu", ascending=False, kind="stable").reset_index(drop=True)


def multipass(
    games: Sequence[Game],
    params: TrueSkillParams | None = None,
    passes: int = 200,
    seed=0,
) -> pd.DataFrame:
    """Median mu and sigma over ``passes`` shuffled passes, and the 2.5-97.5% range of mu.

    Columns: player, mu, sigma, mu_lo, mu_hi, games. Deterministic in ``seed``.
    """
    if passes < 1:
        raise ValueError("passes must be >= 1")
    prep = prepare_games(games)
    players, mu, sigma = rate_orders(prep, pass_orders(prep.n_games, passes, seed), params)
    lo, hi = np.percentile(mu, [2.5, 97.5], axis=0)
    return _frame(players, np.median(mu, axis=0), np.median(sigma, axis=0), lo, hi, prep.counts)


def bootstrap_ratings(
    games: Sequence[Game],
    params: TrueSkillParams | None = None,
    n_boot: int = 200,
    seed=0,
) -> pd.DataFrame:
    """mu and sigma from one pass in the given order; 95% bootstrap percentile intervals of mu and
    of the rank.

    Columns: player, mu, sigma, mu_lo, mu_hi, games, rank_lo, rank_hi. The given-order pass runs as
    one more lane beside the ``n_boot`` resamples. Deterministic in ``seed``.
    """
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    prep = prepare_games(games)
    orders = np.vstack(
        [np.arange(prep.n_games, dtype=np.int32), bootstrap_orders(prep.n_games, n_boot, seed)]
    )
    players, mu, sigma = rate_orders(prep, orders, params)
    board = pd.DataFrame({"player": players, "mu": mu[0], "sigma": sigma[0], "games": prep.counts})
    board = rank_intervals(board.merge(_intervals(players, mu[1:]), on="player"))
    board = board[["player", "mu", "sigma", "mu_lo", "mu_hi", "games", "rank_lo", "rank_hi"]]
    return board.sort_values("mu", ascending=False, kind="stable").reset_index(drop=True)


def bootstrap_intervals(
    games: Sequence[Game],
    params: TrueSkillParams | None = None,
    n_boot: int = 100,
    seed=0,
    passes: int = 10,
) -> pd.DataFrame:
    """95% bootstrap percentile intervals of the multi-pass mu and of the rank: each of ``n_boot``
    resamples draws the games with replacement and is rated in ``passes`` shuffled orders, its mu
    the median over them (as :func:`multipass` rates the data). Columns player, mu_lo, mu_hi,
    rank_lo, rank_hi. Deterministic in ``seed``.

    TrueSkill is an online filter, so a rating also depends on the order of the games; the median
    over a resample's passes averages most of that out, and what is left (the order noise of a
    ``passes``-pass median) sets a floor under the width: the intervals shrink as games are added
    until they reach it (``tests/test_ratings.py`` measures both)."""
    if n_boot < 1 or passes < 1:
        raise ValueError("n_boot and passes must be >= 1")
    prep = prepare_games(games)
    rng = np.random.default_rng(seed)
    medians = []
    for start in range(0, n_boot, 16):  # 16 resamples at a time bound the memory of the orders
        block = []
        for _ in range(min(16, n_boot - start)):
            resample = rng.integers(0, prep.n_games, size=prep.n_games, dtype=np.int32)
            block.extend(rng.permutation(resample) for _ in range(passes))
        players, mu, _ = rate_orders(prep, np.asarray(block, dtype=np.int32), params)
        with warnings.catch_warnings():  # a player absent from a resample: NaN, left out below
            warnings.simplefilter("ignore", RuntimeWarning)
            medians.append(np.nanmedian(mu.reshape(-1, passes, mu.shape[1]), axis=1))
    return _intervals(players, np.vstack(medians))


#: the μ interval's half-widths are stretched by this before a rank is read from them
#: (:func:`rank_intervals`): calibrated against a known truth (docs/cost.md "Judged against a
#: known truth"), about the normal 98% interval's width from the 95% one (z 2.33 / 1.96)
RANK_SPREAD = 1.2


def rank_intervals(board: pd.DataFrame, spread: float | None = None) -> pd.DataFrame:
    """``board`` (``mu``, ``mu_lo``, ``mu_hi`` per player) with its 95% rank intervals read from
    each player's μ interval, its half-widths stretched by ``spread`` (default
    :data:`RANK_SPREAD`), against the others' point μ: ``rank_lo`` is one plus the number of
    others whose μ is above the stretched ``mu_hi``, ``rank_hi`` one plus those above the
    stretched ``mu_lo``. What every board prints.

    Judged against known skills (``benchmarks/bench_known_truth.py``, docs/cost.md "Judged
    against a known truth"), the percentiles of each resample's ranks (:func:`_intervals`'
    ``rank_lo``/``rank_hi``, the boards' interval before) covered the true rank 93.6% of the time
    at BAZAAR's density and 90.0% at a quarter of it, a resample moving every other player too;
    read from the μ interval they covered 97.0% and 92.8%, the others' μ being estimates too;
    stretched by 1.2, 97.9% and 96.3%, for 3.3 and 4.3 more ranks of width. A player without a μ
    interval (NaN) keeps NaN."""
    spread = RANK_SPREAD if spread is None else spread
    mu = board["mu"].to_numpy(dtype=float)

    def rank_above(x: np.ndarray) -> np.ndarray:
        above = (mu[None, :] > x[:, None]).sum(axis=1) - (mu > x)  # the player's own μ left out
        return np.where(np.isnan(x), np.nan, 1.0 + above)

    lo, hi = board["mu_lo"].to_numpy(dtype=float), board["mu_hi"].to_numpy(dtype=float)
    if spread != 1:
        lo, hi = mu - spread * (mu - lo), mu + spread * (hi - mu)
    return board.assign(rank_lo=rank_above(hi), rank_hi=rank_above(lo))


def lane_ranks(mu: np.ndarray) -> np.ndarray:
    """Each player's rank (1 = the highest mu) in each lane of ``mu`` (lanes x players): one
    plus the players above it; a NaN is above nobody (its own rank is meaningless)."""
    return 1 + (mu[:, None, :] > mu[:, :, None]).sum(axis=2)


def _intervals(players: list, mu: np.ndarray) -> pd.DataFrame:
    """2.5 / 97.5 percentiles of each player's mu and rank (1 = highest mu) over the lanes of
    ``mu`` (lanes x players; a player absent from a lane, NaN there, is left out of that lane)."""
    rank = lane_ranks(mu).astype(float)
    rank[np.isnan(mu)] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mu_lo, mu_hi = np.nanpercentile(mu, [2.5, 97.5], axis=0)
        rank_lo, rank_hi = np.nanpercentile(rank, [2.5, 97.5], axis=0)
    return pd.DataFrame(
        {
            "player": players,
            "mu_lo": mu_lo,
            "mu_hi": mu_hi,
            "rank_lo": np.floor(rank_lo),
            "rank_hi": np.ceil(rank_hi),
        }
    )


# ------------------------------------------------------------------------------------------------
# leaderboards (the ratings stage)


def player_games(
    agents: pd.DataFrame, score: str, seat_score: str = "sum"
) -> list[dict[str, float]]:
    """One free-for-all game per episode (in id order): player (roster name) -> score, a player's
    seats combined by ``seat_score`` ("sum" or "mean"), so a player with several seats counts once;
    players in the order of their first seat (agent id)."""
    ordered = agents.sort_values(["episode_id", "agent_id"], kind="stable")
    per_player = (
        ordered.groupby(["episode_id", "name"], sort=False)[score].agg(seat_score).reset_index()
    )  # episodes in id order, players in seat order (ties keep it)
    episodes = per_player["episode_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, episodes[1:] != episodes[:-1]]) if len(episodes) else []
    names = per_player["name"].tolist()
    scores = per_player[score].astype(float).tolist()
    ends = [*starts[1:], len(names)]
    return [dict(zip(names[a:b], scores[a:b])) for a, b in zip(starts, ends)]


def leaderboard(
    agents: pd.DataFrame, score: str, ratings, stats, seat_score: str = "sum"
) -> pd.DataFrame:
    """The generic board of a market instance: TrueSkill by player (one free-for-all per episode
    ranked by ``score``; 95% interval of mu over bootstrap resamples of the episodes), the mean
    score per episode with its bootstrap interval, seats and episodes played.

    An episode with a single player is no game (nobody to beat); players that never meet another
    are not rated (NaN mu and sigma) and are ranked after the rated ones by their mean score.
    ``ratings`` / ``stats`` are the params sections of the same names."""
    from marketarena.stats import bootstrap_mean_ci

    ts = TrueSkillParams(**ratings.trueskill.model_dump())
    games = [g for g in player_games(agents, score, seat_score) if len(g) >= 2]
    columns = ["name", "mu", "sigma", "mu_lo", "mu_hi", "games"]
    board = (
        bootstrap_ratings(games, ts, n_boot=ratings.n_boot, seed=ratings.seed).rename(
            columns={"player": "name"}
        )
        if games
        else pd.DataFrame(columns=columns)
    )
    unrated = sorted(set(agents["name"]) - set(board["name"]))
    if unrated:
        board = pd.concat([board, pd.DataFrame({"name": unrated, "games": 0})], ignore_index=True)
    info = agents.groupby("name").agg(
        kind=("kind", "first"),
        strategy=("strategy", "first"),
        model=("model", "first"),
        episodes=("episode_id", "nunique"),
        seats=("agent_id", "size"),
    )
    per_episode = agents.groupby(["name", "episode_id"])[score].agg(seat_score).groupby("name")
    ci = pd.DataFrame(
        [
            (name, *bootstrap_mean_ci(v.to_numpy(), n_boot=stats.n_boot, seed=stats.seed))
            for name, v in per_episode
        ],
        columns=["name", f"{score}_mean", f"{score}_lo", f"{score}_hi"],
    )
    board = board.merge(info.reset_index(), on="name").merge(ci, on="name")
    board["conservative"] = board["mu"] - 3 * board["sigma"]
    board = board.sort_values(
        ["mu", f"{score}_mean"], ascending=False, kind="stable", na_position="last"
    ).reset_index(drop=True)
    board.insert(0, "rank", range(1, len(board) + 1))
    return board


#: the columns a board counts a player's games in, the first it has (lemon's buyers: episodes,
#: not the TrueSkill games of kinds that never meet)
GAMES_COLUMNS = ("episodes", "games", "runs")


def with_provisional(
    board: pd.DataFrame, min_games: int, max_rank_width: int | None
) -> pd.DataFrame:
    """``board`` with ``provisional`` (bool): a player with fewer than ``min_games`` games (its
    first column of :data:`GAMES_COLUMNS`) or, where the board has a 95% rank interval
    (``rank_lo``, ``rank_hi``) and ``max_rank_width`` is set, one whose interval spans more ranks
    than that. As arenas do, the provisional players are ranked apart: after every settled player
    of their side (a board's ``role``), each group in the board's order, ``rank`` renumbered
    (1 = the best settled player). A board without a games column keeps every player settled."""
    games = next((c for c in GAMES_COLUMNS if c in board.columns), None)
    short = np.zeros(len(board), bool)
    if games is not None:
        short |= pd.to_numeric(board[games], errors="coerce").fillna(0).to_numpy() < min_games
    if max_rank_width is not None and {"rank_lo", "rank_hi"} <= set(board.columns):
        width = (board["rank_hi"] - board["rank_lo"] + 1).to_numpy(dtype=float)
        short |= width > max_rank_width
    board = board.assign(provisional=short)
    if not short.any():
        return board
    side = board["role"] if "role" in board.columns else pd.Series("", index=board.index)
    order = pd.DataFrame({"side": pd.factorize(side)[0], "p": short, "at": np.arange(len(board))})
    board = board.iloc[order.sort_values(["side", "p", "at"]).index].reset_index(drop=True)
    side = board["role"] if "role" in board.columns else pd.Series("", index=board.index)
    board["rank"] = board.groupby(side.to_numpy(), sort=False).cumcount() + 1
    return board
