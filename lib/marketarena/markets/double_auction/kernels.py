"""Compiled (numba) Gjerstad-Dickhaut bid: :func:`baselines.gd_bid` without numpy's per-call cost.

GD and GDX ask for this bid up to seven times per decision, on a few dozen remembered quotes; as
numpy calls it cost about 90 microseconds, almost all of it call overhead. This is the same
computation written as loops, every floating-point operation the numpy version's in the same
order (counts and sums of integers are exact; one division per belief point; ``np.interp``'s
formula and its exact-hit rule), so the bids are identical: ``tests/markets/double_auction/
test_baselines.py`` compares the two on random memories. ``baselines.gd_belief`` and
``baselines.midpoint_surplus`` stay the readable definitions.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _midpoint_surplus(v: int, b: int, asks: np.ndarray) -> tuple[float, int]:
    """(v minus the midpoint of b and the mean remembered ask <= b, b itself if none; how many
    asks are <= b): one entry of :func:`baselines.midpoint_surplus`, the same operations."""
    total, cnt = 0.0, 0
    for i in range(asks.size):
        if asks[i] <= b:
            total += asks[i]
            cnt += 1
    mean_ask = total / cnt if cnt > 0 else float(b)
    return v - (b + mean_ask) / 2, cnt


@njit(cache=True)
def gd_bid(v: int, bids: np.ndarray, taken: np.ndarray, asks: np.ndarray, top: int = 100) -> int:
    """argmax over b = 0..v of belief(b) * (v - midpoint price), or -1 when nothing is remembered
    or v = 0 (:func:`baselines.gd_bid` returns None there)."""
    nb, na = bids.size, asks.size
    if v <= 0 or nb + na == 0:
        return -1
    # the belief at every quoted level, 0 and top (np.unique of the levels: sorted, distinct)
    levels = np.unique(np.concatenate((bids, asks, np.array([0.0, float(top)]))))
    n = levels.size
    xs = np.empty(n + 2)
    ys = np.empty(n + 2)
    xs[0], ys[0] = 0.0, 0.0
    m, run = 1, -np.inf
    for li in range(n):
        lv = levels[li]
        tbl, rbg, al = 0, 0, 0
        for i in range(nb):
            if taken[i]:
                if bids[i] <= lv:
                    tbl += 1
            elif bids[i] >= lv:
                rbg += 1
        for i in range(na):
            if asks[i] <= lv:
                al += 1
        den = tbl + al + rbg
        if den > 0:
            q = (tbl + al) / den
            run = q if q > run else run  # maximum.accumulate over the kept levels
            xs[m], ys[m] = lv, run
            m += 1
    xs[m], ys[m] = float(top), 1.0
    m += 1
    # np.unique(x, return_index=True): first occurrence of each value in a stable sort by x
    order = np.argsort(xs[:m], kind="mergesort")
    ux = np.empty(m)
    uy = np.empty(m)
    k = 0
    for i in range(m):
        x = xs[order[i]]
        if k == 0 or x != ux[k - 1]:
            ux[k], uy[k] = x, ys[order[i]]
            k += 1
    for i in range(1, k):  # maximum.accumulate
        if uy[i] < uy[i - 1]:
            uy[i] = uy[i - 1]
    best_b, best = 0, -np.inf
    j = 0
    for b in range(v + 1):
        x = float(b)
        # np.interp(b, ux[:k], uy[:k])
        if x <= ux[0]:
            belief = uy[0]
        elif x >= ux[k - 1]:
            belief = uy[k - 1]
        else:
            while ux[j + 1] <= x:
                j += 1
            if ux[j] == x:
                belief = uy[j]
            else:
                slope = (uy[j + 1] - uy[j]) / (ux[j + 1] - ux[j])
                belief = slope * (x - ux[j]) + uy[j]
        surplus, _ = _midpoint_surplus(v, b, asks)
        value = belief * surplus
        if value > best:
            best_b, best = b, value
    return best_b


@njit(cache=True)
def fp_bid(v: int, asks: np.ndarray) -> int:
    """Fictitious play's best response (:class:`baselines.FictitiousPlay`): argmax over b = 0..v
    of F(b) * (v - midpoint price), F the share of remembered asks <= b; ``asks`` not empty."""
    n = asks.size
    best_b, best = 0, -np.inf
    for b in range(v + 1):
        surplus, below = _midpoint_surplus(v, b, asks)
        value = (below / n) * surplus
        if value > best:
            best_b, best = b, value
    return best_b
