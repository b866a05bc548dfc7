"""The reputation half of the lemon replay (``replay.py``): every seller's logged up/down counts
replayed under our window rule (``rules.VoteReputation``), by enumerating the states of its window
of votes. The logs record only the counts after each step, so the seeding's order and the votes
of sales whose prompt log is missing are unknown: every order and vote is tried, and a vote every
complete history agrees on is pinned (``reputation_replay``; ``window_replay`` for one grid of
sellers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marketarena.markets.lemon.params import LemonParams

#: the largest window the vote enumeration covers (2**window states per seller)
MAX_WINDOW = 16
UNKNOWN, DOWN, UP, ABSTAIN = -1, 0, 1, 2


# ------------------------------------------------------------------ the vote window
def _push(reach: np.ndarray, vote: int, window: int) -> np.ndarray:
    """Window states (sellers x 2**window, bit 0 the newest vote) after casting ``vote``: state d
    comes from d >> 1 with either oldest vote dropped, when its newest bit is the vote."""
    if vote == ABSTAIN:
        return reach
    d = np.arange(2**window)
    out = reach[:, d >> 1] | reach[:, (d >> 1) | (1 << (window - 1))]
    return out & ((d & 1) == vote)[None, :]


def _pull(back: np.ndarray, vote: int, window: int) -> np.ndarray:
    """States whose move under ``vote`` lands in ``back`` (the inverse of :func:`_push`)."""
    if vote == ABSTAIN:
        return back
    m = np.arange(2**window)
    return back[:, ((m << 1) | vote) & ((1 << window) - 1)]


def _allowed(votes: np.ndarray, vote: int) -> np.ndarray:
    return (votes == UNKNOWN) | (votes == vote)


def _move(
    states: np.ndarray, sold: np.ndarray, votes: np.ndarray, window: int, step=_push
) -> np.ndarray:
    """One step forward (``_push``) or back (``_pull``): no vote without a sale; with one, the
    logged vote or, when unknown, any of up, down and none."""
    out = states.copy()
    at = np.flatnonzero(sold)
    if len(at):
        moved = np.zeros((len(at), states.shape[1]), dtype=bool)
        for v in (UP, DOWN, ABSTAIN):
            moved |= step(states[at], v, window) & _allowed(votes[at], v)[:, None]
        out[at] = moved
    return out


def window_replay(
    sold: np.ndarray,
    votes: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    start: np.ndarray,
    window: int,
    ups0: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Sellers (of one or many episodes, on one step grid) under the window rule, by
    enumerating window states.

    Sellers x steps: ``sold`` (a sale this step), ``votes`` (its logged vote: UP, DOWN, ABSTAIN,
    or UNKNOWN), ``lo``/``hi`` (the up counts its logged reputation allows after the step; lo > hi
    where it has no row), ``start`` (the step of its first row: the seeding, round(initial x
    window) up-votes in any order, comes before that step's vote). Returns ``bad`` (sellers x
    steps: the logged counts are reached by no history; the replay then goes on from every window
    with the logged count) and ``pinned`` (the one vote every complete history casts at a sale
    whose vote is not logged, else UNKNOWN)."""
    n, steps = sold.shape
    pop = np.array([bin(i).count("1") for i in range(2**window)])
    has = lo <= hi
    pre = np.zeros((steps, n, 2**window), dtype=bool)
    post = np.zeros_like(pre)
    bad = np.zeros((n, steps), dtype=bool)
    reach = np.zeros((n, 2**window), dtype=bool)
    for t in range(steps):
        reach[start == t] = pop == ups0
        pre[t] = reach
        allowed = (pop[None, :] >= lo[:, t, None]) & (pop[None, :] <= hi[:, t, None])
        new = _move(reach, sold[:, t], votes[:, t], window)
        new = np.where(has[:, t, None], new & allowed, new)
        bad[:, t] = has[:, t] & (t >= start) & ~new.any(axis=1)
        post[t] = reach = np.where(bad[:, t, None], allowed, new)
    pinned = np.full((n, steps), UNKNOWN)
    back = post[-1]
    for t in range(steps - 1, -1, -1):
        at = np.flatnonzero(sold[:, t] & (votes[:, t] == UNKNOWN))
        if len(at):
            possible = np.stack(
                [(_push(pre[t][at], v, window) & back[at]).any(axis=1) for v in (UP, DOWN, ABSTAIN)]
            )
            one = possible.sum(axis=0) == 1
            pinned[at[one], t] = np.array([UP, DOWN, ABSTAIN])[np.argmax(possible[:, one], axis=0)]
        if t:  # back one step; where nothing leads on (a break, a seller not yet there): restart
            earlier = post[t - 1] & _move(back, sold[:, t], votes[:, t], window, _pull)
            back = np.where(earlier.any(axis=1)[:, None], earlier, post[t - 1])
    return bad, pinned


# ------------------------------------------------------------------ the sellers
VOTE_CODE = {"up": UP, "down": DOWN, "abstain": ABSTAIN}


def reputation_replay(
    listings: pd.DataFrame,
    rep: pd.DataFrame,
    reviews: pd.DataFrame,
    mp: LemonParams,
    chunk: int = 256,
) -> pd.DataFrame:
    """Per (episode, seller, step) row of ``reputation``: whether the window rule reaches its
    logged counts (``bad``; ``counts_off``: the counts do not make a window of ``window`` votes
    or the logged reputation), and per sale the vote logged (``vote``) or pinned (``pinned``).
    Every seller of every episode on one step grid, ``chunk`` sellers at a time."""
    w = mp.window
    below = int(np.ceil(mp.retire_below * w - 1e-9)) - 1  # the most up-votes under the threshold
    key = ["episode_id", "seller"]
    seller, sellers = pd.factorize(pd.MultiIndex.from_frame(rep[key]))
    steps = int(rep["step"].max()) + 1 if len(rep) else 0
    ti = rep["step"].to_numpy()
    logged = rep["logged"].to_numpy(dtype=bool)
    counts_ok = (rep["upvotes"] + rep["downvotes"] == w).to_numpy()
    lo = np.ones((len(sellers), steps), dtype=np.int64)  # lo > hi: no row
    hi = np.zeros_like(lo)
    lo[seller, ti] = np.where(logged, np.where(counts_ok, rep["upvotes"], w + 1), 0)
    hi[seller, ti] = np.where(logged, rep["upvotes"], below)
    start = np.full(len(sellers), steps)
    np.minimum.at(start, seller, ti)

    def grid(frame: pd.DataFrame, values, fill) -> np.ndarray:
        out = np.full((len(sellers), steps), fill)
        at = sellers.get_indexer(pd.MultiIndex.from_frame(frame[key]))
        ok = at >= 0
        out[at[ok], frame["step"].to_numpy()[ok]] = np.asarray(values)[ok]
        return out

    sold = grid(listings[listings["sold"]], np.ones(int(listings["sold"].sum()), dtype=bool), False)
    voted = reviews[reviews["source"] == "prompt log"]
    votes = grid(voted, voted["vote"].map(VOTE_CODE).to_numpy(), UNKNOWN)
    bad = np.zeros_like(sold)
    pinned = np.full_like(votes, UNKNOWN)
    if w <= MAX_WINDOW:  # else too many window states to enumerate: not replayed
        for i in range(0, len(sellers), chunk):
            part = slice(i, i + chunk)
            bad[part], pinned[part] = window_replay(
                sold[part],
                votes[part],
                lo[part],
                hi[part],
                start[part],
                w,
                round(mp.initial_reputation * w),
            )
    return pd.DataFrame(
        {
            "episode_id": rep["episode_id"].to_numpy(),
            "step": ti,
            "seller": rep["seller"].to_numpy(),
            "kind": rep["kind"].to_numpy(),
            "sold": sold[seller, ti],
            "bad": bad[seller, ti],
            "vote": votes[seller, ti],
            "pinned": pinned[seller, ti],
            "counts_off": logged
            & (
                ~counts_ok
                | (np.abs(rep["reputation"].to_numpy() - rep["upvotes"].to_numpy() / w) > 1e-9)
            ),
        }
    )
