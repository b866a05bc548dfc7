"""Calibration of the baseline pool against BAZAAR's published table (seed 002).

The seed's multi-pass TrueSkill table lists every baseline's μ and mean CSα (about 24,000 games
each, Truthful and the two shading baselines about 10,500). :data:`SEED_TABLE` holds those numbers
keyed by the roster names of our default pool; :func:`calibration` matches a leaderboard's
baselines by name and reports Spearman's ρ of our μ with the seed's μ and of our mean CSα with the
seed's, each with a 95% bootstrap interval over the matched baselines (pairs resampled with
replacement, ``stats.cluster_bootstrap_spearman`` without clusters) and a permutation p-value.
Entries of the pool the seed does not list (e.g. ``zip``, whose "ZIP+" the seed describes but does
not rate) are left out of the correlation; so are renamed entries.

Where the seed describes a strategy in a line or not at all (ZIC+, Collusive, LinearEq's setting,
Adaptive's σ, AA-Cliff), our strategy is a documented reading (``baselines.py``), not a fit to the
seed's rank; the per-baseline table shows where the orders differ.
"""

from __future__ import annotations

import pandas as pd

from marketarena.stats import cluster_bootstrap_spearman

#: roster name -> (the seed's label, μ, mean CSα), in the seed's order
SEED_TABLE: dict[str, tuple[str, float, float]] = {
    "enhanced_bayesian": ("Enhanced Bayesian", 5.69, 0.105),
    "tit_for_tat": ("Threat Tit-for-Tat", 5.57, 0.060),
    "momentum": ("Momentum", 5.57, 0.097),
    "bandit": ("Stochastic Shading Bandit", 5.54, 0.049),
    "contrarian": ("Contrarian", 5.51, 0.050),
    "regime_switcher": ("Regime Switcher", 5.41, 0.031),
    "sniper": ("Sniper", 5.39, 0.038),
    "gdx": ("GDX", 5.38, 0.042),
    "risk_aware": ("Risk-Aware", 5.30, 0.090),
    "signal_jammer": ("Signal Jammer", 5.28, 0.012),
    "regression": ("Regression", 5.28, 0.021),
    "zic_plus": ("ZIC+", 5.26, 0.009),
    "shade_5": ("Shading +5", 5.25, 0.013),
    "roth_erev": ("Roth-Erev", 5.25, -0.002),
    "aa": ("Adaptive Aggressive", 5.22, -0.000),
    "mean_reversion": ("Mean Reversion", 5.15, -0.012),
    "aa_cliff": ("Adaptive Aggressive Cliff", 5.12, -0.020),
    "shade_10": ("Shading +10", 5.08, -0.008),
    "collusive": ("Collusive", 5.05, -0.041),
    "truthful": ("Truthful", 5.03, -0.036),
    "q_learning": ("Q-Learning", 4.99, -0.049),
    "zic": ("ZIC Pure Biased Activity", 4.83, -0.049),
    "exploiter": ("Adversarial Exploiter", 4.71, -0.090),
    "fictitious_play": ("Fictitious Play", 4.62, -0.043),
    "gd": ("Gjerstad-Dickhaut", 4.49, -0.075),
    "penny_jumper": ("Penny Jumper", 4.25, -0.148),
    "linear_eq": ("LinearEq", 4.10, -0.147),
    "adaptive": ("Adaptive", 2.41, -0.450),
    "random": ("Random", 2.02, -0.546),
}


def matched(board: pd.DataFrame) -> pd.DataFrame:
    """The board's baselines the seed rates, side by side: name, seed label, our and the seed's
    μ, mean CSα and rank among the matched baselines (1 = highest μ)."""
    rows = board[board["name"].isin(SEED_TABLE.keys()) & (board["kind"] == "baseline")]
    out = pd.DataFrame({
        "name": rows["name"].to_numpy(),
        "seed_label": [SEED_TABLE[n][0] for n in rows["name"]],
        "mu": rows["mu"].to_numpy(), "seed_mu": [SEED_TABLE[n][1] for n in rows["name"]],
        "csa_mean": rows["csa_mean"].to_numpy(), "seed_csa": [SEED_TABLE[n][2] for n in rows["name"]],
    })
    out["rank"] = out["mu"].rank(ascending=False, method="min").astype(int)
    out["seed_rank"] = out["seed_mu"].rank(ascending=False, method="min").astype(int)
    return out.sort_values("seed_rank", kind="stable").reset_index(drop=True)


def calibration(board: pd.DataFrame, n_boot: int = 2000, seed: int = 0,
                n_perm: int = 2000) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, per-baseline table): Spearman ρ of μ and of mean CSα with the seed's, each with
    its 95% bootstrap interval over the matched baselines and a permutation p-value."""
    side = matched(board)
    rows = []
    for what, ours, theirs in (("mu", "mu", "seed_mu"), ("mean CSα", "csa_mean", "seed_csa")):
        r = cluster_bootstrap_spearman(side, ours, theirs, cluster=None, n_boot=n_boot, seed=seed,
                                       n_perm=n_perm)
        rows.append({"statistic": what, "spearman": r["rho"], "lo": r["lo"], "hi": r["hi"],
                     "p_perm": r["p_perm"], "baselines": r["n"]})
    return pd.DataFrame(rows), side
