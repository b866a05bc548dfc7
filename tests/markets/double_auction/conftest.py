"""Small double_auction worlds: params, observations and a scripted-quote agent."""

from __future__ import annotations

import asyncio

import pytest

from marketarena.core.params import RosterEntry
from marketarena.core.runner import run_episode
from marketarena.markets.double_auction.baselines import STRATEGIES
from marketarena.markets.double_auction.market import DoubleAuctionMarket
from marketarena.markets.double_auction.observations import QuoteObservation, RoundRecord, Trade
from marketarena.markets.double_auction.params import DoubleAuctionParams


def roster(names=None):
    names = names or sorted(STRATEGIES)
    return [RosterEntry(name=n, kind="baseline", strategy=n) for n in names]


def small_params(**over) -> DoubleAuctionParams:
    base = dict(runs=4, rounds=10, roster=roster(), reference={"games_per_distribution": 200})
    base.update(over)
    return DoubleAuctionParams(**base)


def record(rnd, bids, asks, trades=()):
    return RoundRecord(
        round=rnd,
        bids=bids,
        asks=asks,
        trades=[Trade(buyer=b, seller=s, price=p) for b, s, p in trades],
    )


def obs(agent_id="B1", value=80, rnd=1, rounds=30, history=(), role=None):
    role = role or ("buyer" if agent_id.startswith("B") else "seller")
    return QuoteObservation(
        agent_id=agent_id,
        role=role,
        value=value,
        round=rnd,
        rounds=rounds,
        n_buyers=4,
        n_sellers=4,
        max_quote=100,
        surplus=0,
        history=list(history),
    )


def mirror_record(rec: RoundRecord) -> RoundRecord:
    """The same round seen from the other side: B<->S ids, quotes and prices x -> 100 - x."""
    f = lambda q: None if q is None else 100 - q  # noqa: E731
    sw = lambda a: ("S" if a[0] == "B" else "B") + a[1:]  # noqa: E731
    return RoundRecord(
        round=rec.round,
        bids={sw(a): f(q) for a, q in rec.asks.items()},
        asks={sw(a): f(q) for a, q in rec.bids.items()},
        trades=[
            Trade(buyer=sw(t.seller), seller=sw(t.buyer), price=100 - t.price) for t in rec.trades
        ],
    )


class ScriptAgent:
    """Quotes from a list (cycled); ``None`` entries sit out; raw dicts go through validation."""

    def __init__(self, agent_id, quotes):
        self.agent_id, self.quotes = agent_id, quotes

    def reset(self, rng):
        pass

    async def act(self, o, decision):
        q = self.quotes[(o.round - 1) % len(self.quotes)]
        return q if isinstance(q, dict) else {"quote": q}


def play(params, agents, seed=1, distribution="uniform", values=None):
    market = DoubleAuctionMarket(params, distribution, values)
    return asyncio.run(run_episode(market, agents, seed)), market


def baseline_lineup(names, params):
    ids = [f"B{i + 1}" for i in range(params.n_buyers)] + [
        f"S{i + 1}" for i in range(params.n_sellers)
    ]
    return {
        a: STRATEGIES.make(a, RosterEntry(name=n, kind="baseline", strategy=n))
        for a, n in zip(ids, names)
    }


@pytest.fixture
def params():
    return small_params()
