"""Is a firm more specialised than at the Cournot-Nash equilibrium? (seed 003, appendix B.3).

The data is one firm's per-round specialisation CV series (:func:`economics.specialisation_cv` of its
quantities each round, typically 50 rounds), serially dependent and not normal. As in the seed, the
mean of the series is bootstrapped with a circular block bootstrap (``arch.bootstrap.
CircularBlockBootstrap``, block 7, 10,000 resamples) and compared one-sidedly with the firm's CV at
the Nash equilibrium::

    H0: E[CV] <= nash_cv        H1: E[CV] > nash_cv

Choices (the seed gives the procedure but not the p-value formula):

* ``p_value`` is the *null-imposed* (recentred) bootstrap p-value: the bootstrap means are shifted so
  that their centre is ``nash_cv`` (``m*_b - mean + nash_cv``) and ``p`` is the share of shifted means
  at or above the observed mean; equivalently the share of ``m*_b - mean >= mean - nash_cv``. This is
  the standard bootstrap test of a mean (Hall & Wilson 1991's first guideline).
* ``p_value_percentile`` is the seed's released code's definition, kept for comparison: the share of
  raw bootstrap means at or below ``nash_cv``. The two agree when the bootstrap distribution is
  symmetric about the observed mean.
* Both are reported as ``(1 + k) / (1 + B)`` (``k`` of ``B`` resamples at least as extreme), never
  exactly 0: with ``B`` resamples no p below ``1 / (1 + B)`` can be claimed (Davison & Hinkley
  1997, eq. 4.11). The test is liberal on short autocorrelated series: its size at a nominal 5% is
  measured by ``benchmarks/bench_bootstrap_size.py`` (README, "How far to trust a p-value"), so
  read 0.01-0.05 as weak evidence.
* Ties are decided with a tolerance of ``1e-12 * max(1, |mean|, |nash_cv|)`` (counted as "at or
  above"), so a constant series equal to the Nash CV gives ``p = 1`` whatever the rounding of the
  mean.
* ``ci_lo``, ``ci_hi``: 95% percentile interval of the bootstrap means (``numpy.percentile``, linear
  interpolation).
* Seeding: ``seed`` is an int or a ``numpy.random.Generator``; an int is turned into
  ``numpy.random.default_rng(seed)`` and passed to arch's ``seed=`` argument, so results are
  deterministic; a Generator passed in is used (and advanced) as is.

* Speed: ``arch.bootstrap.CircularBlockBootstrap.apply`` draws one resample per Python call
  (about 4 s for 10,000 resamples of 50 rounds). :func:`bootstrap_means` draws the *same* indices
  vectorised: arch draws, per resample, ``ceil(n / block)`` block starts with
  ``generator.integers(n, size=...)`` and wraps ``start + 0..block-1`` modulo ``n``; one
  ``integers(n, size=(resamples, blocks))`` call yields the identical stream. The test suite checks
  that the resample means equal arch's ``apply(np.mean)`` exactly (``engine="arch"`` runs arch
  itself).
* Pooled over runs (:func:`pooled_block_bootstrap_test`): runs are independent, so each run's
  series is resampled on its own (circular blocks within the run, never across runs) and the
  pooled statistic is the mean over runs of the per-run means; p-value and interval as above on
  those pooled resample means. One generator (from ``seed``) serves the runs in order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["block_bootstrap_test", "bootstrap_means", "pooled_block_bootstrap_test"]


def _check_series(cv_series: ArrayLike, block: int) -> np.ndarray:
    x = np.asarray(cv_series, dtype=float).ravel()
    n = int(x.size)
    if n < 2:
        raise ValueError(f"need at least 2 rounds of CVs, got {n}")
    if not np.all(np.isfinite(x)):
        raise ValueError("cv_series contains NaN or infinite values")
    if not 1 <= block <= n:
        raise ValueError(f"block must be between 1 and the series length {n}, got {block}")
    return x


def _check_args(nash_cv: float, n_resamples: int, level: float) -> None:
    if not math.isfinite(nash_cv):
        raise ValueError(f"nash_cv must be finite, got {nash_cv}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")


def bootstrap_means(
    x: ArrayLike, block: int, n_resamples: int, rng: np.random.Generator, engine: str = "numpy"
) -> np.ndarray:
    """Means of ``n_resamples`` circular block bootstrap resamples of ``x`` (arch's draws).

    ``engine="numpy"`` (default) is the vectorised equivalent of ``engine="arch"``
    (``CircularBlockBootstrap(block, x, seed=rng).apply(np.mean, n_resamples)``): same generator
    stream, same indices, same means; ``rng`` is advanced the same way.
    """
    x = np.asarray(x, dtype=float).ravel()
    n = x.size
    if engine == "arch":
        from arch.bootstrap import CircularBlockBootstrap

        return CircularBlockBootstrap(block, x, seed=rng).apply(np.mean, n_resamples).ravel()
    if engine != "numpy":
        raise ValueError(f"engine must be 'numpy' or 'arch', got {engine!r}")
    n_blocks = -(-n // block)
    out = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // (n_blocks * block))
    offsets = np.arange(block, dtype=np.int64)
    for lo in range(0, n_resamples, chunk):
        hi = min(lo + chunk, n_resamples)
        starts = rng.integers(n, size=(hi - lo, n_blocks))
        idx = ((starts[:, :, None] + offsets).reshape(hi - lo, -1)[:, :n]) % n
        out[lo:hi] = x[idx].mean(axis=1)
    return out


def _summary(means: np.ndarray, observed: float, nash_cv: float, level: float) -> dict[str, Any]:
    tie = 1e-12 * max(1.0, abs(observed), abs(nash_cv))
    # recentred: share of (m* - mean + nash_cv) >= mean  <=>  (m* - mean) >= (mean - nash_cv)
    b = len(means)
    p_value = (1 + int(np.sum((means - observed) >= (observed - nash_cv) - tie))) / (1 + b)
    p_value_percentile = (1 + int(np.sum(means <= nash_cv + tie))) / (1 + b)
    tail = 100.0 * (1.0 - level) / 2.0
    ci_lo, ci_hi = np.percentile(means, [tail, 100.0 - tail])
    return {
        "mean": observed,
        "nash_cv": float(nash_cv),
        "p_value": p_value,
        "p_value_percentile": p_value_percentile,
        "ci_lo": float(ci_lo),
        "ci_hi": float(ci_hi),
    }


def block_bootstrap_test(
    cv_series: ArrayLike,
    nash_cv: float,
    block: int = 7,
    n_resamples: int = 10_000,
    seed: int | np.random.Generator = 0,
    level: float = 0.95,
    engine: str = "numpy",
) -> dict[str, Any]:
    """One-sided circular block bootstrap test of ``mean(cv_series) > nash_cv``.

    Returns a JSON-serialisable dict: ``mean`` (observed mean CV), ``nash_cv``, ``p_value``
    (recentred, see the module docstring), ``p_value_percentile`` (the seed code's definition),
    ``ci_lo`` / ``ci_hi`` (percentile interval at ``level``, default 95%), ``n`` (series length),
    ``block``, ``n_resamples``.
    """
    x = _check_series(cv_series, block)
    _check_args(nash_cv, n_resamples, level)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    means = bootstrap_means(x, block, n_resamples, rng, engine)
    return {
        **_summary(means, float(np.mean(x)), nash_cv, level),
        "n": int(x.size),
        "block": int(block),
        "n_resamples": int(n_resamples),
    }


def pooled_block_bootstrap_test(
    series: list[ArrayLike],
    nash_cv: float,
    block: int = 7,
    n_resamples: int = 10_000,
    seed: int | np.random.Generator = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """The same test on the mean over runs of the per-run mean CV (runs resampled independently).

    Returns the keys of :func:`block_bootstrap_test` plus ``runs``; ``n`` is the total number of
    rounds.
    """
    if len(series) == 0:
        raise ValueError("need at least one run")
    xs = [_check_series(s, block) for s in series]
    _check_args(nash_cv, n_resamples, level)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    means = np.mean([bootstrap_means(x, block, n_resamples, rng) for x in xs], axis=0)
    observed = float(np.mean([x.mean() for x in xs]))
    return {
        **_summary(means, observed, nash_cv, level),
        "n": int(sum(x.size for x in xs)),
        "runs": len(xs),
        "block": int(block),
        "n_resamples": int(n_resamples),
    }
