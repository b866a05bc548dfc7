"""Pure rules of one Cournot round (no state): capacity enforcement and settlement.

* Capacity: a plan whose total exceeds the firm's capacity is scaled down proportionally,
  ``q <- q * K / sum(q)``, so its product mix is kept; the market flags it (a note in the decision
  log and in the firm's next observation). Plans within capacity are used as they are.
* Settlement (seed eq. 1 and 3, via ``economics``): ``P_m = max(a_m - Q_m / b_m, 0)``,
  ``profit[i, m] = (P_m - c[i, m]) * q[i, m]``; market share ``q[i, m] / Q_m`` (NaN when nobody
  produced product ``m``).
"""

from __future__ import annotations

import math

import numpy as np

from marketarena.markets.cournot import economics
from marketarena.markets.cournot.economics import CournotConfig


def enforce_capacity(plan, capacity: float) -> tuple[np.ndarray, bool]:
    """``(quantities, scaled)``: the plan, scaled down proportionally if its total exceeds capacity."""
    q = np.asarray(plan, dtype=float)
    total = float(q.sum())
    if math.isfinite(capacity) and total > capacity:
        return q * (capacity / total), True
    return q.copy(), False


def settle(q: np.ndarray, config: CournotConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(prices (M,), profits (n, M), shares (n, M))`` of one round's quantities ``(n, M)``."""
    q = np.asarray(q, dtype=float)
    totals = q.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(totals > 0, q / np.where(totals > 0, totals, 1.0), np.nan)
    return economics.prices(q, config), economics.profits(q, config), shares
