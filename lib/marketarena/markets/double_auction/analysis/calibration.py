"""Calibration of the baseline pool against BAZAAR's published table and games (seed 002).

Two references, both copied into this folder (``analysis/``; BAZAAR's logs carry no licence, so
only figures measured on them are kept):

- ``calibration_targets.csv``: per baseline, measured on the 7,223 baseline seats of BAZAAR's
  1,954 published games: the mean shade (value - bid, ask - cost; positive = shading) in every
  round (``shade_r01`` .. ``shade_r30``), overall and for intra- / extra-marginal seats, the trade
  frequency (``fq``; ``fq_intra``, ``fq_extra``), the share of its seats that were intra-marginal,
  and the seed table's μ. ``calibration_efficiency.csv``: games and mean market efficiency per
  value distribution.
- the seed's table (:data:`SEED_TABLE`, :data:`SEED_LLM_TABLE`).

:func:`behaviour` compares our pool's baselines with the first: shade by round bucket (1-5, ...,
26-30) and trade frequency; a baseline is *within bounds* when every bucket's mean shade is
within 2 of BAZAAR's and its trade frequency within 0.05 of BAZAAR's at our seats' mix of intra-
and extra-marginal seats (``fq_target`` = our intra share × BAZAAR's ``fq_intra`` + the rest ×
its ``fq_extra``: BAZAAR's overall ``fq`` also carries the luck of how many of its ~270 seats
were intra-marginal, 0.45-0.56; ``within_raw`` compares with it directly).
:func:`efficiency` compares the games' mean efficiency per distribution.

The seed's multi-pass TrueSkill table lists every baseline's μ and mean CSα (about 24,000 games
each, Truthful and the two shading baselines about 10,500). :data:`SEED_TABLE` holds those numbers
keyed by the roster names of our default pool; :func:`calibration` matches a leaderboard's
baselines by name and reports Spearman's ρ of our μ with the seed's μ and of our mean CSα with the
seed's, each with a 95% bootstrap interval over the matched baselines (pairs resampled with
replacement, ``stats.cluster_bootstrap_spearman`` without clusters) and a permutation p-value.
Entries of the pool the seed does not list (e.g. ``zip``, whose "ZIP+" the seed describes but does
not rate) are left out of the correlation; so are renamed entries.

Each strategy follows what BAZAAR's published games show its namesake doing (the docstrings of
``double_auction/baselines/__init__.py`` and its modules name the evidence), not a fit to the
seed's rank; the per-baseline table shows where the orders differ.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import numpy as np
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


#: BAZAAR's LLM ``model_name`` in its logs -> (the seed table's label, μ, games), in the table's order
SEED_LLM_TABLE: dict[str, tuple[str, float, int]] = {
    "o3": ("o3 (medium reasoning)", 7.37, 393),
    "gemini-2.5-pro": ("Gemini 2.5 Pro", 7.20, 371),
    "gemini-2.5-flash": ("Gemini 2.5 Flash", 7.16, 412),
    "claude-sonnet-4-20250514-0K": ("Claude Sonnet 4 (no reasoning)", 7.09, 280),
    "grok-4-0709": ("Grok 4", 6.91, 403),
    "claude-opus-4-20250514-16K": ("Claude Opus 4 Thinking 16K", 6.86, 376),
    "o4-mini": ("o4-mini (medium reasoning)", 6.77, 342),
    "r1-0528": ("DeepSeek R1 05/28", 6.55, 328),
    "claude-opus-4-20250514-0K": ("Claude Opus 4 (no reasoning)", 6.53, 319),
    "qwen3-235B": ("Qwen 3 235B A22B", 6.52, 303),
    "claude-sonnet-4-20250514-16K": ("Claude Sonnet 4 Thinking 16K", 6.34, 414),
    "chatgpt-4o-03-27": ("GPT-4o Mar 2025", 5.89, 328),
    "llama4-maverick": ("Llama 4 Maverick", 5.51, 330),
    "deepseek-fireworks-v3-0324": ("DeepSeek V3-0324", 5.22, 297),
    "nova-pro": ("Amazon Nova Pro", 5.22, 231),
    "haiku35": ("Claude 3.5 Haiku", 5.03, 301),
    "qwen3-30b-a3b": ("Qwen 3 30B A3B", 5.02, 300),
    "llama4-scout": ("Llama 4 Scout", 4.93, 317),
    "gpt-4o_mini": ("GPT-4o mini", 4.85, 298),
    "mistral-small-3-2": ("Mistral Small 3.2", 4.75, 327),
    "mistral-medium": ("Mistral Medium 3", 4.71, 317),
    "minimax": ("MiniMax-Text-01", 4.60, 329),
    "phi-4": ("Microsoft Phi-4", 4.42, 313),
    "kimi-k2": ("Kimi K2", 4.41, 321),
    "ernie_4_5_300b_a47b": ("Baidu Ernie 4.5 300B A47B", 4.25, 306),
    "gemma3": ("Gemma 3 27B", 4.15, 145),
}


def llm_calibration(board: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict:
    """Spearman ρ of the μ of a board of BAZAAR's own games (an imported instance's board:
    ``double_auction/sources/analysis.py``) with the seed's table, for its LLMs and for its
    baselines, each with a 95% bootstrap interval over the rated players; and the range of the
    LLMs' μ (the seed's: 4.15-7.37)."""
    b = board.set_index("name")
    out = {}
    for what, table in (
        ("llm", {k: v[1] for k, v in SEED_LLM_TABLE.items()}),
        ("baselines", {k: v[1] for k, v in SEED_TABLE.items()}),
    ):
        rows = pd.DataFrame(
            [(b.loc[n, "mu"], mu) for n, mu in table.items() if n in b.index],
            columns=["mu", "seed_mu"],
        )
        r = cluster_bootstrap_spearman(
            rows, "mu", "seed_mu", cluster=None, n_boot=n_boot, seed=seed, n_perm=0
        )
        out[f"spearman_{what}"] = {"rho": r["rho"], "lo": r["lo"], "hi": r["hi"], "n": r["n"]}
        if what == "llm" and len(rows):
            out["llm_mu_range"] = [float(rows["mu"].min()), float(rows["mu"].max())]
    return out


def matched(board: pd.DataFrame) -> pd.DataFrame:
    """The board's baselines the seed rates, side by side: name, seed label, our and the seed's
    μ, mean CSα and rank among the matched baselines (1 = highest μ)."""
    rows = board[board["name"].isin(SEED_TABLE.keys()) & (board["kind"] == "baseline")]
    out = pd.DataFrame(
        {
            "name": rows["name"].to_numpy(),
            "seed_label": [SEED_TABLE[n][0] for n in rows["name"]],
            "mu": rows["mu"].to_numpy(),
            "seed_mu": [SEED_TABLE[n][1] for n in rows["name"]],
            "csa_mean": rows["csa_mean"].to_numpy(),
            "seed_csa": [SEED_TABLE[n][2] for n in rows["name"]],
        }
    )
    out["rank"] = out["mu"].rank(ascending=False, method="min").astype(int)
    out["seed_rank"] = out["seed_mu"].rank(ascending=False, method="min").astype(int)
    return out.sort_values("seed_rank", kind="stable").reset_index(drop=True)


def calibration(
    board: pd.DataFrame, n_boot: int = 2000, seed: int = 0, n_perm: int = 2000
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, per-baseline table): Spearman ρ of μ and of mean CSα with the seed's, each with
    its 95% bootstrap interval over the matched baselines and a permutation p-value."""
    side = matched(board)
    rows = []
    for what, ours, theirs in (("mu", "mu", "seed_mu"), ("mean CSα", "csa_mean", "seed_csa")):
        r = cluster_bootstrap_spearman(
            side, ours, theirs, cluster=None, n_boot=n_boot, seed=seed, n_perm=n_perm
        )
        rows.append(
            {
                "statistic": what,
                "spearman": r["rho"],
                "lo": r["lo"],
                "hi": r["hi"],
                "p_perm": r["p_perm"],
                "baselines": r["n"],
            }
        )
    return pd.DataFrame(rows), side


#: round buckets of the behaviour table (1-based, inclusive)
BUCKETS = ((1, 5), (6, 10), (11, 15), (16, 20), (21, 25), (26, 30))
SHADE_TOL, FQ_TOL = 2.0, 0.05


def _read(name: str) -> pd.DataFrame:
    folder = resources.files("marketarena.markets.double_auction.analysis")
    with folder.joinpath(name).open() as fh:
        return pd.read_csv(fh)


@cache
def targets() -> pd.DataFrame:
    """``calibration_targets.csv`` indexed by our roster name (see the module docstring)."""
    return _read("calibration_targets.csv").set_index("name")


@cache
def bazaar_efficiency() -> pd.DataFrame:
    """``calibration_efficiency.csv``: distribution, games, efficiency (BAZAAR's logs)."""
    return _read("calibration_efficiency.csv")


def _bucket(step: pd.Series) -> pd.Series:
    return step.astype(int) // 5  # steps are 0-based rounds; 30 rounds make buckets 0..5


def behaviour(agents: pd.DataFrame, rounds: pd.DataFrame) -> pd.DataFrame:
    """Our baselines beside BAZAAR's, one row per baseline the targets list: ``shade_b1`` ..
    ``shade_b6`` (ours) and ``bz_shade_b1`` .. (BAZAAR's) by round bucket, ``max_shade_diff``,
    ``fq``, ``fq_intra``, ``fq_extra``, ``share_intra`` (ours), ``bz_fq``, ``bz_fq_intra``,
    ``fq_target`` (see the module docstring), ``within`` and ``within_raw``. Games of other
    lengths than 30 rounds compare the buckets they have."""
    tg = targets()
    base = agents[(agents["kind"] == "baseline") & agents["name"].isin(tg.index)]
    r = rounds[rounds["name"].isin(base["name"].unique())].dropna(subset=["offset"])
    shade = (-r["offset"]).groupby([r["name"], _bucket(r["step"])]).mean().unstack()
    rows = []
    for name, g in base.groupby("name"):
        t = tg.loc[name]
        ours = shade.loc[name] if name in shade.index else pd.Series(dtype=float)
        row = {"name": name, "seats": len(g)}
        diffs = []
        for k, (a, b) in enumerate(BUCKETS):
            theirs = float(np.mean([t[f"shade_r{i:02d}"] for i in range(a, b + 1)]))
            mine = float(ours.get(k, np.nan))
            row[f"shade_b{k + 1}"], row[f"bz_shade_b{k + 1}"] = mine, theirs
            if np.isfinite(mine):
                diffs.append(abs(mine - theirs))
        share = float(g["intra"].mean())
        fq_target = share * t["fq_intra"] + (1 - share) * t["fq_extra"]
        fq = float(g["trade_freq"].mean())
        row.update(
            max_shade_diff=max(diffs) if diffs else np.nan,
            fq=fq,
            fq_intra=float(g.loc[g["intra"], "trade_freq"].mean()),
            fq_extra=float(g.loc[~g["intra"], "trade_freq"].mean()),
            share_intra=share,
            bz_fq=float(t["fq"]),
            bz_fq_intra=float(t["fq_intra"]),
            fq_target=fq_target,
        )
        shade_ok = bool(diffs) and max(diffs) <= SHADE_TOL
        row["within"] = shade_ok and abs(fq - fq_target) <= FQ_TOL
        row["within_raw"] = shade_ok and abs(fq - t["fq"]) <= FQ_TOL
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    order = tg.index[tg.index.isin(out["name"])]
    return out.set_index("name").loc[order].reset_index()


def efficiency(market: pd.DataFrame) -> pd.DataFrame:
    """Mean market efficiency per value distribution, ours (games, efficiency) beside BAZAAR's
    (bz_games, bz_efficiency); distributions either side lacks are left out."""
    ours = market.groupby("distribution")["efficiency"].agg(games="size", efficiency="mean")
    bz = (
        bazaar_efficiency()
        .set_index("distribution")
        .rename(columns={"games": "bz_games", "efficiency": "bz_efficiency"})
    )
    return ours.join(bz, how="inner").reset_index()


def shade_by_round(rounds: pd.DataFrame) -> pd.DataFrame:
    """Mean shade per baseline and round, ours beside BAZAAR's: name, round (1-based), ours,
    bazaar (NaN past BAZAAR's 30 rounds)."""
    tg = targets()
    r = rounds[rounds["name"].isin(tg.index) & (rounds["kind"] == "baseline")].dropna(
        subset=["offset"]
    )
    ours = (-r["offset"]).groupby([r["name"], r["step"] + 1]).mean().rename("ours").reset_index()
    ours = ours.rename(columns={"step": "round"})
    theirs = tg[[f"shade_r{i:02d}" for i in range(1, 31)]].stack().rename("bazaar").reset_index()
    theirs["round"] = theirs["level_1"].str[-2:].astype(int)
    theirs = theirs.drop(columns="level_1")
    return ours.merge(theirs, on=["name", "round"], how="left")
