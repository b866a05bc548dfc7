"""What an AucArena bidder sees and answers (seed 004 section 3.2 and appendix A.2; the authors'
auction-arena: src/prompt_base.py, auctioneer_base.py and bidder_base.py).

Four decisions, each a template (``templates/``) rendering the seed's instruction, and a strict JSON
answer (reasons first; no LLM parses bids):

- ``plan`` (before the first item): the total budget and every item in order with its start price
  and the bidder's estimated value -> :class:`PlanAction` ``{"reasoning", "priorities": {item:
  1|2|3}}``;
- ``bid`` (every round, every bidder neither leading nor withdrawn): in round 1 the auctioneer's
  call (items left, the item, its start price) and the seed's bid instruction; later rounds only
  the auctioneer's message ("Thank you! This is the 2nd round of bidding for this item:" the last
  round's bids, the highest bid and who holds it, the minimum increase) -> :class:`BidAction`
  ``{"reasoning", "bid": <number> | null}`` (null: "I'm out!"). No computed minimum valid bid and no
  remaining budget: the bidder works them out from the highest bid, the increase and its own
  status, which is what failed bids measure;
- ``belief`` (after each item): the item's bidding history, the hammer message (winner, price, true
  value), win or loss, and its previous status -> :class:`BeliefAction` ``{"summary",
  "remaining_budget", "total_profits": {bidder: profit}, "winning_bids": {bidder: {item: bid}}}``;
- ``replan`` (after each item but the last): its status and the remaining items ->
  :class:`PlanAction` for the remaining items.

A template renders only the decision's own instruction; the ``bdi`` harness
(``bdi.py``) builds the conversation around it as the authors' bidder does: the
plan instruction and the plan the model wrote before every bid, its earlier bids on the item and
their reasons, and the auctioneer's re-ask after a failed answer (:func:`render_reask`).

Answers that are not a model's: :class:`PlanSkipped` (a bidder that makes no plan or keeps its
plan at a replan, without a call), :class:`ForcedWithdrawal` and :class:`CorrectedBelief` (the
market's fallbacks). Bidders appear under display names ("Bidder 1", ...); the desire text is the
authors' (``DESIRES``).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from marketarena.core.prompts import chat_messages, template_env
from marketarena.markets.english_auction.rules import money

TEMPLATES = "marketarena.markets.english_auction"
DESIRES = {
    "maximize_profit": "Your primary objective is to secure the highest profit at the end of this "
    "auction, compared to all other bidders",
    "maximize_items": "Your primary objective is to win the highest number of items at the end of "
    "this auction, compared to everyone else",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanAction(_Strict):
    reasoning: str = Field(default="", max_length=20_000)
    priorities: dict[str, int]


class PlanSkipped(PlanAction):
    """Not a model's answer: a bidder without a plan (``none``: the seed's no-plan bidder, the rule
    bidder) or one that keeps its first plan (``static``) answers a (re)plan with this, making no
    call. The market then records no plan, or keeps the one in force."""

    priorities: dict[str, int] = Field(default_factory=dict)
    skipped: Literal["none", "static"]


class BidAction(_Strict):
    reasoning: str = Field(default="", max_length=20_000)
    bid: float | None = Field(default=None, ge=0, allow_inf_nan=False, description="null: withdraw")


class ForcedWithdrawal(BidAction):
    """The market's fallback for a bid decision with no valid answer: the bidder withdraws."""

    forced: Literal[True] = True


class BeliefAction(_Strict):
    summary: str = Field(default="", max_length=20_000)
    remaining_budget: float = Field(allow_inf_nan=False)
    total_profits: dict[str, float]
    winning_bids: dict[str, dict[str, float]]

    def status(self) -> "Status":
        return Status(
            remaining_budget=self.remaining_budget,
            total_profits=self.total_profits,
            winning_bids=self.winning_bids,
        )


class CorrectedBelief(BeliefAction):
    """The market's fallback for a belief update with no valid answer: the auctioneer's correction."""

    corrected: Literal[True] = True


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
    budget: float  # the total budget (the plan's; a replan's status holds what is left)
    items: list[ItemView]  # the items this (re)plan covers, in order
    status: Status | None = None  # replan: its own (corrected) status
    replan: bool = False


class BidObservation(BaseModel):
    agent_id: str
    me: str
    item: ItemView
    round: int  # 1-based
    remaining: list[ItemView]  # this item and the ones after it
    history: list[RoundView]  # this item's rounds so far
    highest: float | None
    highest_bidder: str | None
    min_increase: float  # the minimum increase over the highest bid
    status: Status  # its own (corrected) status before this item


class BeliefObservation(BaseModel):
    agent_id: str
    me: str
    item: ItemView
    history: list[RoundView]
    winner: str | None
    price: float | None
    true_value: float
    status: Status  # its previous status
    bidders: list[str]


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _env():
    env = template_env(TEMPLATES)
    env.filters.setdefault("money", money)
    env.filters.setdefault("ordinal", ordinal)
    env.filters.setdefault("status_json", lambda s: json.dumps(s.model_dump(), indent=4))
    return env


def render_messages(
    obs: BaseModel, desire: str = "maximize_profit", show_status: bool = False, **extras
) -> list[dict[str, str]]:
    """The system message and the decision's instruction. ``show_status``: a bidder that does not
    replan (static, none) is shown its status with its first bid on each item, as the authors'
    bidder is."""
    name = {PlanObservation: "plan", BidObservation: "bid", BeliefObservation: "belief"}[type(obs)]
    return chat_messages(
        _env(),
        "system.j2",
        f"{name}.j2",
        obs=obs,
        desire=DESIRES[desire],
        show_status=show_status,
        **extras,
    )


#: the tag that starts every rule breach's error (``Market.check``); the text after ": " is
#: what the bidder is told
TAGS = {"bid": "failed bid", "belief": "belief errors", "plan": "plan", "replan": "plan"}


def breach(phase: str, detail: str, reason: str) -> str:
    """A rule breach's logged error: ``<tag> (<detail>): <reason>``."""
    return f"{TAGS[phase]} ({detail}): {reason}" if detail else f"{TAGS[phase]}: {reason}"


def render_reask(obs: BaseModel, phase: str, previous: BaseModel, error: str) -> str:
    """The auctioneer's message after an answer that broke a rule (``error`` from
    :func:`breach`): the authors' rebid, belief-revision and replan re-asks."""
    reason = error.split(": ", 1)[1] if ": " in error else error
    return (
        _env()
        .get_template("reask.j2")
        .render(obs=obs, phase=phase, previous=previous, reason=reason, reasons=reason.split("\n"))
    )
