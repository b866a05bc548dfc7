"""The double_auction schedule: who sits in which game (the rules are in ``params.py``).

Pure functions of the seed, the game index and the pool, so a game's lineup never depends on other
games, on the entrants, or on the order games are played in.
"""

from __future__ import annotations

import hashlib

import numpy as np

from marketarena.core.params import RosterEntry
from marketarena.core.rules import EpisodeSpec, Seat
from marketarena.markets.double_auction.params import DoubleAuctionParams


def seat_ids(n_buyers: int, n_sellers: int) -> list[str]:
    return [f"B{i + 1}" for i in range(n_buyers)] + [f"S{i + 1}" for i in range(n_sellers)]


def seats_of(mp: DoubleAuctionParams, entries: list[RosterEntry]) -> tuple[Seat, ...]:
    """The seats of a game whose traders are ``entries`` in seat order: the first ``n_buyers``
    buy (``B1..``), the others sell (``S1..``)."""
    ids = seat_ids(mp.n_buyers, mp.n_sellers)
    return tuple(
        Seat(a, e, "buyer" if j < mp.n_buyers else "seller")
        for j, (a, e) in enumerate(zip(ids, entries))
    )


def lineup(mp: DoubleAuctionParams, run: int) -> list[int]:
    """Roster indices seated in pool game ``run`` (buyers first), a pure function of (seed, run,
    the pool)."""
    pool = mp.pool_indices()
    rng = np.random.default_rng(np.random.SeedSequence([mp.seed, run, 7]))
    return [pool[int(i)] for i in rng.permutation(len(pool))[: mp.seats]]


def name_key(name: str) -> int:
    """A stable integer for a roster name (the first 8 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")


def entrant_lineup(
    seats: int, pool: list[int], entrant: int, name: str, seed: int, k: int
) -> list[int]:
    """Seats of entrant ``name``'s game ``k`` (buyers first): the entrant (index ``entrant``) in a
    seat drawn uniformly, the pool indices ``pool`` in the others (without replacement while the
    pool is large enough, with replacement otherwise: the CSα reference against a small scripted
    pool). Drawn from ``SeedSequence([seed, 8, name_key(name), k])``."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 8, name_key(name), k]))
    at = int(rng.integers(seats))
    if len(pool) >= seats - 1:
        others = [pool[int(i)] for i in rng.permutation(len(pool))[: seats - 1]]
    else:
        others = [pool[int(i)] for i in rng.integers(0, len(pool), seats - 1)]
    return others[:at] + [entrant] + others[at:]


def entrant_seed(seed: int, name: str, k: int) -> int:
    """The episode seed of entrant ``name``'s game ``k``: ``SeedSequence([seed, 9, key, k])``."""
    return int(np.random.SeedSequence([seed, 9, name_key(name), k]).generate_state(1)[0])


def entrant_episode_id(name: str, k: int) -> str:
    return f"x-{name}-{k:04d}"


def entrant_game(
    mp: DoubleAuctionParams,
    entries: list[RosterEntry],
    pool: list[int],
    entrant: int,
    seed: int,
    k: int,
    episode_id: str,
) -> EpisodeSpec:
    """Game ``k`` of ``entries[entrant]`` against ``pool`` (indices into ``entries``): its seats
    (:func:`entrant_lineup`), seed (:func:`entrant_seed`, base ``seed``) and distribution
    (``distributions[k mod D]``); ``run`` = k. An entrant's games and the CSα reference's."""
    name = entries[entrant].name
    seated = entrant_lineup(mp.seats, pool, entrant, name, seed, k)
    return EpisodeSpec(
        episode_id,
        k,
        entrant_seed(seed, name, k),
        seats_of(mp, [entries[i] for i in seated]),
        (("distribution", mp.distribution_of(k)),),
    )
