"""Cournot metrics from the episode logs alone (``states``, ``firms``, ``reference``, ``decisions``).

Per agent and episode (``agents``):
  profit        Σ_t profit (rank_by)
  profit_gain   (mean per-round profit − Nash profit) / (monopoly profit − Nash profit) of this
                firm, Calvano et al.'s Δ: 0 at Nash, 1 at the collusive plan (NaN if equal)
  mean_cv       mean over rounds of the firm's specialisation CV (seed eq. 4, population SD / mean
                of its quantities across products; 0 in a round it produced nothing)
  nash_cv, monopoly_cv   the firm's CV at the references
  cv_p_value, cv_ci_lo, cv_ci_hi   the one-sided circular block bootstrap test of mean CV > Nash CV
                (seed B.3; ``specialisation.py``; block, resamples, seed, level from params
                ``bootstrap``; the seed of episode e, firm i is SeedSequence([seed, run, i]))
  specialised   cv_p_value < bootstrap.alpha
  mean_quantity mean total units per round; share_<product>: mean market share of that product
  scaled_rate   share of rounds whose plan was scaled down to capacity
  invalid_rate  share of rounds whose answer was invalid (fallback applied)

Every per-agent frame carries ``lineup`` ("F1 name vs F2 name ...", seats in order).
Per agent and round (``agent_rounds``, ``step`` = the round, 0-based): cv, quantity, profit, total_profit, scaled, nash_cv,
monopoly_cv.
Per agent, product and round (``product_rounds``): quantity, share, price, profit, with the firm's
Nash and monopoly quantity. Per round and product (``market``): total quantity, price, HHI of the
quantity shares, Nash and monopoly price. ``specialisation``: the bootstrap test per run and pooled
over runs per agent name (``pooled_block_bootstrap_test`` on the per-run series CV − Nash CV of
the seat played, tested against 0, mean and interval shifted back by the mean Nash CV; runs are
resampled independently).
``reference``: each episode's reference rows (per seat and product) with the agent names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.core.reader import EpisodeReader
from marketarena.markets.cournot.analysis.specialisation import (
    block_bootstrap_test,
    pooled_block_bootstrap_test,
)
from marketarena.metrics import indices

#: per-agent columns for stats / leaderboards (profit_gain is also computed, but it is an affine
#: function of profit within a seat, so it is left out of the Spearman table)
AGENT_METRICS = ("profit", "mean_cv", "cv_p_value", "mean_quantity", "scaled_rate", "invalid_rate")
TABLES = ("agents", "decisions", "states", "firms", "reference")


def _test_seed(seed: int, run: int, firm: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, run, firm]))


def episode_metrics(tables: dict[str, pd.DataFrame], boot, run: int) -> dict[str, pd.DataFrame]:
    agents, states, firms = tables["agents"], tables["states"], tables["firms"]
    ref, dec = tables["reference"], tables["decisions"]
    rounds = firms["step"].nunique()
    rows, tests = [], []
    for i, agent_id in enumerate(agents["agent_id"]):
        f = firms[firms["agent_id"] == agent_id].sort_values("step")
        s = states[states["agent_id"] == agent_id]
        r = ref[ref["agent_id"] == agent_id]
        nash_pi, mono_pi = r["nash_profit"].sum(), r["monopoly_profit"].sum()
        nash_cv, mono_cv = float(r["nash_cv"].iloc[0]), float(r["monopoly_cv"].iloc[0])
        mean_pi = f["profit"].mean()
        test = block_bootstrap_test(
            f["cv"].to_numpy(),
            nash_cv,
            block=min(boot.block, len(f)),
            n_resamples=boot.n_resamples,
            seed=_test_seed(boot.seed, run, i),
            level=boot.level,
        )
        d = dec[dec["agent_id"] == agent_id]
        row = {
            "agent_id": agent_id,
            "profit": f["profit"].sum(),
            "profit_gain": (mean_pi - nash_pi) / (mono_pi - nash_pi)
            if not np.isclose(mono_pi, nash_pi)
            else np.nan,
            "mean_cv": f["cv"].mean(),
            "nash_cv": nash_cv,
            "monopoly_cv": mono_cv,
            "cv_p_value": test["p_value"],
            "cv_ci_lo": test["ci_lo"],
            "cv_ci_hi": test["ci_hi"],
            "specialised": test["p_value"] < boot.alpha,
            "mean_quantity": f["quantity"].mean(),
            "scaled_rate": f["scaled"].mean(),
            "invalid_rate": (~d["valid"].astype(bool)).sum() / max(rounds, 1),
        }
        for prod, g in s.groupby("product", sort=False):
            row[f"share_{prod}"] = g["share"].mean()
        rows.append(row)
        tests.append({"scope": "run", "agent_id": agent_id, **test})
    agent_rows = agents.merge(pd.DataFrame(rows), on="agent_id")
    agent_rounds = (
        agents[["agent_id", "name"]]
        .merge(
            firms[["step", "agent_id", "cv", "quantity", "profit", "total_profit", "scaled"]],
            on="agent_id",
        )
        .merge(
            ref.groupby("agent_id")[["nash_cv", "monopoly_cv"]].first().reset_index(), on="agent_id"
        )
    )
    product_rounds = (
        agents[["agent_id", "name"]]
        .merge(
            states[["step", "agent_id", "product", "cost", "quantity", "share", "price", "profit"]],
            on="agent_id",
        )
        .merge(
            ref[["agent_id", "product", "nash_quantity", "monopoly_quantity"]],
            on=["agent_id", "product"],
        )
    )
    market = []
    ref_prices = ref.groupby("product")[["nash_price", "monopoly_price"]].first()
    for (t, prod), g in states.groupby(["step", "product"], sort=True):
        q = g["quantity"].to_numpy()
        market.append(
            {
                "step": t,
                "product": prod,
                "total_quantity": q.sum(),
                "price": g["price"].iloc[0],
                "hhi": indices.hhi(q),
                "nash_price": ref_prices.loc[prod, "nash_price"],
                "monopoly_price": ref_prices.loc[prod, "monopoly_price"],
            }
        )
    spec = agents[["agent_id", "name", "kind", "strategy"]].merge(
        pd.DataFrame(tests), on="agent_id"
    )
    lineup = " vs ".join(agents.sort_values("agent_id")["name"])
    for frame in (agent_rows, agent_rounds, product_rounds):
        frame.insert(2, "lineup", lineup)
    return {
        "agents": agent_rows,
        "agent_rounds": agent_rounds,
        "product_rounds": product_rounds,
        "market": pd.DataFrame(market),
        "specialisation": spec,
        "reference": agents[["agent_id", "name"]].merge(ref, on="agent_id"),
    }


def compute(reader: EpisodeReader, boot) -> dict[str, pd.DataFrame]:
    out: dict[str, list[pd.DataFrame]] = {}
    series: dict[str, list] = {}
    for episode_id, tables in reader.require().episodes(*TABLES):
        frames = episode_metrics(tables, boot, reader.meta(episode_id)["run_index"])
        for name, frame in frames.items():
            frame.insert(0, "episode_id", episode_id)
            out.setdefault(name, []).append(frame)
        firms = tables["firms"].merge(tables["agents"][["agent_id", "name"]], on="agent_id")
        nash_cv = tables["reference"].groupby("agent_id")["nash_cv"].first()
        for name, g in firms.sort_values("step").groupby("name", sort=True):
            excess = g["cv"].to_numpy() - nash_cv[g["agent_id"].iloc[0]]
            series.setdefault(name, []).append((excess, nash_cv[g["agent_id"].iloc[0]]))
    result = {name: pd.concat(frames, ignore_index=True) for name, frames in out.items()}
    spec = result["specialisation"]
    pooled = []
    for k, (name, runs) in enumerate(sorted(series.items())):
        info = spec[spec["name"] == name].iloc[0]
        excess = [x for x, _ in runs]
        nash_cv = float(np.mean([c for _, c in runs]))
        # the test of mean(CV - Nash CV) > 0 (a firm may sit in seats with different Nash CVs)
        test = pooled_block_bootstrap_test(
            excess,
            0.0,
            block=min([boot.block, *map(len, excess)]),
            n_resamples=boot.n_resamples,
            seed=np.random.default_rng(np.random.SeedSequence([boot.seed, 1_000_003, k])),
            level=boot.level,
        )
        for key in ("mean", "ci_lo", "ci_hi"):
            test[key] += nash_cv
        test["nash_cv"] = nash_cv
        pooled.append(
            {
                "episode_id": "pooled",
                "agent_id": "",
                "name": name,
                "kind": info["kind"],
                "strategy": info["strategy"],
                "scope": "pooled",
                **test,
            }
        )
    result["specialisation"] = pd.concat([spec, pd.DataFrame(pooled)], ignore_index=True)
    result["specialisation"]["significant"] = result["specialisation"]["p_value"] < boot.alpha
    return result
