"""BAZAAR's own prompts for a seat of ours (issue 53): the ``bazaar`` harness of double_auction.

A model put on BAZAAR's board must see the task BAZAAR's 26 LLMs saw. BAZAAR publishes its
prompt templates (``prompts/*.txt`` in ``lechmazur/bazaar``; no licence, so they are never
copied here): the harness reads ``bidding_buyer_no_comm.txt`` / ``bidding_seller_no_comm.txt``
at run time from the folder its ``prompts`` param names (a joint instance fills it from
``source.prompts``, by default the ``prompts`` folder beside the logs), fills their placeholders
from the seat's observation and sends the text as the one user message, as BAZAAR's games were
played (no system message, no JSON schema). The answer is read as BAZAAR asks for it: exactly one
``<price>XX</price>`` tag, XX an integer 0..100; anything else forfeits the round (the seat sits
it out: BAZAAR's "Invalid output counts as a forfeited round"), with no re-ask.

The placeholders, and what fills them:

==========================  ===================================================================
``{{PLAYER_NAME}}``         the seat id (``B1`` .. ``S4``), as BAZAAR names seats
``{{PRIVATE_VALUATION}}``   a buyer's value; ``{{PRIVATE_COST}}`` a seller's cost
``{{CURRENT_PAYOFF}}``      the seat's surplus so far
``{{TOTAL_PLAYERS}}``       buyers + sellers; ``{{N_BUYERS}}``, ``{{N_SELLERS}}`` each side
``{{BUYERS_LIST}}``         the buyers' ids, comma-separated (``B1, B2, B3, B4``); sellers alike
``{{ROUND}}``               the round starting (1-based); ``{{TOTAL_ROUNDS}}`` the game's rounds
``{{HISTORY_SNIPPET}}``     the completed rounds (below)
==========================  ===================================================================

**The history snippet is ours.** BAZAAR's games log no prompt and its engine is not published,
so the one part of the text that is not theirs is the snippet's layout. Ours: the last
``prompt_history_rounds`` completed rounds, one line each, every seat's quote in seat order (``-``
for a seat that sat out), the trades (buyer-seller at price) and the seat's payoff that round::

    Round 3: bids B1=55 B2=60 B3=- B4=41 | asks S1=38 S2=70 S3=44 S4=90 | trades B2-S1@49, B1-S3@50 | your payoff 5

and ``No rounds completed yet.`` before round 1 ends. A placeholder the harness does not know
(a template of another BAZAAR version) is an error naming the file and the placeholder, before
any call.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from marketarena.agents.harnesses.base import Harness
from marketarena.core.params import Strict
from marketarena.core.sources import SourceError, read_bytes
from marketarena.core.types import Reply
from marketarena.llm.schema import TextAnswer
from marketarena.markets.double_auction.observations import QuoteAction, QuoteObservation

#: the templates a no-communication seat reads, per role
TEMPLATES = {"buyer": "bidding_buyer_no_comm.txt", "seller": "bidding_seller_no_comm.txt"}
PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")
PRICE_TAG = re.compile(r"<price>\s*(-?\d+)\s*</price>", re.IGNORECASE)
NO_HISTORY = "No rounds completed yet."


class PromptsMissing(ValueError):
    """A template missing, unreadable or with a placeholder we do not fill; ``str()`` is
    ``<file>: <what>``."""

    def __init__(self, path: Path, what: str):
        self.path, self.what = path, what
        super().__init__(f"{path}: {what}")


#: a template is a page of text; anything larger is not one
MAX_TEMPLATE_BYTES = 1_000_000


@lru_cache(maxsize=16)
def _read(path: str, folder: str, mtime_ns: int, size: int) -> str:
    """The template's text, read as every foreign file is (``core.sources.read_bytes``: a
    regular file, bounded, a link followed only within its folder)."""
    return read_bytes(path, MAX_TEMPLATE_BYTES, root=folder).decode("utf-8")


def template(folder: str | Path, role: str) -> str:
    """The text of ``role``'s template in ``folder`` (read once per file version); a missing,
    unreadable or hostile file (a FIFO, a device, a link out of the folder, not UTF-8) is a
    :class:`PromptsMissing` naming it."""
    path = Path(folder) / TEMPLATES[role]
    try:
        st = path.stat()
        text = _read(str(path), str(folder), st.st_mtime_ns, st.st_size)
    except OSError as exc:
        raise PromptsMissing(
            path, f"cannot read BAZAAR's prompt template ({type(exc).__name__})"
        ) from None
    except SourceError as exc:
        raise PromptsMissing(path, exc.what) from None
    except UnicodeDecodeError:
        raise PromptsMissing(path, "BAZAAR's prompt template is not UTF-8 text") from None
    unknown = sorted(set(PLACEHOLDER.findall(text)) - set(FILLED))
    if unknown:
        raise PromptsMissing(
            path, f"placeholders the bazaar harness does not fill: {', '.join(unknown)}"
        )
    return text


def check_folder(folder: str | Path) -> None:
    """Both templates readable, every placeholder known; else :class:`PromptsMissing`."""
    for role in TEMPLATES:
        template(folder, role)


def history_snippet(obs: QuoteObservation, lines: dict | None = None) -> str:
    """The completed rounds as the snippet shows them (module docstring); ``lines``: a seat's
    round lines kept from its earlier prompts (a completed round's line never changes)."""
    shown = obs.history[-obs.history_shown :] if obs.history_shown else []
    if not shown:
        return NO_HISTORY
    lines = {} if lines is None else lines
    out = []
    for rec in shown:
        key = (rec.round, obs.agent_id, obs.value)
        line = lines.get(key)
        if line is None:
            line = lines[key] = _round_line(rec, obs.agent_id, obs.value)
        out.append(line)
    return "\n".join(out)


def _round_line(rec: Any, me: str, value: int) -> str:
    bids = " ".join(f"{a}={'-' if q is None else q}" for a, q in rec.bids.items())
    asks = " ".join(f"{a}={'-' if q is None else q}" for a, q in rec.asks.items())
    trades = ", ".join(f"{t.buyer}-{t.seller}@{t.price}" for t in rec.trades) or "none"
    payoff = 0
    for t in rec.trades:
        if t.buyer == me:
            payoff = value - t.price
        elif t.seller == me:
            payoff = t.price - value
    return f"Round {rec.round}: bids {bids} | asks {asks} | trades {trades} | your payoff {payoff}"


def fill(obs: QuoteObservation, lines: dict | None = None) -> dict[str, str]:
    """Every placeholder's text for ``obs`` (module docstring; ``lines``: ``history_snippet``'s)."""
    buyers = [f"B{i + 1}" for i in range(obs.n_buyers)]
    sellers = [f"S{i + 1}" for i in range(obs.n_sellers)]
    return {
        "PLAYER_NAME": obs.agent_id,
        "PRIVATE_VALUATION": str(obs.value),
        "PRIVATE_COST": str(obs.value),
        "CURRENT_PAYOFF": str(obs.surplus),
        "TOTAL_PLAYERS": str(obs.n_buyers + obs.n_sellers),
        "N_BUYERS": str(obs.n_buyers),
        "N_SELLERS": str(obs.n_sellers),
        "BUYERS_LIST": ", ".join(buyers),
        "SELLERS_LIST": ", ".join(sellers),
        "ROUND": str(obs.round),
        "TOTAL_ROUNDS": str(obs.rounds),
        "HISTORY_SNIPPET": history_snippet(obs, lines),
    }


#: the placeholders :func:`fill` fills
FILLED = (
    "PLAYER_NAME",
    "PRIVATE_VALUATION",
    "PRIVATE_COST",
    "CURRENT_PAYOFF",
    "TOTAL_PLAYERS",
    "N_BUYERS",
    "N_SELLERS",
    "BUYERS_LIST",
    "SELLERS_LIST",
    "ROUND",
    "TOTAL_ROUNDS",
    "HISTORY_SNIPPET",
)


def render(
    folder: str | Path, obs: QuoteObservation, text: str | None = None, lines: dict | None = None
) -> str:
    """BAZAAR's template for ``obs``'s role (``text``: as already read), its placeholders filled
    (``lines``: ``history_snippet``'s)."""
    values = fill(obs, lines)
    text = template(folder, obs.role) if text is None else text
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


class BazaarPrice(TextAnswer):
    """BAZAAR's answer: exactly one ``<price>XX</price>``, XX an integer 0..100; no re-ask."""

    max_reasks: ClassVar[int | None] = 0
    price: int = Field(ge=0, le=100)

    @classmethod
    def from_text(cls, text: str) -> tuple["BazaarPrice | None", str | None]:
        tags = PRICE_TAG.findall(text)
        if len(tags) != 1:
            return None, f"expected exactly one <price>XX</price> tag, found {len(tags)}"
        price = int(tags[0])
        if not 0 <= price <= 100:
            return None, f"the price {price} is not an integer 0-100"
        return cls(price=price), None

    @classmethod
    def from_action(cls, action: Any, observation: Any, messages: list) -> "BazaarPrice | None":
        """A quote as BAZAAR's tag (sitting out has no tag: None)."""
        quote = getattr(action, "quote", None)
        return None if quote is None else cls(price=int(quote))


class BazaarPromptParams(Strict):
    prompts: str = Field(
        min_length=1,
        description="the folder of BAZAAR's prompt templates (prompts/ of your copy of "
        "lechmazur/bazaar), read at run time; a relative path is relative to the project root",
    )


class BazaarPrompts(Harness):
    """BAZAAR's own prompt and answer format (module docstring)."""

    name = "bazaar"
    Params = BazaarPromptParams
    max_reasks = 0  # BazaarPrice: a forfeited round

    def reset(self, rng: Any = None) -> None:
        """A new game: its seat's template read at its first prompt, its round lines anew."""
        self._text: str | None = None
        self._lines: dict = {}

    async def respond(
        self, agent: Any, observation: QuoteObservation, decision: Any, retry: Any = None
    ) -> Reply:
        if self._text is None:
            self._text = template(self.params.prompts, observation.role)
        text = render(self.params.prompts, observation, self._text, self._lines)
        messages = [{"role": "user", "content": text}]
        result, row = await agent.ask(messages, BazaarPrice, decision, purpose="act")
        if result.action is None:
            return Reply(action=None, calls=[row], error=f"llm: {result.error or 'no answer'}")
        return Reply(action=QuoteAction(quote=result.action.price), calls=[row], error=None)
