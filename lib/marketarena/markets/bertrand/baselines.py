"""Scripted Bertrand firms (roster ``kind: baseline``, ``strategy`` + ``params``).

Scripted firms are told the demand model (a :class:`Game`); they act on their own observation
(own costs, own and competitors' past prices). A firm that needs the rivals' costs (Nash and
monopoly play) assumes they equal its own current costs: exact in the Calvano preset, a documented
simplification after asymmetric investments in the start-up preset.

| strategy    | params | behaviour |
|-------------|--------|-----------|
| nash        | -      | Bertrand-Nash prices of the symmetric game at its own costs |
| collude     | -      | joint-profit (monopoly) prices of that game |
| myopic      | -      | round 1: Nash; then its exact best response (``economics.best_response``) to the rivals' last prices |
| tit_for_tat | ``tolerance`` (0.01, relative), ``punish_rounds`` (1) | monopoly prices; if a rival priced below ``(1 - tolerance) x`` the monopoly price last round, Nash prices for ``punish_rounds`` rounds |
| qlearning   | see :class:`QLearningParams` | Calvano et al. (2020) Q-learning pricer, one table per product |
| fixed       | ``prices`` | the same prices every round |

Start-up preset: every strategy takes option ``B`` (the first single-product upgrade offered, i.e.
the cheapest product in order) when ``invest: true`` (default) and it is offered, else ``A``.

Q-learning (Calvano, Calzolari, Denicolò & Pastorello 2020, section III): prices on a grid of ``m``
points from ``p_N - xi (p_M - p_N)`` to ``p_M + xi (p_M - p_N)`` (Nash / monopoly of the starting
game); state = (own last price index, nearest grid index of the rivals' mean last price);
Q initialised to the discounted profit against rivals pricing uniformly on the grid,
``Q0(s, a) = mean_b pi(a, b) / (1 - delta)``; update
``Q(s, a) <- (1 - lr) Q(s, a) + lr (pi + delta max_a' Q(s', a'))``; epsilon-greedy with
``epsilon_t = exp(-decay t)``. Defaults ``m = 15``, ``xi = 0.1``, ``lr = 0.15``, ``delta = 0.95`` as
in Calvano et al.; ``decay = 0.02`` instead of their 4e-6 because an episode is 300 periods, not
millions (exploration is ~0.25% by period 300). The learner starts afresh every episode. The grid is
stored as markups over the firm's own marginal cost (identical to Calvano's price grid at constant
cost), so after an investment in the start-up preset the same markups apply to the lower cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import Field

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable
from marketarena.core.types import Decision
from marketarena.markets._shared.oligopoly import make_action
from marketarena.markets.bertrand import economics
from marketarena.markets.bertrand.economics import BertrandConfig
from marketarena.markets.bertrand.observations import FIELD, BertrandObservation, action_schema


@dataclass(frozen=True)
class Game:
    config: BertrandConfig  # at the start of the episode
    index: int
    products: tuple[str, ...]
    invest: bool


class BaseParams(Strict):
    invest: bool = Field(
        default=True, description="start-up preset: take the first upgrade offered"
    )


class ScriptedFirm(ScriptedAgent):
    """A scripted firm; its ``context`` is the :class:`Game` of its seat."""

    Params: ClassVar[type[Strict]] = BaseParams
    plan_text: ClassVar[str] = ""

    def setup(self) -> None:
        self.game: Game = self.context
        self.schema = action_schema(self.game.products, self.game.invest)

    def decide(self, obs: BertrandObservation, decision: Decision):
        extra = {}
        if self.game.invest:
            letters = [o.letter for o in obs.options]
            extra["investment_option"] = "B" if self.params.invest and "B" in letters else "A"
        return make_action(
            self.schema, FIELD, self.game.products, self.prices(obs), plans=self.plan_text, **extra
        )

    def prices(self, obs: BertrandObservation) -> np.ndarray:
        raise NotImplementedError

    # ---- helpers ------------------------------------------------------------------------------
    def symmetric(self, obs: BertrandObservation) -> BertrandConfig:
        """The game with every firm at this firm's current costs."""
        own = tuple(float(obs.costs[p]) for p in self.game.products)
        return self.game.config.model_copy(update={"costs": (own,) * self.game.config.n_firms})

    def nash(self, obs):

        return economics.references(self.symmetric(obs))[0][self.game.index]

    def monopoly(self, obs):

        return economics.references(self.symmetric(obs))[1][self.game.index]

    def rivals_last(self, obs) -> np.ndarray:
        """(n - 1, M) rivals' last prices."""
        return np.array([p.competitor_prices for p in obs.history[-1].products]).T


class Nash(ScriptedFirm):
    strategy = "nash"
    plan_text = "Price at the Bertrand-Nash level."

    def prices(self, obs):
        return self.nash(obs)


class Collude(ScriptedFirm):
    strategy = "collude"
    plan_text = "Price at the joint-profit (monopoly) level."

    def prices(self, obs):
        return self.monopoly(obs)


class Myopic(ScriptedFirm):
    strategy = "myopic"
    plan_text = "Best-respond to the competitors' last prices."

    def reset(self, rng):
        super().reset(rng)
        self.cache: dict[tuple, np.ndarray] = {}  # (own costs, rivals' prices) -> best response

    def prices(self, obs):
        if not obs.history:
            return self.nash(obs)
        rivals = self.rivals_last(obs)
        key = (tuple(obs.costs.values()), rivals.tobytes())
        if key not in self.cache:
            cfg, i = self.symmetric(obs), self.game.index
            p = np.zeros((cfg.n_firms, cfg.n_products))
            p[[j for j in range(cfg.n_firms) if j != i]] = rivals
            self.cache[key] = economics.best_response(i, p, cfg)
        return self.cache[key]


class TitForTatParams(BaseParams):
    tolerance: float = Field(
        default=0.01, ge=0, lt=1, description="relative undercut that counts as a deviation"
    )
    punish_rounds: int = Field(default=1, ge=1)


class TitForTat(ScriptedFirm):
    strategy = "tit_for_tat"
    Params = TitForTatParams
    plan_text = "Price at the monopoly level; answer an undercut with Nash prices."

    def reset(self, rng):
        super().reset(rng)
        self.punishing = 0

    def prices(self, obs):
        mono = self.monopoly(obs)
        if obs.history and np.any(self.rivals_last(obs) < (1 - self.params.tolerance) * mono):
            self.punishing = self.params.punish_rounds
        if self.punishing > 0:
            self.punishing -= 1
            return self.nash(obs)
        return mono


class FixedParams(BaseParams):
    prices: list[float] = Field(min_length=1)


class Fixed(ScriptedFirm):
    strategy = "fixed"
    Params = FixedParams
    plan_text = "Post the same prices every round."

    def prices(self, obs):
        return np.asarray(self.params.prices, dtype=float)


class QLearningParams(BaseParams):
    grid: int = Field(default=15, ge=2, description="m: number of prices on the grid")
    xi: float = Field(
        default=0.1, ge=0, description="grid extends xi x (p_M - p_N) beyond Nash and monopoly"
    )
    lr: float = Field(default=0.15, gt=0, le=1, description="learning rate alpha")
    delta: float = Field(default=0.95, ge=0, lt=1, description="discount factor")
    decay: float = Field(default=0.02, ge=0, description="exploration epsilon_t = exp(-decay t)")


class QLearning(ScriptedFirm):
    strategy = "qlearning"
    Params = QLearningParams
    plan_text = "Q-learning over a price grid (Calvano et al. 2020)."

    def __init__(self, agent_id, params, game):
        super().__init__(agent_id, params, game)
        cfg, pr = game.config, self.params
        nash, mono = economics.bertrand_nash(cfg), economics.monopoly_prices(cfg)
        i, m = game.index, pr.grid
        self.grids, self.q0 = [], []
        for k in range(cfg.n_products):
            lo, hi = nash[i, k], mono[i, k]
            grid = np.linspace(lo - pr.xi * (hi - lo), hi + pr.xi * (hi - lo), m)
            # profit in product k of own price grid[a] against every rival at grid[b] (products are
            # independent markets, so the other columns do not matter)
            prices = np.broadcast_to(
                grid[None, :, None, None], (m, m, cfg.n_firms, cfg.n_products)
            ).copy()
            prices[:, :, i, k] = grid[:, None]
            pi = economics.profits(prices, cfg)[:, :, i, k]  # (m_a, m_b)
            q0 = pi.mean(axis=1) / (1 - pr.delta)  # (m_a,)
            self.grids.append(grid - cfg.cost_matrix[i, k])  # markups over own marginal cost
            self.q0.append(np.broadcast_to(q0, (m, m, m)).copy())  # state (own, rival) x action

    def reset(self, rng):
        super().reset(rng)
        self.q = [q.copy() for q in self.q0]
        self.last = None  # (state, action) per product
        self.t = 0

    def _state(self, obs, k: int) -> tuple[int, int]:
        rec = obs.history[-1].products[k]
        grid = self.grids[k] + rec.cost  # last period's price grid
        own = int(np.abs(grid - rec.price).argmin())
        rival = (
            int(np.abs(grid - np.mean(rec.competitor_prices)).argmin())
            if rec.competitor_prices
            else own
        )
        return own, rival

    def prices(self, obs):
        pr, out, chosen = self.params, [], []
        eps = float(np.exp(-pr.decay * self.t))
        for k in range(len(self.game.products)):
            q = self.q[k]
            state = self._state(obs, k) if obs.history else None
            if self.last is not None and self.last[k][0] is not None:
                (s_own, s_riv), a = self.last[k]
                reward = obs.history[-1].products[k].profit
                target = reward + pr.delta * q[state].max()
                q[s_own, s_riv, a] = (1 - pr.lr) * q[s_own, s_riv, a] + pr.lr * target
            if state is None or self.rng.random() < eps:
                a = int(self.rng.integers(pr.grid))
            else:
                a = int(q[state].argmax())
            chosen.append((state, a))
            out.append(obs.costs[self.game.products[k]] + self.grids[k][a])
        self.last = chosen
        self.t += 1
        return np.array(out)


STRATEGIES = StrategyTable(
    "bertrand", {cls.strategy: cls for cls in (Nash, Collude, Myopic, TitForTat, QLearning, Fixed)}
)
