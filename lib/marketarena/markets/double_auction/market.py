"""The double_auction market (BAZAAR): a repeated call market, one decision point per round.

Each of ``rounds`` rounds is one ``quote`` decision at which every seat acts: buyers bid, sellers
ask, an integer 0..100 or ``null`` (sits out). The round clears with :func:`rules.clear_round`; each pair
trades one unit; payoffs are buyer v - p and seller p - c (negative when a trader quotes through its
value and trades). The quotes and trades of the round are then public history.

Randomness: ``SeedSequence([seed, 0]).spawn(2)`` gives the value stream (the game's private values,
drawn at reset) and the clearing stream (tie-breaks and .5 roundings, a fixed number of draws per
round). Agents have their own generators (``core.seeding``).

Fallback (invalid or missing answer): ``{"quote": null}``, the seat sits the round out.

Log tables (every metric is computed from these alone; ``step`` = the round, 0-based):
  seats   agent_id, role, value, distribution
  states  step, agent_id, role, value, quote (-1 = sat out), traded, price (-1), payoff, surplus
          (one row per seat and round; surplus is cumulative)
  trades  step, rank, buyer, seller, bid, ask, price, buyer_value, seller_value,
          buyer_payoff, seller_payoff
  game    distribution, rounds, ce_surplus_round, ce_surplus
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.types import AgentId, Checked, Decision, Rows, trusted
from marketarena.markets.double_auction import rules
from marketarena.markets.double_auction.observations import (
    QuoteAction,
    QuoteObservation,
    RoundRecord,
    Trade,
)
from marketarena.markets.double_auction.params import DoubleAuctionParams


def seat_ids(n_buyers: int, n_sellers: int) -> list[str]:
    return [f"B{i + 1}" for i in range(n_buyers)] + [f"S{i + 1}" for i in range(n_sellers)]


class DoubleAuctionMarket:
    name = "double_auction"

    def __init__(self, params: DoubleAuctionParams, distribution: str,
                 values: tuple[np.ndarray, np.ndarray] | None = None):
        """``values`` (buyer values, seller costs) fixes the private values (tests); by default they
        are drawn from ``distribution`` at reset."""
        self.p = params
        self.distribution = distribution
        self.buyers = [f"B{i + 1}" for i in range(params.n_buyers)]
        self.sellers = [f"S{i + 1}" for i in range(params.n_sellers)]
        self.ids = self.buyers + self.sellers
        self._fixed_values = values

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int) -> Decision:
        value_ss, clear_ss = np.random.SeedSequence([seed, 0]).spawn(2)
        value_rng = np.random.default_rng(value_ss)
        self.clear_rng = np.random.default_rng(clear_ss)
        if self._fixed_values is None:
            bv, sv = rules.draw_values(self.distribution, self.p.n_buyers, self.p.n_sellers,
                                       value_rng, self.p.values)
        else:
            bv, sv = (np.asarray(v, dtype=np.int64) for v in self._fixed_values)
        self.bv, self.sv = bv, sv
        self.value = dict(zip(self.ids, [int(v) for v in (*bv, *sv)]))
        self.role = {a: ("buyer" if a in self.buyers else "seller") for a in self.ids}
        self.surplus = dict.fromkeys(self.ids, 0)
        self.history: list[RoundRecord] = []
        self.t = 0
        self.state_rows: list[tuple] = []
        self.trade_rows: list[tuple] = []
        return self._decision()

    def check(self, agent_id: AgentId, action: BaseModel, decision: Decision) -> Checked:
        return Checked(action)  # the schema already bounds the quote

    def fallback(self, agent_id: AgentId, decision: Decision) -> BaseModel:
        return QuoteAction(quote=None)

    def _decision(self) -> Decision:
        p, hist = self.p, list(self.history)
        common = {"round": self.t + 1, "rounds": p.rounds, "n_buyers": p.n_buyers,
                  "n_sellers": p.n_sellers, "max_quote": p.max_quote, "history": hist,
                  "history_shown": p.prompt_history_rounds}
        obs = {a: trusted(QuoteObservation, {"agent_id": a, "role": self.role[a],
                                             "value": self.value[a], "surplus": self.surplus[a],
                                             **common})
               for a in self.ids}
        return Decision("quote", self.t, 0, obs, QuoteAction)

    def step(self, actions: dict[AgentId, BaseModel]) -> Decision | None:
        quote = {a: (actions[a].quote if a in actions else None) for a in self.ids}
        bids = [rules.NO_QUOTE if quote[a] is None else quote[a] for a in self.buyers]
        asks = [rules.NO_QUOTE if quote[a] is None else quote[a] for a in self.sellers]
        payoff = dict.fromkeys(self.ids, 0)
        price = dict.fromkeys(self.ids, rules.NO_QUOTE)
        trades = []
        for k, i, j, pr in rules.clear_round(bids, asks, self.clear_rng):
            b, s = self.buyers[i], self.sellers[j]
            price[b] = price[s] = pr
            payoff[b], payoff[s] = self.value[b] - pr, pr - self.value[s]
            trades.append(trusted(Trade, {"buyer": b, "seller": s, "price": pr}))
            self.trade_rows.append((self.t, k, b, s, quote[b], quote[s], pr,
                                    self.value[b], self.value[s], payoff[b], payoff[s]))
        for a in self.ids:
            self.surplus[a] += payoff[a]
            q = quote[a]
            self.state_rows.append((self.t, a, self.role[a], self.value[a],
                                    rules.NO_QUOTE if q is None else q,
                                    price[a] != rules.NO_QUOTE, price[a], payoff[a],
                                    self.surplus[a]))
        self.history.append(trusted(RoundRecord, {
            "round": self.t + 1, "bids": {a: quote[a] for a in self.buyers},
            "asks": {a: quote[a] for a in self.sellers}, "trades": trades}))
        self.t += 1
        return None if self.t >= self.p.rounds else self._decision()

    # ------------------------------------------------------------------ logs
    TABLE_COLUMNS = {
        "states": ["step", "agent_id", "role", "value", "quote", "traded", "price",
                   "payoff", "surplus"],
        "trades": ["step", "rank", "buyer", "seller", "bid", "ask", "price",
                   "buyer_value", "seller_value", "buyer_payoff", "seller_payoff"],
    }

    def tables(self) -> dict[str, Rows]:
        ce = int(rules.ce_surplus(self.bv, self.sv))
        return {
            "states": Rows(self.TABLE_COLUMNS["states"], self.state_rows),
            # a trade always has both quotes (an empty table would leave them object)
            "trades": Rows(self.TABLE_COLUMNS["trades"], self.trade_rows,
                           {"bid": "int64", "ask": "int64"}),
            "seats": Rows(["agent_id", "role", "value", "distribution"],
                          [(a, self.role[a], self.value[a], self.distribution) for a in self.ids]),
            "game": Rows(["distribution", "rounds", "ce_surplus_round", "ce_surplus"],
                         [(self.distribution, self.p.rounds, ce, ce * self.p.rounds)]),
        }
