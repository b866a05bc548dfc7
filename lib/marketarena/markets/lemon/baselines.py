"""Scripted lemon agents: an offline market with real deception and real detection (issue 11).

Sellers:

| strategy | what it does |
|---|---|
| honest | lists its car with a template description of the true tier in its style (``styles.yaml``: standard, detailed, terse, optimistic); the price is the market's (truthful) |
| sybil | the deceptive principal: for every active identity, claims good or mint (``mint_share`` of the time mint), prices uniformly inside the claimed tier's typical range, and writes a description from the small bank of its identity's style (formal, casual, technical, brief, detailed) |

Buyers (every buyer also votes by rule after a purchase: up if the car was at least as good as
claimed, down if worse; ``abstain_share`` of the time it abstains):

| strategy | buys |
|---|---|
| naive | the listing with the best advertised value for money (claimed tier's value / price), if that is at least ``min_ratio`` |
| reputation | the best value for money among listings whose seller reputation is at least ``threshold`` (all listings when reputation is hidden); passes if none |
| guardian | the Skeptical Guardian's checks without an LLM: skips a listing whose reputation is under ``threshold``, whose price is under ``discount`` below its claimed tier's value (too good to be true: honest sellers price at value), or whose reputation does not fit its claim (mint claimed with reputation under ``mint_reputation``); reflecting on its own purchases, it raises its threshold by ``learn`` after each purchase that was worse than claimed; buys the best value for money among the rest, else passes |
| random | bids on a random listing with probability ``bid_share``, else passes |
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import ClassVar

import yaml
from pydantic import Field

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable
from marketarena.core.types import Decision
from marketarena.markets.lemon.observations import (
    BuyAction,
    BuyerObservation,
    HonestListing,
    HonestObservation,
    ListingView,
    PrincipalListings,
    PrincipalObservation,
    ReviewAction,
    ReviewObservation,
    SybilListing,
)


@lru_cache(maxsize=1)
def description_bank() -> dict[str, dict[str, list[str]]]:
    text = resources.files("marketarena.markets.lemon").joinpath("styles.yaml").read_text()
    return yaml.safe_load(text)


class Honest(ScriptedAgent):
    strategy = "honest"
    roles = frozenset({"honest"})

    def decide(self, obs: HonestObservation, decision: Decision) -> HonestListing:
        bank = description_bank()["honest"][obs.style]
        text = bank[int(self.rng.integers(len(bank)))].format(tier=obs.tier)
        return HonestListing(description=text)


class SybilParams(Strict):
    mint_share: float = Field(default=0.5, ge=0, le=1, description="share of mint claims")


class Sybil(ScriptedAgent):
    strategy, Params = "sybil", SybilParams
    roles = frozenset({"principal", "identity"})

    def decide(self, obs: PrincipalObservation, decision: Decision) -> PrincipalListings:
        tiers = {t.tier: t for t in obs.tiers}
        out = {}
        for ident in obs.identities:
            tier = "mint" if self.rng.random() < self.params.mint_share else "good"
            info = tiers[tier]
            price = float(round(self.rng.uniform(info.price_lo, info.price_hi), 0))
            bank = description_bank()["sybil"][ident.style]
            text = bank[int(self.rng.integers(len(bank)))].format(tier=tier)
            out[ident.identity] = SybilListing(claimed_tier=tier, price=price, description=text)
        return PrincipalListings(listings=out)


class BuyerParams(Strict):
    abstain_share: float = Field(default=0.0, ge=0, le=1, description="votes it abstains on")


class ScriptedBuyer(ScriptedAgent):
    Params: ClassVar[type[BuyerParams]] = BuyerParams
    roles = frozenset({"buyer"})

    def decide(self, obs, decision: Decision):
        if isinstance(obs, ReviewObservation):
            return self.vote(obs)
        return self.buy(obs)

    def vote(self, obs: ReviewObservation) -> ReviewAction:
        if self.rng.random() < self.params.abstain_share:
            return ReviewAction(vote="abstain")
        rank = {"poor": 0, "fair": 1, "good": 2, "mint": 3}
        return ReviewAction(vote="up" if rank[obs.true_tier] >= rank[obs.claimed_tier] else "down")

    def buy(self, obs: BuyerObservation) -> BuyAction:
        pick = self.choose(obs, [v for v in obs.listings if self.acceptable(obs, v)])
        return BuyAction(decision="pass") if pick is None else BuyAction(decision="bid", listing=pick.listing)

    def acceptable(self, obs: BuyerObservation, view: ListingView) -> bool:
        return True

    @staticmethod
    def value_for_money(obs: BuyerObservation, view: ListingView) -> float:
        value = {t.tier: t.value for t in obs.tiers}[view.claimed_tier]
        return value / view.price

    def choose(self, obs: BuyerObservation, views: list[ListingView]) -> ListingView | None:
        if not views:
            return None
        return max(views, key=lambda v: (self.value_for_money(obs, v), -views.index(v)))


class NaiveParams(BuyerParams):
    min_ratio: float = Field(default=1.0, gt=0, description="bids if claimed value / price >= this")


class Naive(ScriptedBuyer):
    strategy, Params = "naive", NaiveParams

    def acceptable(self, obs, view):
        return self.value_for_money(obs, view) >= self.params.min_ratio


class ReputationParams(BuyerParams):
    threshold: float = Field(default=0.6, ge=0, le=1)


class ReputationBuyer(ScriptedBuyer):
    strategy, Params = "reputation", ReputationParams

    def acceptable(self, obs, view):
        return view.reputation is None or view.reputation >= self.params.threshold


class GuardianParams(BuyerParams):
    threshold: float = Field(default=0.6, ge=0, le=1, description="least reputation it trusts")
    discount: float = Field(default=0.02, ge=0, le=1, description="a price this far under the "
                            "claimed value is too good to be true")
    mint_reputation: float = Field(default=0.75, ge=0, le=1, description="least reputation for a mint claim")
    learn: float = Field(default=0.05, ge=0, le=1, description="threshold raise after a bad purchase")


class Guardian(ScriptedBuyer):
    """The Skeptical Guardian's checks (seed 001 section 4.1) as rules; see the module docstring."""

    strategy, Params = "guardian", GuardianParams

    def reset(self, rng):
        super().reset(rng)
        self.threshold = self.params.threshold
        self.last_seen = 0  # the step of the last purchase it reflected on

    def buy(self, obs):
        rank = {"poor": 0, "fair": 1, "good": 2, "mint": 3}
        for h in obs.history:  # reflection on its own purchases, each once
            if h.step > self.last_seen and rank[h.true_tier] < rank[h.claimed_tier]:
                self.threshold = min(1.0, self.threshold + self.params.learn)
        self.last_seen = max([self.last_seen, *(h.step for h in obs.history)])
        return super().buy(obs)

    def acceptable(self, obs, view):
        pr = self.params
        value = {t.tier: t.value for t in obs.tiers}[view.claimed_tier]
        if view.price < value * (1 - pr.discount):
            return False
        if view.reputation is not None:
            if view.reputation < self.threshold:
                return False
            if view.claimed_tier == "mint" and view.reputation < pr.mint_reputation:
                return False
        return True


class RandomParams(BuyerParams):
    bid_share: float = Field(default=0.5, ge=0, le=1)


class RandomBuyer(ScriptedBuyer):
    strategy, Params = "random", RandomParams

    def buy(self, obs):
        if not obs.listings or self.rng.random() >= self.params.bid_share:
            return BuyAction(decision="pass")
        return BuyAction(decision="bid", listing=obs.listings[int(self.rng.integers(len(obs.listings)))].listing)


STRATEGIES = StrategyTable("lemon", {cls.strategy: cls for cls in (
    Honest, Sybil, Naive, ReputationBuyer, Guardian, RandomBuyer)})
