"""What a trader sees and what it answers (BAZAAR, DESIGN.md 7.2).

Information structure: a seat knows its id (``B1``..``B4`` buyers, ``S1``..``S4`` sellers), its role,
its private value, the round (1-based) and the number of rounds, the numbers of buyers and sellers,
its own realised surplus so far, and the full public history of completed rounds: every seat's quote
(or that it sat out) and every trade (buyer, seller, price). Other seats' values and the current
book are never shown. Names of the traders holding the seats are not shown either.

Answer: :class:`QuoteAction` ``{"quote": <int 0..100> | null}``; ``null`` sits the round out. The
schema is strict (integers only, no extra keys). The market's fallback for an invalid answer is
``null`` (sits out).

Scripted baselines read these models directly; LLM agents read :func:`render_messages`'s text
(templates in ``templates/``): both see the same facts.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from marketarena.core.prompts import chat_messages, template_env


class QuoteAction(BaseModel):
    """{"quote": <int 0..100> | null}"""

    model_config = ConfigDict(extra="forbid", strict=True)
    quote: int | None = Field(
        default=None, ge=0, le=100, description="your bid (buyer) or ask (seller); null = sit out"
    )


class Trade(BaseModel):
    buyer: str
    seller: str
    price: int


class RoundRecord(BaseModel):
    """One completed round, public to everybody. Quotes map seat id -> quote (None = sat out)."""

    round: int  # 1-based
    bids: dict[str, int | None]
    asks: dict[str, int | None]
    trades: list[Trade]


class QuoteObservation(BaseModel):
    agent_id: str
    role: str  # "buyer" | "seller"
    value: int  # private value (buyer) or cost (seller)
    round: int  # 1-based
    rounds: int
    n_buyers: int
    n_sellers: int
    max_quote: int
    surplus: int  # own realised surplus so far
    history: list[RoundRecord] = Field(default_factory=list)
    history_shown: int = 30  # rounds printed in the prompt (the model holds them all)


def render_messages(obs: QuoteObservation) -> list[dict[str, str]]:
    """System + user chat messages for one observation."""
    shown = obs.history[-obs.history_shown :] if obs.history_shown else []
    return chat_messages(
        template_env("marketarena.markets.double_auction"),
        "quote_system.j2",
        "quote_user.j2",
        obs=obs,
        shown=shown,
    )
