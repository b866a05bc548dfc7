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


def investment_options(levels: list[int], funds: float, products: list[str], ladder, costs) -> list[InvestmentOption]:
    out = [InvestmentOption(letter="A", upgrades={}, cost=0.0,
                            text="No investments for any product at this time.")]
    up = [k for k, lvl in enumerate(levels) if lvl < len(ladder) - 1]
    for size in range(1, len(up) + 1):
        for subset in combinations(up, size):
            cost = float(sum(costs[levels[k]] for k in subset))
            if cost > funds + 1e-9:
                continue
            parts = [f"Phase {ROMAN[levels[k]]} Product {products[k]}" for k in subset]
            mcs = ", ".join(f"Product {products[k]} from ${ladder[levels[k]]:g} to ${ladder[levels[k] + 1]:g}"
                            for k in subset)
            only = " ONLY" if size == 1 else ""
            out.append(InvestmentOption(
                letter=ascii_uppercase[len(out)], upgrades={products[k]: levels[k] + 1 for k in subset},
                cost=cost, text=f"Invest in {' and '.join(parts)} Production{only} to decrease MC: {mcs}."))
    return out


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
