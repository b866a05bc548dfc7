"""The seed's Figure 4 as per-step series, from our lemon log tables: the same computation for the
authors' imported runs (the metrics of an imported instance, ``lemon/sources/analysis.py``) and
for our scripted sweep of the same grid (the reference of an imported instance, :func:`sweep`).

Per episode and step (``step`` 0-based): ``sybil_revenue_share`` (Sybil revenue / revenue of the
step's sales, 0 without sales: their ``lemon_market_sybil_revenue_share``), ``bids`` and
``passes`` (buyers who bid / passed: their ``lemon_market_bids_count`` and ``_passes_count``;
bids, not sales), ``honest_reputation`` and ``sybil_reputation`` (the mean reputation after the
step of the active sellers of each kind: the authors' own panel (c) reads a ``sybil`` flag their
attributes file does not have, so its Sybil series is empty and its honest one holds every seller
and the retired identities' stubs at 1.0; here the kind is the seller's and retired identities
are not active), with the episode's cell (``sybil``, ``reputation_visible``, ``buyer_group``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SERIES = ("sybil_revenue_share", "bids", "passes", "honest_reputation", "sybil_reputation")
CELL = ["sybil", "reputation_visible", "buyer_group"]


def series(
    listings: pd.DataFrame, bids: pd.DataFrame, reputation: pd.DataFrame, setting: pd.DataFrame
) -> pd.DataFrame:
    """The per-step series of every episode in the tables (each with an ``episode_id``)."""
    key = ["episode_id", "step"]
    sold = listings[listings["sold"]]
    revenue = sold.groupby(key)["price"].sum()
    sybil = sold[sold["kind"] == "sybil"].groupby(key)["price"].sum()
    out = pd.DataFrame(
        {
            "bids": bids["decision"].eq("bid").groupby([bids["episode_id"], bids["step"]]).sum(),
            "passes": bids["decision"].eq("pass").groupby([bids["episode_id"], bids["step"]]).sum(),
        }
    )
    share = sybil.reindex(revenue.index, fill_value=0.0) / revenue.where(revenue > 0)
    out["sybil_revenue_share"] = share.reindex(out.index).fillna(0.0)
    active = reputation[reputation["active"].astype(bool)]
    mean = active.groupby([*key, "kind"])["reputation"].mean().unstack("kind")
    for kind in ("honest", "sybil"):
        col = mean[kind] if kind in mean.columns else pd.Series(np.nan, index=mean.index)
        out[f"{kind}_reputation"] = col.reindex(out.index)
    out = out.reset_index()
    cell = setting[["episode_id", *[c for c in (*CELL, "base", "model") if c in setting]]]
    return out.merge(cell, on="episode_id")[["episode_id", "step", *cell.columns[1:], *SERIES]]


def sweep(rules, mp, seeds: int) -> pd.DataFrame:
    """Play our scripted sweep of ``mp``'s grid (every cell of K x reputation shown x buyer group,
    ``seeds`` episodes each, seeds from (seed, 2 * 10**6 + i)) with the instance's roster, built
    by lemon's ``rules`` (``plan.LemonRules``), and return its per-step series
    (:func:`series`). Episodes ``sweep-<cell>-<i>``."""
    from marketarena.core.rules import EpisodeSpec
    from marketarena.core.runner import play_episode

    tables: dict[str, list[pd.DataFrame]] = {
        n: [] for n in ("listings", "bids", "reputation", "setting")
    }
    cells = len(mp.cells)
    for run in range(cells * seeds):
        spec = rules.episode(mp, run % cells)
        seed = int(np.random.SeedSequence([mp.seed, 2 * 10**6 + run]).generate_state(1)[0])
        spec = EpisodeSpec(
            f"sweep-{run % cells}-{run // cells}", run, seed, spec.seats, spec.setting
        )
        market, agents, _ = rules.build_episode(mp, None, spec)
        result = play_episode(market, agents, spec.seed).tables
        for name in tables:
            tables[name].append(result[name].assign(episode_id=spec.episode_id))
    frames = {n: pd.concat(v, ignore_index=True) for n, v in tables.items()}
    return series(frames["listings"], frames["bids"], frames["reputation"], frames["setting"])
