"""One of Agent Bazaar's lemon runs, read and checked (``runs.py``), as the tables our lemon
market logs (``agent_bazaar.py``'s docstring says what each holds): who bought what
(:func:`purchases`), the buyers' ``bids`` and ``views``, the sellers' ``reputation`` and the
identities' events, the ``reviews`` and what each state logged in aggregate (``market_steps``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from marketarena.core.types import Rows
from marketarena.markets.lemon.sources.prompt_log import Answers
from marketarena.markets.lemon.sources.runs import Steps, cents


def match_purchases(
    price: np.ndarray,
    implied: np.ndarray,
    sybil: np.ndarray,
    paid: np.ndarray,
    logged: np.ndarray,
    side: np.ndarray,
    named: np.ndarray | None = None,
) -> np.ndarray:
    """For each buyer of a step (who paid or got a car): the index of the sold listing it bought,
    or -1. ``price``, ``implied`` (value - price), ``sybil`` per sold listing; ``paid``,
    ``logged`` (its logged surplus), ``side`` (1: it bid on a Sybil listing) and ``named`` (the
    listing its logged answer names, -1: none) per buyer. Pairs are made within equal prices to
    the cent: a buyer whose answer names one of them gets it, the others go in the order of
    (kind, surplus) on both sides, so two purchases at one price go to the buyers whose bid kind
    and surplus fit them (two alike, at one price, of one kind and value, are told apart by the
    prompt log only; either way every number of ours is the same)."""
    out = np.full(len(paid), -1, dtype=np.int64)
    named = np.full(len(paid), -1) if named is None else named
    listings: dict[int, list[int]] = {}
    for i, k in enumerate(cents(price).tolist()):
        listings.setdefault(k, []).append(i)
    buyers: dict[int, list[int]] = {}
    for j, k in enumerate(cents(paid).tolist()):
        buyers.setdefault(k, []).append(j)
    for k, bj in buyers.items():
        li = listings.get(k, [])
        for j in [j for j in bj if named[j] in li]:
            out[j] = named[j]
            li = [i for i in li if i != named[j]]
            bj = [b for b in bj if b != j]
        if len(li) > 1 or len(bj) > 1:
            li = sorted(li, key=lambda i: (bool(sybil[i]), float(implied[i])))
            bj = sorted(bj, key=lambda j: (bool(side[j]), float(logged[j])))
        for i, j in zip(li, bj):
            out[j] = i
    return out


def purchases(
    st: Steps, arrays: dict[str, np.ndarray], v_max: float, answers: Answers | None = None
) -> dict[tuple[int, int], int]:
    """(step, buyer index) -> the listing row it bought (-1: it paid or got a car, but no sold
    listing fits), by :func:`match_purchases` (the logged answers' listings first)."""
    out = {}
    named = answers.decisions if answers else {}
    price, sold = st.cols["price"], st.cols["sold"]
    implied = st.cols["quality_value"] * v_max - price if len(price) else price
    sybil = st.cols["kind"] == "sybil"
    for t, rows in enumerate(st.at):
        who = np.flatnonzero((arrays["car"][t] > 0) | (np.abs(arrays["paid"][t]) >= 0.005))
        if not len(who):
            continue
        rows = rows[sold[rows].astype(bool)]
        local = {int(r): i for i, r in enumerate(rows)}
        hint = np.array([local.get(named.get((t, st.buyers[b]), ("", -1))[1], -1) for b in who])
        match = match_purchases(
            price[rows].astype(float),
            implied[rows].astype(float),
            sybil[rows],
            arrays["paid"][t][who],
            arrays["surplus"][t][who],
            arrays["sybil_bid"][t][who],
            hint,
        )
        out.update({(t, int(b)): int(rows[m]) if m >= 0 else -1 for b, m in zip(who, match)})
    return out


def step_rows(st: Steps) -> pd.DataFrame:
    """``market_steps``: what each state logged in aggregate."""
    rows = []
    for t, s in enumerate(st.states):
        p = s.deceptive_principal
        rows.append(
            (
                t,
                s.lemon_market_listings_count,
                s.lemon_market_bids_count,
                s.lemon_market_passes_count,
                s.filled_orders_count,
                s.lemon_market_sybil_revenue_share,
                s.lemon_market_avg_consumer_surplus,
                p.active_identities if p else 0,
                p.retired_this_step if p else 0,
                p.total_identities_created if p else 0,
            )
        )
    return pd.DataFrame(
        rows,
        columns=[
            "step",
            "listings_logged",
            "bids_logged",
            "passes_logged",
            "sales_logged",
            "sybil_revenue_share_logged",
            "avg_surplus_logged",
            "active_identities",
            "retired_logged",
            "identities_created",
        ],
    )


def seller_rows(st: Steps, window: int) -> tuple[pd.DataFrame, list[tuple]]:
    """``reputation`` rows (module docstring) and the identities' ``joined``/``retired`` events
    (round 2: after the step's reviews, as our market logs them)."""
    sold = st.cols["sold"].astype(bool) if len(st.cols["sold"]) else np.array([], dtype=bool)
    sales_at = Counter(zip(st.cols["seller"][sold], st.cols["step"][sold]))
    total: Counter = Counter()
    rows, events, active, joined = [], [], {}, set()
    for t, s in enumerate(st.states):
        full = {f.name: f for f in s.firms if f.sybil is not None}
        for name, f in full.items():
            total[name] += sales_at[(name, t)]
            rows.append(
                (
                    t,
                    name,
                    st.kind[name],
                    f.in_business,
                    f.reputation,
                    total[name],
                    f.upvotes,
                    f.downvotes,
                    True,
                    len(f.sales_info),
                )
            )
            if f.sybil and name not in joined:
                joined.add(name)
                created = f.timestep_created if f.timestep_created is not None else t
                events.append(
                    (
                        created,
                        0 if created == 0 else 2,
                        name,
                        "joined",
                        "initial identity"
                        if created == 0
                        else "a fresh identity in a retired one's slot",
                    )
                )
        for name, f in active.items():
            if name not in full:  # its stub (or nothing): retired this step
                total[name] += sales_at[(name, t)]
                up = max(f.upvotes - 1, 0)
                rows.append(
                    (
                        t,
                        name,
                        "sybil",
                        False,
                        up / window,
                        total[name],
                        up,
                        f.downvotes + 1,
                        False,
                        0,
                    )
                )
                events.append(
                    (
                        t,
                        2,
                        name,
                        "retired",
                        f"reputation under the threshold after "
                        f"this step's sale (logged {f.reputation:.2f} the step before)",
                    )
                )
        active = {n: f for n, f in full.items() if f.sybil and f.in_business}
    rep = pd.DataFrame(
        rows,
        columns=[
            "step",
            "seller",
            "kind",
            "active",
            "reputation",
            "sales",
            "upvotes",
            "downvotes",
            "logged",
            "sales_logged",
        ],
    )
    return rep, sorted(events)


def buyer_tables(
    st: Steps,
    arrays: dict[str, np.ndarray],
    got: dict[tuple[int, int], int],
    answers: Answers | None,
) -> dict[str, Any]:
    """``bids`` (one row per buyer and step, with what its state logged) and ``views`` (module
    docstring) as :class:`~marketarena.core.types.Rows`, and each listing's buyer
    (``buyer_of``)."""
    seller, kind = st.cols["seller"], st.cols["kind"]
    arrays = {k: v.tolist() for k, v in arrays.items()}  # scalar reads: lists are faster
    bids, views = [], []
    buyer_of = np.full(len(seller), "", dtype=object)
    for t in range(len(st.states)):
        for b, name in enumerate(st.buyers):
            shown = (arrays["honest_shown"][t][b], arrays["sybil_shown"][t][b])
            side = (
                "sybil"
                if arrays["sybil_bid"][t][b]
                else "honest"
                if arrays["honest_bid"][t][b]
                else ""
            )
            row = got.get((t, b), -1)
            if row >= 0:
                buyer_of[row] = name
            answered, named = answers.decisions.get((t, name), ("", -1)) if answers else ("", -1)
            bid_on = row if row >= 0 else named if named >= 0 and kind[named] == side else -1
            bids.append(
                (
                    t,
                    name,
                    "bid" if side else "pass",
                    seller[bid_on] if side and bid_on >= 0 else "",
                    "",
                    -1,
                    arrays["car"][t][b] > 0,
                    side,
                    answered,
                    seller[named] if named >= 0 else "",
                    *shown,
                    arrays["car"][t][b],
                    arrays["paid"][t][b],
                    arrays["surplus"][t][b],
                    seller[row] if row >= 0 else "",
                )
            )
            logged = answers.shown.get((t, name)) if answers else None
            if (
                logged is not None
                and (
                    sum(kind[i] == "honest" for i in logged),
                    sum(kind[i] == "sybil" for i in logged),
                )
                == shown
            ):
                aliases = answers.aliases[(t, name)]
                views += [
                    (t, name, seller[i], a, k, kind[i])
                    for k, (i, a) in enumerate(zip(logged, aliases))
                ]
            else:
                kinds = ["honest"] * shown[0] + ["sybil"] * shown[1]
                first = kinds.index(side) if side and bid_on >= 0 and side in kinds else -1
                views += [
                    (t, name, seller[bid_on] if k == first else "", "", k, x)
                    for k, x in enumerate(kinds)
                ]
    return {  # as rows: written to Parquet without a DataFrame (``core.logs.write_table``)
        "bids": Rows(
            [
                "step",
                "buyer",
                "decision",
                "seller",
                "alias",
                "served",
                "filled",
                "kind",
                "answered",
                "answer_seller",
                "honest_shown",
                "sybil_shown",
                "car",
                "paid",
                "surplus_logged",
                "bought",
            ],
            bids,
        ),
        "views": Rows(
            ["step", "buyer", "seller", "alias", "position", "kind"],
            views,
            {"step": "int64", "position": "int64"},
        ),
        "buyer_of": buyer_of,
    }


def review_rows(
    st: Steps,
    buyer_of: np.ndarray,
    rep: pd.DataFrame,
    votes: dict[tuple[int, str], str],
    initial_ups: int,
) -> pd.DataFrame:
    """One review per purchase: the logged vote, else the one the seller's upvote count pins."""
    ups = dict(zip(zip(rep["seller"], rep["step"]), rep["upvotes"]))
    rows = []
    for i in np.flatnonzero(buyer_of != ""):
        t, seller, buyer = int(st.cols["step"][i]), st.cols["seller"][i], buyer_of[i]
        if (t, buyer) in votes:
            rows.append((t, buyer, seller, votes[(t, buyer)], "prompt log"))
            continue
        before = ups.get((seller, t - 1), initial_ups)
        delta = ups.get((seller, t), before) - before
        rows.append(
            (t, buyer, seller, {1: "up", -1: "down"}.get(int(delta), ""), "counts" if delta else "")
        )
    return pd.DataFrame(rows, columns=["step", "buyer", "seller", "vote", "source"])
