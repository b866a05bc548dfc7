"""The lemon market's rules as pure functions (seed 001 section 3.2, appendix F; notes D.3).

- Reputation, ``votes`` form (the seed): the up-share of the last ``window`` votes; a fresh seller
  starts with ``round(initial x window)`` synthetic votes, up-votes first shuffled in by a seeded
  draw (the authors' code), so it starts at ``initial`` (0.8 -> 8 ups of 10); abstentions do not
  enter the window. ``ema`` form (the authors' draft): R <- (1 - rate) R + rate q with q the true
  quality of each sale.
- A Sybil identity whose reputation falls under ``retire_below`` is retired and a fresh one takes
  its slot at the initial reputation. :func:`sales_to_retire` is the fewest sales an identity can
  last (every vote down, or every car poor), which bounds how many identities an episode can use.
- Anonymised ids: buyer b sees seller seat s as ``seller_<n>``, n from a per-buyer random
  permutation drawn at the start (stable for the episode, different for each buyer).
- Consumer surplus of a purchase: true value - price.
"""

from __future__ import annotations

from collections import deque

import numpy as np


class VoteReputation:
    """The up-share of the last ``window`` votes (``True`` = up). ``rng=None`` puts the synthetic
    up-votes first (oldest), the order in which down-votes bring the value down fastest."""

    def __init__(self, window: int, initial: float, rng: np.random.Generator | None):
        ups = int(round(initial * window))
        seed = [True] * ups + [False] * (window - ups)
        if rng is not None:
            rng.shuffle(seed)
        self.votes: deque[bool] = deque(seed, maxlen=window)

    @property
    def value(self) -> float:
        return sum(self.votes) / len(self.votes) if self.votes else 0.0

    def vote(self, up: bool | None, quality: float | None = None) -> None:
        if up is not None:
            self.votes.append(bool(up))


class EMAReputation:
    """R <- (1 - rate) R + rate q, per sale (the authors' draft form)."""

    def __init__(self, rate: float, initial: float):
        self.rate, self.value = rate, float(initial)

    def vote(self, up: bool | None, quality: float | None = None) -> None:
        if quality is not None:
            self.value = (1 - self.rate) * self.value + self.rate * quality


def sales_to_retire(
    form: str, window: int, initial: float, ema_rate: float, threshold: float, worst_quality: float
) -> int:
    """The fewest sales after which a fresh identity can fall under ``threshold`` (at least 1):
    every vote down (every car of the worst quality), synthetic up-votes leaving first."""
    if form == "votes":
        rep = VoteReputation(window, initial, None)
    else:
        rep = EMAReputation(ema_rate, initial)
    for n in range(1, 10_000):
        rep.vote(False, worst_quality)
        if rep.value < threshold:
            return n
    return 10_000


def anonymous_ids(
    rng: np.random.Generator, n_buyers: int, seller_ids: list[str]
) -> list[dict[str, str]]:
    """Per buyer: seller seat -> ``seller_<n>`` (a random permutation per buyer)."""
    out = []
    for _ in range(n_buyers):
        perm = rng.permutation(len(seller_ids))
        out.append({s: f"seller_{int(k) + 1}" for s, k in zip(seller_ids, perm)})
    return out


def sample_listings(
    rng: np.random.Generator, n_buyers: int, n_listings: int, limit: int
) -> np.ndarray:
    """(buyers, min(limit, n)) indices of the listings each buyer sees, in random order."""
    keys = rng.random((n_buyers, n_listings))
    return np.argsort(keys, axis=1, kind="stable")[:, : min(limit, n_listings)]


def surplus(true_value: float, price: float) -> float:
    return float(true_value - price)
