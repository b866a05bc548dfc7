"""Bootstrap intervals and rank correlations for per-agent metrics over episodes.

Choices:

- Intervals are percentile bootstrap intervals (the ``(1 - level) / 2`` and ``(1 + level) / 2``
  quantiles of the resampled statistic, numpy's default linear interpolation).
- Correlations are Spearman's rho (average ranks for ties), from
  ``marketarena.metrics.indices.spearman``.
- Correlations over agents x episodes resample whole episodes (clusters), not rows: agents in one
  episode compete with each other, so their metrics are dependent and a row-level bootstrap would
  give intervals that are too narrow. Each resample draws as many clusters as there are, with
  replacement; clusters of unequal size are padded with NaN, which ``spearman`` ignores. With few
  clusters the percentile interval undercovers somewhat (about 91% for a nominal 95% with 12
  episodes of 8 agents, in a simulation under independence); the permutation test holds its level.
- The permutation p-value is two-sided and permutes y *within* clusters (x stays put), which keeps
  each episode's composition and tests "no association inside episodes". p = (1 + #{|rho*| >=
  |rho|}) / (1 + n_perm), so it is never 0.
- NaNs are dropped (values for ``bootstrap_mean_ci``; rows with a NaN in x, y or the cluster column
  for the correlations). Degenerate input (fewer than 3 rows, a constant column) gives NaN, not an
  exception. Resamples whose rho is undefined (e.g. a constant column in the resample) are left
  out of the interval.
- ``seed`` is anything ``numpy.random.default_rng`` accepts; the same inputs and seed always give
  the same numbers. Resampling is vectorised over a (resamples x rows) matrix, processed in blocks
  of at most ``_MAX_CELLS`` cells to bound memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from marketarena.metrics.indices import spearman

CONFIDENCE = 0.95
"""Level of every interval drawn across episodes (:func:`mean_ci`, the figures)."""

__all__ = [
    "bootstrap_mean_ci",
    "bootstrap_mean_cis",
    "cluster_bootstrap_spearman",
    "spearman_table",
]

_MAX_CELLS = 4_000_000


def _in_blocks(n_rows: int, width: int, fn: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """Concatenate fn(start, stop) over blocks of rows, each with rows * width <= _MAX_CELLS."""
    step = max(1, _MAX_CELLS // max(width, 1))
    return np.concatenate([fn(i, min(i + step, n_rows)) for i in range(0, n_rows, step)])


def _interval(draws: np.ndarray, level: float) -> tuple[float, float]:
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return np.nan, np.nan
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _check(n_boot: int, level: float) -> None:
    if n_boot < 1 or not 0 < level < 1:
        raise ValueError("need n_boot >= 1 and 0 < level < 1")


def bootstrap_mean_ci(values, n_boot: int = 2000, seed=0, level: float = 0.95):
    """Mean of ``values`` with a percentile bootstrap interval: ``(mean, lo, hi)``.

    NaNs are dropped first; no values left gives ``(nan, nan, nan)``, one value gives it three
    times.
    """
    _check(n_boot, level)
    v = np.asarray(values, dtype=float).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        return np.nan, np.nan, np.nan
    rng = np.random.default_rng(seed)

    def means(a: int, b: int) -> np.ndarray:
        return v[rng.integers(0, v.size, (b - a, v.size))].mean(axis=1)

    return (float(v.mean()), *_interval(_in_blocks(n_boot, v.size, means), level))


def bootstrap_mean_cis(
    groups: Sequence, n_boot: int = 2000, seed=0, level: float = 0.95
) -> np.ndarray:
    """:func:`bootstrap_mean_ci` for many groups at once (e.g. a figure's cells or days):
    ``(groups, 3)`` rows of (mean, lo, hi). NaNs are dropped per group; groups of the same size
    share one matrix of resampled positions (vectorised), drawn in order of size from one
    generator, so the result depends only on the groups and the seed."""
    _check(n_boot, level)
    vals = [np.asarray(g, dtype=float).ravel() for g in groups]
    vals = [v[~np.isnan(v)] for v in vals]
    out = np.full((len(vals), 3), np.nan)
    rng = np.random.default_rng(seed)
    q = [(1 - level) / 2, (1 + level) / 2]
    by_size: dict[int, list[int]] = {}
    for i, v in enumerate(vals):
        by_size.setdefault(v.size, []).append(i)
    for size in sorted(by_size):
        idx = by_size[size]
        if size == 0:
            continue
        matrix = np.stack([vals[i] for i in idx])  # (groups of this size, size)
        out[idx, 0] = matrix.mean(axis=1)
        picks = rng.integers(0, size, (n_boot, size))
        step = max(1, _MAX_CELLS // (n_boot * size))
        for a in range(0, len(idx), step):
            means = matrix[a : a + step][:, picks].mean(axis=2)  # (block, n_boot)
            out[idx[a : a + step], 1:] = np.quantile(means, q, axis=1).T
    return out


def _cluster_blocks(codes: np.ndarray) -> np.ndarray:
    """(clusters x max size) matrix of row indices of each cluster, padded with -1.

    ``codes`` are cluster codes 0..G-1, sorted ascending.
    """
    sizes = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    blocks = np.full((sizes.size, sizes.max()), -1)
    rows = np.arange(codes.size)
    blocks[codes, rows - starts[codes]] = rows
    return blocks


def cluster_bootstrap_spearman(
    df: pd.DataFrame,
    x: str,
    y: str,
    cluster: str | None = "episode_id",
    n_boot: int = 2000,
    seed=0,
    level: float = 0.95,
    n_perm: int = 2000,
) -> dict:
    """Spearman rho of columns ``x`` and ``y`` over all rows, with a cluster-bootstrap interval
    and a within-cluster permutation p-value.

    Returns ``dict(rho, lo, hi, p_perm, n, clusters)``; ``n`` is the number of rows used and
    ``clusters`` the number of distinct clusters among them. ``cluster=None`` treats every row as
    its own cluster (ordinary bootstrap, unrestricted permutation); ``n_perm=0`` skips the
    permutation test (p_perm NaN). See the module docstring for why whole clusters are resampled.
    """
    _check(n_boot, level)
    d = df[list(dict.fromkeys([x, y] + ([cluster] if cluster is not None else [])))].dropna()
    codes = pd.factorize(d[cluster], sort=True)[0] if cluster is not None else np.arange(len(d))
    xs, ys = d[x].to_numpy(dtype=float), d[y].to_numpy(dtype=float)
    order = np.lexsort((ys, xs, codes))  # by cluster, then values: input row order is irrelevant
    codes, xs, ys = codes[order], xs[order], ys[order]
    n, g = len(d), len(np.unique(codes))
    rho = spearman(xs, ys) if n >= 3 else np.nan
    out = dict(rho=rho, lo=np.nan, hi=np.nan, p_perm=np.nan, n=n, clusters=g)
    if np.isnan(rho):
        return out
    rng = np.random.default_rng(seed)

    blocks = _cluster_blocks(codes)  # resample rows of whole clusters; -1 picks the NaN pad
    x_pad, y_pad = np.append(xs, np.nan), np.append(ys, np.nan)
    picks = rng.integers(0, g, size=(n_boot, g))

    def boot(a: int, b: int) -> np.ndarray:
        rows = blocks[picks[a:b]].reshape(b - a, -1)
        return spearman(x_pad[rows], y_pad[rows])

    out["lo"], out["hi"] = _interval(_in_blocks(n_boot, blocks.size, boot), level)

    strata = codes if cluster is not None else np.zeros(n)  # rows are sorted by stratum, so
    # sorting stratum + U(0, 1) shuffles the rows within each stratum

    def perm(a: int, b: int) -> np.ndarray:
        shuffled = np.argsort(strata + rng.random((b - a, n)), axis=1)
        return spearman(np.broadcast_to(xs, (b - a, n)), ys[shuffled])

    if n_perm > 0:
        null = _in_blocks(n_perm, n, perm)
        out["p_perm"] = float((1 + np.sum(np.abs(null) >= abs(rho) - 1e-12)) / (1 + n_perm))
    return out


def spearman_table(
    df: pd.DataFrame,
    target: str,
    others: Sequence[str],
    cluster: str | None = "episode_id",
    n_boot: int = 2000,
    seed=0,
    level: float = 0.95,
    n_perm: int = 2000,
) -> pd.DataFrame:
    """One row per metric in ``others``: Spearman of ``target`` with it, from
    ``cluster_bootstrap_spearman`` (same seed for every metric). Columns: metric, rho, lo, hi,
    p_perm, n."""
    rows = []
    for metric in others:
        r = cluster_bootstrap_spearman(df, target, metric, cluster, n_boot, seed, level, n_perm)
        rows.append({"metric": metric, **{k: r[k] for k in ("rho", "lo", "hi", "p_perm", "n")}})
    return pd.DataFrame(rows, columns=["metric", "rho", "lo", "hi", "p_perm", "n"])


def mean_ci(
    df: pd.DataFrame,
    by: Sequence[str],
    value: str,
    level: float = CONFIDENCE,
    method: str = "t",
    bounds: tuple[float, float] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean of ``value`` per ``by`` group with a ``level`` interval of that mean.

    One row of ``df`` is one observation (normally one episode). ``method``: ``"t"`` (Student-t) or
    ``"bootstrap"`` (percentile bootstrap over the group's rows, ``n_boot`` resamples, ``seed``);
    ``bounds`` clips the interval (and the mean) to what the quantity can be. Returns columns
    ``*by, mean, lo, hi, n``; ``lo``/``hi`` are NaN where fewer than two non-NaN observations
    exist, ``mean`` is NaN where there are none.
    """
    from scipy.special import stdtrit  # what scipy.stats.t.ppf computes; scipy.stats costs 1.5 s

    if method not in ("t", "bootstrap"):
        raise ValueError(f"method must be 't' or 'bootstrap' (got {method!r})")
    cols = [*by, "mean", "lo", "hi", "n"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    vals = pd.to_numeric(df[value], errors="coerce").astype(float)
    g = vals.groupby([df[b] for b in by], sort=True, dropna=False)
    out = pd.DataFrame({"mean": g.mean(), "sd": g.std(ddof=1), "n": g.count()}).reset_index()
    n = out["n"].to_numpy(dtype=float)
    if method == "t":
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(n >= 2, stdtrit(np.maximum(n - 1, 1), 0.5 + level / 2), np.nan)
            half = t * out["sd"].to_numpy(dtype=float) / np.sqrt(n)
        out["lo"] = out["mean"] - half
        out["hi"] = out["mean"] + half
    else:
        cis = bootstrap_mean_cis(
            [v.to_numpy() for _, v in g], n_boot=n_boot, seed=seed, level=level
        )
        out["lo"] = np.where(n >= 2, cis[:, 1], np.nan)
        out["hi"] = np.where(n >= 2, cis[:, 2], np.nan)
    if bounds is not None:
        for col in ("mean", "lo", "hi"):
            out[col] = out[col].clip(*bounds)
    return out[cols]


def gaussian_kde_1d(points, grid) -> np.ndarray:
    """The density of ``points`` at ``grid`` by a Gaussian kernel with Scott's bandwidth: what
    ``scipy.stats.gaussian_kde(points)(grid)`` gives for one dimension (kernel variance = the
    points' sample variance times n^(-2/5)), equal to it to 1e-12 (``tests/test_stats.py``)
    without importing scipy.stats (1.5 s of a figures stage's start)."""
    x = np.asarray(points, dtype=float)
    at = np.asarray(grid, dtype=float)
    h2 = np.var(x, ddof=1) * x.size ** (-2.0 / 5.0)
    z = (at[:, None] - x[None, :]) ** 2 / (2.0 * h2)
    return np.exp(-z).mean(axis=1) / np.sqrt(2.0 * np.pi * h2)
