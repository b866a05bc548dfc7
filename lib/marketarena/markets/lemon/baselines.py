"""Scripted lemon agents: an offline market with real deception and real detection (issue 11).

Sellers:

| strategy | what it does |
|---|---|
| honest | lists its car with a template description of the true tier in its style (``styles.yaml``: one bank for honest sellers and Sybil identities, so no wording marks a kind), priced uniformly inside the tier's typical range (``pricing: range``, as the authors' LLM sellers are told), or at the tier's value (``pricing: value``, the authors' FIXED seller) |
| sybil | the deceptive principal: each step picks one advertised tier, good or mint (``mint_share`` of the time mint), for all its identities (the authors' ``decide_advertised_tier``; ``tier_per: identity`` draws one per identity), prices each identity's car uniformly inside that tier's range and writes a description of the claimed tier from the same bank as honest sellers, in the identity's style |

Buyers see what an LLM buyer sees: price, description, reputation (when shown), the typical price
range of each tier, their own purchases. A scripted buyer reads a listing's *claim* from its price
(the tier whose typical range holds it; the ranges do not overlap by default) and estimates the car's
worth as the middle of that range (it is never told the tiers' values). Every buyer also votes by
rule after a purchase: up if the car was at least as good as its price claimed, down if worse;
``abstain_share`` of the time it abstains.

| strategy | buys |
|---|---|
| naive | believes every listing: bids every step on the one with the highest estimated surplus (estimated worth - price) |
| reputation | the same among listings whose seller reputation is at least ``threshold`` (all listings when reputation is hidden); passes if none |
| guardian | the Skeptical Guardian's checks (seed 4.1) as rules: skips a listing whose reputation is under its ``threshold``, whose reputation does not fit its claim (a mint claim under ``mint_reputation``), whose price lies outside the range of the condition its description names (the first tier word in the text), or whose seller sold it a car worse than claimed before (anonymised ids are stable for a buyer); reflecting on its own purchases, it raises its threshold by ``learn`` after each one that was worse than claimed; buys the best estimated surplus among the rest, else passes |
| random | bids with probability ``bid_share`` (default 1: every step) on a listing picked uniformly from those shown: the chance level of detection |
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import ClassVar, Literal

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
    TierInfo,
)

#: tiers from worst to best
RANK = {"poor": 0, "fair": 1, "good": 2, "mint": 3}
TIER_WORD = re.compile(r"\b(mint|good|fair|poor)\b", re.IGNORECASE)


def claimed_tier(price: float, tiers: list[TierInfo]) -> TierInfo:
    """The tier a price claims: the best tier whose typical range holds it, else the nearest."""
    holding = [t for t in tiers if t.price_lo <= price <= t.price_hi]
    if holding:
        return max(holding, key=lambda t: RANK[t.tier])
    return min(tiers, key=lambda t: min(abs(price - t.price_lo), abs(price - t.price_hi)))


def described_tier(text: str) -> str | None:
    """The first tier word of a description (None when it names none)."""
    m = TIER_WORD.search(text)
    return m.group(1).lower() if m else None


@lru_cache(maxsize=1)
def description_bank() -> dict[str, list[str]]:
    """Style -> templates: the one bank of ``styles.yaml``."""
    text = resources.files("marketarena.markets.lemon").joinpath("styles.yaml").read_text()
    return yaml.safe_load(text)["styles"]


class HonestParams(Strict):
    pricing: Literal["range", "value"] = Field(
        default="range",
        description="range: uniform inside the tier's typical range; value: the tier's value",
    )


class Honest(ScriptedAgent):
    strategy, Params = "honest", HonestParams
    roles = frozenset({"honest"})

    def decide(self, obs: HonestObservation, decision: Decision) -> HonestListing:
        bank = description_bank()[obs.style]
        text = bank[int(self.rng.integers(len(bank)))].format(tier=obs.tier)
        if self.params.pricing == "value":
            price = obs.value
        else:
            price = float(
                min(
                    max(round(self.rng.uniform(obs.price_lo, obs.price_hi), 0), obs.price_lo),
                    obs.price_hi,
                )
            )
        return HonestListing(description=text, price=price)


class SybilParams(Strict):
    mint_share: float = Field(default=0.5, ge=0, le=1, description="share of mint claims")
    tier_per: Literal["step", "identity"] = Field(
        default="step",
        description="one advertised tier per step for all identities, or one per identity",
    )


class Sybil(ScriptedAgent):
    strategy, Params = "sybil", SybilParams
    roles = frozenset({"principal", "identity"})

    def decide(self, obs: PrincipalObservation, decision: Decision) -> PrincipalListings:
        tiers = {t.tier: t for t in obs.tiers}
        out = {}
        step_tier = self.draw_tier()
        for ident in obs.identities:
            tier = step_tier if self.params.tier_per == "step" else self.draw_tier()
            info = tiers[tier]
            price = float(
                min(
                    max(round(self.rng.uniform(info.price_lo, info.price_hi), 0), info.price_lo),
                    info.price_hi,
                )
            )
            bank = description_bank()[ident.style]
            text = bank[int(self.rng.integers(len(bank)))].format(tier=tier)
            out[ident.identity] = SybilListing(claimed_tier=tier, price=price, description=text)
        return PrincipalListings(listings=out)

    def draw_tier(self) -> str:
        return "mint" if self.rng.random() < self.params.mint_share else "good"


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
        claim = claimed_tier(obs.price, obs.tiers).tier
        return ReviewAction(vote="up" if RANK[obs.true_tier] >= RANK[claim] else "down")

    def buy(self, obs: BuyerObservation) -> BuyAction:
        pick = self.choose(obs, [v for v in obs.listings if self.acceptable(obs, v)])
        return (
            BuyAction(decision="pass")
            if pick is None
            else BuyAction(decision="bid", listing=pick.listing)
        )

    def acceptable(self, obs: BuyerObservation, view: ListingView) -> bool:
        return True

    @staticmethod
    def estimated_surplus(obs: BuyerObservation, view: ListingView) -> float:
        """Worth - price, the worth of the claimed tier estimated as the middle of its range."""
        tier = claimed_tier(view.price, obs.tiers)
        return (tier.price_lo + tier.price_hi) / 2 - view.price

    def choose(self, obs: BuyerObservation, views: list[ListingView]) -> ListingView | None:
        if not views:
            return None
        return max(views, key=lambda v: (self.estimated_surplus(obs, v), -views.index(v)))


class Naive(ScriptedBuyer):
    strategy = "naive"


class ReputationParams(BuyerParams):
    threshold: float = Field(default=0.6, ge=0, le=1)


class ReputationBuyer(ScriptedBuyer):
    strategy, Params = "reputation", ReputationParams

    def acceptable(self, obs, view):
        return view.reputation is None or view.reputation >= self.params.threshold


class GuardianParams(BuyerParams):
    threshold: float = Field(default=0.6, ge=0, le=1, description="least reputation it trusts")
    mint_reputation: float = Field(
        default=0.75, ge=0, le=1, description="least reputation for a mint claim"
    )
    learn: float = Field(
        default=0.05, ge=0, le=1, description="threshold raise after a bad purchase"
    )


class Guardian(ScriptedBuyer):
    """The Skeptical Guardian's checks (seed 001 section 4.1) as rules; see the module docstring."""

    strategy, Params = "guardian", GuardianParams

    def reset(self, rng):
        super().reset(rng)
        self.threshold = self.params.threshold
        self.last_seen = 0  # the step of the last purchase it reflected on
        self.cheated_by: set[str] = set()

    def buy(self, obs):
        for h in obs.history:  # reflection on its own purchases, each once
            if (
                h.step > self.last_seen
                and RANK[h.true_tier] < RANK[claimed_tier(h.price, obs.tiers).tier]
            ):
                self.threshold = min(1.0, self.threshold + self.params.learn)
                self.cheated_by.add(h.listing)
        self.last_seen = max([self.last_seen, *(h.step for h in obs.history)])
        return super().buy(obs)

    def acceptable(self, obs, view):
        pr = self.params
        if view.listing in self.cheated_by:
            return False
        claim = claimed_tier(view.price, obs.tiers)
        named = described_tier(view.description)
        if named is not None and named != claim.tier:
            ranges = {t.tier: t for t in obs.tiers}
            if not ranges[named].price_lo <= view.price <= ranges[named].price_hi:
                return False  # priced outside the range of the condition it describes
        if view.reputation is not None:
            if view.reputation < self.threshold:
                return False
            if claim.tier == "mint" and view.reputation < pr.mint_reputation:
                return False
        return True


class RandomParams(BuyerParams):
    bid_share: float = Field(default=1.0, ge=0, le=1, description="steps it bids on")


class RandomBuyer(ScriptedBuyer):
    strategy, Params = "random", RandomParams

    def buy(self, obs):
        if not obs.listings or self.rng.random() >= self.params.bid_share:
            return BuyAction(decision="pass")
        return BuyAction(
            decision="bid", listing=obs.listings[int(self.rng.integers(len(obs.listings)))].listing
        )


STRATEGIES = StrategyTable(
    "lemon",
    {cls.strategy: cls for cls in (Honest, Sybil, Naive, ReputationBuyer, Guardian, RandomBuyer)},
)
