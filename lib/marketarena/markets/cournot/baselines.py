"""Scripted Cournot firms (roster ``kind: baseline``, ``strategy`` + ``params``).

Unlike LLM firms, scripted firms are *told the game*: the demand parameters, every firm's costs and
capacities, and the Nash and monopoly references (a :class:`Game`). They still act only on their
own observation: the others' last-round total of a product is inferred from what the firm saw,
``Q_m = b_m (a_m - P_m)`` when the price is positive (else ``q_own / share``), minus its own quantity.

| strategy    | params | behaviour |
|-------------|--------|-----------|
| nash        | -      | its Cournot-Nash quantities every round |
| collude     | -      | its row of the joint-profit (monopoly) solution every round: the monopoly-share colluder |
| myopic      | ``inertia`` (0) | round 1: capacity split evenly over products (the seed's start); then ``(1 - inertia) x`` its best response (SLSQP, ``economics.best_response``) to the others' inferred last-round quantities ``+ inertia x`` its last quantities |
| tit_for_tat | ``tolerance`` (1.0 units), ``punish_rounds`` (1) | colludes; if the others' inferred total of any product last round exceeded their collusive total by more than ``tolerance``, plays Nash for ``punish_rounds`` rounds (restarted by every new deviation), then colludes again |
| fixed       | ``quantities`` (list, one per product) | the same plan every round (may exceed capacity: the market scales it) |

Every firm writes a one-line PLANS note naming its rule (the notes are logged like an LLM's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import Field

from marketarena.core.params import Strict
from marketarena.core.scripted import NoParams, ScriptedAgent, StrategyTable
from marketarena.core.types import Decision
from marketarena.markets._shared.oligopoly import make_action
from marketarena.markets.cournot import economics
from marketarena.markets.cournot.economics import CournotConfig
from marketarena.markets.cournot.observations import FIELD, CournotObservation, action_schema


@dataclass(frozen=True)
class Game:
    """What a scripted firm is told: the model, its seat, and the references."""

    config: CournotConfig
    index: int
    products: tuple[str, ...]
    nash: np.ndarray  # (n, M)
    monopoly: np.ndarray  # (n, M)


class ScriptedFirm(ScriptedAgent):
    """A scripted firm; its ``context`` is the :class:`Game` of its seat."""

    Params: ClassVar[type[Strict]] = NoParams
    plan_text: ClassVar[str] = ""

    def setup(self) -> None:
        self.game: Game = self.context
        self.schema = action_schema(self.game.products)

    def decide(self, observation: CournotObservation, decision: Decision):
        return make_action(
            self.schema,
            FIELD,
            self.game.products,
            self.quantities(observation),
            plans=self.plan_text,
        )

    def quantities(self, obs: CournotObservation) -> np.ndarray:
        raise NotImplementedError

    # ---- helpers ------------------------------------------------------------------------------
    def own_last(self, obs: CournotObservation) -> np.ndarray:
        return np.array([p.quantity for p in obs.history[-1].products])

    def others_last(self, obs: CournotObservation) -> np.ndarray:
        """The others' total per product last round, inferred from own price / share / quantity."""
        cfg = self.game.config
        own = self.own_last(obs)
        out = np.zeros(len(own))
        for k, rec in enumerate(obs.history[-1].products):
            if rec.price > 0:
                total = cfg.b_vec[k] * (cfg.a_vec[k] - rec.price)
            elif rec.share:
                total = rec.quantity / rec.share
            else:  # price 0 and no own sales: at least a*b units on the market
                total = cfg.a_vec[k] * cfg.b_vec[k]
            out[k] = max(total - own[k], 0.0)
        return out


class Nash(ScriptedFirm):
    strategy = "nash"
    plan_text = "Produce my Cournot-Nash quantities every round."

    def quantities(self, obs):
        return self.game.nash[self.game.index]


class Collude(ScriptedFirm):
    strategy = "collude"
    plan_text = "Produce my share of the joint-profit (monopoly) plan every round."

    def quantities(self, obs):
        return self.game.monopoly[self.game.index]


class MyopicParams(Strict):
    inertia: float = Field(default=0.0, ge=0, lt=1, description="weight on last round's own plan")


class Myopic(ScriptedFirm):
    strategy = "myopic"
    Params = MyopicParams
    plan_text = "Best-respond to the others' quantities of last round."

    def reset(self, rng):
        super().reset(rng)
        self.cache: dict[bytes, np.ndarray] = {}  # others' totals -> best response

    def quantities(self, obs):
        cfg, i = self.game.config, self.game.index
        m = cfg.n_products
        if not obs.history:
            cap = cfg.capacity_vec[i]
            share = cap if np.isfinite(cap) else cfg.quantity_upper_bounds[i].sum()
            return np.minimum(np.full(m, share / m), cfg.quantity_upper_bounds[i])
        others_total = self.others_last(obs)
        key = others_total.tobytes()
        if key not in self.cache:
            q = np.zeros((cfg.n_firms, m))
            others = [j for j in range(cfg.n_firms) if j != i]
            for j in others:  # only the others' total matters to a best response
                q[j] = others_total / len(others)
            self.cache[key] = economics.best_response(i, q, cfg)
        br = self.cache[key]
        lam = self.params.inertia
        return (1 - lam) * br + lam * self.own_last(obs)


class TitForTatParams(Strict):
    tolerance: float = Field(
        default=1.0, ge=0, description="units above the collusive total that count as a deviation"
    )
    punish_rounds: int = Field(default=1, ge=1, description="rounds of Nash play after a deviation")


class TitForTat(ScriptedFirm):
    strategy = "tit_for_tat"
    Params = TitForTatParams
    plan_text = "Collude on the joint-profit plan; answer a deviation with Nash quantities."

    def reset(self, rng):
        super().reset(rng)
        self.punishing = 0

    def quantities(self, obs):
        g = self.game
        if obs.history:
            collusive_others = g.monopoly.sum(axis=0) - g.monopoly[g.index]
            if np.any(self.others_last(obs) > collusive_others + self.params.tolerance):
                self.punishing = self.params.punish_rounds
        if self.punishing > 0:
            self.punishing -= 1
            return g.nash[g.index]
        return g.monopoly[g.index]


class FixedParams(Strict):
    quantities: list[float] = Field(min_length=1)


class Fixed(ScriptedFirm):
    strategy = "fixed"
    Params = FixedParams
    plan_text = "Produce the same quantities every round."

    def quantities(self, obs):
        q = np.asarray(self.params.quantities, dtype=float)
        if q.size != len(self.game.products) or np.any(q < 0):
            raise ValueError(
                f"fixed: need {len(self.game.products)} quantities >= 0, got {q.tolist()}"
            )
        return q


STRATEGIES = StrategyTable(
    "cournot", {cls.strategy: cls for cls in (Nash, Collude, Myopic, TitForTat, Fixed)}
)
