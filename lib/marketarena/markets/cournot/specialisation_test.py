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
* Ties are decided with a tolerance of ``1e-12 * max(1, |mean|, |nash_cv|)`` (counted as "at or
  above"), so a constant series equal to the Nash CV gives ``p = 1`` whatever the rounding of the
  mean.
* ``ci_lo``, ``ci_hi``: 95% percentile interval of the bootstrap means (``numpy.percentile``, linear
  interpolation).
* Seeding: ``seed`` is an int or a ``numpy.random.Generator``; an int is turned into
  ``numpy.random.default_rng(seed)`` and passed to arch's ``seed=`` argument, so results are
  deterministic; a Generator passed in is used (and advanced) as is.

``arch`` is imported here only, so the rest of the Cournot package does not need it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["block_bootstrap_test"]


def block_bootstrap_test(
    cv_series: ArrayLike,
    nash_cv: float,
    block: int = 7,
    n_resamples: int = 10_000,
    seed: int | np.random.Generator = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """One-sided circular block bootstrap test of ``mean(cv_series) > nash_cv``.

    Returns a JSON-serialisable dict: ``mean`` (observed mean CV), ``nash_cv``, ``p_value``
    (recentred, see the module docstring), ``p_value_percentile`` (the seed code's definition),
    ``ci_lo`` / ``ci_hi`` (percentile interval at ``level``, default 95%), ``n`` (series length),
    ``block``, ``n_resamples``.
    """
    from arch.bootstrap import CircularBlockBootstrap

    x = np.asarray(cv_series, dtype=float).ravel()
    n = int(x.size)
    if n < 2:
        raise ValueError(f"need at least 2 rounds of CVs, got {n}")
    if not np.all(np.isfinite(x)):
        raise ValueError("cv_series contains NaN or infinite values")
    if not math.isfinite(nash_cv):
        raise ValueError(f"nash_cv must be finite, got {nash_cv}")
    if not 1 <= block <= n:
        raise ValueError(f"block must be between 1 and the series length {n}, got {block}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")

    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    bootstrap = CircularBlockBootstrap(block, x, seed=rng)
    means = bootstrap.apply(np.mean, n_resamples).ravel()

    observed = float(np.mean(x))
    tie = 1e-12 * max(1.0, abs(observed), abs(nash_cv))
    # recentred: share of (m* - mean + nash_cv) >= mean  <=>  (m* - mean) >= (mean - nash_cv)
    p_value = float(np.mean((means - observed) >= (observed - nash_cv) - tie))
    p_value_percentile = float(np.mean(means <= nash_cv + tie))
    tail = 100.0 * (1.0 - level) / 2.0
    ci_lo, ci_hi = np.percentile(means, [tail, 100.0 - tail])
    return {
        "mean": observed,
        "nash_cv": float(nash_cv),
        "p_value": p_value,
        "p_value_percentile": p_value_percentile,
        "ci_lo": float(ci_lo),
        "ci_hi": float(ci_hi),
        "n": n,
        "block": int(block),
        "n_resamples": int(n_resamples),
    }
