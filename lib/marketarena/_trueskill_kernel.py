"""Compiled (numba) core of :func:`marketarena.ratings.rate_orders`: the ``trueskill`` package's
``run_schedule`` for a free-for-all of one-player teams, one game at a time per lane, lanes in
parallel.

Every floating-point operation is the package's, in the package's order (see the module docstring
of :mod:`marketarena.ratings` for the schedule and the names): the tests compare each lane with
the package game by game, bit for bit. ``exp`` and ``pow`` compile to calls into the C library, as
Python's ``math.exp`` and ``**`` are (see ``two`` in :func:`rate_lanes`). ``error_model="numpy"``:
a division by zero gives inf or NaN as in numpy, and the checks below catch what the package
catches. A Gaussian is a (pi, tau) pair; ``R``, ``P``, ``T``, ``D`` are the
rating, performance, team and difference variables, ``m..`` the messages into them.

Errors the package raises (``w_win`` outside (0, 1), a zero ``w_draw`` denominator) stop the lane
and are reported through ``err`` as (code, step, seat pair); :func:`rate_orders` raises them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_SQRT2 = 1 * math.sqrt(2)  # sigma * math.sqrt(2) in backends.cdf, sigma = 1
_PDF_C = 1 / math.sqrt(2 * math.pi) * 1  # 1 / sqrt(2 pi) * abs(sigma) in backends.pdf
MAX_SWEEPS = 10  # the package's ``for x in range(10)`` in run_schedule
ERR_W_WIN, ERR_W_DRAW = 1, 2


@njit(cache=True, inline="always", error_model="numpy")
def _cdf_pdf(x, two):
    """(backends.cdf(x), backends.pdf(x)): the package's erfc approximation, Horner order kept."""
    z = abs(x / _SQRT2)
    t = 1.0 / (1.0 + z / 2.0)
    p = t * 0.17087277
    p = t * (-0.82215223 + p)
    p = t * (1.48851587 + p)
    p = t * (-1.13520398 + p)
    p = t * (0.27886807 + p)
    p = t * (-0.18628806 + p)
    p = t * (0.09678418 + p)
    p = t * (0.37409196 + p)
    p = t * (1.00002368 + p)
    r = t * math.exp(p - (z * z + 1.26551223))
    if x > 0:  # erfc(y) for y = -x / sqrt 2 < 0
        r = 2.0 - r
    return 0.5 * r, _PDF_C * math.exp(math.pow(x, two) / -2.0)


@njit(cache=True, error_model="numpy")
def _play(
    seats,
    ties,
    n,
    mu,
    sg,
    prior_mu,
    prior_sigma,
    tau2,
    beta2,
    margin,
    min_delta,
    two,
    T,
    mT,
    mTs,
    mPl,
    Rp,
    Rt,
    D,
    mDs,
    mDt,
):
    """Rate one game of ``n`` seats (sorted by rank) in place in ``mu``/``sg`` (one lane's row).
    Returns 0, or an error code with the seat pair as ``code * 1000 + k``."""
    K = n - 1
    for i in range(n):  # gray arrows: prior, likelihood and team sum down
        j = seats[i]
        m0, s0 = mu[j], sg[j]
        if np.isnan(m0):
            m0, s0 = prior_mu, prior_sigma
        pi_r = math.pow(s0, -2.0)  # Rating(mu, sigma): pi = sigma ** -2, tau = pi * mu
        m = (pi_r * m0) / pi_r
        s = math.sqrt(1 / pi_r)
        Rp[i] = math.pow(math.sqrt(math.pow(s, two) + tau2), -2.0)
        Rt[i] = Rp[i] * m
        a = 1.0 / (1.0 + beta2 * Rp[i])
        mPl[i, 0], mPl[i, 1] = a * Rp[i], a * Rt[i]
        tp = 1.0 / (1 / mPl[i, 0])
        mTs[i, 0], mTs[i, 1] = tp, tp * (mPl[i, 1] / mPl[i, 0])
        T[i, 0], T[i, 1] = mTs[i, 0], mTs[i, 1]
    for k in range(K):
        for c in range(2):
            D[k, c] = mDs[k, c] = mDt[k, c] = mT[k, 0, c] = mT[k, 1, c] = 0.0

    for _ in range(MAX_SWEEPS):
        delta = 0.0
        # forward k = 0..K-2 (down, trunc, up to T[k+1]); two players: k = 0, down and trunc
        # backward k = K-1..1 (down, trunc, up to T[k])
        for step in range(max(K - 1, 1) + K - 1):
            forward = step < max(K - 1, 1)
            k = step if forward else K - 1 - (step - max(K - 1, 1))
            # cavities of T[k], T[k + 1] w.r.t. difference factor k
            d0p, d0t = T[k, 0] - mT[k, 0, 0], T[k, 1] - mT[k, 0, 1]
            d1p, d1t = T[k + 1, 0] - mT[k, 1, 0], T[k + 1, 1] - mT[k, 1, 1]
            inv0, inv1 = 1 / d0p, 1 / d1p
            mean0, mean1 = d0t / d0p, d1t / d1p
            # SumFactor.down: D[k] = T[k] - T[k + 1]
            mp = 1.0 / (inv0 + inv1)
            mt = mp * (mean0 - mean1)
            D[k, 0], D[k, 1] = (D[k, 0] - mDs[k, 0]) + mp, (D[k, 1] - mDs[k, 1]) + mt
            mDs[k, 0], mDs[k, 1] = mp, mt
            # TruncateFactor.up
            divp, divt = D[k, 0] - mDt[k, 0], D[k, 1] - mDt[k, 1]
            sq = math.sqrt(divp)
            x = divt / sq
            mg = margin * sq
            if ties[k]:  # v_draw, w_draw
                ad = abs(x)
                a = mg - ad
                b = -mg - ad
                ca, pa = _cdf_pdf(a, two)
                cb, pb = _cdf_pdf(b, two)
                dd = ca - cb
                if dd == 0:
                    return ERR_W_DRAW * 1000 + k
                vu = (pb - pa) / dd
                v = vu * -1 if x < 0 else vu
                w = math.pow(vu, two) + (a * pa - b * pb) / dd
            else:  # v_win, w_win
                xx = x - mg
                cdf, pdf = _cdf_pdf(xx, two)
                v = pdf / cdf
                w = v * (v + xx)
                if not (0 < w < 1):
                    return ERR_W_WIN * 1000 + k
            den = 1.0 - w
            mp = divp / den
            mt = (divt + sq * v) / den
            dpi = abs(D[k, 0] - mp)  # Variable.delta
            if dpi != math.inf:
                delta = max(delta, abs(D[k, 1] - mt), math.sqrt(dpi))
            mDt[k, 0], mDt[k, 1] = (mp + mDt[k, 0]) - D[k, 0], (mt + mDt[k, 1]) - D[k, 1]
            D[k, 0], D[k, 1] = mp, mt
            if forward and k < K - 1:
                _up_right(k, T, mT, D, mDs, d1p, d1t, inv0, mean0)
            elif not forward:
                _up_left(k, T, mT, D, mDs, d0p, d0t, inv1, mean1)
        if delta <= min_delta:
            break

    # up both ends, then team sums and likelihoods up; write the ratings back
    d0p, d0t = T[0, 0] - mT[0, 0, 0], T[0, 1] - mT[0, 0, 1]
    d1p, d1t = T[1, 0] - mT[0, 1, 0], T[1, 1] - mT[0, 1, 1]
    _up_left(0, T, mT, D, mDs, d0p, d0t, 1 / d1p, d1t / d1p)
    k = K - 1
    d0p, d0t = T[k, 0] - mT[k, 0, 0], T[k, 1] - mT[k, 0, 1]
    d1p, d1t = T[k + 1, 0] - mT[k, 1, 0], T[k + 1, 1] - mT[k, 1, 1]
    _up_right(k, T, mT, D, mDs, d1p, d1t, 1 / d0p, d0t / d0p)
    for i in range(n):
        divp, divt = T[i, 0] - mTs[i, 0], T[i, 1] - mTs[i, 1]
        pp = 1.0 / (1.0 / divp)
        msgp = (mPl[i, 0] + pp) - mPl[i, 0]
        msgt = (mPl[i, 1] + pp * (divt / divp)) - mPl[i, 1]
        a = 1.0 / (1.0 + beta2 * msgp)
        rp = Rp[i] + a * msgp
        rt = Rt[i] + a * msgt
        mu[seats[i]] = rt / rp
        sg[seats[i]] = math.sqrt(1 / rp)
    return 0


@njit(cache=True, inline="always", error_model="numpy")
def _up_right(k, T, mT, D, mDs, d1p, d1t, inv0, mean0):  # SumFactor.up(1): to T[k + 1]
    dsp, dst = D[k, 0] - mDs[k, 0], D[k, 1] - mDs[k, 1]
    mp = 1.0 / (inv0 + 1 / dsp)
    mt = mp * (mean0 - dst / dsp)
    T[k + 1, 0], T[k + 1, 1] = d1p + mp, d1t + mt
    mT[k, 1, 0], mT[k, 1, 1] = mp, mt


@njit(cache=True, inline="always", error_model="numpy")
def _up_left(k, T, mT, D, mDs, d0p, d0t, inv1, mean1):  # SumFactor.up(0): to T[k]
    dsp, dst = D[k, 0] - mDs[k, 0], D[k, 1] - mDs[k, 1]
    mp = 1.0 / (1 / dsp + inv1)
    mt = mp * (dst / dsp + mean1)
    T[k, 0], T[k, 1] = d0p + mp, d0t + mt
    mT[k, 0, 0], mT[k, 0, 1] = mp, mt


@njit(cache=True, parallel=True, error_model="numpy")
def rate_lanes(
    orders,
    seats,
    sizes,
    ties,
    mu,
    sg,
    prior_mu,
    prior_sigma,
    tau2,
    beta2,
    margin,
    min_delta,
    err,
    two=2.0,
):
    """Lane ``l`` rates games ``orders[l]`` in turn into row ``l`` of ``mu``/``sg`` (NaN: prior).
    ``err[l]`` = (code, step, seat pair) of the first failure, code 0 if none.

    ``two`` must be 2.0. It is an argument so that ``pow(x, two)`` stays a call into the C
    library: with a literal 2.0 the compiler turns it into ``x * x``, which differs from the C
    library's (and so Python's) ``x ** 2.0`` in the last bit for about one argument in a thousand,
    and ties amplify such a bit to ~1e-9 in the ratings."""
    L, S = orders.shape
    N = seats.shape[1]
    for lane in prange(L):
        T = np.zeros((N, 2))
        mT = np.zeros((max(N - 1, 1), 2, 2))
        mTs = np.zeros((N, 2))
        mPl = np.zeros((N, 2))
        Rp = np.zeros(N)
        Rt = np.zeros(N)
        D = np.zeros((max(N - 1, 1), 2))
        mDs = np.zeros_like(D)
        mDt = np.zeros_like(D)
        for s in range(S):
            g = orders[lane, s]
            code = _play(
                seats[g],
                ties[g],
                sizes[g],
                mu[lane],
                sg[lane],
                prior_mu,
                prior_sigma,
                tau2,
                beta2,
                margin,
                min_delta,
                two,
                T,
                mT,
                mTs,
                mPl,
                Rp,
                Rt,
                D,
                mDs,
                mDt,
            )
            if code != 0:
                err[lane, 0], err[lane, 1], err[lane, 2] = code // 1000, s, code % 1000
                break


@njit(cache=True, error_model="numpy")
def pow_array(x, e):
    """``x ** e`` elementwise with the C library's ``pow`` (as Python's ``**``; numpy's SIMD
    ``power`` differs in the last bit for a few per cent of arguments)."""
    out = np.empty_like(x)
    flat, res = x.ravel(), out.ravel()
    for i in range(flat.size):
        res[i] = math.pow(flat[i], e)
    return out
