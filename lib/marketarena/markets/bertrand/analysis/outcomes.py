"""What seed 003 reports for the start-up preset (appendix C, Figure 11): per-product market
shares, HHI, each firm's investment pattern, and the run's outcome category.

Over the last ``window`` periods (params ``collusion_window``), per product: each firm's mean
market share and mean price, and the HHI (sum of squared shares, 0-1; 1 is a monopoly). The seed
sorts its 10 runs into domination, specialisation and collusion by eye; our rules, in order:

- ``domination``: one firm holds at least ``lead`` (0.8) of the mean share of *every* product
  ("one agent ... was able to invest in and monopolize both products");
- ``specialisation``: every product has a firm holding at least ``lead`` of it, and no firm leads
  them all ("both firms invested in separate products and monopolized their respective markets");
- ``collusion``: no product is led, and on every product the firms' mean prices are within
  ``price_gap`` (5%) of each other and above the period's Nash price by more than ``premium``
  (1%) of it ("both agents priced the products at the same price that was above the equilibrium
  price ... splitting the profits evenly");
- ``competition``: anything else.

Why not the collusion index here: with costs 100 -> 80 -> 50 the Nash-monopoly price gap is about
0.125 at cost 100, so a firm leaving a product swings the index from 1 to 0; the start-up table
shows the index with that warning.

Investment pattern of a firm: its upgrades in order as ``<step>:<product><level>`` (e.g.
``3:A1 9:A2``), "" if none.
"""

from __future__ import annotations

import pandas as pd

LEAD, PRICE_GAP, PREMIUM = 0.8, 0.05, 0.01


def investment_pattern(states: pd.DataFrame, agent_id: str) -> str:
    s = states[states["agent_id"] == agent_id].sort_values(["step", "product"])
    out, level = [], {}
    for r in s.itertuples():
        if r.level > level.get(r.product, 0):
            out.append(f"{r.step}:{r.product}{r.level}")
        level[r.product] = r.level
    return " ".join(out)


def outcome(
    last: pd.DataFrame, lead: float = LEAD, price_gap: float = PRICE_GAP, premium: float = PREMIUM
) -> dict:
    """The episode's category and per-product HHI and leader, from ``last``: the ``states`` rows
    of the window's periods (see the module docstring)."""
    shares = last.groupby(["product", "agent_id"])["share"].mean().unstack(fill_value=0.0)
    prices = last.groupby(["product", "agent_id"])["price"].mean().unstack()
    nash = last.groupby("product")["nash_price"].mean()
    hhi = (shares**2).sum(axis=1)
    leader = {p: row.idxmax() for p, row in shares.iterrows() if row.max() >= lead}
    products = list(shares.index)
    if len(leader) == len(products) and len(set(leader.values())) == 1:
        category = "domination"
    elif len(leader) == len(products):
        category = "specialisation"
    elif not leader and all(
        (prices.loc[p].max() - prices.loc[p].min()) <= price_gap * prices.loc[p].min()
        and prices.loc[p].min() > nash[p] * (1 + premium)
        for p in products
    ):
        category = "collusion"
    else:
        category = "competition"
    row = {"outcome": category}
    for p in products:
        row[f"hhi_{p}"] = float(hhi[p])
        row[f"leader_{p}"] = leader.get(p, "")
    return row


def firm_shares(last: pd.DataFrame) -> pd.DataFrame:
    """Per firm: its mean share of each product over the window's rows ``last``
    (``share_<product>``)."""
    wide = last.groupby(["agent_id", "product"])["share"].mean().unstack()
    wide.columns = [f"share_{p}" for p in wide.columns]
    return wide.reset_index()


def outcome_counts(market: pd.DataFrame) -> pd.DataFrame:
    """How many episodes fell in each category (all four listed)."""
    cats = ["domination", "specialisation", "collusion", "competition"]
    counts = market["outcome"].value_counts().reindex(cats, fill_value=0)
    return pd.DataFrame(
        {
            "outcome": cats,
            "episodes": counts.to_numpy(),
            "share": counts.to_numpy() / max(len(market), 1),
        }
    )
