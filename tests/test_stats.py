"""Tests for marketarena.stats: bootstrap means and cluster-bootstrap Spearman."""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from marketarena.stats import bootstrap_mean_ci, cluster_bootstrap_spearman, spearman_table


def panel(n_episodes=12, n_agents=8, seed=0, effect=0.0, cluster_sd=0.0):
    """agents x episodes rows; y = effect * x + noise, both shifted by a shared episode effect."""
    rng = np.random.default_rng(seed)
    ep = np.repeat(np.arange(n_episodes), n_agents)
    shift = rng.normal(scale=cluster_sd, size=n_episodes)[ep]
    x = rng.normal(size=ep.size) + shift
    y = effect * x + rng.normal(size=ep.size) + shift
    return pd.DataFrame(
        {"episode_id": ep, "agent": np.tile(np.arange(n_agents), n_episodes), "x": x, "y": y}
    )


# --- bootstrap_mean_ci ----------------------------------------------------------------------


def test_bootstrap_mean_ci_basic():
    v = np.random.default_rng(1).normal(10.0, 2.0, size=400)
    mean, lo, hi = bootstrap_mean_ci(v, seed=3)
    assert mean == pytest.approx(v.mean())
    assert lo < mean < hi
    normal_half_width = 1.96 * v.std() / math.sqrt(v.size)
    assert (hi - lo) / 2 == pytest.approx(normal_half_width, rel=0.15)


def test_bootstrap_mean_ci_deterministic_and_seeded():
    v = np.arange(30.0) ** 1.5
    assert bootstrap_mean_ci(v, seed=7) == bootstrap_mean_ci(v, seed=7)
    assert bootstrap_mean_ci(v, seed=7) != bootstrap_mean_ci(v, seed=8)


def test_bootstrap_mean_ci_degenerate():
    assert bootstrap_mean_ci([4.0, 4.0, 4.0]) == (4.0, 4.0, 4.0)
    assert bootstrap_mean_ci([2.5]) == (2.5, 2.5, 2.5)
    assert all(math.isnan(a) for a in bootstrap_mean_ci([]))
    assert all(math.isnan(a) for a in bootstrap_mean_ci([np.nan, np.nan]))
    assert bootstrap_mean_ci([1.0, np.nan, 3.0])[0] == 2.0
    with pytest.raises(ValueError):
        bootstrap_mean_ci([1.0, 2.0], level=1.0)


def test_bootstrap_mean_ci_level():
    v = np.random.default_rng(2).exponential(size=100)
    _, lo90, hi90 = bootstrap_mean_ci(v, level=0.90)
    _, lo99, hi99 = bootstrap_mean_ci(v, level=0.99)
    assert lo99 < lo90 < hi90 < hi99


# --- cluster_bootstrap_spearman -------------------------------------------------------------


def test_monotone_gives_one_and_collapsed_interval():
    df = panel()
    df["y"] = np.exp(df["x"])  # strictly monotone transform
    r = cluster_bootstrap_spearman(df, "x", "y", n_boot=500, n_perm=500)
    assert (r["rho"], r["lo"], r["hi"]) == (1.0, 1.0, 1.0)
    assert r["p_perm"] == pytest.approx(1 / 501)
    assert (r["n"], r["clusters"]) == (96, 12)
    r = cluster_bootstrap_spearman(df.assign(y=-df["y"]), "x", "y", n_boot=200, n_perm=200)
    assert (r["rho"], r["lo"], r["hi"]) == (-1.0, -1.0, -1.0)


def test_independent_data_interval_contains_zero():
    r = cluster_bootstrap_spearman(panel(seed=1), "x", "y", seed=11)
    assert r["lo"] < 0.0 < r["hi"]
    assert r["lo"] <= r["rho"] <= r["hi"]
    assert r["p_perm"] > 0.05


def test_independent_data_interval_contains_zero_most_of_the_time():
    results = [
        cluster_bootstrap_spearman(panel(seed=s), "x", "y", n_boot=400, n_perm=400, seed=s)
        for s in range(20)
    ]
    # nominal 95%; the percentile cluster interval undercovers a little with 12 clusters (about
    # 91% in a 300-dataset simulation), and these 20 datasets hold 3 with |z| > 2.5 by chance
    assert sum(r["lo"] < 0.0 < r["hi"] for r in results) >= 15
    assert sum(r["p_perm"] > 0.05 for r in results) >= 15


def test_strong_association_detected():
    df = panel(seed=5, effect=1.0)
    r = cluster_bootstrap_spearman(df, "x", "y", seed=11)
    assert r["rho"] == pytest.approx(scipy.stats.spearmanr(df["x"], df["y"]).statistic)
    assert 0.2 < r["lo"] < r["rho"] < r["hi"]
    assert r["p_perm"] < 0.01


def test_deterministic_with_seed():
    df = panel(seed=2, effect=0.3)
    a = cluster_bootstrap_spearman(df, "x", "y", n_boot=300, n_perm=300, seed=4)
    b = cluster_bootstrap_spearman(df, "x", "y", n_boot=300, n_perm=300, seed=4)
    c = cluster_bootstrap_spearman(df, "x", "y", n_boot=300, n_perm=300, seed=5)
    assert a == b
    assert a["rho"] == c["rho"] and (a["lo"], a["hi"]) != (c["lo"], c["hi"])
    shuffled = df.sample(frac=1.0, random_state=0)  # row order must not matter
    assert cluster_bootstrap_spearman(shuffled, "x", "y", n_boot=300, n_perm=300, seed=4) == a


def test_one_cluster_collapses_interval():
    df = panel(n_episodes=1, n_agents=30, seed=9, effect=0.5)
    r = cluster_bootstrap_spearman(df, "x", "y", n_boot=300, n_perm=300)
    assert r["clusters"] == 1
    assert r["lo"] == pytest.approx(r["rho"]) and r["hi"] == pytest.approx(r["rho"])
    # the same rows treated as independent give a real interval
    r_rows = cluster_bootstrap_spearman(df, "x", "y", cluster=None, n_boot=300, n_perm=300)
    assert r_rows["hi"] - r_rows["lo"] > 0.1


def test_bootstrap_matches_loop_over_resampled_clusters():
    """Vectorised padded resampling == concatenating the drawn clusters and calling scipy."""
    df = panel(n_episodes=7, n_agents=5, seed=4, effect=0.5)
    df = df.drop(index=[0, 1, 7, 20])  # unequal cluster sizes
    df.loc[df.index[3], "y"] = df["y"].iloc[4]  # a tie
    n_boot, seed = 200, 6
    r = cluster_bootstrap_spearman(df, "x", "y", n_boot=n_boot, seed=seed, n_perm=0)
    groups = [g[["x", "y"]].to_numpy() for _, g in df.groupby("episode_id", sort=True)]
    picks = np.random.default_rng(seed).integers(0, len(groups), size=(n_boot, len(groups)))
    rhos = []
    for row in picks:
        data = np.concatenate([groups[i] for i in row])
        rhos.append(scipy.stats.spearmanr(data[:, 0], data[:, 1]).statistic)
    lo, hi = np.quantile(np.array(rhos)[~np.isnan(rhos)], [0.025, 0.975])
    assert (r["lo"], r["hi"]) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert math.isnan(r["p_perm"])


def test_clusters_widen_interval_under_episode_dependence():
    """Episode effects make rows dependent: the cluster interval must be wider than the row one."""
    df = panel(n_episodes=10, n_agents=20, seed=8, cluster_sd=2.0)
    by_episode = cluster_bootstrap_spearman(df, "x", "y", n_boot=1000, n_perm=1000)
    by_row = cluster_bootstrap_spearman(df, "x", "y", cluster=None, n_boot=1000, n_perm=1000)
    assert by_episode["rho"] == by_row["rho"]
    assert by_episode["hi"] - by_episode["lo"] > 2 * (by_row["hi"] - by_row["lo"])
    # all association is between episodes: permuting within episodes keeps it (p large),
    # permuting across episodes destroys it (p small)
    assert by_episode["p_perm"] > 0.05
    assert by_row["p_perm"] < 0.01


def test_degenerate_inputs_give_nan():
    df = panel(n_episodes=3, n_agents=4)
    keys = ("rho", "lo", "hi", "p_perm")
    for bad in (df.assign(y=1.0), df.iloc[:2], df.assign(x=np.nan), df.iloc[:0]):
        r = cluster_bootstrap_spearman(bad, "x", "y", n_boot=50, n_perm=50)
        assert all(math.isnan(r[k]) for k in keys)
    assert cluster_bootstrap_spearman(df.iloc[:2], "x", "y")["n"] == 2


def test_nan_rows_dropped():
    df = panel(n_episodes=4, n_agents=5, effect=1.0)
    df.loc[[0, 6], "x"] = np.nan
    df.loc[11, "episode_id"] = np.nan
    r = cluster_bootstrap_spearman(df, "x", "y", n_boot=100, n_perm=100)
    clean = df.dropna()
    assert r["n"] == 17 and r["clusters"] == 4
    assert r["rho"] == pytest.approx(scipy.stats.spearmanr(clean["x"], clean["y"]).statistic)


# --- spearman_table -------------------------------------------------------------------------


def test_spearman_table():
    df = panel(seed=3, effect=1.0)
    df["z"] = np.random.default_rng(0).normal(size=len(df))
    df["const"] = 5.0
    t = spearman_table(df, "y", ["x", "z", "const"], cluster="episode_id", n_boot=200, seed=1)
    assert list(t.columns) == ["metric", "rho", "lo", "hi", "p_perm", "n"]
    assert list(t["metric"]) == ["x", "z", "const"]
    direct = cluster_bootstrap_spearman(df, "y", "z", n_boot=200, seed=1)
    row = t.set_index("metric").loc["z"]
    assert (row["rho"], row["lo"], row["hi"], row["p_perm"]) == tuple(
        direct[k] for k in ("rho", "lo", "hi", "p_perm")
    )
    assert t.loc[0, "lo"] > 0.2 and math.isnan(t.loc[2, "rho"])


def test_bootstrap_mean_cis_for_many_groups_at_once():
    from marketarena.stats import bootstrap_mean_cis

    groups = [
        [0.0, 1.0, 1.0, 0.0, 1.0],
        [2.0, 4.0],
        [5.0],
        [],
        [np.nan, 3.0, 3.0],
        [1.0, 0.0, 0.0, 0.0, 1.0],
    ]
    out = bootstrap_mean_cis(groups, n_boot=500, seed=3)
    assert out[0, 0] == pytest.approx(0.6) and out[1, 0] == 3.0
    assert out[2].tolist() == [5.0, 5.0, 5.0] and np.isnan(out[3]).all()
    assert out[4].tolist() == [3.0, 3.0, 3.0]  # NaN dropped; a constant group has no spread
    for row, g in zip(out, groups):  # a percentile bootstrap never leaves the observed values
        v = np.asarray(g, float)
        v = v[~np.isnan(v)]
        if v.size:
            assert v.min() <= row[1] <= row[0] <= row[2] <= v.max()
    assert out[0, 1] < out[0, 2]
    np.testing.assert_array_equal(out, bootstrap_mean_cis(groups, n_boot=500, seed=3))
    # the same spread as bootstrap_mean_ci's, within resampling noise
    lo, hi = bootstrap_mean_ci(groups[0], n_boot=4000, seed=1)[1:]
    wide = bootstrap_mean_cis([groups[0]], n_boot=4000, seed=2)[0]
    assert abs(wide[1] - lo) <= 0.21 and abs(wide[2] - hi) <= 0.21


def test_the_kde_is_scipys_gaussian_kde():
    from scipy.stats import gaussian_kde

    from marketarena.stats import gaussian_kde_1d

    rng = np.random.default_rng(3)
    for n in (2, 7, 120):
        points = rng.gamma(2.0, 30.0, size=n)
        grid = np.linspace(0, points.max() * 1.1, 200)
        ours = gaussian_kde_1d(points, grid)
        np.testing.assert_allclose(ours, gaussian_kde(points)(grid), rtol=1e-12, atol=1e-300)
    # a density: it integrates to 1 over a wide grid
    grid = np.linspace(-500, 800, 20001)
    assert np.trapezoid(gaussian_kde_1d([10.0, 40.0, 45.0], grid), grid) == pytest.approx(1, 1e-6)
