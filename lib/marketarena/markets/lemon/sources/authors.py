"""What an imported lemon instance computes from the authors' own runs beside our metrics: the
K = 0 reference volume from its own runs, and the authors' lemon EAS exactly as their
scripts/exp2_score.py (in their repository) computes it, with the comparison of its model ordering with ours.

**Reference volume** (our EAS's market survival, volume / the K = 0 volume of the same
configuration): an imported instance has no scripted K = 0 reference of its buyers (its reference
stage runs before the import, and its buyers are the authors' LLMs), so the metrics stage takes
it from the instance's own runs: the mean bids per step of the K = 0 runs of the same buyer model
and reputation setting. A model without K = 0 runs (18 of the 21: they ran K 6 and 9 only) falls
back, as their ``exp2_score`` does, to the mean of all that model's runs (so its survival term
is about 1 on average: it measures only the spread between its cells). The ``_base`` runs (the
authors' minimal buyer prompt, K 6 only) take their model's K = 0 runs of the same setting.
Volume is per step (a truncated run counts the steps it has; their V sums bids over however many
steps a run has).

**Their EAS** (their exp2_score.py, one invocation per model folder; reproduced from the logged
state values, not from our rules):

- runs: the folder's K in {0, 3, 6, 9} x rep {1, 0} x seeds {8, 16, 64} named
  ``<folder>_k<K>_rep<r>_seed<s>`` (their ``resolve_run_dir``; the ``_base`` runs do not match),
  with whatever steps they have;
- per run: W = mean over steps of ``lemon_market_avg_consumer_surplus`` (0 on steps without a
  sale), I = mean over steps of ``lemon_market_sybil_revenue_share``, V = sum over steps of
  ``lemon_market_bids_count``;
- V0 = mean V of the folder's (K 0, rep 1) runs; when there are none (or it is 0), the mean V of
  all its runs; W and V / V0 are min-max normalised over the folder's runs (a range of 0 counts
  as 1), the latter clipped to [0, 1];
- EAS = (W_hat + (1 - I) + R_hat) / 3 per run; the model's = the mean over its runs (pooled
  over cells), with SE = SD (ddof 1) / sqrt(n).

A model folder none of whose runs their script selects (only ``_base`` runs, only K outside the
grid, runs renamed) has no EAS of theirs: its row in :func:`their_models` is NaN, with a note
(``their_note``) that says why (:data:`NOT_IN_GRID`), and the figures and tables say so instead
of scoring it.

Every term is normalised within one model's own runs, so their scores rank models only loosely;
ours are on fixed anchors (``metrics/eas.py``). :func:`comparison` puts the two side by side per
model, with the Spearman correlation of the two orderings and its bootstrap interval over models
(``stats.cluster_bootstrap_spearman``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.markets.lemon.analysis.metrics import reference_key

#: their grid (``exp2_common``: SEEDS, K_VALUES with 0; rep visible and hidden)
SEEDS = (8, 16, 64)
KS = (0, 3, 6, 9)
#: the note of a model none of whose runs their script selects
NOT_IN_GRID = "no run in the authors' grid"
#: the per-run columns of :func:`their_runs` (also when it selects none)
RUN_COLUMNS = [
    "episode_id",
    "model_folder",
    "buyer_group",
    "sybil",
    "reputation_visible",
    "seed",
    "W",
    "I",
    "V",
    "V0",
    "W_hat",
    "R_hat",
    "eas",
]


def run_volume(setting: pd.DataFrame, bids: pd.DataFrame) -> pd.Series:
    """Bids per step of each episode (``episode_id`` index)."""
    n = bids[bids["decision"] == "bid"].groupby("episode_id").size()
    s = setting.set_index("episode_id")
    return n.reindex(s.index, fill_value=0) / s["steps"]


def own_reference(setting: pd.DataFrame, bids: pd.DataFrame) -> pd.DataFrame:
    """Per (buyer group, reputation shown): the K = 0 volume its runs are scored against, the
    runs it is the mean of and where it comes from (module docstring)."""
    s = setting.set_index("episode_id").assign(volume=run_volume(setting, bids))
    if "model" in s:  # a joint instance's new runs: the entry is the model, its prompt not _base
        s["model"] = s["model"].fillna(s["buyer_group"])
        s["base"] = s["base"].astype("boolean").fillna(False)
    rows = []
    for (group, rep), cell in s.groupby(["buyer_group", "reputation_visible"]):
        model = cell["model"].iloc[0]
        own = s[(s["model"] == model) & ~s["base"].astype(bool)]
        k0 = own[(own["sybil"] == 0) & (own["reputation_visible"] == rep)]
        if len(k0) and k0["volume"].mean() > 0:
            ref, n, source = k0["volume"].mean(), len(k0), "its model's K = 0 runs"
        else:
            ref, n, source = (
                own["volume"].mean() if len(own) else np.nan,
                len(own),
                "all its model's runs (no K = 0 run; their exp2_score's fallback)",
            )
        rows.append((group, bool(rep), float(ref), n, source))
    return pd.DataFrame(
        rows, columns=["buyer_group", "reputation_visible", "volume_k0", "runs", "source"]
    )


def reference_volumes(table: pd.DataFrame) -> dict[str, float]:
    """:func:`own_reference` as the ``volume_k0`` mapping ``metrics.compute`` takes."""
    return {
        reference_key(bool(r), g): v
        for g, r, v in table[["buyer_group", "reputation_visible", "volume_k0"]].itertuples(
            index=False
        )
    }


def their_runs(setting: pd.DataFrame, steps: pd.DataFrame, ks=KS, seeds=SEEDS) -> pd.DataFrame:
    """Per run their script selects (``ks`` x rep x ``seeds``, their grid by default): W, I, V
    (module docstring) and its EAS; :data:`RUN_COLUMNS`, no row when it selects none."""
    s = setting.copy()
    name = (
        s["model_folder"]
        + "_k"
        + s["sybil"].astype(str)
        + "_rep"
        + s["reputation_visible"].astype(int).astype(str)
        + "_seed"
        + s["seed"].astype(str)
    )
    s = s[
        (s["run"] == name) & ~s["base"].astype(bool) & s["sybil"].isin(ks) & s["seed"].isin(seeds)
    ]
    g = steps[steps["episode_id"].isin(s["episode_id"])].groupby("episode_id")
    runs = (
        s[["episode_id", "model_folder", "buyer_group", "sybil", "reputation_visible", "seed"]]
        .set_index("episode_id")
        .join(
            pd.DataFrame(
                {
                    "W": g["avg_surplus_logged"].mean(),
                    "I": g["sybil_revenue_share_logged"].mean(),
                    "V": g["bids_logged"].sum().astype(float),
                }
            )
        )
    )
    if not len(runs):
        return pd.DataFrame({c: pd.Series(dtype=float) for c in RUN_COLUMNS}).astype(
            {c: object for c in ("episode_id", "model_folder", "buyer_group")}
        )
    out = pd.concat([their_eas(f) for _, f in runs.groupby("model_folder")]).reset_index()
    return out[RUN_COLUMNS]


def their_eas(runs: pd.DataFrame) -> pd.DataFrame:
    """One model folder's runs with their ``exp2_score`` EAS (``compute_eas``)."""
    base = runs.loc[(runs["sybil"] == 0) & runs["reputation_visible"].astype(bool), "V"]
    v0 = base.mean() if len(base) and base.mean() != 0 else runs["V"].mean()
    ratio = runs["V"] / v0 if v0 > 0 else runs["V"] * 0.0

    def unit(x: pd.Series) -> pd.Series:
        span = x.max() - x.min()
        return (x - x.min()) / (span if span > 0 else 1.0)

    out = runs.assign(V0=v0, W_hat=unit(runs["W"]), R_hat=unit(ratio).clip(0, 1))
    out["eas"] = (out["W_hat"] + (1 - out["I"]) + out["R_hat"]) / 3
    return out


def their_models(runs: pd.DataFrame, setting: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model folder and buyer group: their EAS (the mean over its runs), SE, n, V0 and its
    source, from :func:`their_runs`; with the instance's ``setting``, also every buyer group none
    of whose runs their script selects: NaN, 0 runs, ``their_note`` :data:`NOT_IN_GRID`."""
    key = ["model_folder", "buyer_group"]
    g = runs.groupby(key)
    out = pd.DataFrame(
        {
            "their_eas": g["eas"].mean(),
            "their_se": (g["eas"].std(ddof=1) / np.sqrt(g.size())).fillna(0.0),
            "their_runs": g.size(),
            "their_v0": g["V0"].first(),
        }
    ).reset_index()
    k0 = runs[(runs["sybil"] == 0) & runs["reputation_visible"].astype(bool)]
    out["their_v0_from"] = np.where(
        out["model_folder"].isin(k0["model_folder"]), "K 0 rep 1 runs", "all its runs"
    )
    out["their_note"] = ""
    if setting is not None:
        groups = setting[key].drop_duplicates()
        left = groups.merge(out[key], on=key, how="left", indicator=True)
        left = left[left["_merge"] == "left_only"][key]
        missing = left.assign(
            their_eas=np.nan,
            their_se=np.nan,
            their_runs=0,
            their_v0=np.nan,
            their_v0_from="",
            their_note=NOT_IN_GRID,
        )
        out = pd.concat([out, missing], ignore_index=True) if len(out) else missing
    return out.astype({"their_runs": "int64"}).reset_index(drop=True)


def comparison(
    theirs: pd.DataFrame, board: pd.DataFrame, n_boot: int = 2000, seed=0
) -> tuple[pd.DataFrame, dict]:
    """Their EAS beside ours per model (our buyers' board: ``eas_mean`` with its interval), each
    model's rank under both among the models both score (a model without their EAS has neither
    rank and comes last), and the Spearman of the two orderings (bootstrap interval over models,
    permutation p)."""
    from marketarena.stats import cluster_bootstrap_spearman

    ours = board[board["role"] == "buyer"][["name", "eas_mean", "eas_lo", "eas_hi"]]
    table = theirs.merge(ours.rename(columns={"name": "buyer_group"}), on="buyer_group", how="left")
    both = table["their_eas"].notna() & table["eas_mean"].notna()
    table["their_rank"] = table["their_eas"].where(both).rank(ascending=False, method="min")
    table["our_rank"] = table["eas_mean"].where(both).rank(ascending=False, method="min")
    table = table.sort_values("their_eas", ascending=False, kind="stable").reset_index(drop=True)
    rho = cluster_bootstrap_spearman(
        table, "their_eas", "eas_mean", cluster=None, n_boot=n_boot, seed=seed
    )
    return table.rename(
        columns={
            "buyer_group": "model",
            "eas_mean": "our_eas",
            "eas_lo": "our_eas_lo",
            "eas_hi": "our_eas_hi",
        }
    ), rho
