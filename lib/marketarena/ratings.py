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
- :func:`rate_orders` is the fast implementation. It runs many independent *lanes* at once, lane
  ``l`` rating the games in the order ``orders[l]`` (any index sequence, repeats allowed). At step
  ``s`` of its order a lane updates on game ``orders[l, s]``; every numpy call works on all lanes
  (and the per-seat parts on all seats). Games of different sizes are padded to the largest one,
  with per-lane masks.
- :func:`multipass` rates ``passes`` shuffled orders (rows of :func:`pass_orders`) and reports,
  per player, the median mu and sigma over passes and the 2.5 / 97.5 percentiles of mu (design
  7.2: 200 passes in shuffled order, median mu and sigma).
- :func:`bootstrap_ratings` reports mu and sigma from one pass in the given order and a 95%
  percentile interval of mu over bootstrap resamples of the games (:func:`bootstrap_orders`).

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
   ``max(|d tau|, sqrt |d pi|)`` of its truncations; the loop stops when it is ``<= min_delta``.
   Each lane keeps its own flag, so it stops exactly when the package would, and is frozen
   (masked) while other lanes go on;
3. ``up(0)`` on the first difference, ``up(1)`` on the last, then team sums and likelihoods up.

cdf and pdf are ports of the package's default backend (its erfc approximation, fractional error
~1e-7, not ``scipy.special.ndtr``), with ``exp`` and ``pow`` taken from the C library as Python
does (:func:`_libm`: numpy's own vectorised ``exp``/``power`` differ in the last bit for a few per
cent of arguments). Between games a rating is kept as the ``(mu, sigma)`` the package stores, and
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
  approximation, ``ppf(0.5) = 3.8e-8``, so the margin is ``2.2e-7``. A tie is then rated as a draw
  inside a window that narrow, which is ill-conditioned: ``cdf(a) - cdf(b)`` cancels to ~1e-8 and
  ``w_draw`` lands slightly above 1, so a tie between two fresh players *raises* both sigmas
  (8.333 -> 9.588), and a one-ulp change anywhere upstream moves the result by ~1e-8. This module
  reproduces the package, warts included; it does not "fix" ties.
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
- Speed: one numpy call per operation of the schedule, over all lanes, so the cost is set by the
  number of calls and grows slowly with the number of lanes. Lanes do not move in lock-step:
  each sweeps its own game, and lanes whose games have converged load their next games together
  once half of them wait, so a tie (which makes the package run all 10 sweeps) delays only its
  own lane. See ``benchmarks/bench_trueskill.py``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from scipy.special import inv_boxcox as _inv_boxcox

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
    "draw_margin",
]

Game = Mapping[Hashable, float]

_MAX_SWEEPS = 10  # the package's ``for x in range(10)`` in run_schedule
# Lanes whose game has converged wait (frozen) until at least this share of the lanes with games
# left are waiting; then they all finish and load their next game together. Loading costs about
# a quarter of a sweep, so loading at every sweep would cost more than it saves; this share lets
# a lane stuck in a slow game (a tie takes all 10 sweeps) fall behind instead of holding up all.
_FINISH_SHARE = 0.5


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
# The package's default backend (trueskill.backends), scalar and vectorised, same operations.
# --------------------------------------------------------------------------------------------


def _erfc_scalar(x: float) -> float:
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    r = t * math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (
        0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
            0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
                -0.82215223 + t * 0.17087277
            )))
        )))
    )))
    return 2.0 - r if x < 0 else r


def _erfcinv_scalar(y: float) -> float:
    if y >= 2:
        return -100.0
    elif y <= 0:
        return 100.0
    zero_point = y < 1
    if not zero_point:
        y = 2 - y
    t = math.sqrt(-2 * math.log(y / 2.0))
    x = -0.70711 * ((2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t)
    for _ in range(2):
        err = _erfc_scalar(x) - y
        x += err / (1.12837916709551257 * math.exp(-(x ** 2)) - x * err)
    return x if zero_point else -x


def _ppf_scalar(x: float) -> float:
    return 0 - 1 * math.sqrt(2) * _erfcinv_scalar(2 * x)


def draw_margin(params: TrueSkillParams, size: int = 2) -> float:
    """``trueskill.calc_draw_margin(draw_probability, size)``: 2.2e-7 for probability 0."""
    return _ppf_scalar((params.draw_probability + 1) / 2.0) * math.sqrt(size) * params.beta


_SQRT2 = 1 * math.sqrt(2)  # sigma * math.sqrt(2) in backends.cdf, sigma = 1
_PDF_C = 1 / math.sqrt(2 * math.pi) * 1  # 1 / sqrt(2 pi) * abs(sigma) in backends.pdf
# erfc's polynomial in t, innermost coefficient first (Horner order of backends.erfc)
_ERFC_COEFFS = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
                0.09678418, 0.37409196, 1.00002368)


def _exp_map(x: np.ndarray) -> np.ndarray:
    return np.fromiter(map(math.exp, x.ravel().tolist()), float, x.size).reshape(x.shape)


def _pow_map(x: np.ndarray, e: float) -> np.ndarray:
    return np.fromiter(map(e.__rpow__, x.ravel().tolist()), float, x.size).reshape(x.shape)


def _exp_scipy(x: np.ndarray) -> np.ndarray:
    return _inv_boxcox(x, 0.0)


_LIBM: tuple | None = None


def _libm() -> tuple:
    """(exp, pow) over arrays, bit-identical to ``math.exp`` and Python's ``**`` (the C library's).

    numpy's own ``exp`` and ``power`` are SIMD code that differs from the C library in the last bit
    for a few per cent of arguments. ``scipy.special.inv_boxcox(x, 0)`` is ``exp(x)`` from the C
    library and ``numpy.float_power`` loops over the C library's ``pow``; both are checked here
    once, with a slow exact fallback (a Python-level map) if a platform ever disagrees.
    """
    global _LIBM
    if _LIBM is None:
        rng = np.random.default_rng(12345)
        x = np.concatenate([rng.normal(0.0, 6.0, 4000), rng.uniform(-745.0, 5.0, 1000)])
        s = np.abs(x) + 1e-3
        exp, pw = _exp_map, _pow_map
        if np.array_equal(_exp_scipy(x), _exp_map(x)):
            exp = _exp_scipy
        if all(np.array_equal(np.float_power(s, e), _pow_map(s, e)) for e in (2.0, -2.0)):
            pw = np.float_power
        _LIBM = (exp, pw)
    return _LIBM


class _Kernels:
    """The package's cdf and pdf over arrays of one shape, operation for operation.

    Constants are kept as arrays of that shape (numpy is quicker with two arrays than with an
    array and a Python float), ``exp`` and ``pow`` are the C library's (see :func:`_libm`).
    """

    def __init__(self, shape):
        self.exp, self.pow = _libm()
        full = lambda c: np.full(shape, c)  # noqa: E731
        self.coeffs = [full(c) for c in _ERFC_COEFFS]
        self.c126, self.one, self.two, self.half = full(1.26551223), full(1.0), full(2.0), full(0.5)
        self.sqrt2, self.pdf_c, self.minus_two = full(_SQRT2), full(_PDF_C), full(-2.0)

    def _erfc_arg(self, x, out):
        """t and, into ``out``, the exponent of backends.erfc(y) for y = -(x - 0) / (1 * sqrt 2).

        The exponent ``(-z * z - 1.26551223) + poly`` is computed as ``poly - (z * z +
        1.26551223)``, the same number: negation commutes exactly with rounding.
        """
        z = np.abs(x / self.sqrt2)  # |y|
        t = self.one / (self.one + z / self.two)
        c, p = self.coeffs, np.empty_like(t)
        np.multiply(t, c[0], out=p)  # Horner from the innermost t * 0.17087277
        for ci in c[1:]:
            np.add(ci, p, out=p)
            np.multiply(t, p, out=p)
        np.subtract(p, z * z + self.c126, out=out)
        return t

    def _erfc_end(self, x, t, e):
        r = t * e
        np.subtract(self.two, r, out=r, where=x > 0)  # y < 0: 2 - r
        return self.half * r

    def cdf(self, x):
        """0.5 * erfc(-(x - 0) / (1 * sqrt 2)) with backends.erfc."""
        arg = np.empty_like(x)
        t = self._erfc_arg(x, arg)
        return self._erfc_end(x, t, self.exp(arg))

    def pdf(self, x):
        """1 / sqrt(2 pi) * 1 * exp(-(((x - 0) / 1) ** 2 / 2)); -(a / 2) is a / -2 exactly."""
        return self.pdf_c * self.exp(self.pow(x, 2.0) / self.minus_two)

    def cdf_pdf(self, x):
        """(cdf(x), pdf(x)) with one call to exp."""
        args = np.empty((2,) + x.shape)
        t = self._erfc_arg(x, args[0])
        np.divide(self.pow(x, 2.0), self.minus_two, out=args[1])
        e = self.exp(args)
        return self._erfc_end(x, t, e[0]), self.pdf_c * e[1]


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


_KERNELS: dict = {}


def _kernels(L: int) -> _Kernels:
    if L not in _KERNELS:
        _KERNELS.clear()
        _KERNELS[L] = _Kernels((L,))
    return _KERNELS[L]


class _Lanes:
    """The factor graphs of L lanes, each at its own game of its own order, advanced together.

    Every round does one sweep of the chain in every lane still iterating. A lane whose sweep
    ends the package's loop (delta <= min_delta, or the 10th sweep) is frozen until enough lanes
    wait (``_FINISH_SHARE``); then the waiting lanes finish their games (ends up, ratings written
    back) and load their next ones, while the others keep sweeping. A round costs the same
    whatever each lane is doing, so lanes need not all wait for the slowest game of a step (a
    tie typically takes all 10 sweeps, a game without ties 5 to 7).

    Names follow the package: R rating, P performance, T team performance and D team difference
    variables; ``m..`` are messages into a variable from a factor: mPl (likelihood -> P), mTs
    (team sum -> T), mT[k, 0] / mT[k, 1] (difference factor k -> T[k] / T[k + 1]), mDs
    (difference sum -> D[k]), mDt (truncation -> D[k]). A Gaussian is stored as its (pi, tau)
    pair on an axis of length 2, so one numpy call does what the package does for pi and tau.
    Seats run down axis 0 (sorted by rank, padded to the largest game), lanes along the last axis.
    """

    def __init__(self, prep: PreparedGames, orders, params, mu, sg):
        self.prep, self.orders, self.params = prep, orders, params
        self.mu, self.sg = mu, sg  # (L, players + 1) ratings, last column = padding seat
        L = orders.shape[0]
        N = prep.seats.shape[1]
        Kc = max(N - 1, 1)
        self.N, self.L = N, L
        self.kern = _kernels(L)
        self.margin = draw_margin(params)
        self.has_ties = bool(prep.ties.any())
        self.uniform = bool((prep.sizes == N).all())
        self.rows = np.arange(L)
        self.seats = np.full((N, L), mu.shape[1] - 1)
        self.lane_K = np.full(L, N - 1)
        self.ties = np.zeros((Kc, L), dtype=bool)
        self.tie_cols: set = set()
        self.step = np.zeros(L, dtype=np.int64)
        self.sweeps = np.zeros(L, dtype=np.int64)
        self.Rp, self.Rt = np.zeros((2, N, L))
        self.mPl = np.zeros((N, 2, L))
        self.mTs = np.zeros((N, 2, L))
        self.T = np.zeros((N, 2, L))
        self.D, self.mDs, self.mDt = np.zeros((3, Kc, 2, L))
        self.mT = np.zeros((Kc, 2, 2, L))
        self.msg = np.empty((2, L))  # scratch for the message being sent
        self.columns()

    # ---- loading a game: gray arrows (PriorFactor, LikelihoodFactor, team SumFactor down) ----
    def load(self, idx: np.ndarray) -> None:
        prep, params, pw = self.prep, self.params, self.kern.pow
        g = self.orders[idx, self.step[idx]]
        seats = prep.seats[g].T  # (N, |idx|)
        self.seats[:, idx] = seats
        self.lane_K[idx] = prep.sizes[g] - 1
        self.ties[: prep.ties.shape[1], idx] = prep.ties[g].T
        mu0 = self.mu[idx[None, :], seats]
        sg0 = self.sg[idx[None, :], seats]
        fresh = np.isnan(mu0)
        mu0[fresh] = params.mu
        sg0[fresh] = params.sigma
        pi_r = pw(sg0, -2.0)  # Rating(mu, sigma): pi = sigma ** -2, tau = pi * mu
        m = (pi_r * mu0) / pi_r  # val.mu
        s = np.sqrt(1 / pi_r)  # val.sigma
        Rp = pw(np.sqrt(pw(s, 2.0) + params.tau ** 2), -2.0)  # Gaussian(mu, sqrt(s**2 + tau**2))
        Rt = Rp * m
        a = 1.0 / (1.0 + params.beta ** 2 * Rp)
        Pp, Pt = a * Rp, a * Rt  # P = mPl
        Tp = 1.0 / (1 / Pp)  # T = mTs
        Tt = Tp * (Pt / Pp)
        self.Rp[:, idx], self.Rt[:, idx] = Rp, Rt
        self.mPl[:, 0, idx], self.mPl[:, 1, idx] = Pp, Pt
        self.mTs[:, 0, idx], self.mTs[:, 1, idx] = Tp, Tt
        self.T[:, 0, idx], self.T[:, 1, idx] = Tp, Tt
        for arr in (self.D, self.mDs, self.mDt, self.mT):
            arr[..., idx] = 0.0
        self.sweeps[idx] = 0
        self.columns()

    def columns(self) -> None:
        """Which lanes run which column of the chain (None = every lane), and tied columns."""
        K = self.N - 1
        if self.uniform:
            self.fwd = [None] * max(K - 1, 1)
            self.rgt = [None] * (K - 1)
            self.bwd = [None] * self.N
        else:
            lane_K = self.lane_K
            ks = np.arange(max(K, 1))[:, None]
            self.fwd = list((lane_K >= ks + 2) | ((lane_K == 1) & (ks == 0)))[: max(K - 1, 1)]
            self.rgt = list(lane_K >= ks + 2)[: K - 1]
            self.bwd = list(lane_K >= ks + 1)
        if self.has_ties:
            self.tie_cols = set(np.flatnonzero(self.ties.any(axis=1)).tolist())

    # ---- the factors ---------------------------------------------------------------------------
    @staticmethod
    def put(dst, src, mask):
        if mask is None:
            dst[...] = src
        else:
            np.copyto(dst, src, where=mask)

    def cavities(self, k):
        # T[k] and T[k + 1] without difference factor k's messages, their 1 / pi and mean
        d = self.T[k : k + 2] - self.mT[k]
        return d, 1 / d[:, 0], d[:, 1] / d[:, 0]

    def down(self, k, mask):  # SumFactor.down: D[k] = T[k] - T[k + 1]
        D, mDs, msg = self.D, self.mDs, self.msg
        d, inv, mean = self.cavities(k)
        np.divide(1.0, inv[0] + inv[1], out=msg[0])
        np.multiply(msg[0], mean[0] - mean[1], out=msg[1])
        self.put(D[k], (D[k] - mDs[k]) + msg, mask)
        self.put(mDs[k], msg, mask)
        return d, inv, mean

    def fail(self, bad, what, k):
        lane = int(np.flatnonzero(bad)[0])
        raise FloatingPointError(
            f"{what} in lane {lane}, step {int(self.step[lane])} (game "
            f"{int(self.orders[lane, self.step[lane]])}), seat pair {k}; the trueskill package "
            "raises here too (it suggests its mpmath backend)"
        )

    def trunc(self, k, mask, acc, sel):  # TruncateFactor.up; returns acc updated with deltas
        D, mDt, msg, kern, one = self.D, self.mDt, self.msg, self.kern, self.kern.one
        div = D[k] - mDt[k]
        sq = np.sqrt(div[0])
        x = div[1] / sq
        mg = self.margin * sq
        xx = x - mg  # v_win, w_win
        cdf, pdf = kern.cdf_pdf(xx)
        v = pdf / cdf  # a zero cdf makes w == 0 in the package: raised below
        w = v * (v + xx)
        den = one - w
        tie = self.ties[k] if mask is None else self.ties[k] & mask
        if k in self.tie_cols and tie.any():  # v_draw, w_draw where ranks are equal
            ad = np.abs(x)
            ab = np.stack([mg - ad, -mg - ad])
            c, pab = kern.cdf_pdf(ab)
            a, b, pa, pb = ab[0], ab[1], pab[0], pab[1]
            dd = c[0] - c[1]
            zero = tie & (dd == 0)
            if zero.any():
                self.fail(zero, "w_draw denominator is 0", k)
            vu = (pb - pa) / dd
            v = np.where(tie, np.where(x < 0, vu * -1, vu), v)
            w = np.where(tie, kern.pow(vu, 2.0) + (a * pa - b * pb) / dd, w)
            den = one - w
            bad = ~(((0 < w) & (w < 1)) | tie)
            if mask is not None:
                bad &= mask
            if bad.any():
                self.fail(bad, "w_win outside (0, 1)", k)
        elif not np.minimum(w, den).min() > 0:  # 0 < w < 1 in every lane, else look closer
            bad = ~((0 < w) & (w < 1))
            if mask is not None:
                bad &= mask
            if bad.any():
                self.fail(bad, "w_win outside (0, 1)", k)
        np.divide(div[0], den, out=msg[0])
        np.divide(div[1] + sq * v, den, out=msg[1])
        diff = np.abs(D[k] - msg)  # Variable.delta: |d tau| and |d pi| (sqrt taken per sweep)
        if self.has_ties:
            diff = np.where(diff[0] == np.inf, 0.0, diff)
        acc = np.maximum(acc, diff) if sel is None else np.where(sel, np.maximum(acc, diff), acc)
        self.put(mDt[k], (msg + mDt[k]) - D[k], mask)
        self.put(D[k], msg, mask)
        return acc

    def up_right(self, k, mask, d, inv, mean):  # SumFactor.up(1): to T[k + 1]
        D, mDs, msg = self.D, self.mDs, self.msg
        ds = D[k] - mDs[k]
        np.divide(1.0, inv[0] + 1 / ds[0], out=msg[0])
        np.multiply(msg[0], mean[0] - ds[1] / ds[0], out=msg[1])
        self.put(self.T[k + 1], d[1] + msg, mask)
        self.put(self.mT[k, 1], msg, mask)

    def up_left(self, k, mask, d, inv, mean):  # SumFactor.up(0): to T[k]
        D, mDs, msg = self.D, self.mDs, self.msg
        ds = D[k] - mDs[k]
        np.divide(1.0, 1 / ds[0] + inv[1], out=msg[0])
        np.multiply(msg[0], ds[1] / ds[0] + mean[1], out=msg[1])
        self.put(self.T[k], d[0] + msg, mask)
        self.put(self.mT[k, 0], msg, mask)

    # ---- the schedule --------------------------------------------------------------------------
    def sweep(self, active) -> np.ndarray:
        """One pass of arrows 1-3 in every active lane; returns each lane's delta.

        A sweep's delta is the max over its truncations of max(|d tau|, sqrt |d pi|), i.e.
        max(max |d tau|, sqrt max |d pi|) (sqrt is monotone); a lane counts only its own columns.
        """
        both = lambda a, b: a if b is None else (b if a is None else a & b)  # noqa: E731
        fwd, rgt, bwd = self.fwd, self.rgt, self.bwd
        acc = np.zeros((2, self.L))
        for k in range(len(fwd)):
            mask = both(fwd[k], active)
            cav = self.down(k, mask)
            acc = self.trunc(k, mask, acc, fwd[k])
            if k < len(rgt):
                self.up_right(k, both(rgt[k], active), *cav)
        for k in range(self.N - 2, 0, -1):
            mask = both(bwd[k], active)
            cav = self.down(k, mask)
            acc = self.trunc(k, mask, acc, bwd[k])
            self.up_left(k, mask, *cav)
        return np.maximum(acc[1], np.sqrt(acc[0]))

    def finish(self, done: np.ndarray) -> None:
        """Up both ends and the rest of the black arrows in lanes ``done``; write the ratings."""
        self.up_left(0, done, *self.cavities(0))
        lane_K = self.lane_K
        for k in np.unique(lane_K[done] - 1).tolist():
            self.up_right(k, done & (lane_K - 1 == k), *self.cavities(k))
        idx = np.flatnonzero(done)
        T, mTs, mPl = self.T[..., idx], self.mTs[..., idx], self.mPl[..., idx]
        div = T - mTs  # team SumFactor.up(0): to P (mPs = 0)
        pp = 1.0 / (1.0 / div[:, 0])
        Pp = mPl[:, 0] + pp
        Pt = mPl[:, 1] + pp * (div[:, 1] / div[:, 0])
        msgp = Pp - mPl[:, 0]  # LikelihoodFactor.up: to R (mRl = 0)
        msgt = Pt - mPl[:, 1]
        a = 1.0 / (1.0 + self.params.beta ** 2 * msgp)
        Rp = self.Rp[:, idx] + a * msgp
        Rt = self.Rt[:, idx] + a * msgt
        seats = self.seats[:, idx]
        self.mu[idx[None, :], seats] = Rt / Rp
        self.sg[idx[None, :], seats] = np.sqrt(1 / Rp)
        self.mu[:, -1] = self.sg[:, -1] = np.nan  # the padding seat starts from the prior

    def run(self) -> None:
        S = self.orders.shape[1]
        if S == 0:
            return
        self.load(self.rows)
        playing = np.ones(self.L, dtype=bool)  # lanes with games left
        iterating = playing.copy()  # lanes whose current game still sweeps
        min_delta = self.params.min_delta
        while True:
            delta = self.sweep(None if iterating.all() else iterating)
            self.sweeps += 1
            iterating &= ~((delta <= min_delta) | (self.sweeps >= _MAX_SWEEPS))
            waiting = playing & ~iterating
            n_waiting = int(waiting.sum())
            if n_waiting == 0 or n_waiting < _FINISH_SHARE * playing.sum():
                continue
            self.finish(waiting)
            self.step[waiting] += 1
            more = waiting & (self.step < S)
            playing &= ~(waiting & ~more)
            if not playing.any():
                return
            if more.any():
                self.load(np.flatnonzero(more))
                iterating |= more


def rate_orders(
    games: Sequence[Game] | PreparedGames,
    orders: np.ndarray,
    params: TrueSkillParams | None = None,
    initial: Mapping[Hashable, tuple[float, float]] | None = None,
) -> tuple[list, np.ndarray, np.ndarray]:
    """Rate the games in every row of ``orders`` (lanes x steps game indices), all lanes at once.

    ``initial`` gives starting ``(mu, sigma)`` for some players (others start at the prior).

    Lane ``l`` gives what ``rate_sequential(games, params, orders[l])`` gives, bit for bit where
    the C library's ``exp``/``pow`` are reachable (see :func:`_libm`). Returns ``(players, mu,
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
    # one spare column for padding seats; NaN until a player's first game (which uses the prior)
    mu = np.full((orders.shape[0], P + 1), np.nan)
    sg = np.full((orders.shape[0], P + 1), np.nan)
    index = {name: j for j, name in enumerate(prep.players)}
    for name, (m0, s0) in (initial or {}).items():
        m0, s0 = float(m0), float(s0)
        if not (s0 > 0 and math.isfinite(m0 + s0)):
            raise ValueError(f"initial rating of {name!r} needs a finite mu and sigma > 0")
        if name in index:
            mu[:, index[name]], sg[:, index[name]] = m0, s0
    with np.errstate(all="ignore"):
        _Lanes(prep, orders, params, mu, sg).run()
        # as the package's Rating objects report them: through pi = sigma ** -2, tau = pi * mu
        pi = _libm()[1](sg[:, :P], -2.0)
        return prep.players, (pi * mu[:, :P]) / pi, np.sqrt(1 / pi)


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
    """mu and sigma from one pass in the given order; 95% bootstrap percentile interval of mu.

    Columns: player, mu, sigma, mu_lo, mu_hi, games. The given-order pass runs as one more lane
    beside the ``n_boot`` resamples. Deterministic in ``seed``.
    """
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    prep = prepare_games(games)
    orders = np.vstack(
        [np.arange(prep.n_games, dtype=np.int32), bootstrap_orders(prep.n_games, n_boot, seed)]
    )
    players, mu, sigma = rate_orders(prep, orders, params)
    lo, hi = np.nanpercentile(mu[1:], [2.5, 97.5], axis=0)
    return _frame(players, mu[0], sigma[0], lo, hi, prep.counts)
