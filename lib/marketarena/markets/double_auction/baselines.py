"""Scripted traders for double_auction: the BAZAAR baseline zoo (DESIGN.md 7.2).

Written once, in buyer terms, and mirrored for sellers
-------------------------------------------------------
Every strategy is a :class:`Baseline` whose :meth:`Baseline.bid` sees a :class:`View`: the market
*as a buyer would see it*. For a seller the view is reflected through x -> M - x (M = max quote,
100): its cost c becomes a value M - c, its asks become bids, the buyers' bids become asks and every
price p becomes M - p. Payoffs are preserved (p - c = (M - c) - (M - p)), "bid >= ask" is preserved,
and so is every ordering the rules use, so a rule that is good for a buyer is the same rule for a
seller. The bid the strategy returns (buyer frame, or ``None`` = sit out) is reflected back into an
ask. ``Baseline.act`` folds each newly completed round of the public history into the view once,
so strategies keep their own state incrementally.

In the buyer frame: ``v`` value; ``own[t]`` my bid in round t (None = sat out); ``same[t]`` the
other buyers' bids; ``opp[t]`` the asks; ``prices[t]`` trade prices; ``my_price[t]`` the price I
traded at (None); ``payoff[t]`` my payoff. Quotes are clipped to [0, M]; unless a strategy says
otherwise it never bids above its value (so it cannot lose money).

Every strategy has a pydantic params model (roster entry ``params``; unknown keys are errors).

| strategy | rule (buyer terms) |
|---|---|
| truthful | bid v |
| shade | bid v - delta (BAZAAR's "+5", "+10") |
| random | bid U{0..v} |
| zic | ZI-C in a window: U{m - w .. m + w} ∩ [0, v] around the last round's mean price m (U{0..v} before any trade) |
| zip | Cliff's ZIP: profit margin μ, bid v(1 - μ), Widrow-Hoff with momentum towards a perturbed target (last price when it would have traded / lost, best ask when nothing traded) |
| gd | Gjerstad-Dickhaut: belief p(b) = share of the asks of the last ``window`` rounds <= b; bid argmax p(b)·(v - (b + mean accepted ask)/2) |
| gdx | a population of GD traders (window, extra shade) evolved by a genetic algorithm on counterfactual payoffs against each round's asks; bids as the fittest |
| aa | Adaptive Aggressive (simplified Vytelingum): equilibrium estimate p* = EMA of prices, aggressiveness r in [-1, 1] raised after a round without a trade, lowered after a trade; target between p* and v (r > 0) or below p* (r < 0) |
| sniper | Kaplan: parks at v - park_shade; takes a bargain (last best ask <= v - bargain) at that ask; in the last ``strike_rounds`` rounds strikes at v - strike_shade |
| momentum | EMA of prices plus k × its last change, minus shade |
| contrarian | last price minus k × its last change, minus shade |
| mean_reversion | slow EMA of prices (the long-run mean) minus shade |
| regression | OLS line through the last ``window`` rounds' mean prices, next-round forecast minus shade |
| fictitious_play | empirical CDF F of all past asks; bid argmax F(b)·(v - b) |
| bayesian | normal prior on the clearing price, normal updates with each price, observation noise grown by recent volatility; bid posterior mean - z × posterior sd |
| risk_aware | CARA: certainty equivalent -ln(p e^{-απ} + 1 - p)/α of each bid, p and π from recent asks |
| q_learning | tabular Q-learning over shading deltas; state = (traded last round, price trend sign) |
| roth_erev | Roth-Erev reinforcement over shading deltas (forgetting φ, experimentation ε) |
| bandit | stochastic shading bandit: softmax over each delta's mean payoff |
| penny_jumper | one tick above the best rival bid of the last round (at most v) |
| exploiter | adversarial exploiter: finds the most predictable opposing trader (smallest SD of its recent quotes) and bids its predicted ask + margin (at most v) |
| signal_jammer | wraps another strategy (``inner``) and adds U{-noise..noise} |
| regime_switcher | momentum while recent price volatility <= threshold, mean reversion above |
| tit_for_tat | moves its bid by the change of the best opposing quote: concedes when they concede, toughens when they toughen |
| adaptive | shade s: after a trade s += up (greedier), after a round without one s *= down (more aggressive) |
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from pydantic import Field, ValidationError

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable
from marketarena.core.types import Decision
from marketarena.markets.double_auction.observations import QuoteAction, QuoteObservation, RoundRecord


# ---------------------------------------------------------------------------------- the view
class View:
    """The public history in buyer terms (see module docstring), updated one round at a time."""

    def __init__(self, obs: QuoteObservation):
        self.me = obs.agent_id
        self.buyer = obs.role == "buyer"
        self.M = obs.max_quote
        self.v = obs.value if self.buyer else self.M - obs.value
        self.T = obs.rounds
        self.t = 0  # 0-based index of the round to quote now
        self.own: list[int | None] = []
        self.same: list[list[int]] = []
        self.opp: list[list[int]] = []
        self.opp_by: dict[str, list[int | None]] = {}
        self.prices: list[list[int]] = []
        self.my_price: list[int | None] = []
        self.payoff: list[int] = []

    def x(self, q: int | None) -> int | None:
        """Market quote/price -> buyer frame (and back: the reflection is its own inverse)."""
        return q if q is None or self.buyer else self.M - q

    def update(self, rec: RoundRecord) -> None:
        mine, theirs = (rec.bids, rec.asks) if self.buyer else (rec.asks, rec.bids)
        self.own.append(self.x(mine.get(self.me)))
        self.same.append([self.x(q) for a, q in mine.items() if a != self.me and q is not None])
        self.opp.append([self.x(q) for q in theirs.values() if q is not None])
        for a, q in theirs.items():
            self.opp_by.setdefault(a, []).append(self.x(q))
        self.prices.append([self.x(tr.price) for tr in rec.trades])
        mp = next((self.x(tr.price) for tr in rec.trades if self.me in (tr.buyer, tr.seller)), None)
        self.my_price.append(mp)
        self.payoff.append(0 if mp is None else self.v - mp)

    # ---- summaries used by several strategies
    @property
    def round_prices(self) -> list[float]:
        """Mean trade price of each past round that had trades."""
        return [sum(p) / len(p) for p in self.prices if p]

    @property
    def last_price(self) -> float | None:
        rp = self.round_prices
        return rp[-1] if rp else None

    def traded_last(self) -> bool:
        return bool(self.my_price) and self.my_price[-1] is not None

    def recent_asks(self, window: int | None) -> np.ndarray:
        rounds = self.opp if window is None else self.opp[-window:]
        return np.array([a for r in rounds for a in r], dtype=float)

    def best_ask_last(self) -> int | None:
        return min(self.opp[-1]) if self.opp and self.opp[-1] else None

    def best_rival_bid_last(self) -> int | None:
        return max(self.same[-1]) if self.same and self.same[-1] else None

    def cap(self, b: float) -> int:
        """Round and clip a bid to [0, v]."""
        return int(min(max(0, math.floor(b + 0.5)), self.v))


# ---------------------------------------------------------------------------------- base class
class TraderParams(Strict):
    pass


class Baseline(ScriptedAgent):
    Params: ClassVar[type[TraderParams]] = TraderParams

    def setup(self) -> None:
        self.reset(np.random.default_rng(0))

    def reset(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.view: View | None = None
        self.start()

    def start(self) -> None:
        """Reset the strategy's own state (called at every episode start)."""

    def observe(self, view: View) -> None:
        """Called once after each completed round has been folded into ``view``."""

    def bid(self, view: View) -> float | None:
        raise NotImplementedError

    def quote(self, obs: QuoteObservation) -> int | None:
        """The market quote for ``obs``: updates the view, asks :meth:`bid`, reflects back."""
        if self.view is None:
            self.view = View(obs)
        view = self.view
        for rec in obs.history[len(view.own):]:
            view.update(rec)
            self.observe(view)
        view.t = obs.round - 1
        b = self.bid(view)
        if b is None:
            return None
        b = int(min(max(0, math.floor(b + 0.5)), view.M))
        return view.x(b)

    def decide(self, observation: QuoteObservation, decision: Decision) -> QuoteAction:
        return QuoteAction(quote=self.quote(observation))


# ---------------------------------------------------------------------------------- simple
class Truthful(Baseline):
    """Bids its value (the CSα reference)."""

    strategy = "truthful"

    def bid(self, view):
        return view.v


class ShadeParams(TraderParams):
    delta: int = Field(default=5, ge=0, description="bid v - delta")


class Shade(Baseline):
    """Fixed shading: bids ``delta`` below its value."""

    strategy, Params = "shade", ShadeParams

    def bid(self, view):
        return view.cap(view.v - self.params.delta)


class RandomTrader(Baseline):
    """Uniform random bid between 0 and its value."""

    strategy = "random"

    def bid(self, view):
        return int(self.rng.integers(0, view.v + 1))


class ZICParams(TraderParams):
    window: int = Field(default=10, ge=0, description="half-width around the last mean price")


class ZIC(Baseline):
    """Zero intelligence, constrained, around the market: U{m - w .. m + w} ∩ [0, v]."""

    strategy, Params = "zic", ZICParams

    def bid(self, view):
        m, w = view.last_price, self.params.window
        if m is None:
            return int(self.rng.integers(0, view.v + 1))
        hi = min(view.v, int(math.floor(m + w)))
        lo = max(0, min(int(math.ceil(m - w)), hi))
        return int(self.rng.integers(lo, hi + 1))


class ZIPParams(TraderParams):
    margin: float = Field(default=0.3, ge=0, le=1, description="initial profit margin μ")
    beta: float = Field(default=0.3, gt=0, le=1, description="learning rate")
    gamma: float = Field(default=0.3, ge=0, lt=1, description="momentum")
    r_max: float = Field(default=0.05, ge=0, description="relative target perturbation")
    a_max: float = Field(default=2.0, ge=0, description="absolute target perturbation")


class ZIP(Baseline):
    """Cliff's ZIP: bid v(1 - μ), μ learned by Widrow-Hoff with momentum."""

    strategy, Params = "zip", ZIPParams

    def start(self):
        self.mu, self.momentum = self.params.margin, 0.0

    def _target(self, q, up: bool):
        p = self.params
        r, a = self.rng.uniform(0, p.r_max), self.rng.uniform(0, p.a_max)
        return q * (1 + r) + a if up else q * (1 - r) - a

    def observe(self, view):
        if view.v <= 0:
            return
        cur = view.v * (1 - self.mu)
        prices = view.prices[-1]
        target = None
        if prices:
            q = sum(prices) / len(prices)
            if cur >= q:  # would have traded: try to pay less
                target = self._target(q, up=False)
            elif q <= view.v:  # lost the trade: close in
                target = self._target(q, up=True)
        else:
            ask = view.best_ask_last()
            if ask is not None and ask <= view.v and cur < ask:
                target = self._target(ask, up=True)
        if target is None:
            return
        p = self.params
        self.momentum = p.gamma * self.momentum + (1 - p.gamma) * p.beta * (target - cur)
        self.mu = min(1.0, max(0.0, 1 - (cur + self.momentum) / view.v))

    def bid(self, view):
        return view.cap(view.v * (1 - self.mu))


# ---------------------------------------------------------------------------------- beliefs
class GDParams(TraderParams):
    window: int = Field(default=5, ge=1, description="rounds of asks in the belief")
    prior_shade: int = Field(default=10, ge=0, description="bid v - prior_shade before any ask")


def gd_bid(v: int, asks: np.ndarray, extra_shade: float = 0.0) -> int | None:
    """argmax_b p(b)·(v - (b + mean ask <= b)/2), p(b) = share of ``asks`` <= b; None: no data."""
    if asks.size == 0 or v <= 0:
        return None
    b = np.arange(v + 1)
    below = asks[None, :] <= b[:, None]
    n = below.sum(axis=1)
    mean_ask = np.where(n > 0, (below * asks[None, :]).sum(axis=1) / np.maximum(n, 1), 0.0)
    ev = n / asks.size * (v - (b + mean_ask) / 2)
    best = int(b[np.argmax(ev)])
    return max(0, int(round(best - extra_shade)))


class GD(Baseline):
    """Gjerstad-Dickhaut: expected-surplus-maximising bid against recent asks."""

    strategy, Params = "gd", GDParams

    def bid(self, view):
        b = gd_bid(view.v, view.recent_asks(self.params.window))
        return view.cap(view.v - self.params.prior_shade) if b is None else b


class GDXParams(TraderParams):
    population: int = Field(default=6, ge=2)
    generation: int = Field(default=5, ge=1, description="rounds between generations")
    max_window: int = Field(default=10, ge=1)
    max_shade: int = Field(default=10, ge=0)
    prior_shade: int = Field(default=10, ge=0)


class GDX(Baseline):
    """GD traders (window, extra shade) evolved by a GA; fitness = counterfactual payoff of each
    candidate's bid against each round's lowest ask (trade iff bid >= it, at the midpoint)."""

    strategy, Params = "gdx", GDXParams

    def start(self):
        p = self.params
        self.genes = np.column_stack([self.rng.integers(1, p.max_window + 1, p.population),
                                      self.rng.integers(0, p.max_shade + 1, p.population)])
        self.fitness = np.zeros(p.population)
        self._last_bids: np.ndarray | None = None

    def _bids(self, view) -> np.ndarray:
        out = []
        for w, s in self.genes:
            b = gd_bid(view.v, view.recent_asks(int(w)), float(s))
            out.append(view.v - self.params.prior_shade if b is None else b)
        return np.clip(np.array(out, dtype=float), 0, view.v)

    def observe(self, view):
        ask = view.best_ask_last()
        if self._last_bids is not None and ask is not None:
            hit = self._last_bids >= ask
            self.fitness += np.where(hit, view.v - (self._last_bids + ask) / 2, 0.0)
        if len(view.own) % self.params.generation == 0:
            p = self.params
            order = np.argsort(-self.fitness, kind="stable")
            half = p.population // 2
            elite = self.genes[order[:p.population - half]]
            kids = elite[self.rng.integers(0, len(elite), half)].copy()
            kids[:, 0] = np.clip(kids[:, 0] + self.rng.integers(-2, 3, half), 1, p.max_window)
            kids[:, 1] = np.clip(kids[:, 1] + self.rng.integers(-2, 3, half), 0, p.max_shade)
            self.genes = np.vstack([elite, kids])
            self.fitness = np.concatenate([self.fitness[order[:p.population - half]],
                                           np.zeros(half)])

    def bid(self, view):
        bids = self._bids(view)
        self._last_bids = bids
        return view.cap(bids[int(np.argmax(self.fitness))])


class FictitiousPlayParams(TraderParams):
    prior_shade: int = Field(default=10, ge=0)


class FictitiousPlay(Baseline):
    """Best response F(b)·(v - b) to the empirical distribution of every past ask."""

    strategy, Params = "fictitious_play", FictitiousPlayParams

    def bid(self, view):
        asks = view.recent_asks(None)
        if asks.size == 0 or view.v <= 0:
            return view.cap(view.v - self.params.prior_shade)
        b = np.arange(view.v + 1)
        cdf = (asks[None, :] <= b[:, None]).mean(axis=1)
        return int(b[np.argmax(cdf * (view.v - b))])


class BayesianParams(TraderParams):
    prior_mu: float = 50.0
    prior_sd: float = Field(default=20.0, gt=0)
    obs_sd: float = Field(default=5.0, gt=0, description="base noise of one observed price")
    vol_window: int = Field(default=5, ge=2)
    z: float = Field(default=0.5, description="bid = posterior mean - z × posterior sd")


class Bayesian(Baseline):
    """Normal belief about the clearing price, updated with every trade price; observations are
    trusted less when recent round prices are volatile."""

    strategy, Params = "bayesian", BayesianParams

    def start(self):
        self.mu, self.var = None, self.params.prior_sd ** 2

    def observe(self, view):
        p = self.params
        if self.mu is None:
            self.mu = p.prior_mu if view.buyer else view.M - p.prior_mu
        recent = view.round_prices[-p.vol_window:]
        vol = float(np.std(recent)) if len(recent) >= 2 else 0.0
        noise = (p.obs_sd + vol) ** 2
        for price in view.prices[-1]:
            k = self.var / (self.var + noise)
            self.mu += k * (price - self.mu)
            self.var *= 1 - k

    def bid(self, view):
        mu = self.mu if self.mu is not None else (
            self.params.prior_mu if view.buyer else view.M - self.params.prior_mu)
        return view.cap(mu - self.params.z * math.sqrt(self.var))


class RiskAwareParams(TraderParams):
    alpha: float = Field(default=0.05, gt=0, description="CARA absolute risk aversion")
    window: int = Field(default=10, ge=1)
    prior_shade: int = Field(default=10, ge=0)


class RiskAware(Baseline):
    """Maximises the CARA certainty equivalent of the lottery (trade w.p. p(b) for π(b), else 0)."""

    strategy, Params = "risk_aware", RiskAwareParams

    def bid(self, view):
        asks = view.recent_asks(self.params.window)
        if asks.size == 0 or view.v <= 0:
            return view.cap(view.v - self.params.prior_shade)
        a = self.params.alpha
        b = np.arange(view.v + 1)
        below = asks[None, :] <= b[:, None]
        n = below.sum(axis=1)
        p = n / asks.size
        mean_ask = (below * asks[None, :]).sum(axis=1) / np.maximum(n, 1)
        profit = view.v - (b + mean_ask) / 2
        ce = -np.log(p * np.exp(-a * profit) + (1 - p)) / a
        return int(b[np.argmax(ce)])


# ---------------------------------------------------------------------------------- market-following
class TrendParams(TraderParams):
    alpha: float = Field(default=0.3, gt=0, le=1, description="EMA weight of the newest price")
    k: float = Field(default=1.0, description="weight of the last change")
    shade: float = Field(default=5.0, description="subtracted from the forecast")
    open_shade: int = Field(default=10, ge=0, description="bid v - open_shade before any trade")


class Momentum(Baseline):
    """Trend follower: EMA of prices plus k × the EMA's last change, minus shade."""

    strategy, Params = "momentum", TrendParams

    def start(self):
        self.ema = self.prev = None

    def observe(self, view):
        if view.prices[-1]:
            price = sum(view.prices[-1]) / len(view.prices[-1])
            self.prev = self.ema
            self.ema = price if self.ema is None else (
                self.params.alpha * price + (1 - self.params.alpha) * self.ema)

    def bid(self, view):
        if self.ema is None:
            return view.cap(view.v - self.params.open_shade)
        trend = 0.0 if self.prev is None else self.ema - self.prev
        return view.cap(self.ema + self.params.k * trend - self.params.shade)


class Contrarian(Baseline):
    """Bets against the last move: last price - k × (last price - the one before), minus shade."""

    strategy, Params = "contrarian", TrendParams

    def bid(self, view):
        rp = view.round_prices
        if not rp:
            return view.cap(view.v - self.params.open_shade)
        change = rp[-1] - rp[-2] if len(rp) >= 2 else 0.0
        return view.cap(rp[-1] - self.params.k * change - self.params.shade)


class MeanReversionParams(TrendParams):
    alpha: float = Field(default=0.1, gt=0, le=1)
    shade: float = Field(default=3.0)


class MeanReversion(Momentum):
    """Bids towards the long-run mean: a slow EMA of prices, minus shade (no trend term)."""

    strategy, Params = "mean_reversion", MeanReversionParams

    def bid(self, view):
        if self.ema is None:
            return view.cap(view.v - self.params.open_shade)
        return view.cap(self.ema - self.params.shade)


class RegressionParams(TraderParams):
    window: int = Field(default=10, ge=2)
    shade: float = 3.0
    open_shade: int = Field(default=10, ge=0)


class Regression(Baseline):
    """OLS line through the last ``window`` round mean prices; bids the forecast minus shade."""

    strategy, Params = "regression", RegressionParams

    def bid(self, view):
        pts = [(t, sum(p) / len(p)) for t, p in enumerate(view.prices) if p][-self.params.window:]
        if not pts:
            return view.cap(view.v - self.params.open_shade)
        if len(pts) == 1:
            return view.cap(pts[0][1] - self.params.shade)
        t, y = np.array(pts).T
        slope, icpt = np.polyfit(t, y, 1)
        return view.cap(icpt + slope * view.t - self.params.shade)


class RegimeSwitcherParams(TraderParams):
    vol_window: int = Field(default=5, ge=2)
    threshold: float = Field(default=3.0, ge=0, description="price SD above which prices mean-revert")
    momentum: TrendParams = Field(default_factory=TrendParams)
    mean_reversion: MeanReversionParams = Field(default_factory=MeanReversionParams)


class RegimeSwitcher(Baseline):
    """Holds a momentum and a mean-reversion trader; follows momentum while the SD of recent round
    prices is at most ``threshold``, mean reversion above it."""

    strategy, Params = "regime_switcher", RegimeSwitcherParams

    def start(self):
        self.mom = Momentum(self.agent_id, self.params.momentum.model_dump())
        self.rev = MeanReversion(self.agent_id, self.params.mean_reversion.model_dump())
        self.volatile = False

    def observe(self, view):
        self.mom.observe(view)
        self.rev.observe(view)
        rp = view.round_prices[-self.params.vol_window:]
        self.volatile = len(rp) >= 2 and float(np.std(rp)) > self.params.threshold

    def bid(self, view):
        return (self.rev if self.volatile else self.mom).bid(view)


# ---------------------------------------------------------------------------------- learners
DEFAULT_DELTAS = [0, 2, 5, 10, 15, 20]


class ArmsParams(TraderParams):
    deltas: list[int] = Field(default_factory=lambda: list(DEFAULT_DELTAS), min_length=2,
                              description="shading arms: bid v - delta")


class ShadingLearner(Baseline):
    """Chooses a shading arm each round; learns from the round's payoff."""

    strategy, Params = "", ArmsParams

    def start(self):
        self.arm: int | None = None

    def observe(self, view):
        if self.arm is not None:
            self.learn(self.arm, view.payoff[-1], view)

    def learn(self, arm: int, reward: float, view: View) -> None:
        raise NotImplementedError

    def choose(self, view: View) -> int:
        raise NotImplementedError

    def bid(self, view):
        self.arm = self.choose(view)
        return view.cap(view.v - self.params.deltas[self.arm])


class QLearningParams(ArmsParams):
    alpha: float = Field(default=0.2, gt=0, le=1)
    gamma: float = Field(default=0.9, ge=0, lt=1)
    epsilon: float = Field(default=0.1, ge=0, le=1)


class QLearning(ShadingLearner):
    """Tabular Q-learning; state = (traded last round, sign of the last price change)."""

    strategy, Params = "q_learning", QLearningParams

    def start(self):
        super().start()
        self.q = np.zeros((2, 3, len(self.params.deltas)))
        self.state = (0, 1)

    @staticmethod
    def _state(view) -> tuple[int, int]:
        rp = view.round_prices
        trend = 1 if len(rp) < 2 else int(np.sign(rp[-1] - rp[-2])) + 1
        return int(view.traded_last()), trend

    def learn(self, arm, reward, view):
        p, new = self.params, self._state(view)
        target = reward + p.gamma * self.q[new].max()
        self.q[self.state + (arm,)] += p.alpha * (target - self.q[self.state + (arm,)])
        self.state = new

    def choose(self, view):
        if self.rng.random() < self.params.epsilon:
            return int(self.rng.integers(len(self.params.deltas)))
        return int(np.argmax(self.q[self.state]))


class RothErevParams(ArmsParams):
    phi: float = Field(default=0.1, ge=0, le=1, description="forgetting")
    epsilon: float = Field(default=0.2, ge=0, lt=1, description="experimentation")
    initial: float = Field(default=5.0, gt=0, description="initial propensity")


class RothErev(ShadingLearner):
    """Roth-Erev: arm chosen ∝ propensity; propensities forget (φ) and reinforce with payoff."""

    strategy, Params = "roth_erev", RothErevParams

    def start(self):
        super().start()
        self.prop = np.full(len(self.params.deltas), self.params.initial)

    def learn(self, arm, reward, view):
        p, n = self.params, len(self.prop)
        r = max(reward, 0.0)
        upd = np.full(n, r * p.epsilon / max(n - 1, 1))
        upd[arm] = r * (1 - p.epsilon)
        self.prop = np.maximum((1 - p.phi) * self.prop + upd, 1e-6)

    def choose(self, view):
        return int(self.rng.choice(len(self.prop), p=self.prop / self.prop.sum()))


class BanditParams(ArmsParams):
    temperature: float = Field(default=2.0, gt=0, description="softmax temperature (payoff units)")
    optimism: float = Field(default=20.0, description="initial mean of every arm")


class Bandit(ShadingLearner):
    """Stochastic shading bandit: softmax over each arm's mean payoff (optimistic start)."""

    strategy, Params = "bandit", BanditParams

    def start(self):
        super().start()
        n = len(self.params.deltas)
        self.total, self.count = np.full(n, self.params.optimism), np.ones(n)

    def learn(self, arm, reward, view):
        self.total[arm] += reward
        self.count[arm] += 1

    def choose(self, view):
        z = self.total / self.count / self.params.temperature
        w = np.exp(z - z.max())
        return int(self.rng.choice(len(w), p=w / w.sum()))


class AdaptiveParams(TraderParams):
    shade: float = Field(default=10.0, ge=0, description="initial shade")
    up: float = Field(default=2.0, ge=0, description="added to the shade after a trade")
    down: float = Field(default=0.7, ge=0, le=1, description="shade factor after no trade")


class Adaptive(Baseline):
    """Greedier after a trade (shade += up), more aggressive after none (shade *= down)."""

    strategy, Params = "adaptive", AdaptiveParams

    def start(self):
        self.shade = self.params.shade

    def observe(self, view):
        self.shade = self.shade + self.params.up if view.traded_last() else self.shade * self.params.down

    def bid(self, view):
        return view.cap(view.v - self.shade)


class AAParams(TraderParams):
    lam: float = Field(default=0.1, gt=0, le=1, description="aggressiveness learning rate")
    ema: float = Field(default=0.3, gt=0, le=1, description="weight of the newest price in p*")
    r0: float = Field(default=0.0, ge=-1, le=1, description="initial aggressiveness")
    open_shade: int = Field(default=10, ge=0)


class AA(Baseline):
    """Adaptive Aggressive (simplified): target = p* + r(v - p*) for r >= 0, p*(1 + r/2) for r < 0
    (p* capped at v); r rises after rounds without a trade and falls after trades."""

    strategy, Params = "aa", AAParams

    def start(self):
        self.r, self.p_star = self.params.r0, None

    def observe(self, view):
        p = self.params
        if view.prices[-1]:
            q = sum(view.prices[-1]) / len(view.prices[-1])
            self.p_star = q if self.p_star is None else p.ema * q + (1 - p.ema) * self.p_star
        if view.traded_last():
            self.r -= p.lam * (1 + self.r)
        else:
            self.r += p.lam * (1 - self.r)

    def bid(self, view):
        if self.p_star is None:
            return view.cap(view.v - self.params.open_shade)
        anchor = min(self.p_star, view.v)
        target = anchor + self.r * (view.v - anchor) if self.r >= 0 else anchor * (1 + self.r / 2)
        return view.cap(target)


# ---------------------------------------------------------------------------------- special
class SniperParams(TraderParams):
    park_shade: int = Field(default=40, ge=0, description="parked bid v - park_shade")
    strike_rounds: int = Field(default=3, ge=1, description="strike in the last this many rounds")
    strike_shade: int = Field(default=1, ge=0, description="strike bid v - strike_shade")
    bargain: int | None = Field(default=20, ge=0,
                                description="take a last best ask <= v - bargain while parked (None: never)")


class Sniper(Baseline):
    """Kaplan's sniper: parks with a non-competitive bid, takes only bargains, strikes at the end."""

    strategy, Params = "sniper", SniperParams

    def bid(self, view):
        p = self.params
        if view.t >= view.T - p.strike_rounds:
            return view.cap(view.v - p.strike_shade)
        ask = view.best_ask_last()
        if p.bargain is not None and ask is not None and ask <= view.v - p.bargain:
            return view.cap(ask)
        return view.cap(view.v - p.park_shade)


class PennyParams(TraderParams):
    tick: int = Field(default=1, ge=1)
    open_shade: int = Field(default=10, ge=0, description="bid v - open_shade with no rival bid seen")


class PennyJumper(Baseline):
    """One tick inside the best rival quote of the last round (for a buyer: above the best rival
    bid), never above its value."""

    strategy, Params = "penny_jumper", PennyParams

    def bid(self, view):
        best = view.best_rival_bid_last()
        if best is None:
            return view.cap(view.v - self.params.open_shade)
        return view.cap(best + self.params.tick)


class ExploiterParams(TraderParams):
    window: int = Field(default=5, ge=2, description="recent quotes per opponent")
    margin: int = Field(default=0, ge=0, description="bid = predicted ask + margin")
    max_sd: float = Field(default=3.0, ge=0, description="an opponent is predictable below this SD")
    open_shade: int = Field(default=10, ge=0)


class Exploiter(Baseline):
    """Adversarial exploiter: among opposing traders whose last ``window`` quotes have SD <=
    ``max_sd`` and whose predicted (mean) ask is below v, targets the cheapest and bids just that
    ask + margin (the lowest bid that still crosses it, so the midpoint favours the exploiter);
    otherwise bids v - open_shade."""

    strategy, Params = "exploiter", ExploiterParams

    def bid(self, view):
        p = self.params
        targets = []
        for quotes in view.opp_by.values():
            q = [x for x in quotes[-p.window:] if x is not None]
            if len(q) >= 2 and float(np.std(q)) <= p.max_sd:
                pred = float(np.mean(q))
                if pred <= view.v:
                    targets.append(pred)
        if not targets:
            return view.cap(view.v - p.open_shade)
        return view.cap(math.ceil(min(targets)) + p.margin)


class TitForTatParams(TraderParams):
    start_shade: int = Field(default=10, ge=0)
    max_step: int = Field(default=5, ge=0, description="largest move per round")


class TitForTat(Baseline):
    """Mirrors the other side: moves its bid by the change in the best opposing quote (an ask that
    fell by d is answered by a bid raised by d, an ask that rose by a bid lowered), clipped to
    ±max_step and to [0, v]."""

    strategy, Params = "tit_for_tat", TitForTatParams

    def start(self):
        self.current: float | None = None

    def observe(self, view):
        if self.current is None:
            self.current = view.v - self.params.start_shade
        best = [min(r) for r in view.opp[-2:] if r]
        if len(view.opp) >= 2 and view.opp[-1] and view.opp[-2]:
            d = best[-2] - best[-1]
            self.current += max(-self.params.max_step, min(self.params.max_step, d))
        self.current = min(max(0.0, self.current), view.v)

    def bid(self, view):
        return view.cap(view.v - self.params.start_shade if self.current is None else self.current)


class JammerParams(TraderParams):
    inner: str = Field(default="momentum", description="wrapped strategy")
    inner_params: dict = Field(default_factory=dict)
    noise: int = Field(default=3, ge=0, description="adds U{-noise..noise}")


class SignalJammer(Baseline):
    """Wraps another strategy and adds integer noise to its bid (clipped to [0, v])."""

    strategy, Params = "signal_jammer", JammerParams

    @classmethod
    def check_params(cls, params: JammerParams, table: StrategyTable) -> None:
        if params.inner not in table or params.inner == "signal_jammer":
            raise ValueError(f"inner: unknown or nested strategy {params.inner!r}")
        try:
            table[params.inner].Params.model_validate(params.inner_params)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ValueError(f"inner_params.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None

    def start(self):
        cls = STRATEGIES[self.params.inner]
        self.inner = cls(self.agent_id, self.params.inner_params)
        self.inner.reset(self.rng)

    def observe(self, view):
        self.inner.observe(view)

    def bid(self, view):
        b = self.inner.bid(view)
        if b is None:
            return None
        n = self.params.noise
        return view.cap(b + int(self.rng.integers(-n, n + 1)))


STRATEGIES = StrategyTable("double_auction", {
    cls.strategy: cls
    for cls in (Truthful, Shade, RandomTrader, ZIC, ZIP, GD, GDX, AA, Sniper, Momentum, Contrarian,
                MeanReversion, Regression, FictitiousPlay, Bayesian, RiskAware, QLearning,
                RothErev, Bandit, PennyJumper, Exploiter, SignalJammer, RegimeSwitcher,
                TitForTat, Adaptive)})
