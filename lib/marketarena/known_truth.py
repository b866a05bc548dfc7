"""Rating intervals judged against a known truth: fields whose true skills are known, games played
from TrueSkill's own generative model, and the coverage of the intervals a board prints.

A *field* (:class:`TrueField`) is a list of players with true skills and the compositions of its
games (which players sit in which game; a game of ``k`` seats is a ``k``-player free-for-all).
:func:`play` plays every game once from the truth as TrueSkill models a game: each seat's
performance ~ N(true skill, β²), the seats ranked by performance (continuous draws: no ties).
Everything is seeded through ``numpy.random.default_rng``.

Methods of intervals, each a frame with one row per player (player, mu, mu_lo, mu_hi, rank_lo,
rank_hi, games):

- ``board``: double_auction's board (``markets/double_auction/analysis/board.py``), reused, not
  re-derived: ``ratings.multipass`` for μ (median over ``passes`` shuffled passes),
  ``ratings.bootstrap_intervals`` for the 95% interval of μ (``n_boot`` resamples of the games,
  each rated in ``boot_passes`` shuffled passes) and ``ratings.rank_intervals`` for the rank
  interval read from it, stretched by ``ratings.RANK_SPREAD``, against the *others' point* μ
  (rank_lo the rank of the stretched mu_hi, rank_hi that of mu_lo), as every board now does;
- ``board_unstretched``: the same read from the μ interval as it is (spread 1);
- ``rank_percentiles``: the boards' rank interval before this benchmark (the 2.5-97.5
  percentiles of the player's rank in each resample, where every other player moves too:
  :func:`bootstrap_board`'s own rank columns);
- :func:`point_intervals`: zero-width intervals at the point estimate (a deliberately too narrow
  method: the floor any interval must beat);
- :func:`parametric_intervals`: a parametric bootstrap. ``n_sim`` fields are played from the
  fitted μ (the board's point estimates taken as the truth) with the same compositions and rated
  as the board rates μ (median over ``sim_passes`` passes); the fitted-minus-simulated-truth
  differences d* = μ* - μ̂ stand in for the error μ̂ - μ, and the *basic* interval is
  [μ̂ - q97.5(d*), μ̂ - q2.5(d*)] (corrects the bias of the fit, e.g. its shrinkage to the prior
  or away from it). The rank interval is the same pivot on ranks, r̂ - q(r* - r̂), rounded out and
  clipped to [1, players].

:func:`coverage_rows` scores a method's frame against the truth, per player: whether
``rank_lo <= true rank <= rank_hi`` (true rank: 1 + the number of players with a higher true
skill), the rank width ``rank_hi - rank_lo`` (as ``stopping.Interval.rank_width``), and whether
the μ interval covers the true skill *after centring*: TrueSkill's μ has an arbitrary origin
(its prior μ0), so both are taken relative to their mean over the field's players (the interval
shifted by the mean of the fitted point μ). The scale is not aligned (no rescaling): the slope
of the fitted on the true skills (:func:`slope`) is reported beside it, and a slope far from 1
says that μ coverage is meaningless on that field while rank coverage still is.

The stopping rule (``simulate/stopping.py``): :func:`new_player_looks` lets a new player of known
skill join a field rated once and held fixed, and looks at it as ``simulate`` does;
:func:`stop_rows` stops each draw where a question (``rank_width`` or ``top_k``) is first
answered, and :func:`fixed_schedule` finds the fixed number of games that answers it as often.

``benchmarks/bench_known_truth.py`` runs these on BAZAAR's compositions and on a sparser field;
``tests/test_known_truth.py`` on a tiny synthetic one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from marketarena.ratings import (
    PreparedGames,
    TrueSkillParams,
    bootstrap_intervals,
    lane_ranks,
    multipass,
    prepare_games,
    rank_intervals,
    rate_orders,
)


@dataclass(frozen=True)
class TrueField:
    """Players with known skills and the compositions of their games."""

    name: str
    players: list[str]
    skills: np.ndarray  # (players,) true skill (the μ the games are played from)
    seats: np.ndarray  # (games, max seats) player index per seat, padded with len(players)

    @property
    def n_games(self) -> int:
        return len(self.seats)

    @property
    def counts(self) -> np.ndarray:
        """Games per player."""
        P = len(self.players)
        return np.bincount(self.seats[self.seats < P], minlength=P)

    def true_ranks(self) -> np.ndarray:
        """1 + the number of players whose true skill is higher."""
        return lane_ranks(self.skills[None, :])[0]


def field_from_games(name: str, games: list, skills: dict) -> TrueField:
    """A field of the compositions of ``games`` (each an iterable of player names, e.g. a
    ``ratings.player_games`` dict) and ``skills`` (name -> true skill; every player of a game
    needs one). Players in order of first appearance; games of fewer than two players dropped."""
    games = [list(g) for g in games if len(g) >= 2]
    if not games:
        raise ValueError(f"field {name!r}: no game of two players or more")
    missing = sorted({p for g in games for p in g} - set(skills))
    if missing:
        raise ValueError(f"field {name!r}: no true skill for {missing[:5]}")
    index: dict = {}
    for g in games:
        for p in g:
            index.setdefault(p, len(index))
    width = max(len(g) for g in games)
    seats = np.full((len(games), width), len(index), dtype=np.int64)
    for k, g in enumerate(games):
        seats[k, : len(g)] = [index[p] for p in g]
    players = list(index)
    return TrueField(name, players, np.array([float(skills[p]) for p in players]), seats)


def synthetic_field(
    n_players: int = 20,
    n_games: int = 200,
    seats: int = 4,
    low: float = 2.0,
    high: float = 8.0,
    seed: int = 0,
) -> TrueField:
    """``n_players`` with skills evenly spread over [low, high] (best first), in ``n_games``
    ``seats``-player free-for-alls whose players are drawn without replacement (seeded)."""
    if not 2 <= seats <= n_players:
        raise ValueError(f"seats must lie in [2, n_players], got {seats}")
    rng = np.random.default_rng(seed)
    players = [f"p{i:02d}" for i in range(n_players)]
    comps = [
        [players[j] for j in rng.choice(n_players, seats, replace=False)] for _ in range(n_games)
    ]
    skills = dict(zip(players, np.linspace(high, low, n_players)))
    return field_from_games(f"synthetic {n_players}x{n_games}", comps, skills)


def subsample(field: TrueField, share: float, seed: int = 0, name: str | None = None) -> TrueField:
    """A seeded share of the field's games (their order kept); players left without a game drop
    out."""
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(field.n_games, max(1, round(share * field.n_games)), replace=False))
    P = len(field.players)
    comps = [[field.players[j] for j in row if j < P] for row in field.seats[keep]]
    skills = dict(zip(field.players, field.skills))
    return field_from_games(name or f"{field.name}, {share:.0%} of the games", comps, skills)


def play(field: TrueField, skills: np.ndarray, beta: float, rng, copies: int = 1) -> PreparedGames:
    """The field's games played ``copies`` times from ``skills`` (per player) as TrueSkill's
    generative model plays them: performance ~ N(skill, β²) per seat, seats ranked by it. Copy
    ``c``'s games are the indices ``c * n_games ...``; ties are impossible."""
    P = len(field.players)
    seats = np.tile(field.seats, (copies, 1))
    pad = seats >= P
    perf = np.where(pad, -np.inf, np.append(skills, 0.0)[seats])
    perf = perf + beta * rng.standard_normal(seats.shape) * ~pad
    order = np.argsort(-perf, axis=1, kind="stable")
    ranked = np.take_along_axis(seats, order, axis=1)
    sizes = (~pad).sum(axis=1)
    ties = np.zeros((len(seats), seats.shape[1] - 1), dtype=bool)
    counts = np.bincount(ranked[ranked < P], minlength=P)
    return PreparedGames(list(field.players), ranked, sizes, ties, counts)


def as_games(prep: PreparedGames) -> list[dict[str, float]]:
    """The played games as the boards take them: name -> score (the negated finishing place)."""
    P = len(prep.players)
    return [{prep.players[j]: -float(k) for k, j in enumerate(row) if j < P} for row in prep.seats]


# ------------------------------------------------------------------------------------------------
# methods of intervals


def bootstrap_board(
    games: list, ts: TrueSkillParams, passes: int, n_boot: int, boot_passes: int, seed: int = 0
) -> pd.DataFrame:
    """double_auction's board before its rank interval: multipass μ, the bootstrap's intervals of
    μ and, as ``rank_lo``/``rank_hi``, the percentiles of the resamples' ranks (the method the
    boards used before ``ratings.rank_intervals``)."""
    board = multipass(games, ts, passes=passes, seed=seed).drop(columns=["mu_lo", "mu_hi"])
    return board.merge(bootstrap_intervals(games, ts, n_boot, seed, boot_passes), on="player")


def point_intervals(board: pd.DataFrame) -> pd.DataFrame:
    """Zero-width intervals at the board's point μ and its rank."""
    mu = board["mu"].to_numpy(float)
    rank = lane_ranks(mu[None, :])[0].astype(float)
    return board.assign(mu_lo=mu, mu_hi=mu, rank_lo=rank, rank_hi=rank)


def parametric_intervals(
    field: TrueField,
    board: pd.DataFrame,
    ts: TrueSkillParams,
    n_sim: int = 40,
    sim_passes: int = 5,
    seed: int = 0,
) -> pd.DataFrame:
    """The parametric bootstrap of the module docstring, from the board's point μ."""
    fitted = board.set_index("player")["mu"].reindex(field.players).to_numpy(float)
    rng = np.random.default_rng(seed)
    prep = play(field, fitted, ts.beta, rng, copies=n_sim)
    G = field.n_games
    orders = np.array(
        [c * G + rng.permutation(G) for c in range(n_sim) for _ in range(sim_passes)],
        dtype=np.int64,
    )
    _, mu, _ = rate_orders(prep, orders, ts)
    sim = np.median(mu.reshape(n_sim, sim_passes, -1), axis=1)  # (n_sim, players)
    d = sim - fitted
    q_lo, q_hi = np.percentile(d, [2.5, 97.5], axis=0)
    r_hat = lane_ranks(fitted[None, :])[0]
    dr = lane_ranks(sim) - r_hat
    r_lo, r_hi = np.percentile(dr, [2.5, 97.5], axis=0)
    P = len(field.players)
    out = pd.DataFrame(
        {
            "player": field.players,
            "mu": fitted,
            "mu_lo": fitted - q_hi,
            "mu_hi": fitted - q_lo,
            "rank_lo": np.clip(np.floor(r_hat - r_hi), 1, P),
            "rank_hi": np.clip(np.ceil(r_hat - r_lo), 1, P),
            "games": field.counts,
        }
    )
    return out


# ------------------------------------------------------------------------------------------------
# scoring


def slope(field: TrueField, board: pd.DataFrame) -> float:
    """Least-squares slope of the fitted point μ on the true skill over the field's players."""
    mu = board.set_index("player")["mu"].reindex(field.players).to_numpy(float)
    return float(np.polyfit(field.skills, mu, 1)[0])


def coverage_rows(field: TrueField, frame: pd.DataFrame) -> pd.DataFrame:
    """Per player of the field: games, true rank, rank interval, ``rank_cover``, ``rank_width``
    (rank_hi - rank_lo), ``mu_cover`` (centred, module docstring) and ``mu_width``."""
    f = frame.set_index("player").reindex(field.players)
    centre = float(np.nanmean(f["mu"]))
    truth = field.skills - field.skills.mean()
    lo, hi = f["mu_lo"].to_numpy(float) - centre, f["mu_hi"].to_numpy(float) - centre
    rank = field.true_ranks()
    rank_lo, rank_hi = f["rank_lo"].to_numpy(float), f["rank_hi"].to_numpy(float)
    return pd.DataFrame(
        {
            "player": field.players,
            "games": field.counts,
            "true_rank": rank,
            "rank_lo": rank_lo,
            "rank_hi": rank_hi,
            "rank_cover": (rank_lo <= rank) & (rank <= rank_hi),
            "rank_width": rank_hi - rank_lo,
            "mu_cover": (lo <= truth) & (truth <= hi),
            "mu_width": hi - lo,
        }
    )


def replicate(
    field: TrueField,
    ts: TrueSkillParams,
    reps: int,
    passes: int,
    n_boot: int,
    boot_passes: int,
    n_sim: int = 40,
    sim_passes: int = 5,
    seed: int = 0,
    methods: tuple[str, ...] = (
        "board",
        "board_unstretched",
        "rank_percentiles",
        "point",
        "parametric",
    ),
) -> pd.DataFrame:
    """``reps`` replications: play the field from its truth (seed ``seed + r``), rate it as the
    board does, score every method. One row per (method, replication, player), with ``slope``."""
    frames = []
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        games = as_games(play(field, field.skills, ts.beta, rng))
        board = bootstrap_board(games, ts, passes, n_boot, boot_passes, seed=seed + r)
        b = slope(field, board)
        for m in methods:
            rows = coverage_rows(field, _method(m, field, board, ts, n_sim, sim_passes, seed + r))
            frames.append(rows.assign(method=m, rep=r, slope=b))
    return pd.concat(frames, ignore_index=True)


def _method(m: str, field, board, ts, n_sim: int, sim_passes: int, seed: int) -> pd.DataFrame:
    """The intervals of method ``m`` (``replicate``'s names) from the board's."""
    if m == "board":
        return rank_intervals(board)
    if m == "board_unstretched":
        return rank_intervals(board, spread=1.0)
    if m == "rank_percentiles":
        return board
    if m == "point":
        return point_intervals(board)
    if m == "parametric":
        return parametric_intervals(field, board, ts, n_sim, sim_passes, seed=seed)
    raise ValueError(
        f"unknown method {m!r}: board, board_unstretched, rank_percentiles, point or parametric"
    )


def summarise(rows: pd.DataFrame, split: int | None = None) -> pd.DataFrame:
    """Per method: coverage of the rank and of the centred μ, mean widths, the mean slope; with
    ``split`` (games), the rank coverage of players with at most / more than that many games."""
    g = rows.groupby("method", sort=False)
    out = pd.DataFrame(
        {
            "rank_cover": g["rank_cover"].mean(),
            "rank_width": g["rank_width"].mean(),
            "mu_cover": g["mu_cover"].mean(),
            "mu_width": g["mu_width"].mean(),
            "slope": g["slope"].mean(),
            "n": g.size(),
        }
    )
    if split is not None:
        few = rows["games"] <= split
        out["rank_cover_few"] = rows[few].groupby("method", sort=False)["rank_cover"].mean()
        out["rank_cover_many"] = rows[~few].groupby("method", sort=False)["rank_cover"].mean()
    return out


# ------------------------------------------------------------------------------------------------
# the stopping rule: a new player of known skill joins a field


def new_player_looks(
    field: TrueField,
    skills: dict[str, float],
    ts: TrueSkillParams,
    draws: int,
    cap: int,
    batch: int,
    boot: int = 100,
    passes: int = 10,
    seed: int = 0,
    levels: tuple[float, ...] = (0.95,),
) -> pd.DataFrame:
    """The looks of the stopping rule at a new player of known skill (``skills``: entrant name ->
    true skill) joining ``field``. The field is played once from its truth and rated as
    ``simulate`` rates it (``stopping.field_ratings``), then held fixed; per entrant and draw the
    new player plays ``cap`` games (random compositions of the field with one seat taken by it),
    looked at (``stopping.looks``, its interval at each of ``levels``) after every ``batch`` and
    at the cap. One row per (level, entrant, draw, look): n, the true rank (among the field's
    true skills), the look's rank, rank_lo, rank_hi. Deterministic in ``seed``."""
    from marketarena.simulate.stopping import field_ratings, looks

    rng = np.random.default_rng([seed, 56])
    others = field_ratings(as_games(play(field, field.skills, ts.beta, rng)), ts, seed=seed)
    P = len(field.players)
    rows = []
    for entrant, skill in skills.items():
        true_rank = 1 + int((field.skills > skill).sum())
        truth = np.append(field.skills, skill)
        for d in range(draws):
            seats = field.seats[rng.integers(0, field.n_games, cap)].copy()
            sizes = (seats < P).sum(axis=1)
            seats[seats >= P] = P + 1  # the pad of P + 1 players
            seats[np.arange(cap), rng.integers(0, sizes)] = P  # its seat
            new = TrueField("new", [*field.players, "new"], truth, seats)
            games = prepare_games(as_games(play(new, truth, ts.beta, rng)))
            for n in [*range(batch, cap, batch), cap]:
                at = looks(games, "new", others, ts, boot, passes, seed + d, range(n), levels)
                for level, i in zip(levels, at):
                    rows.append((level, entrant, d, n, true_rank, i.rank, i.rank_lo, i.rank_hi))
    columns = ["level", "entrant", "draw", "n", "true_rank", "rank", "rank_lo", "rank_hi"]
    return pd.DataFrame(rows, columns=columns)


def _answers(looks: pd.DataFrame, rank_width: int | None, top_k: int | None) -> pd.Series:
    """Per look: does it answer the question (one of ``rank_width``, ``top_k``)?"""
    if (rank_width is None) == (top_k is None):
        raise ValueError("give one of rank_width and top_k")
    if rank_width is not None:
        return looks["rank_hi"] - looks["rank_lo"] <= rank_width
    return (looks["rank_hi"] <= top_k) | (looks["rank_lo"] > top_k)


def stop_rows(
    looks: pd.DataFrame,
    rank_width: int | None = None,
    top_k: int | None = None,
    min_games: int = 30,
) -> pd.DataFrame:
    """Where the rule stops each draw of :func:`new_player_looks`: the first look of at least
    ``min_games`` that answers the question (``stopping.settled``), else the last (the cap). One
    row per (level, entrant, draw): n, answered, the interval there, ``cover`` (it holds the true rank)
    and, for ``top_k``, ``right`` (answered and the answer, "in" when ``rank_hi <= k``, agrees
    with the true rank; False when unanswered)."""
    looks = looks.assign(answered=_answers(looks, rank_width, top_k) & (looks["n"] >= min_games))
    keys = ["level", "entrant", "draw"]
    first = looks[looks["answered"]].groupby(keys, sort=False).head(1)
    last = looks.groupby(keys, sort=False).tail(1)
    out = pd.concat([first, last]).groupby(keys, sort=False).head(1)
    out = out.sort_index().reset_index(drop=True)  # the looks' order
    out["cover"] = (out["rank_lo"] <= out["true_rank"]) & (out["true_rank"] <= out["rank_hi"])
    out["width"] = out["rank_hi"] - out["rank_lo"]
    if top_k is not None:
        said_in = out["rank_hi"] <= top_k
        out["right"] = out["answered"] & (said_in == (out["true_rank"] <= top_k))
    return out


def fixed_schedule(
    looks: pd.DataFrame, share: float, rank_width: int | None = None, top_k: int | None = None
) -> int | None:
    """The smallest fixed number of games whose look answers the question in at least ``share``
    of the draws (every entrant pooled: a fixed schedule does not know the player's skill; any
    look, below the rule's ``min_games`` too, which can only favour the fixed schedule); None
    when no look up to the cap does, or ``share`` is 0 (nothing to match). ``looks`` of one
    ``level``."""
    if share <= 0:
        return None
    answered = looks.assign(a=_answers(looks, rank_width, top_k)).groupby("n")["a"].mean()
    enough = answered[answered >= share - 1e-12]
    return int(enough.index[0]) if len(enough) else None
