"""TrueSkill ratings for free-for-all games: the ``trueskill`` package as oracle, a numpy twin.

What is computed
----------------
A *game* is a free-for-all among individual players, given as a mapping ``player -> score``: a
higher score is a better rank, equal scores are a tie (equal ranks). Every player is a one-player
team. Ratings follow the ``trueskill`` package (0.4.5) exactly, with its default pure-Python
backend: ``TrueSkill(mu, sigma, beta, tau, draw_probability).rate(groups, ranks=...)``, game by
game. Defaults (:class:`TrueSkillParams`) are those of design section 8: mu 25, sigma 25/3,
beta 25/6, tau 25/300, draw probability 0, ``min_delta`` 1e-4 (the package's ``DELTA``).

- :func:`rate_sequential` is the oracle: the package itself, one game after another.
- :func:`rate_orders` is the fast implementation: it runs many independent *lanes* at once, each
  lane rating the games in its own order (an index sequence, so repeats are allowed). At step
  ``s`` every lane updates on its own game ``orders[lane, s]``; all arithmetic is vectorised over
  lanes (and the per-seat parts over seats). Games of different sizes share a step by padding to
  the largest size with per-lane masks.
- :func:`multipass` rates ``passes`` random orders (rows of :func:`pass_orders`) and reports the
  median mu and sigma across passes and the 2.5 / 97.5 percentiles of mu (design 7.2: 200 passes
  in shuffled order, median mu and sigma).
- :func:`bootstrap_ratings` reports mu and sigma from one pass in the given order, and a 95%
  percentile interval of mu over bootstrap resamples of the games (:func:`bootstrap_orders`).

Equivalence with the package
----------------------------
:func:`rate_orders` replays the package's message schedule for ``n`` one-player teams sorted by
rank (``TrueSkill.run_schedule``), keeping every variable's value and every factor-to-variable
message as the package does, with the same floating-point operations in the same order:

1. prior (the rating with ``sigma**2 + tau**2``), likelihood (performance, ``beta**2``) and
   team-performance sum factors send down;
2. on the chain of ``n - 1`` difference factors ``d_k = t_k - t_{k+1}`` with truncation factors
   (``v_win``/``w_win``, or ``v_draw``/``w_draw`` where ``ranks[k] == ranks[k+1]``), up to 10
   sweeps: for two players ``down, trunc``; otherwise ``down, trunc, up(right)`` for k = 0..n-3
   then ``down, trunc, up(left)`` for k = n-2..1; stop as soon as the largest variable change of
   a sweep is ``<= min_delta`` (tracked per lane, so each lane stops exactly when the package
   would);
3. ``up(0)`` on the first difference, ``up(1)`` on the last, then team sums and likelihoods up.

The normal cdf/pdf/ppf are ports of the package's default backend (its erfc approximation with
fractional error ~1e-7, not ``scipy.special.ndtr``), so results agree with the package to ~1e-12
(tests hold every lane to 1e-9). The only differences are in the last bit of ``exp``/``pow``
(numpy vs libm), which the schedule does not amplify. Between games a rating is kept as
``(mu, sigma)`` floats, exactly as the package returns it. Where the package raises
``FloatingPointError`` (``w_win`` outside (0, 1), a zero ``w_draw`` denominator) this module raises
it too, naming the lane and step.

Choices
-------
- Seats are ordered as the package orders them: by rank, best first, a stable sort, so tied players
  keep the mapping's order. Ranks are dense ranks of the scores (only order and equality matter to
  the package). Scores must be finite; a game needs at least two players.
- A draw probability of 0 does *not* give a zero draw margin in the package: its ppf is an
  approximation and ``ppf(0.5) = 3.8e-8``, so the margin is ``2.2e-7``. A tie is then rated with a
  draw window of that width, which is numerically delicate (a tie between two fresh players
  *raises* both sigmas, 8.333 -> 9.588). This module reproduces the package, warts included.
- :func:`pass_orders`: pass ``p`` is ``rng.permutation(n_games)``, the ``p``-th call on
  ``numpy.random.default_rng(seed)``.
- Intervals are percentile intervals (numpy's default linear interpolation). In
  :func:`multipass` they describe order dependence (spread over passes); in
  :func:`bootstrap_ratings` they describe sampling uncertainty: each resample draws ``n_games``
  games with replacement, and those iid draws, taken in draw order, are already a uniformly random
  order of the resampled games. A player absent from a resample has no rating in it (NaN) and the
  interval uses the resamples where the player played.
- Frames have one row per player, sorted by mu (best first); ``games`` counts the player's games in
  the input.
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
        self.sqrt2, self.pdf_c = full(_SQRT2), full(_PDF_C)

    def cdf(self, x):
        """0.5 * erfc(-(x - 0) / (1 * sqrt 2)) with backends.erfc."""
        y = -x / self.sqrt2
        z = np.abs(y)
        t = self.one / (self.one + z / self.two)
        c, p = self.coeffs, np.empty_like(t)
        np.multiply(t, c[0], out=p)  # Horner from the innermost t * 0.17087277
        for ci in c[1:]:
            np.add(ci, p, out=p)
            np.multiply(t, p, out=p)
        r = t * self.exp(-z * z - self.c126 + p)
        np.subtract(self.two, r, out=r, where=y < 0)
        return self.half * r

    def pdf(self, x):
        """1 / sqrt(2 pi) * 1 * exp(-(((x - 0) / 1) ** 2 / 2))."""
        return self.pdf_c * self.exp(-(self.pow(x, 2.0) / self.two))


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
        order = sorted(range(len(names)), key=ranks.__getitem__)  # stable, like the package
        ranked.append(([index.setdefault(names[i], len(index)) for i in order],
                       [ranks[i] for i in order]))
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
) -> dict[Hashable, tuple[float, float]]:
    """Rate ``games`` one by one with the ``trueskill`` package, in ``order`` (default: as given).

    Returns ``{player: (mu, sigma)}`` for every player of the games that were rated.
    """
    params = params or TrueSkillParams()
    env = params.env()
    ratings: dict = {}
    for g in range(len(games)) if order is None else order:
        names, ranks = _ranked(games[g])
        groups = [(ratings.get(name) or env.create_rating(),) for name in names]
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


def _rate_step(mu0, sg0, lane_K, ties, tie_cols, params, margin, exact_inf, lane_ids, step):
    """Rate one game per lane; ``mu0``, ``sg0``: (n, L) ratings with seats sorted by rank.

    ``lane_K``: (L,) number of difference factors (seats - 1) per lane, ``ties``: (n - 1, L),
    ``tie_cols``: columns where some lane has a tie. Returns the new (mu, sigma), (n, L).

    Names follow the package: R rating, P performance, T team performance and D team difference
    variables; ``m..`` are messages into a variable from a factor: mPl (likelihood -> P), mTs
    (team sum -> T), mT[k, 0] / mT[k, 1] (difference factor k -> T[k] / T[k + 1]), mDs
    (difference sum -> D[k]), mDt (truncation -> D[k]). A Gaussian is stored as its (pi, tau)
    pair on an axis of length 2, so one numpy call does what the package does for pi and tau.
    """
    n, L = mu0.shape
    K = n - 1
    kern = _kernels(L)
    pw, one = kern.pow, kern.one
    beta2 = params.beta ** 2
    min_delta = params.min_delta

    # ---- gray arrows: PriorFactor, LikelihoodFactor, team SumFactor down --------------------
    pi_r = pw(sg0, -2.0)  # Rating(mu, sigma): pi = sigma ** -2, tau = pi * mu
    m = (pi_r * mu0) / pi_r  # val.mu
    s = np.sqrt(1 / pi_r)  # val.sigma
    Rp = pw(np.sqrt(pw(s, 2.0) + params.tau ** 2), -2.0)  # Gaussian(mu, sqrt(s**2 + tau**2))
    Rt = Rp * m
    a = 1.0 / (1.0 + beta2 * Rp)
    mPlp = a * Rp  # P = mPl
    mPlt = a * Rt
    mTs = np.empty((n, 2, L))  # T = mTs
    mTs[:, 0] = 1.0 / (1 / mPlp)
    mTs[:, 1] = mTs[:, 0] * (mPlt / mPlp)
    T = mTs.copy()
    D, mDs, mDt = np.zeros((3, max(K, 1), 2, L))
    mT = np.zeros((max(K, 1), 2, 2, L))
    msg = np.empty((2, L))  # scratch for the message being sent

    # ---- lane selections per column (None = every lane) -------------------------------------
    if (lane_K == K).all():
        fwd = [None] * max(K - 1, 1)
        rgt = [None] * (K - 1)
        bwd = [None] * n
    else:
        ks = np.arange(K)[:, None]
        fwd = list((lane_K >= ks + 2) | ((lane_K == 1) & (ks == 0)))[: max(K - 1, 1)]
        rgt = list(lane_K >= ks + 2)[: K - 1]
        bwd = list(lane_K >= ks + 1)

    def put(dst, src, mask):
        if mask is None:
            dst[...] = src
        else:
            np.copyto(dst, src, where=mask)

    def cavities(k):
        # T[k] and T[k + 1] without difference factor k's messages: their 1 / pi and mean
        d = T[k : k + 2] - mT[k]
        return d, 1 / d[:, 0], d[:, 1] / d[:, 0]

    def down(k, mask):  # SumFactor.down: D[k] = T[k] - T[k + 1]
        d, inv, mean = cavities(k)
        np.divide(1.0, inv[0] + inv[1], out=msg[0])
        np.multiply(msg[0], mean[0] - mean[1], out=msg[1])
        put(D[k], (D[k] - mDs[k]) + msg, mask)
        put(mDs[k], msg, mask)
        return d, inv, mean

    def fail(bad, what, k):
        lane = int(lane_ids[np.flatnonzero(bad)[0]])
        raise FloatingPointError(
            f"{what} at step {step}, lane {lane}, seat pair {k} (the trueskill package raises "
            "here too; it suggests the mpmath backend)"
        )

    def trunc(k, mask, acc, sel):  # TruncateFactor.up; returns acc updated with the deltas
        div = D[k] - mDt[k]
        sq = np.sqrt(div[0])
        x = div[1] / sq
        mg = margin * sq
        xx = x - mg  # v_win, w_win
        v = kern.pdf(xx) / kern.cdf(xx)  # a zero cdf makes w == 0 in the package: raised below
        w = v * (v + xx)
        den = one - w
        tie = ties[k] if mask is None else ties[k] & mask
        if k in tie_cols and tie.any():  # v_draw, w_draw where ranks are equal
            ad = np.abs(x)
            a, b = mg - ad, -mg - ad
            dd = kern.cdf(a) - kern.cdf(b)
            pa, pb = kern.pdf(a), kern.pdf(b)
            zero = tie & (dd == 0)
            if zero.any():
                fail(zero, "w_draw denominator is 0", k)
            vu = (pb - pa) / dd
            v = np.where(tie, np.where(x < 0, vu * -1, vu), v)
            w = np.where(tie, pw(vu, 2.0) + (a * pa - b * pb) / dd, w)
            den = one - w
            bad = ~(((0 < w) & (w < 1)) | tie)
            if mask is not None:
                bad &= mask
            if bad.any():
                fail(bad, "w_win outside (0, 1)", k)
        elif not np.minimum(w, den).min() > 0:  # 0 < w < 1 in every lane, else look closer
            bad = ~((0 < w) & (w < 1))
            if mask is not None:
                bad &= mask
            if bad.any():
                fail(bad, "w_win outside (0, 1)", k)
        np.divide(div[0], den, out=msg[0])
        np.divide(div[1] + sq * v, den, out=msg[1])
        diff = np.abs(D[k] - msg)  # Variable.delta: |d tau| and |d pi| (sqrt taken per sweep)
        if exact_inf:
            diff = np.where(diff[0] == np.inf, 0.0, diff)
        acc = np.maximum(acc, diff) if sel is None else np.where(sel, np.maximum(acc, diff), acc)
        put(mDt[k], (msg + mDt[k]) - D[k], mask)
        put(D[k], msg, mask)
        return acc

    def up_right(k, mask, d, inv, mean):  # SumFactor.up(1): to T[k + 1]
        ds = D[k] - mDs[k]
        np.divide(1.0, inv[0] + 1 / ds[0], out=msg[0])
        np.multiply(msg[0], mean[0] - ds[1] / ds[0], out=msg[1])
        put(T[k + 1], d[1] + msg, mask)
        put(mT[k, 1], msg, mask)

    def up_left(k, mask, d, inv, mean):  # SumFactor.up(0): to T[k]
        ds = D[k] - mDs[k]
        np.divide(1.0, 1 / ds[0] + inv[1], out=msg[0])
        np.multiply(msg[0], ds[1] / ds[0] + mean[1], out=msg[1])
        put(T[k], d[0] + msg, mask)
        put(mT[k, 0], msg, mask)

    def both(a, b):
        return a if b is None else (b if a is None else a & b)

    # ---- arrows 1-3: sweeps over the chain until delta <= min_delta ------------------------
    # A lane's delta is max over the sweep of max(|d tau|, sqrt |d pi|) = max(max |d tau|,
    # sqrt max |d pi|), sqrt being monotone; lanes that ran a column (sel) count its delta.
    active = None  # None = every lane still iterating
    for _ in range(_MAX_SWEEPS):
        acc = np.zeros((2, L))
        for k in range(len(fwd)):
            mask = both(fwd[k], active)
            cav = down(k, mask)
            acc = trunc(k, mask, acc, fwd[k])
            if k < len(rgt):
                up_right(k, both(rgt[k], active), *cav)
        for k in range(K - 1, 0, -1):
            mask = both(bwd[k], active)
            cav = down(k, mask)
            acc = trunc(k, mask, acc, bwd[k])
            up_left(k, mask, *cav)
        going = ~(np.maximum(acc[1], np.sqrt(acc[0])) <= min_delta)
        active = going if active is None else active & going
        if not active.any():
            break

    # ---- up both ends, then the rest of the black arrows ---------------------------------
    up_left(0, None, *cavities(0))
    if fwd[0] is None:
        up_right(K - 1, None, *cavities(K - 1))
    else:
        for k in np.unique(lane_K - 1).tolist():
            up_right(k, lane_K - 1 == k, *cavities(k))
    div = T - mTs  # team SumFactor.up(0): to P (mPs = 0)
    pp = 1.0 / (1.0 / div[:, 0])
    Pp = mPlp + pp
    Pt = mPlt + pp * (div[:, 1] / div[:, 0])
    msgp = Pp - mPlp  # LikelihoodFactor.up: to R (mRl = 0)
    msgt = Pt - mPlt
    a = 1.0 / (1.0 + beta2 * msgp)
    Rp = Rp + a * msgp
    Rt = Rt + a * msgt
    return Rt / Rp, np.sqrt(1 / Rp)


def rate_orders(
    games: Sequence[Game] | PreparedGames,
    orders: np.ndarray,
    params: TrueSkillParams | None = None,
) -> tuple[list, np.ndarray, np.ndarray]:
    """Rate the games in every row of ``orders`` (lanes x steps game indices), all lanes at once.

    Lane ``l`` gives exactly what ``rate_sequential(games, params, orders[l])`` gives (to ~1e-12).
    Returns ``(players, mu, sigma)`` with ``mu``/``sigma`` of shape (lanes, players); a player
    who never played in a lane keeps NaN there.
    """
    params = params or TrueSkillParams()
    prep = games if isinstance(games, PreparedGames) else prepare_games(games)
    orders = np.atleast_2d(np.asarray(orders, dtype=np.int64))
    if orders.size and (orders.min() < 0 or orders.max() >= prep.n_games):
        raise ValueError(f"game indices must lie in [0, {prep.n_games})")
    L, S = orders.shape
    P = len(prep.players)
    margin = draw_margin(params)
    exact_inf = bool(prep.ties.any())
    # one spare column for padded seats; NaN until a player's first game, which starts at the prior
    mu = np.full((L, P + 1), np.nan)
    sg = np.full((L, P + 1), np.nan)
    lane_ids = np.arange(L)
    rows = lane_ids[None, :]
    with np.errstate(all="ignore"):
        for step in range(S):
            g = orders[:, step]
            sizes = prep.sizes[g]
            n = int(sizes.max())
            seats = prep.seats[g, :n].T  # (n, L)
            ties = prep.ties[g, : n - 1].T
            tie_cols = set(np.flatnonzero(ties.any(axis=1)).tolist()) if exact_inf else ()
            mu0 = mu[rows, seats]
            sg0 = sg[rows, seats]
            fresh = np.isnan(mu0)
            if fresh.any():
                mu0[fresh] = params.mu
                sg0[fresh] = params.sigma
            new_mu, new_sg = _rate_step(
                mu0, sg0, sizes - 1, ties, tie_cols, params, margin, exact_inf, lane_ids, step
            )
            mu[rows, seats] = new_mu
            sg[rows, seats] = new_sg
    # what the package's Rating objects report: mu and sigma through pi = sigma ** -2, tau = pi mu
    _, pw = _libm()
    with np.errstate(all="ignore"):
        pi = pw(sg[:, :P], -2.0)
        return prep.players, (pi * mu[:, :P]) / pi, np.sqrt(1 / pi)


def pass_orders(n_games: int, passes: int = 200, seed=0) -> np.ndarray:
    """(passes, n_games): pass p is the p-th ``permutation(n_games)`` of ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n_games) for _ in range(passes)])


def bootstrap_orders(n_games: int, n_boot: int = 200, seed=0) -> np.ndarray:
    """(n_boot, n_games) iid game indices: resamples with replacement, each in its own order."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_games, size=(n_boot, n_games))


def _frame(players, mu, sigma, lo, hi, counts) -> pd.DataFrame:
    frame = pd.DataFrame(
        {"player": players, "mu": mu, "sigma": sigma, "mu_lo": lo, "mu_hi": hi, "games": counts}
    )
    return frame.sort_values(["mu", "player"], ascending=[False, True], kind="stable").reset_index(
        drop=True
    )


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
    orders = np.vstack([np.arange(prep.n_games), bootstrap_orders(prep.n_games, n_boot, seed)])
    players, mu, sigma = rate_orders(prep, orders, params)
    lo, hi = np.nanpercentile(mu[1:], [2.5, 97.5], axis=0)
    return _frame(players, mu[0], sigma[0], lo, hi, prep.counts)
