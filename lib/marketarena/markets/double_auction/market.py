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

How the pipeline plans and plays it (:class:`DoubleAuctionRules`): pool game ``r`` (``ep-<r>``)
is one game of ``distributions[r mod D]`` whose seats ``schedule.py`` draws from the pool; each
entrant's games (``x-<name>-<k>``) follow, roster order (``params.py`` documents the tournament).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel

from marketarena.core.rules import EpisodeSpec, MarketRules, Seat, publisher_files
from marketarena.core.types import AgentId, Checked, Decision, Rows, trusted
from marketarena.markets.double_auction import rules
from marketarena.markets.double_auction.baselines import STRATEGIES
from marketarena.markets.double_auction.bazaar_prompts import TEMPLATES, BazaarPrompts
from marketarena.markets.double_auction.observations import (
    QuoteAction,
    QuoteObservation,
    RoundRecord,
    Trade,
    render_messages,
)
from marketarena.markets.double_auction.params import DoubleAuctionParams
from marketarena.markets.double_auction.schedule import (
    entrant_episode_id,
    entrant_game,
    entrant_lineup,
    lineup,
    seats_of,
)


class DoubleAuctionMarket:
    name = "double_auction"

    def __init__(
        self,
        params: DoubleAuctionParams,
        distribution: str,
        values: tuple[np.ndarray, np.ndarray] | None = None,
    ):
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
            bv, sv = rules.draw_values(
                self.distribution, self.p.n_buyers, self.p.n_sellers, value_rng, self.p.values
            )
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
        common = {
            "round": self.t + 1,
            "rounds": p.rounds,
            "n_buyers": p.n_buyers,
            "n_sellers": p.n_sellers,
            "max_quote": p.max_quote,
            "history": hist,
            "history_shown": p.prompt_history_rounds,
        }
        obs = {
            a: trusted(
                QuoteObservation,
                {
                    "agent_id": a,
                    "role": self.role[a],
                    "value": self.value[a],
                    "surplus": self.surplus[a],
                    **common,
                },
            )
            for a in self.ids
        }
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
            self.trade_rows.append(
                (
                    self.t,
                    k,
                    b,
                    s,
                    quote[b],
                    quote[s],
                    pr,
                    self.value[b],
                    self.value[s],
                    payoff[b],
                    payoff[s],
                )
            )
        for a in self.ids:
            self.surplus[a] += payoff[a]
            q = quote[a]
            self.state_rows.append(
                (
                    self.t,
                    a,
                    self.role[a],
                    self.value[a],
                    rules.NO_QUOTE if q is None else q,
                    price[a] != rules.NO_QUOTE,
                    price[a],
                    payoff[a],
                    self.surplus[a],
                )
            )
        self.history.append(
            trusted(
                RoundRecord,
                {
                    "round": self.t + 1,
                    "bids": {a: quote[a] for a in self.buyers},
                    "asks": {a: quote[a] for a in self.sellers},
                    "trades": trades,
                },
            )
        )
        self.t += 1
        return None if self.t >= self.p.rounds else self._decision()

    # ------------------------------------------------------------------ logs
    TABLE_COLUMNS = {
        "states": [
            "step",
            "agent_id",
            "role",
            "value",
            "quote",
            "traded",
            "price",
            "payoff",
            "surplus",
        ],
        "trades": [
            "step",
            "rank",
            "buyer",
            "seller",
            "bid",
            "ask",
            "price",
            "buyer_value",
            "seller_value",
            "buyer_payoff",
            "seller_payoff",
        ],
    }

    def tables(self) -> dict[str, Rows]:
        ce = int(rules.ce_surplus(self.bv, self.sv))
        return {
            "states": Rows(self.TABLE_COLUMNS["states"], self.state_rows),
            # a trade always has both quotes (an empty table would leave them object)
            "trades": Rows(
                self.TABLE_COLUMNS["trades"], self.trade_rows, {"bid": "int64", "ask": "int64"}
            ),
            "seats": Rows(
                ["agent_id", "role", "value", "distribution"],
                [(a, self.role[a], self.value[a], self.distribution) for a in self.ids],
            ),
            "game": Rows(
                ["distribution", "rounds", "ce_surplus_round", "ce_surplus"],
                [(self.distribution, self.p.rounds, ce, ce * self.p.rounds)],
            ),
        }


class DoubleAuctionRules(MarketRules):
    """The tournament of ``params.py``: the pool games, then each entrant's games against the
    pool; scripted traders from ``baselines/``, LLM traders on the templates of
    ``observations.py``. A rated LLM joins the roster as one more entrant (``cost_seat`` None)."""

    kind = "double_auction"
    params_model = DoubleAuctionParams
    strategies = STRATEGIES
    harnesses = ("plain", "bazaar")
    own_harnesses = {"bazaar": BazaarPrompts}  # BAZAAR's own templates, from the user's copy

    def seats(self, mp: DoubleAuctionParams, run: int) -> list[Seat]:
        return list(seats_of(mp, [mp.roster[i] for i in lineup(mp, run)]))

    def seat_matrix(self, mp: DoubleAuctionParams) -> tuple[np.ndarray, list[str]]:
        """The plan's seats without planning it: the pool games' lineups drawn in bulk, bit for
        bit as :func:`~.schedule.lineup` draws each (``core/draws.py``), then the entrants'."""
        from marketarena.core.draws import first_of_permutations

        pool = np.asarray(mp.pool_indices())
        games = [pool[first_of_permutations([mp.seed], np.arange(mp.runs), 7, len(pool), mp.seats)]]
        games += [
            np.array(
                [
                    entrant_lineup(mp.seats, list(pool), i, mp.roster[i].name, mp.seed, k)
                    for k in range(mp.entrant_games)
                ]
            )
            for i in mp.entrant_indices()
        ]
        return np.vstack(games), ["buyer"] * mp.n_buyers + ["seller"] * mp.n_sellers

    def input_files(self, mp: DoubleAuctionParams, data_dir: Path) -> list[Path]:
        """BAZAAR's templates an entrant on the ``bazaar`` harness reads (their text is then in
        its games' fingerprint: an edited template replays them), relative to the project root."""
        return publisher_files(mp, data_dir, "bazaar", "prompts", tuple(TEMPLATES.values()))

    def may_sit_out(self, mp: DoubleAuctionParams) -> set[int]:
        """An imported instance's pool: an entrant's game seats a few of it, the published games
        the rest."""
        return set(mp.pool_indices()) if mp.imported else set()

    def seating_hint(self, mp: DoubleAuctionParams, entry) -> str:
        return (
            f"raise markets.{mp.instance}.games_per_distribution (each pool game draws "
            f"{mp.seats} of the {len(mp.pool_indices())} pool traders), or "
            f"entrant_games for an entrant"
        )

    def episode(self, mp: DoubleAuctionParams, run: int) -> EpisodeSpec:
        """Pool game ``run``."""
        e = super().episode(mp, run)
        return EpisodeSpec(
            e.episode_id, run, e.seed, e.seats, (("distribution", mp.distribution_of(run)),)
        )

    def entrant_episode(self, mp: DoubleAuctionParams, entrant: int, k: int) -> EpisodeSpec:
        """Game ``k`` of the entrant at roster index ``entrant``; ``run`` = k (the LLM sample)."""
        return entrant_game(
            mp,
            mp.roster,
            mp.pool_indices(),
            entrant,
            mp.seed,
            k,
            entrant_episode_id(mp.roster[entrant].name, k),
        )

    def plan(self, mp: DoubleAuctionParams) -> list[EpisodeSpec]:
        """The pool games, then each entrant's games (roster order). An imported instance plays
        its entrants' games only: the published games stand where the pool games would."""
        pool_games = [] if mp.imported else super().plan(mp)
        return pool_games + [
            self.entrant_episode(mp, i, k)
            for i in mp.entrant_indices()
            for k in range(mp.entrant_games)
        ]

    def stop_players(self, mp: DoubleAuctionParams) -> dict[str, list[str]]:
        """Each LLM entrant's games, in order (the stopping rule: ``simulate/stopping.py``)."""
        return {
            mp.roster[i].name: [
                entrant_episode_id(mp.roster[i].name, k) for k in range(mp.entrant_games)
            ]
            for i in mp.entrant_indices()
            if mp.roster[i].kind == "llm"
        }

    def build_market(self, mp: DoubleAuctionParams, resources, episode) -> DoubleAuctionMarket:
        return DoubleAuctionMarket(mp, episode.get("distribution"))

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)
