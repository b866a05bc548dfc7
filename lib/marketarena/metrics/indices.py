"""Market-independent inequality, concentration and mobility indices.

Pure functions over numbers: 1-D array-likes in, Python floats out. ``gini``, ``theil``, ``cv``,
``shares``, ``hhi`` and ``cr`` also take an n-D array and an ``axis`` (default: the last one), so a
(steps x agents) matrix gives one value per step as a numpy array.

Choices shared by all functions:

- Inequality indices (``gini``, ``theil``) clip values at 0 first: the negative funds of a bankrupt
  agent count as zero wealth. ``cv`` does not clip (it is also used for quantities, see its doc).
- A vector that is all zero gives 0 (no inequality, no concentration), not NaN.
- An empty vector gives NaN. A NaN anywhere in a vector gives NaN for that vector, except in
  ``spearman`` / ``rank_mobility``, which drop the pairs that contain a NaN (like pandas'
  ``Series.corr``).
- ``shares`` / ``hhi`` / ``cr`` expect non-negative inputs (revenue, quantities) and raise
  ``ValueError`` otherwise, because shares of mixed-sign totals are meaningless.
"""

from __future__ import annotations

import numpy as np

__all__ = ["gini", "theil", "cv", "shares", "hhi", "cr", "spearman", "rank_mobility"]


def _along(x, axis: int) -> np.ndarray:
    """``x`` as a float array with the reduced axis moved last (scalars become length-1)."""
    return np.moveaxis(np.atleast_1d(np.asarray(x, dtype=float)), axis, -1)


def _out(value, n: int):
    """NaN for empty input; Python float for a 0-d result, else the array."""
    value = np.where(n == 0, np.nan, value)
    return float(value) if value.ndim == 0 else value


def gini(x, axis: int = -1):
    """Gini coefficient: mean absolute difference over all ordered pairs / (2 * mean).

    G = sum_i sum_j |x_i - x_j| / (2 n^2 mean(x)), computed from the sorted values as
    G = sum_i (2i - n - 1) x_(i) / (n * sum(x)), i = 1..n. With the n^2 normaliser, G lies in
    [0, (n-1)/n]: gini([1, 2, 3, 4]) = 0.25, gini([0, 0, 0, 10]) = 0.75.
    Values are clipped at 0 (negative wealth of a bankrupt agent counts as 0). All zero -> 0.
    """
    v = np.sort(np.clip(_along(x, axis), 0.0, None), axis=-1)
    n = v.shape[-1]
    weights = 2.0 * np.arange(1, n + 1) - n - 1
    total = v.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(total > 0, (v * weights).sum(axis=-1) / (n * total), 0.0)
    return _out(np.where(np.isnan(total), np.nan, g), n)


def theil(x, axis: int = -1):
    """Theil T index: mean((x / mu) * ln(x / mu)), with 0 * ln 0 = 0.

    Lies in [0, ln n]: 0 for equal values, ln n when one agent holds everything
    (theil([0, 0, 0, 1]) = ln 4). Values are clipped at 0 (bankrupt agents count as 0).
    All zero -> 0.
    """
    v = np.clip(_along(x, axis), 0.0, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = v.sum(axis=-1, keepdims=True) / v.shape[-1]
        r = np.where(mu > 0, v / mu, 0.0)
        terms = np.where(r > 0, r * np.log(np.where(r > 0, r, 1.0)), 0.0)
        t = terms.sum(axis=-1) / v.shape[-1]
    return _out(np.where(np.isnan(mu[..., 0]), np.nan, t), v.shape[-1])


def cv(x, eps: float = 0.0, axis: int = -1):
    """Coefficient of variation: population SD (ddof=0) / (mean + eps).

    ``eps`` is the additive guard of Market-Bench eq. (18), CV = sigma / (mu + eps) (used by OSI);
    the default 0 gives the plain CV (Cournot specialisation: CV of a firm's quantities across
    products, 1 for complete specialisation over two products). A zero denominator gives 0.
    Values are not clipped; a negative mean gives a negative CV. Scale invariant when eps = 0.
    """
    v = _along(x, axis)
    n = v.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = v.sum(axis=-1, keepdims=True) / n
        sd = np.sqrt(((v - mu) ** 2).sum(axis=-1) / n)
        denom = mu[..., 0] + eps
        c = np.where(denom == 0, 0.0, sd / denom)
    return _out(np.where(np.isnan(denom), np.nan, c), n)


def shares(x, axis: int = -1) -> np.ndarray:
    """Shares x / sum(x) along ``axis`` (same shape as ``x``); a zero total gives all zeros.

    Raises ValueError on negative values.
    """
    v = np.atleast_1d(np.asarray(x, dtype=float))
    if np.any(v < 0):
        raise ValueError("shares need non-negative values")
    total = v.sum(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total == 0, 0.0, v / total)


def hhi(x, axis: int = -1):
    """Herfindahl-Hirschman index: sum of squared shares, on the [0, 1] scale (not 0..10,000).

    1/n for n equal agents, 1 for a monopoly, 0 when everything is zero.
    """
    s = np.moveaxis(shares(x, axis), axis, -1)
    return _out((s**2).sum(axis=-1), s.shape[-1])


def cr(x, k: int = 4, axis: int = -1):
    """Concentration ratio CR_k: combined share of the k largest values (1 if k >= n with a
    non-zero total, 0 when everything is zero). cr of 20 equal values with k = 4 is 0.2."""
    if k < 1:
        raise ValueError("k must be >= 1")
    s = np.sort(np.moveaxis(shares(x, axis), axis, -1), axis=-1)
    return _out(s[..., ::-1][..., :k].sum(axis=-1), s.shape[-1])


def average_ranks(v) -> np.ndarray:
    """Ranks 1..n along the last axis, ties sharing the mean of their ranks (``scipy.stats.
    rankdata``'s ``average``, the same numbers: halves are exact); NaNs rank after every number
    (their own ranks mean nothing: callers mask them). numpy only: scipy.stats costs a stage
    1.3 s to import."""
    v = np.asarray(v, dtype=float)
    n = v.shape[-1]
    order = np.argsort(v, axis=-1, kind="stable")
    ordered = np.take_along_axis(v, order, axis=-1)
    first = np.ones(v.shape, dtype=bool)  # a new value starts at this position
    first[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    last = np.ones(v.shape, dtype=bool)
    last[..., :-1] = first[..., 1:]
    at = np.broadcast_to(np.arange(n), v.shape)
    start = np.maximum.accumulate(np.where(first, at, 0), axis=-1)
    end = np.flip(np.minimum.accumulate(np.flip(np.where(last, at, n), axis=-1), axis=-1), axis=-1)
    ranks = np.empty(v.shape, dtype=float)
    np.put_along_axis(ranks, order, (start + end) / 2 + 1, axis=-1)
    return ranks


def _centred_ranks(v, ok, n_pairs):
    """Average ranks along the last axis minus their mean; 0 where ``ok`` is False."""
    r = np.where(ok, average_ranks(v), 0.0)
    return np.where(ok, r - r.sum(axis=-1, keepdims=True) / n_pairs, 0.0)


def spearman(x, y, axis: int = -1):
    """Spearman rank correlation: Pearson correlation of average ranks (ties share the mean rank).

    Pairs where either value is NaN are dropped. NaN if fewer than 2 pairs remain or either
    side is constant. Works along ``axis`` for n-D inputs of the same shape (used by
    ``marketarena.stats`` on a (resamples x rows) matrix); agrees with ``scipy.stats.spearmanr``.
    """
    a, b = _along(x, axis), _along(y, axis)
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: {a.shape} vs {b.shape}")
    ok = ~(np.isnan(a) | np.isnan(b))
    n_pairs = ok.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        da, db = (_centred_ranks(np.where(ok, v, np.nan), ok, n_pairs) for v in (a, b))
        sab, saa, sbb = ((p * q).sum(axis=-1) for p, q in ((da, db), (da, da), (db, db)))
        rho = np.clip(sab / np.sqrt(saa * sbb), -1.0, 1.0)
    rho = np.where((n_pairs[..., 0] < 2) | (saa <= 0) | (sbb <= 0), np.nan, rho)
    return float(rho) if rho.ndim == 0 else rho


def rank_mobility(prev, cur) -> float:
    """Rank mobility between two steps: 1 - Spearman(prev, cur), in [0, 2].

    0 when the ordering is unchanged, 2 when it is exactly reversed. ``prev`` and ``cur`` hold
    the same agents in the same order; an agent with NaN in either step is left out.
    NaN if either vector is constant or fewer than 2 agents remain.
    """
    prev, cur = np.asarray(prev, dtype=float), np.asarray(cur, dtype=float)
    if prev.ndim != 1 or prev.shape != cur.shape:
        raise ValueError("rank_mobility needs two 1-D vectors of equal length")
    return 1.0 - spearman(prev, cur)
