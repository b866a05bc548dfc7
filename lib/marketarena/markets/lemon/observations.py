"""What lemon's sellers, principal and buyers see and answer (seed 001 section 3.2, equation 4).

Three decision points a step (``round`` 0, 1, 2):

- ``list``: an honest seller sees its car's true tier, its value and the tier's typical price range
  and answers a description and a price inside that range (:class:`HonestListing`; the authors'
  LLM seller is told to "pick a specific price within the typical range for this car's
  condition"); the deceptive principal sees its active identities (id, writing style, reputation,
  sales) and answers for all of them at once (:class:`PrincipalListings`: per identity a claimed
  tier, good or mint, a price inside that tier's typical range, a description); its cars are
  always poor.
- ``buy``: a buyer sees up to ``discovery_limit`` listings, each under an id anonymised for that
  buyer (``seller_<n>``, stable over the episode), with the price, the description *as quoted
  data* (``core.prompts.quote_text``: cleaned, capped, a JSON string) and the seller's reputation
  (hidden in cells with ``reputation_visible: false``), as the authors' buyers see them (their
  agents/buyer.py: listed price, description, reputation; no structured claim: the claim is in the
  description); the typical price range of each tier (their buyer prompt), never the tiers'
  values; its own last transactions (anonymised seller, price paid, true tier received, surplus:
  the seed's equation 4) and its mean quality received; it bids on one listing or passes
  (:class:`BuyAction`).
- ``review``: a buyer who bought learns the car's true tier and value and votes up, down or
  abstains (:class:`ReviewAction`), given the description and the price it paid.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from marketarena.core.prompts import chat_messages, template_env

TEMPLATES = "marketarena.markets.lemon"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HonestListing(_Strict):
    """``{"description": "...", "price": p}``: this step's listing, priced inside the typical range
    of the car's true tier."""

    description: str = Field(max_length=20_000)
    price: float = Field(gt=0, le=1e12, allow_inf_nan=False)


class SybilListing(_Strict):
    claimed_tier: Literal["good", "mint"]
    price: float = Field(gt=0, le=1e12, allow_inf_nan=False)
    description: str = Field(max_length=20_000)


class PrincipalListings(_Strict):
    """``{"listings": {"<identity>": {"claimed_tier", "price", "description"}}}``."""

    listings: dict[str, SybilListing]


class BuyAction(_Strict):
    """``{"decision": "bid" | "pass", "listing": "seller_<n>" | null}``."""

    decision: Literal["bid", "pass"]
    listing: str | None = None


class ReviewAction(_Strict):
    vote: Literal["up", "down", "abstain"]


class TierInfo(BaseModel):
    """A tier's typical price range (what buyers and the principal see)."""

    tier: str
    price_lo: float
    price_hi: float


class HonestObservation(BaseModel):
    agent_id: str
    step: int  # 1-based
    style: str
    tier: str
    value: float
    price_lo: float  # the tier's typical price range
    price_hi: float
    reputation: float
    max_words: int


class IdentityView(BaseModel):
    identity: str
    style: str
    reputation: float
    sales: int


class PrincipalObservation(BaseModel):
    step: int
    identities: list[IdentityView]
    tiers: list[TierInfo]  # good and mint: what it may claim
    revenue: float
    max_words: int


class ListingView(BaseModel):
    listing: str  # the anonymised seller id
    price: float
    description: str  # a quoted JSON string literal
    reputation: float | None


class Transaction(BaseModel):
    step: int
    listing: str  # the anonymised seller id
    price: float
    true_tier: str
    surplus: float


class BuyerObservation(BaseModel):
    agent_id: str
    step: int
    listings: list[ListingView]
    history: list[Transaction]
    mean_quality: float | None
    tiers: list[TierInfo]  # typical price ranges, best tier first
    reputation_visible: bool


class ReviewObservation(BaseModel):
    agent_id: str
    step: int
    listing: str
    description: str  # quoted
    price: float
    true_tier: str
    true_value: float
    surplus: float
    tiers: list[TierInfo]  # the price guide the buyer saw (not shown again in the review prompt)


def render_messages(obs: BaseModel, **extras) -> list[dict[str, str]]:
    names = {
        HonestObservation: "honest",
        PrincipalObservation: "principal",
        BuyerObservation: "buyer",
        ReviewObservation: "review",
    }
    name = names[type(obs)]
    return chat_messages(
        template_env(TEMPLATES), f"{name}_system.j2", f"{name}_user.j2", obs=obs, **extras
    )
