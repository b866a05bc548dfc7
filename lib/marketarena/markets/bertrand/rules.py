"""Pure rules of one Bertrand period: investment options, sales and profits.

* Investment options (start-up preset, seed C.4.3): ``A`` = no investment, then every non-empty set
  of products that can move up one level of the cost ladder (one level per product and period),
  singles first, in product order, each offered only if the firm's funds cover its total cost;
  letters are handed out in that order (so they change with what is available, as in the seed).
  An investment is paid from funds at once and lowers that product's cost for this period's sales.
* Sales: logit demand per product market (``economics.quantities``); with
  ``sells_nothing_below_cost`` a price strictly below the firm's marginal cost counts as an infinite
  price (the authors' simulator). Profit ``(p - c) q``; share = own units / units sold in that
  product market (0 when nothing sold).
"""

from __future__ import annotations

from itertools import combinations
from string import ascii_uppercase

import numpy as np

from marketarena.markets.bertrand import economics
from marketarena.markets.bertrand.economics import BertrandConfig
from marketarena.markets.bertrand.observations import InvestmentOption

ROMAN = ("I", "II", "III", "IV", "V")


def investment_options(
    levels: list[int], funds: float, products: list[str], ladder, costs, mixed_bundles: bool = False
) -> list[InvestmentOption]:
    """The affordable options, lettered A, B, ... in the seed's order (appendix C, Figure 9):
    none; then per phase, each product's upgrade to that phase alone, and one upgrade of every
    product together when all of them are at that phase ("BOTH"). The seed's wording; its letters
    change with the options shown, as in the seed. ``mixed_bundles`` adds every other combination
    (products at different phases together), which the seed never offered."""
    both = "either" if len(products) == 2 else "any"
    out = [
        InvestmentOption(
            letter="A",
            upgrades={},
            cost=0.0,
            text=f"No investments for {both} product at this time.",
        )
    ]
    up = [k for k, lvl in enumerate(levels) if lvl < len(ladder) - 1]
    singles = [(k,) for k in up]
    together = tuple(up) if len(up) == len(levels) > 1 and len(set(levels)) == 1 else None
    candidates = sorted(singles, key=lambda sub: (levels[sub[0]], sub[0]))
    if together is not None:  # after the singles of its phase
        at = max(i for i, sub in enumerate(candidates) if levels[sub[0]] == levels[together[0]]) + 1
        candidates.insert(at, together)
    if mixed_bundles:
        candidates += [
            sub
            for size in range(2, len(up) + 1)
            for sub in combinations(up, size)
            if sub != together
        ]
    for subset in candidates:
        cost = float(sum(costs[levels[k]] for k in subset))
        if cost > funds + 1e-9:
            continue
        out.append(
            InvestmentOption(
                letter=ascii_uppercase[len(out)],
                upgrades={products[k]: levels[k] + 1 for k in subset},
                cost=cost,
                text=_option_text(subset, levels, products, ladder, subset == together),
            )
        )
    return out


def _option_text(subset, levels, products, ladder, together: bool) -> str:
    k = subset[0]
    phase, lo, hi = ROMAN[levels[k]], ladder[levels[k]], ladder[levels[k] + 1]
    if len(subset) == 1:
        return (
            f"Invest in Phase {phase} Product {products[k]} Production ONLY to decrease MC from "
            f"${lo:g} to ${hi:g}."
        )
    names = " and ".join(f"Product {products[j]}" for j in subset)
    if together:
        lead = "BOTH" if len(subset) == 2 else "ALL of"
        if levels[k] == 0:  # the seed's D: "... Production ONLY to decrease MCs to $80."
            return f"Invest in {lead} Phase {phase} {names} Production ONLY to decrease MCs to ${hi:g}."
        return f"Invest in {lead} Phase {phase} {names} Production to decrease MCs from ${lo:g} to ${hi:g}."
    parts = " and ".join(f"Phase {ROMAN[levels[j]]} Product {products[j]}" for j in subset)
    mcs = ", ".join(
        f"Product {products[j]} from ${ladder[levels[j]]:g} to ${ladder[levels[j] + 1]:g}"
        for j in subset
    )
    return f"Invest in {parts} Production to decrease MC: {mcs}."


def settle(prices: np.ndarray, config: BertrandConfig, sells_nothing_below_cost: bool):
    """``(quantities, profits, shares)``, each ``(n, M)``, for one period's prices."""
    p = np.asarray(prices, dtype=float)
    c = config.cost_matrix
    effective = np.where(sells_nothing_below_cost & (p < c), np.inf, p)
    q = economics.quantities(effective, config)
    profit = np.where(q > 0, (p - c) * q, 0.0)
    total = q.sum(axis=0)
    shares = np.divide(q, total, out=np.zeros_like(q), where=total > 0)
    return q, profit, shares
