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

| strategy | rule (buyer terms); source in each class docstring |
|---|---|
| truthful | bid v |
| shade | bid v - delta (BAZAAR's "+5", "+10") |
| random | bid U{0..v} |
| zic | "ZIC Pure": U{m - w .. m + w} ∩ [0, v] around the last round's mean price m (U{0..v} before any trade) |
| zic_plus | "ZIC+" (our reading): U{m .. v}, never under the last mean price |
| linear_eq | Chatterjee-Samuelson linear equilibrium: 2/3 v + M/12 (a seller: 2/3 c + M/4), at most v |
| collusive | (our reading) holds its side's best price so far, gives way after ``patience`` idle rounds |
| zip | Cliff's ZIP: profit margin μ, bid v(1 - μ), Widrow-Hoff with momentum towards a perturbed target |
| gd | Gjerstad-Dickhaut: belief q(b) from taken / rejected bids and asks, interpolated; bid argmax q(b)·(v - midpoint price) |
| gdx | a population of GD traders (memory, extra shade) evolved by a genetic algorithm on counterfactual payoffs |
| aa | Vytelingum's Adaptive Aggressive: p* (EMA), θ from volatility, aggressiveness r by short-term learning, quote τ(r) |
| aa_cliff | "AA-Cliff" (our reading): hill-climbs an offset v - o with step γ and noise σ adapted by profitability |
| sniper | Kaplan: parks at v - park_shade for 25 of 30 rounds, takes bargains, strikes at v - strike_shade in the last 5 |
| momentum | (conceding follower) EMA of prices plus k × its last change, minus shade |
| contrarian | (conceding follower) last price minus k × its last change, minus shade |
| mean_reversion | (conceding follower) slow EMA of prices (the long-run mean) minus shade |
| regression | (conceding follower) OLS line through the last ``window`` rounds' mean prices, forecast minus shade |
| fictitious_play | empirical CDF F of all past asks; bid argmax F(b)·(v - midpoint price) |
| bayesian | "Enhanced Bayesian": normal belief on the clearing price, volatility-weighted updates; bid mean - z × sd |
| risk_aware | CARA: certainty equivalent -ln(p e^{-απ} + 1 - p)/α of each bid, p and π from recent asks |
| q_learning | tabular Q-learning over shading deltas, random tie-breaks; state = (traded last round, price trend sign) |
| roth_erev | Roth-Erev reinforcement over shading deltas (forgetting φ, experimentation ε) |
| bandit | stochastic shading bandit: softmax over each delta's mean payoff |
| penny_jumper | one tick above the best rival bid of the last round (at most v) |
| exploiter | finds the most predictable opposing trader (smallest SD of its recent quotes), bids its predicted ask + margin |
| signal_jammer | wraps another strategy (``inner``) and adds U{-noise..noise} |
| regime_switcher | momentum while recent price volatility <= threshold, mean reversion above |
| tit_for_tat | "Threat Tit-for-Tat": moves its bid by the change of the best opposing quote |
| adaptive | shade s: after a trade s += up (more conservative), after a round without one s *= down (more aggressive) |

A *conceding follower* adds a concession to its forecast-based bid: +``concede`` after each round
it quoted without trading, -``concede`` (not below 0) after a trade (:class:`Follower`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from pydantic import Field, ValidationError

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable
from marketarena.core.types import Decision
from marketarena.markets.double_auction import kernels
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
        self.same_taken: list[list[bool]] = []  # aligned with same[t]: that bid traded
        self.opp: list[list[int]] = []
        self.opp_by: dict[str, list[int | None]] = {}
        self.prices: list[list[int]] = []
        self.my_price: list[int | None] = []
        self.payoff: list[int] = []

    def x(self, q: int | None) -> int | None:
        """Market quote/price -> buyer frame (and back: the reflection is its own inverse)."""
        return q if q is None or self.buyer else self.M - q

    def update(self, rec: RoundRecord) -> None:
        d = _side_digest(rec, self.buyer, self.M)
        own, same, same_taken, my_price = d.of(self.me)
        self.own.append(own)
        self.same.append(same)  # fresh lists per seat; the shared ones are copied
        self.same_taken.append(same_taken)
        self.opp.append(list(d.opp))
        for a, q in d.theirs:
            self.opp_by.setdefault(a, []).append(q)
        self.prices.append(list(d.prices))
        self.my_price.append(my_price)
        self.payoff.append(0 if my_price is None else self.v - my_price)

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


class _Digest:
    """One completed round in one side's buyer frame: what :meth:`View.update` reads, the same for
    every seat of that side (quotes and prices reflected for sellers: x -> M - x)."""

    __slots__ = ("theirs", "opp", "prices", "_own", "_quoted", "_price_of")

    def __init__(self, rec: RoundRecord, buyer: bool, M: int):
        def x(q):
            return q if q is None or buyer else M - q

        mine, theirs = (rec.bids, rec.asks) if buyer else (rec.asks, rec.bids)
        mine = [(a, x(q)) for a, q in mine.items()]
        self.theirs = [(a, x(q)) for a, q in theirs.items()]
        self.opp = [q for _, q in self.theirs if q is not None]
        self.prices = [x(tr.price) for tr in rec.trades]
        price_of: dict[str, int] = {}
        for tr in reversed(rec.trades):  # a seat's first trade of the round (it trades once)
            price_of[tr.buyer] = price_of[tr.seller] = x(tr.price)
        self._own = dict(mine)
        self._quoted = [(a, q, a in price_of) for a, q in mine if q is not None]
        self._price_of = price_of

    def of(self, me: str) -> tuple:
        """(own quote, rivals' quotes, whether each rival traded, own price) of seat ``me`` (own
        quote None when ``me`` is not on this side's record: hand-made histories in tests)."""
        return (self._own.get(me), [q for a, q, _ in self._quoted if a != me],
                [t for a, _, t in self._quoted if a != me], self._price_of.get(me))


_DIGESTS: dict[tuple[int, bool, int], tuple[RoundRecord, _Digest]] = {}


def _side_digest(rec: RoundRecord, buyer: bool, M: int) -> _Digest:
    """The :class:`_Digest` of ``rec`` for one side, computed once for the four seats that read
    it. Keyed by the record's id and checked by identity (the entry holds the record, so its id
    cannot be reused while it is cached); the cache is cleared when it passes 256 entries."""
    key = (id(rec), buyer, M)
    hit = _DIGESTS.get(key)
    if hit is not None and hit[0] is rec:
        return hit[1]
    if len(_DIGESTS) >= 256:
        _DIGESTS.clear()
    digest = _Digest(rec, buyer, M)
    _DIGESTS[key] = (rec, digest)
    return digest


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
        return quote_action(self.quote(observation))


_ACTIONS: dict[int | None, QuoteAction] = {}


def quote_action(quote: int | None) -> QuoteAction:
    """The (validated) answer ``{"quote": quote}``, one shared instance per quote: a tournament
    asks for millions of them and there are 102 distinct ones."""
    action = _ACTIONS.get(quote)
    if action is None:
        action = _ACTIONS[quote] = QuoteAction(quote=quote)
    return action


# ---------------------------------------------------------------------------------- simple
class Truthful(Baseline):
    """The seed's Truthful: bids its exact value every round (the CSα reference)."""

    strategy = "truthful"

    def bid(self, view):
        return view.v


class ShadeParams(TraderParams):
    delta: int = Field(default=5, ge=0, description="bid v - delta")


class Shade(Baseline):
    """The seed's Fixed Shading (+5, +10): bids ``delta`` below its value, never adapting."""

    strategy, Params = "shade", ShadeParams

    def bid(self, view):
        return view.cap(view.v - self.params.delta)


class RandomTrader(Baseline):
    """The seed's Random: a uniform bid between the minimum (0) and its value (Gode & Sunder's
    ZI-C)."""

    strategy = "random"

    def bid(self, view):
        return int(self.rng.integers(0, view.v + 1))


class ZICParams(TraderParams):
    window: int = Field(default=10, ge=0, description="half-width around the last mean price")


class ZIC(Baseline):
    """The seed's "ZIC Pure (Biased Activity)": "selects a price within a window relative to the
    market midpoint". Call-market adaptation: the book's midpoint is never shown, so the window is
    centred on the last round's mean trade price m: U{m - w .. m + w} ∩ [0, v] (U{0..v} before any
    trade). The seed calls the choice deterministic but gives no rule; ours draws uniformly."""

    strategy, Params = "zic", ZICParams

    def bid(self, view):
        m, w = view.last_price, self.params.window
        if m is None:
            return int(self.rng.integers(0, view.v + 1))
        hi = min(view.v, int(math.floor(m + w)))
        lo = max(0, min(int(math.ceil(m - w)), hi))
        return int(self.rng.integers(lo, hi + 1))


class ZICPlus(Baseline):
    """The seed's "ZIC+", listed in its table and not described. Our reading: Gode & Sunder's ZI-C
    (uniform between 0 and its value) made market-aware, uniform between the last round's mean
    trade price (or 0 before any trade) and its value, so it never bids under where the market
    last cleared."""

    strategy = "zic_plus"

    def bid(self, view):
        m = view.last_price
        lo = 0 if m is None else min(view.v, int(math.floor(m)))
        return int(self.rng.integers(max(0, lo), view.v + 1))


class LinearEqParams(TraderParams):
    slope: float = Field(default=2 / 3, ge=0, le=1, description="bid = slope × v + intercept × M")
    intercept: float = Field(default=1 / 12, ge=0, le=1)


class LinearEq(Baseline):
    """The seed's "LinearEq": the linear Bayes-Nash equilibrium strategy of Chatterjee & Samuelson
    (1983) for the k = 1/2 double auction with values uniform on [0, M]: a buyer bids 2/3 v + M/12,
    a seller asks 2/3 c + M/4 (the same rule mirrored). It assumes one uniform opponent, not this
    market; capped at the value (a buyer valuing under M/4 would bid above it)."""

    strategy, Params = "linear_eq", LinearEqParams

    def bid(self, view):
        return view.cap(self.params.slope * view.v + self.params.intercept * view.M)


class CollusiveParams(TraderParams):
    patience: int = Field(default=3, ge=1, description="rounds without a trade before it gives way")
    step: float = Field(default=3.0, ge=0, description="given way per impatient round")
    open_shade: int = Field(default=20, ge=0, description="bid v - open_shade before any trade")


class Collusive(Baseline):
    """The seed's "Collusive", listed in its table and not described (chat is off, so there is no
    agreement to keep). Our reading, tacit collusion on its side: it bids the best price its side
    has obtained so far (the lowest trade price, for a buyer), holding the line the way a cartel
    holds a price, and gives way by ``step`` for each round beyond ``patience`` rounds without a
    trade of its own; never above its value."""

    strategy, Params = "collusive", CollusiveParams

    def start(self):
        self.idle = 0

    def observe(self, view):
        self.idle = 0 if view.traded_last() else self.idle + 1

    def bid(self, view):
        p = self.params
        seen = [x for prices in view.prices for x in prices]
        anchor = min(seen) if seen else view.v - p.open_shade
        return view.cap(anchor + p.step * max(0, self.idle - p.patience + 1))


class ZIPParams(TraderParams):
    margin: float = Field(default=0.3, ge=0, le=1, description="initial profit margin μ")
    beta: float = Field(default=0.3, gt=0, le=1, description="learning rate")
    gamma: float = Field(default=0.3, ge=0, lt=1, description="momentum")
    r_max: float = Field(default=0.05, ge=0, description="relative target perturbation")
    a_max: float = Field(default=2.0, ge=0, description="absolute target perturbation")


class ZIP(Baseline):
    """Cliff's ZIP (1997; the seed's "ZIP+", described but not in its table): bid v(1 - μ), the
    margin μ learned by Widrow-Hoff with momentum towards a perturbed target. Call-market
    adaptation: the target comes from the last round's mean price (or its best ask when nothing
    traded), not from each shout."""

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
    window: int = Field(default=5, ge=1, description="rounds of quotes in the belief (GD's memory)")
    prior_shade: int = Field(default=10, ge=0, description="bid v - prior_shade before any quote")


def gd_belief(v: int, bids: np.ndarray, taken: np.ndarray, asks: np.ndarray,
              top: int = 100) -> np.ndarray | None:
    """Gjerstad-Dickhaut's belief that a bid b is accepted, for b = 0..v (buyer frame):

        q(b) = (TBL(b) + AL(b)) / (TBL(b) + AL(b) + RBG(b))

    TBL = bids <= b that traded, AL = asks <= b, RBG = bids >= b that did not trade, over the
    quotes remembered (``bids`` with their ``taken`` flags: the buyer side's, one's own included;
    ``asks``). q is computed at every quoted price, anchored at q(0) = 0 and q(top) = 1, and
    interpolated linearly in between (GD use cubic splines; linear keeps q monotone on our integer
    grid). None when nothing is remembered."""
    if bids.size + asks.size == 0:
        return None
    taken_bids, rejected = bids[taken], bids[~taken]
    levels = np.unique(np.concatenate([bids, asks, [0, top]]))
    tbl = (taken_bids[None, :] <= levels[:, None]).sum(axis=1)
    al = (asks[None, :] <= levels[:, None]).sum(axis=1)
    rbg = (rejected[None, :] >= levels[:, None]).sum(axis=1)
    den = tbl + al + rbg
    keep = den > 0
    q = np.where(keep, (tbl + al) / np.maximum(den, 1), 0.0)
    x, y = levels[keep], np.maximum.accumulate(q[keep])  # monotone, as a belief in b must be
    x, y = np.concatenate([[0], x, [top]]), np.concatenate([[0.0], y, [1.0]])
    x, idx = np.unique(x, return_index=True)
    return np.interp(np.arange(v + 1), x, np.maximum.accumulate(y[idx]))


def midpoint_surplus(v: int, asks: np.ndarray) -> np.ndarray:
    """For b = 0..v: v minus the expected price of a trade at bid b in this call market, the
    midpoint of b and the ask it crosses, taken as the mean remembered ask <= b (b itself if none)."""
    b = np.arange(v + 1)
    if asks.size == 0:
        return (v - b).astype(float)
    below = asks[None, :] <= b[:, None]
    n = below.sum(axis=1)
    mean_ask = np.where(n > 0, (below * asks[None, :]).sum(axis=1) / np.maximum(n, 1), b)
    return v - (b + mean_ask) / 2


def gd_bid(v: int, bids: np.ndarray, taken: np.ndarray, asks: np.ndarray) -> int | None:
    """argmax_b q(b)·(v - E[price | b]) (see :func:`gd_belief`, :func:`midpoint_surplus`); None
    when nothing is remembered or v = 0. Computed by the compiled :func:`kernels.gd_bid`, which
    gives the same bid as ``np.argmax(gd_belief(...) * midpoint_surplus(...))`` (tested)."""
    b = kernels.gd_bid(int(v), bids, taken, asks, 100)
    return None if b < 0 else int(b)


def remembered(view: "View", window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The buyer side's bids (one's own included) with their taken flags, and the asks, of the
    last ``window`` rounds."""
    bids, taken = [], []
    for t in range(max(0, len(view.own) - window), len(view.own)):
        bids += view.same[t]
        taken += view.same_taken[t]
        if view.own[t] is not None:
            bids.append(view.own[t])
            taken.append(view.my_price[t] is not None)
    return (np.array(bids, dtype=float), np.array(taken, dtype=bool),
            view.recent_asks(window))


def remembered_windows(view: "View", windows: list[int]
                       ) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``remembered(view, w)`` for every ``w`` in ``windows``, built once for the longest memory
    and sliced: a shorter memory's rounds are the last rounds of a longer one's."""
    T = len(view.own)
    start = max(0, T - max(windows))
    bids, taken, asks = [], [], []
    n_bids, n_asks = [0], [0]  # quotes before each round of the longest memory
    for t in range(start, T):
        bids += view.same[t]
        taken += view.same_taken[t]
        if view.own[t] is not None:
            bids.append(view.own[t])
            taken.append(view.my_price[t] is not None)
        asks += view.opp[t]
        n_bids.append(len(bids))
        n_asks.append(len(asks))
    bids_a, taken_a = np.array(bids, dtype=float), np.array(taken, dtype=bool)
    asks_a = np.array(asks, dtype=float)
    out = {}
    for w in windows:
        first = max(0, T - w) - start
        out[w] = (bids_a[n_bids[first]:], taken_a[n_bids[first]:], asks_a[n_asks[first]:])
    return out


class GD(Baseline):
    """Gjerstad & Dickhaut (1998), "Price formation in double auctions": the bid that maximises
    expected surplus under a belief built from taken and rejected bids and from asks
    (:func:`gd_belief`). Call-market adaptations: memory counts rounds, not trades; the surplus of a
    trade is v minus the midpoint price; before any quote it bids v - prior_shade."""

    strategy, Params = "gd", GDParams

    def bid(self, view):
        b = gd_bid(view.v, *remembered(view, self.params.window))
        return view.cap(view.v - self.params.prior_shade) if b is None else b


class GDXParams(TraderParams):
    population: int = Field(default=6, ge=2)
    generation: int = Field(default=5, ge=1, description="rounds between generations")
    max_window: int = Field(default=10, ge=1)
    max_shade: int = Field(default=10, ge=0)
    prior_shade: int = Field(default=10, ge=0)


class GDX(Baseline):
    """The seed's GDX, "a genetic algorithm that evolves a population of Gjerstad-Dickhaut agents"
    (not Tesauro & Bredin's dynamic-programming GDX): GD traders (memory, extra shade) evolved by a
    GA; fitness = counterfactual payoff of each
    candidate's bid against each round's lowest ask (trade iff bid >= it, at the midpoint)."""

    strategy, Params = "gdx", GDXParams

    def start(self):
        p = self.params
        self.genes = np.column_stack([self.rng.integers(1, p.max_window + 1, p.population),
                                      self.rng.integers(0, p.max_shade + 1, p.population)])
        self.fitness = np.zeros(p.population)
        self._last_bids: np.ndarray | None = None

    def _bids(self, view) -> np.ndarray:
        windows = sorted({int(w) for w in self.genes[:, 0]})
        memory = remembered_windows(view, windows)
        best = {w: gd_bid(view.v, *memory[w]) for w in windows}  # GD's bid per memory length
        out = []
        for w, s in self.genes:
            b = best[int(w)]
            out.append(view.v - self.params.prior_shade if b is None else max(0, round(b - s)))
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
    """Fictitious play (Brown 1951): opponents are taken to draw asks from a fixed distribution,
    estimated by every ask seen so far (F); best response argmax_b F(b)·(v - E[price | b]), where a
    trade clears at the midpoint of the bid and the ask it crosses (:func:`midpoint_surplus`)."""

    strategy, Params = "fictitious_play", FictitiousPlayParams

    def bid(self, view):
        asks = view.recent_asks(None)
        if asks.size == 0 or view.v <= 0:
            return view.cap(view.v - self.params.prior_shade)
        # argmax_b F(b) * midpoint_surplus(v, asks)[b], compiled (the same bid: tested)
        return int(kernels.fp_bid(int(view.v), asks))


class BayesianParams(TraderParams):
    prior_mu: float = 50.0
    prior_sd: float = Field(default=20.0, gt=0)
    obs_sd: float = Field(default=5.0, gt=0, description="base noise of one observed price")
    vol_window: int = Field(default=5, ge=2)
    z: float = Field(default=0.5, description="bid = posterior mean - z × posterior sd")


class Bayesian(Baseline):
    """The seed's Enhanced Bayesian (roster name ``enhanced_bayesian``): "starts with a prior belief
    about the market price and updates it using Bayesian inference, weighted by market volatility":
    a normal belief about the clearing price, updated with every trade price; observations are
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
    """The seed's Risk-Aware: maximises the CARA certainty equivalent of the lottery "trade with
    probability p(b) for π(b), else 0", p and π (midpoint price) from the asks of recent rounds."""

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
class FollowerParams(TraderParams):
    shade: float = Field(default=5.0, description="subtracted from the forecast")
    open_shade: int = Field(default=10, ge=0, description="bid v - open_shade before any trade")
    concede: float = Field(default=2.0, ge=0, description="added to the bid after each round it "
                           "quoted without trading (towards its value); taken back after a trade")


class Follower(Baseline):
    """A market follower: bids a price forecast minus ``shade`` plus its *concession*, which grows
    by ``concede`` after every round in which it quoted and did not trade and shrinks by as much
    (not below 0) after a trade. The seed's one-line descriptions give only the forecast; a follower
    that never concedes quotes under the market it follows and stops trading once prices settle
    below its value less the shade, which no trend follower would do (issue 15)."""

    Params = FollowerParams

    def reset(self, rng):
        self.concession = 0.0
        super().reset(rng)

    def observe(self, view):
        if view.own[-1] is None:
            return
        step = self.params.concede
        self.concession = (max(0.0, self.concession - step) if view.traded_last()
                           else self.concession + step)

    def follow(self, view, forecast: float | None):
        """The bid for a forecast (None: no trade seen yet, bid v - open_shade)."""
        if forecast is None:
            return view.cap(view.v - self.params.open_shade + self.concession)
        return view.cap(forecast - self.params.shade + self.concession)


class TrendParams(FollowerParams):
    alpha: float = Field(default=0.3, gt=0, le=1, description="EMA weight of the newest price")
    k: float = Field(default=1.0, description="weight of the last change")


class Momentum(Follower):
    """Trend follower: EMA of prices plus k × the EMA's last change, minus shade (a conceding
    :class:`Follower`)."""

    strategy, Params = "momentum", TrendParams

    def start(self):
        self.ema = self.prev = None

    def observe(self, view):
        super().observe(view)
        if view.prices[-1]:
            price = sum(view.prices[-1]) / len(view.prices[-1])
            self.prev = self.ema
            self.ema = price if self.ema is None else (
                self.params.alpha * price + (1 - self.params.alpha) * self.ema)

    def bid(self, view):
        if self.ema is None:
            return self.follow(view, None)
        trend = 0.0 if self.prev is None else self.ema - self.prev
        return self.follow(view, self.ema + self.params.k * trend)


class Contrarian(Follower):
    """Bets against the last move: last price - k × (last price - the one before), minus shade (a
    conceding :class:`Follower`)."""

    strategy, Params = "contrarian", TrendParams

    def bid(self, view):
        rp = view.round_prices
        if not rp:
            return self.follow(view, None)
        change = rp[-1] - rp[-2] if len(rp) >= 2 else 0.0
        return self.follow(view, rp[-1] - self.params.k * change)


class MeanReversionParams(TrendParams):
    alpha: float = Field(default=0.1, gt=0, le=1)
    shade: float = Field(default=3.0)


class MeanReversion(Momentum):
    """Bids towards the long-run mean: a slow EMA of prices, minus shade, no trend term (a
    conceding :class:`Follower`)."""

    strategy, Params = "mean_reversion", MeanReversionParams

    def bid(self, view):
        return self.follow(view, self.ema)


class RegressionParams(FollowerParams):
    window: int = Field(default=10, ge=2)
    shade: float = 3.0


class Regression(Follower):
    """OLS line through the last ``window`` round mean prices; bids the next-round forecast minus
    shade (a conceding :class:`Follower`)."""

    strategy, Params = "regression", RegressionParams

    def bid(self, view):
        pts = [(t, sum(p) / len(p)) for t, p in enumerate(view.prices) if p][-self.params.window:]
        if not pts:
            return self.follow(view, None)
        if len(pts) == 1:
            return self.follow(view, pts[0][1])
        t, y = np.array(pts).T
        slope, icpt = np.polyfit(t, y, 1)
        return self.follow(view, icpt + slope * view.t)


class RegimeSwitcherParams(TraderParams):
    vol_window: int = Field(default=5, ge=2)
    threshold: float = Field(default=3.0, ge=0, description="price SD above which prices mean-revert")
    momentum: TrendParams = Field(default_factory=TrendParams)
    mean_reversion: MeanReversionParams = Field(default_factory=MeanReversionParams)


class RegimeSwitcher(Baseline):
    """The seed's Regime Switcher: holds a momentum and a mean-reversion trader (both conceding
    followers); follows momentum while the SD of recent round
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
    """Tabular Q-learning (Watkins 1989) over shading arms, ε-greedy with ties between the best
    arms broken at random (a fresh table is all ties); state = (traded last round, sign of the last
    price change); reward = the round's payoff."""

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
        q = self.q[self.state]
        return int(self.rng.choice(np.flatnonzero(q == q.max())))  # ties broken at random


class RothErevParams(ArmsParams):
    phi: float = Field(default=0.1, ge=0, le=1, description="forgetting")
    epsilon: float = Field(default=0.2, ge=0, lt=1, description="experimentation")
    initial: float = Field(default=5.0, gt=0, description="initial propensity")


class RothErev(ShadingLearner):
    """Roth & Erev (1995) reinforcement, as the seed describes: an arm (shading delta) chosen with
    probability ∝ its propensity; propensities forget (φ) and are reinforced by the payoff, a share
    ε spread over the other arms (experimentation)."""

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
    """The seed's Stochastic Shading Bandit: each arm a shading delta; softmax over each arm's
    mean payoff (optimistic start)."""

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
    """The seed's Adaptive: "adjusts its bidding aggressiveness (sigma) based on success ... more
    aggressive after failing to trade and more conservative after a successful trade". Our reading:
    the aggressiveness is a shade below its value, raised by ``up`` after a trade (more
    conservative), multiplied by ``down`` after a round without one (more aggressive). The seed
    rates it next to Random; its one line does not say what makes it that weak, so we do not tune
    it to be."""

    strategy, Params = "adaptive", AdaptiveParams

    def start(self):
        self.shade = self.params.shade

    def observe(self, view):
        self.shade = self.shade + self.params.up if view.traded_last() else self.shade * self.params.down

    def bid(self, view):
        return view.cap(view.v - self.shade)


class AAParams(TraderParams):
    theta: float = Field(default=-5.0, description="initial long-term learning parameter θ")
    theta_min: float = -8.0
    theta_max: float = 2.0
    gamma: float = Field(default=2.0, gt=0, description="shape of θ*(α̂)")
    beta1: float = Field(default=0.5, gt=0, le=1, description="learning rate of the aggressiveness r")
    beta2: float = Field(default=0.5, gt=0, le=1, description="learning rate of θ")
    lambda_r: float = Field(default=0.05, ge=0, description="relative step of the desired target")
    lambda_a: float = Field(default=1.0, ge=0, description="absolute step (ticks)")
    n_trades: int = Field(default=5, ge=1, description="prices in p* (EMA weight 2/(n+1)) and in α")
    r0: float = Field(default=0.0, ge=-1, le=1, description="initial aggressiveness")
    eta: float = Field(default=3.0, ge=1, description="opening rule: b* + (min(v, a*) - b*)/η")
    open_shade: int = Field(default=10, ge=0, description="bid v - open_shade in the first round")


def aa_target(r: float, v: float, p_star: float, theta: float) -> float:
    """Vytelingum's target price τ(r) of a buyer with limit v, equilibrium estimate p*, θ:
    intra-marginal (v > p*): p*(1 - (e^{-rθ} - 1)/(e^θ - 1)) for r <= 0, p* + (v - p*)(e^{rθ} -
    1)/(e^θ - 1) for r > 0; extra-marginal: v(1 - (e^{-rθ} - 1)/(e^θ - 1)) for r <= 0, v for r > 0.
    τ(-1) = 0, τ(0) = min(v, p*), τ(1) = v; increasing in r."""
    den = math.expm1(theta) if theta != 0 else 1e-12
    if v > p_star:
        if r <= 0:
            return p_star * (1 - math.expm1(-r * theta) / den)
        return p_star + (v - p_star) * math.expm1(r * theta) / den
    return v * (1 - math.expm1(-r * theta) / den) if r <= 0 else v


def aa_aggressiveness(target: float, v: float, p_star: float, theta: float) -> float:
    """The r in [-1, 1] whose :func:`aa_target` is ``target`` (clipped), by bisection."""
    lo, hi = -1.0, 1.0
    if target <= aa_target(lo, v, p_star, theta):
        return lo
    if target >= aa_target(hi, v, p_star, theta):
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if aa_target(mid, v, p_star, theta) < target else (lo, mid)
    return (lo + hi) / 2


class AA(Baseline):
    """Adaptive Aggressive (Vytelingum, Cliff & Jennings 2008), with the constants of Cliff's BSE.

    - p*: an EMA (weight 2/(n+1)) of trade prices; volatility α = RMS deviation of the last n
      prices from p*, over p*, normalised by the α range seen so far (α̂); long-term learning
      θ <- θ + β2(θ*(α̂) - θ), θ* = (θmax - θmin)(1 - α̂ e^{γ(α̂ - 1)}) + θmin.
    - short-term learning of the aggressiveness r: after each round, a desired target δ: if the
      round traded at (mean) price p, δ = (1 - λr)p - λa when its target would have traded (τ >= p:
      be less aggressive), else (1 + λr)p + λa; if nothing traded and its target is at most the
      best rival bid b*, δ = (1 + λr)b* + λa. Then r <- r + β1(r(δ) - r) (:func:`aa_aggressiveness`).
    - quote: the target τ(r) (:func:`aa_target`), at most v.
    Call-market adaptations: "the last trade" is the round's mean price; before any trade it bids
    b* + (min(v, a*) - b*)/η from the last round's best rival bid b* and best ask a* (Vytelingum's
    opening rule), v - open_shade in the first round. The seed's "Adaptive Aggressive".
    """

    strategy, Params = "aa", AAParams

    def start(self):
        p = self.params
        self.r, self.theta, self.p_star = p.r0, p.theta, None
        self.alpha_lo = self.alpha_hi = None

    def target(self, view) -> float:
        return aa_target(self.r, view.v, self.p_star, self.theta)

    def observe(self, view):
        p = self.params
        prices = view.prices[-1]
        if prices:
            q = sum(prices) / len(prices)
            w = 2.0 / (p.n_trades + 1)
            self.p_star = q if self.p_star is None else w * q + (1 - w) * self.p_star
            self._learn_theta(view)
        if self.p_star is None:
            return
        tau = self.target(view)
        rival = view.best_rival_bid_last()
        if prices:
            q = sum(prices) / len(prices)
            delta = (1 - p.lambda_r) * q - p.lambda_a if tau >= q else (1 + p.lambda_r) * q + p.lambda_a
        elif rival is not None and tau <= rival:
            delta = (1 + p.lambda_r) * rival + p.lambda_a
        else:
            return
        desired = aa_aggressiveness(delta, view.v, self.p_star, self.theta)
        self.r += p.beta1 * (desired - self.r)

    def _learn_theta(self, view):
        p = self.params
        recent = view.round_prices[-p.n_trades:]
        if self.p_star <= 0:
            return
        alpha = math.sqrt(sum((x - self.p_star) ** 2 for x in recent) / len(recent)) / self.p_star
        self.alpha_lo = alpha if self.alpha_lo is None else min(self.alpha_lo, alpha)
        self.alpha_hi = alpha if self.alpha_hi is None else max(self.alpha_hi, alpha)
        span = self.alpha_hi - self.alpha_lo
        a_hat = (alpha - self.alpha_lo) / span if span > 0 else 0.5
        theta_star = (p.theta_max - p.theta_min) * (1 - a_hat * math.exp(p.gamma * (a_hat - 1))) + p.theta_min
        self.theta += p.beta2 * (theta_star - self.theta)

    def bid(self, view):
        if self.p_star is not None:
            return view.cap(self.target(view))
        if not view.own:
            return view.cap(view.v - self.params.open_shade)
        rival, ask = view.best_rival_bid_last(), view.best_ask_last()
        lo = 0 if rival is None else rival
        hi = view.v if ask is None else min(view.v, ask)
        return view.cap(lo + (hi - lo) / self.params.eta) if hi > lo else view.cap(hi)


class AACliffParams(TraderParams):
    offset: float = Field(default=10.0, ge=0, description="initial offset below the value")
    gamma: float = Field(default=2.0, gt=0, description="initial step of the offset")
    sigma: float = Field(default=2.0, ge=0, description="initial search dispersion (SD of the noise)")
    adapt: float = Field(default=1.2, gt=1, description="factor by which γ and σ grow or shrink")
    ema: float = Field(default=0.3, gt=0, le=1, description="weight of the newest payoff in the baseline")


class AACliff(Baseline):
    """The seed's "Adaptive Aggressive Cliff": "learns an offset from its private value and
    dynamically adjusts its aggressiveness (gamma) and search dispersion (sigma) based on
    profitability". The seed says no more, so this is our reading, a hill climber on the offset:
    bid v - offset + N(0, σ); after each round its payoff is compared with an EMA of past payoffs:
    at least as good -> keep the direction of the offset's moves, γ × adapt, σ / adapt; worse ->
    reverse the direction, γ / adapt, σ × adapt; then offset += direction × γ (offset in [0, v],
    γ and σ in [0.25, 20])."""

    strategy, Params = "aa_cliff", AACliffParams

    def start(self):
        p = self.params
        self.offset, self.gamma, self.sigma = p.offset, p.gamma, p.sigma
        self.direction, self.baseline = 1.0, None

    def observe(self, view):
        p, reward = self.params, float(view.payoff[-1])
        if self.baseline is not None:
            better = reward >= self.baseline
            self.direction = self.direction if better else -self.direction
            self.gamma = min(20.0, max(0.25, self.gamma * (p.adapt if better else 1 / p.adapt)))
            self.sigma = min(20.0, max(0.25, self.sigma * (1 / p.adapt if better else p.adapt)))
            self.offset = min(max(0.0, self.offset + self.direction * self.gamma), view.v)
        self.baseline = reward if self.baseline is None else p.ema * reward + (1 - p.ema) * self.baseline

    def bid(self, view):
        return view.cap(view.v - self.offset + self.rng.normal(0.0, self.sigma))


# ---------------------------------------------------------------------------------- special
class SniperParams(TraderParams):
    park_shade: int = Field(default=40, ge=0, description="parked bid v - park_shade")
    strike_rounds: int = Field(default=5, ge=1, description="strike in the last this many rounds")
    strike_shade: int = Field(default=1, ge=0, description="strike bid v - strike_shade")
    bargain: int | None = Field(default=20, ge=0,
                                description="take a last best ask <= v - bargain while parked (None: never)")


class Sniper(Baseline):
    """Kaplan's sniper (Rust, Miller & Palmer 1993): parks with a non-competitive bid (the first 25
    of 30 rounds by default), takes only bargains (a last best ask <= v - bargain), and strikes
    near its value in the last ``strike_rounds`` rounds (5), as the seed describes."""

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
    """The seed's Penny Jumper: "one tick inside the current best bid or ask". Call-market
    adaptation: the book is sealed, so it jumps the best rival quote of the last round (for a
    buyer: one tick above the best rival bid), never past its value."""

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
    """The seed's Adversarial Exploiter, "tracking their price history and undercutting them by a
    small margin": among opposing traders whose last ``window`` quotes have SD <=
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
    """The seed's Threat Tit-for-Tat, our reading: it mirrors the other side, moving its bid by the change in the best opposing quote (an ask that
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
    """The seed's Signal Jammer: wraps another baseline (``inner``, momentum by default) and adds
    integer noise U{-noise..noise} to its bid (clipped to [0, v])."""

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
    for cls in (Truthful, Shade, RandomTrader, ZIC, ZICPlus, LinearEq, Collusive, ZIP, GD, GDX,
                AA, AACliff, Sniper, Momentum, Contrarian, MeanReversion, Regression,
                FictitiousPlay, Bayesian, RiskAware, QLearning, RothErev, Bandit, PennyJumper,
                Exploiter, SignalJammer, RegimeSwitcher, TitForTat, Adaptive)})
