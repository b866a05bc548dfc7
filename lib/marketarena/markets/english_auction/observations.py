"""What an AucArena bidder sees and answers (seed 004 section 3.2, appendix A.2).

Four decisions, each its own template pair (``templates/``) and answer (strict JSON, reasons first):

- ``plan`` (before the first item): the budget, every item in order with its start price and the
  bidder's estimated value -> :class:`PlanAction` ``{"reasoning", "priorities": {item: 1|2|3}}``;
- ``bid`` (each round a bidder is neither leading nor withdrawn): the auctioneer's message (the item,
  its start price, the round, this item's bidding so far, the highest bid and the minimum next
  bid), the remaining items, its plan in force and its status -> :class:`BidAction` ``{"reasoning",
  "bid": <number> | null}`` (null: "I'm out!");
- ``belief`` (after each item): this item's bidding, the hammer message (winner, price, true value)
  and its previous status -> :class:`BeliefAction` ``{"summary", "remaining_budget",
  "total_profits": {bidder: profit}, "winning_bids": {bidder: {item: bid}}}``, checked against the
  truth (errors fed back, then corrected by the auctioneer);
- ``replan`` (after each item but the last): its status, the remaining items and its plan ->
  :class:`PlanAction` with priorities for the remaining items.

Bidders appear under display names ("Bidder 1", ...). The desire (maximise profit or items) comes
from the bidder (an LLM bidder's ``bdi`` harness) as the template variable ``desire``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from marketarena.core.prompts import chat_messages, template_env

TEMPLATES = "marketarena.markets.english_auction"
DESIRES = {
    "maximize_profit": "secure the highest profit at the end of this auction, compared to all "
                       "other bidders",
    "maximize_items": "win the highest number of items in this auction, compared to all other "
                      "bidders",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanAction(_Strict):
    reasoning: str = Field(default="", max_length=20_000)
    priorities: dict[str, int]


class BidAction(_Strict):
    reasoning: str = Field(default="", max_length=20_000)
    bid: float | None = Field(default=None, ge=0, allow_inf_nan=False, description="null: withdraw")


class BeliefAction(_Strict):
    summary: str = Field(default="", max_length=20_000)
    remaining_budget: float = Field(allow_inf_nan=False)
    total_profits: dict[str, float]
    winning_bids: dict[str, dict[str, float]]


class ItemView(BaseModel):
    name: str
    description: str
    start_price: float
    estimate: float


class RoundView(BaseModel):
    round: int  # 1-based
    bids: dict[str, float | None]  # display name -> bid (None: withdrew)


class Status(BaseModel):
    remaining_budget: float
    total_profits: dict[str, float]
    winning_bids: dict[str, dict[str, float]]


class PlanObservation(BaseModel):
    agent_id: str
    me: str  # display name
    budget: float
    items: list[ItemView]  # the items this (re)plan covers, in order
    plan: dict[str, int] | None = None  # the plan in force (replan)
    status: Status | None = None  # replan
    replan: bool = False


class BidObservation(BaseModel):
    agent_id: str
    me: str
    item: ItemView
    round: int  # 1-based
    remaining: list[ItemView]  # this item and the ones after it
    history: list[RoundView]
    highest: float | None
    highest_bidder: str | None
    min_bid: float
    budget_left: float
    plan: dict[str, int] | None
    status: Status


class BeliefObservation(BaseModel):
    agent_id: str
    me: str
    item: ItemView
    history: list[RoundView]
    winner: str | None
    price: float | None
    true_value: float
    status: Status  # the previous status
    bidders: list[str]


def render_messages(obs: BaseModel, desire: str = "maximize_profit", **extras) -> list[dict[str, str]]:
    name = {PlanObservation: "plan", BidObservation: "bid", BeliefObservation: "belief"}[type(obs)]
    return chat_messages(template_env(TEMPLATES), "system.j2", f"{name}.j2", obs=obs,
                         desire=DESIRES[desire], **extras)
