"""Our crash rules against the authors' engine, on their own runs, firm-day by firm-day.

For an imported crash run (``agent_bazaar.py``), every logged day is replayed through our rules
(``crash/rules.py``) from what the logs say went into it, and what our rules compute is compared with
what their engine logged:

- in: each firm's cash at the start of the day (its logged cash of the day before), its stock
  (yesterday's unsold), the price it set and the units it bought; each shopper's income, its cash
  before the day's order, the firms it saw in the order it saw them, and the order their engine
  filled the orders in (``orders.order``, recovered from the firms' ``sales_info``);
- computed: whom each shopper orders from (the cheapest it saw), how much (``rules.demand``), how
  much it gets (``rules.fill_orders``, capped at its cash), each firm's units sold and revenue, its
  costs (``rules.day_costs``) and cash at the end of the day, and whether it went bankrupt;
- compared: units sold (within 10^-9 relative), revenue and end cash (within a cent), bankruptcy.

A firm-day *agrees* when all four do. Only logged data enter and only the instance's params
(``setting``: demand index, choke price, consumer savings, liability, tax, fee) choose the rules,
so the replay is computed from the logs alone, in the metrics stage. Every day starts from its
logged inputs, so the days are independent and the whole instance is replayed at once, vectorised
(one ``fill_orders`` over every firm-day: orders grouped by firm-day, in their fill order).

:func:`variants` replays the same days under other rules, one change each, so that every
disagreement is named by the rule that explains it: the rules our crash market had before it
followed the authors' engine where the seed is silent (demand on the chosen price, a choke price of
10, no consumer savings, a fee on the tax's base, unlimited liability, no fee), and one rule of
their engine we do not copy, because it is a floating-point accident: an order capped by the
shopper's cash fails entirely when ``price * (cash / price) > cash`` in floats (their ledger's
transfer refuses to overdraw by a rounding error). A variant *explains* the firm-days where it
agrees and the instance's rules do not (their quirk), or where the instance's rules agree and it
does not (our former rules).

Where a shopper that got nothing fell in its firm's fill order is not logged (their ``sales_info``
lists fills only; the importer puts such shoppers after the fills), and under their quirk it
matters: an order fails only where the stock left still covers its whole demand (a smaller stock
caps it below its cash, and it fills). So the quirk variant replays a firm-day that ended with
stock left (no shopper found it sold out) with the shoppers that got nothing *first*: a failed
order takes nothing, so the others fill as logged wherever it fell. This is the day 0 of a run
where every firm posts the same price: the mean quote is then the price, each shopper's demand
spends exactly its one day's income (its whole cash), ``price * demand`` exceeds the cash by a
rounding error, and the order fails whole unless the firm's stock caps it (4 firm-days of the
published runs, stabilizing firms of three k5-d3-s16 runs: ``docs/published-games.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from marketarena.markets.crash import rules

#: units sold agree within this relative tolerance; money within a cent
UNITS_RTOL = 1e-9
CENT = 0.01
FLOAT_QUIRK = "their float quirk"


@dataclass(frozen=True)
class Rules:
    """The rules a replay applies: the instance's params (per episode, from ``setting``), or a
    variant of them (one rule changed for every episode)."""

    name: str
    demand_index: str | None = None  # "mean_quote" | "chosen_price"; None: the episode's
    max_price: float | None = -1.0  # a choke price; None: no choke; -1: the episode's
    consumer_savings: bool | None = None
    limited: bool | None = None
    platform_fee: float | None = None
    fee_base: str = "after_tax"  # "after_tax" (ours, theirs) | "same_base" (ours before)
    float_quirk: bool = False
    free_goods: bool = True  # a price of 0 is ordered from (the authors' engine; ours before: not)


BASE = Rules("ours (the instance's params)")


def variants() -> list[Rules]:
    """The named one-rule changes (module docstring)."""
    return [
        replace(BASE, name=FLOAT_QUIRK, float_quirk=True),
        replace(BASE, name="demand on the chosen price", demand_index="chosen_price"),
        replace(BASE, name="choke price 10", max_price=10.0),
        replace(BASE, name="no consumer savings", consumer_savings=False),
        replace(BASE, name="fee on the tax's base", fee_base="same_base"),
        replace(BASE, name="unlimited liability", limited=False),
        replace(BASE, name="no platform fee", platform_fee=0.0),
        replace(BASE, name="no order at a price of 0", free_goods=False),
    ]


@dataclass
class Days:
    """Every logged firm-day and order of an instance, as arrays (firm-days in ``states`` order;
    orders sorted by episode, day and fill order; ``seen``: firm-day indices, -1 padding)."""

    firm_days: pd.DataFrame
    stock: np.ndarray
    offering: np.ndarray
    day_of: np.ndarray  # firm-day -> its (episode, day) number
    orders: pd.DataFrame
    seen: np.ndarray
    order_day: np.ndarray  # order -> its (episode, day) number
    income: np.ndarray
    setting: pd.DataFrame  # per firm-day: the episode's rules


def days_of(
    states: pd.DataFrame, orders: pd.DataFrame, consumers: pd.DataFrame, setting: pd.DataFrame
) -> Days:
    """The replay's inputs from the logs (tables with ``episode_id``)."""
    fd = states.reset_index(drop=True)
    prev = fd.groupby(["episode_id", "agent_id"], sort=False)["unsold"].shift(1).fillna(0.0)
    stock = prev.to_numpy(dtype=float) + fd["supply"].to_numpy(dtype=float)
    price = fd["price"].to_numpy(dtype=float)
    offering = (stock > 0) & np.isfinite(price)
    day_key = pd.MultiIndex.from_arrays([fd["episode_id"], fd["step"]])
    days = pd.Index(day_key.unique())
    day_of = days.get_indexer(day_key)
    key = pd.Index(
        fd["episode_id"].astype(str)
        + "|"
        + fd["step"].astype(str)
        + "|"
        + fd["agent_id"].astype(str)
    )
    od = orders.sort_values(["episode_id", "step", "order"], kind="stable").reset_index(drop=True)
    split = od["seen_firms"].fillna("").str.split("|", expand=True)
    prefix = od["episode_id"].astype(str) + "|" + od["step"].astype(str) + "|"
    seen = np.column_stack([key.get_indexer(prefix + split[c].fillna("")) for c in split.columns])
    order_day = days.get_indexer(pd.MultiIndex.from_arrays([od["episode_id"], od["step"]]))
    inc = consumers.set_index(["episode_id", "consumer"])["income"]
    income = inc.reindex(pd.MultiIndex.from_arrays([od["episode_id"], od["consumer"]])).to_numpy()
    per_fd = setting.set_index("episode_id").reindex(fd["episode_id"]).reset_index(drop=True)
    return Days(fd, stock, offering, day_of, od, seen, order_day, income, per_fd)


def fill_with_float_quirk(
    wanted: np.ndarray, price: np.ndarray, stock: float, cash: np.ndarray
) -> np.ndarray:
    """Their engine's fill of one firm's orders, in order: ``q = min(wanted, stock left)``; a
    shopper whose cash is below ``q * p`` buys ``cash / p``, unless ``p * (cash / p) > cash`` in
    floats, when the order fails entirely (module docstring)."""
    left, out = float(stock), np.zeros(len(wanted))
    for j in range(len(wanted)):
        if left <= 0 or wanted[j] <= 0:
            continue
        q = min(wanted[j], left)
        if cash[j] < price[j] * q:
            q = cash[j] / price[j]
            if price[j] * q > cash[j]:
                continue
        out[j], left = q, left - q
    return out


def _resolved(r: Rules, s: pd.DataFrame) -> dict[str, np.ndarray]:
    """The rule values per firm-day: the variant's where it sets one, else the episode's."""
    n = len(s)
    max_price = s["max_price"].to_numpy(dtype=float)
    return {
        "mean_quote": (s["demand_index"].to_numpy() == "mean_quote")
        if r.demand_index is None
        else np.full(n, r.demand_index == "mean_quote"),
        "max_price": max_price
        if r.max_price == -1.0
        else np.full(n, np.nan if r.max_price is None else r.max_price),
        "savings": s["consumer_savings"].to_numpy(dtype=bool)
        if r.consumer_savings is None
        else np.full(n, r.consumer_savings),
        "limited": (s["liability"].to_numpy() == "limited")
        if r.limited is None
        else np.full(n, r.limited),
        "tax": s["tax_rate"].to_numpy(dtype=float),
        "fee": s["platform_fee"].to_numpy(dtype=float)
        if r.platform_fee is None
        else np.full(n, r.platform_fee),
        "overhead": s["overhead"].to_numpy(dtype=float),
        "unit_cost": s["unit_cost"].to_numpy(dtype=float),
    }


def replay_with(d: Days, r: Rules) -> dict[str, np.ndarray]:
    """Every firm-day and order under rules ``r``: per order the chosen firm-day and the units
    filled; per firm-day units, revenue, end cash and bankruptcy."""
    v = _resolved(r, d.setting)
    fd = d.firm_days
    price = fd["price"].to_numpy(dtype=float)
    n = len(fd)
    firm = rules.choose_cheapest(d.seen, np.where(d.offering, price, np.inf))
    p = np.where(firm >= 0, price[np.maximum(firm, 0)], np.nan)
    # the day's mean posted quote, per order (the price index of the authors' engine)
    counts = np.bincount(d.day_of, weights=d.offering, minlength=d.day_of.max() + 1)
    sums = np.bincount(
        d.day_of, weights=np.where(d.offering, price, 0.0), minlength=d.day_of.max() + 1
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        index = np.where(counts > 0, sums / counts, np.nan)[d.order_day]
    f = np.maximum(firm, 0)
    chosen = np.where(v["mean_quote"][f], index, p)
    max_price = v["max_price"][f]
    with np.errstate(divide="ignore", invalid="ignore"):
        units_wanted = d.income / chosen
        priced = (p >= 0) if r.free_goods else (p > 0)
        priced &= np.where(v["mean_quote"][f], True, p > 0)  # an own-price index needs p > 0
        wanted = np.where(priced & ~(p >= max_price) & np.isfinite(units_wanted), units_wanted, 0.0)
    firm = np.where(wanted > 0, firm, -1)
    budget = d.orders["budget"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        capped = np.where(v["savings"][f], np.minimum(wanted, budget / p), wanted)
    capped = np.where(firm >= 0, capped, 0.0)
    stock = d.stock
    filled = rules.fill_orders(firm, capped, stock)
    if r.float_quirk:  # a cash-limited order fails when p * (cash / p) > cash in floats
        with np.errstate(divide="ignore", invalid="ignore"):
            prone = (firm >= 0) & (budget < p * wanted) & (p * (budget / p) > budget)
        got_none = d.orders["filled"].to_numpy(dtype=float) <= 0
        left = stock - fd["units_sold"].to_numpy(dtype=float) > UNITS_RTOL * np.maximum(stock, 1)
        for fday in np.unique(firm[prone]):  # rare: replay those firm-days order by order
            mine = np.flatnonzero(firm == fday)
            if left[fday]:  # stock left at the end: who got nothing came first (docstring)
                mine = mine[np.argsort(~got_none[mine], kind="stable")]
            filled[mine] = fill_with_float_quirk(wanted[mine], p[mine], stock[fday], budget[mine])
    ok = firm >= 0
    units = np.bincount(firm[ok], weights=filled[ok], minlength=n)
    revenue = np.bincount(firm[ok], weights=(filled * np.nan_to_num(p))[ok], minlength=n)
    after_sales = (
        fd["cash_start"].to_numpy(dtype=float)
        + revenue
        - fd["supply"].to_numpy(dtype=float) * v["unit_cost"]
    )
    active = np.ones(n, dtype=bool)
    fee_rate = np.where(r.fee_base == "after_tax", v["fee"], 0.0)
    over_l, hold_l, tax_l, fee_l, bank_l = rules.day_costs(
        after_sales, active, v["overhead"], np.zeros(n), v["tax"], fee_rate, True
    )
    over_u, hold_u, tax_u, fee_u, bank_u = rules.day_costs(
        after_sales, active, v["overhead"], np.zeros(n), v["tax"], fee_rate, False
    )
    lim = v["limited"]
    over, tax, fee = (
        np.where(lim, a, b) for a, b in ((over_l, over_u), (tax_l, tax_u), (fee_l, fee_u))
    )
    if r.fee_base == "same_base":
        fee = (
            np.where(
                v["tax"] > 0,
                tax / np.where(v["tax"] > 0, v["tax"], 1.0),
                np.maximum(after_sales - over, 0.0),
            )
            * v["fee"]
        )
    return {
        "firm": firm,
        "filled": filled,
        "units": units,
        "revenue": revenue,
        "cash_end": after_sales - over - tax - fee,
        "bankrupt": np.where(lim, bank_l, bank_u),
    }


def agreement(d: Days, out: dict[str, np.ndarray]) -> np.ndarray:
    """Per firm-day: units, revenue, end cash and bankruptcy all as logged (module docstring)."""
    fd = d.firm_days
    return (
        np.isclose(
            out["units"], fd["units_sold"].to_numpy(dtype=float), rtol=UNITS_RTOL, atol=UNITS_RTOL
        )
        & (np.abs(out["revenue"] - fd["revenue"].to_numpy(dtype=float)) <= CENT)
        & (np.abs(out["cash_end"] - fd["cash_end"].to_numpy(dtype=float)) <= CENT)
        & (out["bankrupt"] == fd["bankrupt"].to_numpy(dtype=bool))
    )


def replay(
    states: pd.DataFrame, orders: pd.DataFrame, consumers: pd.DataFrame, setting: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """An imported crash instance's logs (tables with ``episode_id``) replayed: the firm-days
    (logged and replayed units, revenue, end cash, bankruptcy, ``agree``), the agreement per
    episode, and the rules table (per rule set, the firm-days that agree and those it explains)."""
    d = days_of(states, orders, consumers, setting)
    ours = replay_with(d, BASE)
    base = agreement(d, ours)
    fd = d.firm_days
    days = pd.DataFrame(
        {
            "episode_id": fd["episode_id"],
            "step": fd["step"],
            "agent_id": fd["agent_id"],
            "units_log": fd["units_sold"],
            "units_ours": ours["units"],
            "revenue_log": fd["revenue"],
            "revenue_ours": ours["revenue"],
            "cash_log": fd["cash_end"],
            "cash_ours": ours["cash_end"],
            "bankrupt_log": fd["bankrupt"].astype(bool),
            "bankrupt_ours": ours["bankrupt"],
            "agree": base,
        }
    )
    days["cash_agree"] = (days["cash_log"] - days["cash_ours"]).abs() <= CENT
    per_episode = (
        days.groupby("episode_id")
        .agg(
            firm_days=("agree", "size"), agree=("agree", "mean"), cash_agree=("cash_agree", "mean")
        )
        .reset_index()
    )
    table = [
        {
            "rules": BASE.name,
            "firm_days": len(base),
            "agree": int(base.sum()),
            "share": float(base.mean()) if len(base) else np.nan,
            "explains": int((~base).sum()),
            "what": "disagreements left under the instance's rules (the authors' engine where "
            "the seed is silent): each is explained by a rule below, or unexplained",
        }
    ]
    for v in variants():
        flags = agreement(d, replay_with(d, v))
        explains = (flags & ~base) if v.float_quirk else (base & ~flags)
        table.append(
            {
                "rules": v.name,
                "firm_days": len(flags),
                "agree": int(flags.sum()),
                "share": float(flags.mean()) if len(flags) else np.nan,
                "explains": int(explains.sum()),
                "what": "their engine's rule we do not copy: the firm-days it gets right "
                "that ours does not"
                if v.float_quirk
                else "our former rule: the firm-days ours gets right that it does not",
            }
        )
    return days, per_episode, pd.DataFrame(table)
