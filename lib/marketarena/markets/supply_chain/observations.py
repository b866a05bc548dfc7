"""What a retailer sees and what it answers (Market-Bench 3.4 and appendix B).

Observations are structured pydantic models; :func:`render_messages` turns one into chat messages
with the Jinja templates in ``templates/`` (system prompts quote the paper's appendix B). Scripted
baselines read the models directly, LLM agents read the rendered text: both see the same facts.

Information structure: own funds, inventory (with average unit cost) and the overspent flag;
the supplier's offers; during procurement, the allocation the previous (indicative) round would
have produced (own units and prices, and each item's indicative clearing price); and a public history
of the last ``history_window`` steps: per item the supply, units won, clearing price, units sold and
average sale price, and per retailer its posted prices, slogan (quoted) and units sold. Buyer
personas are never shown.

Prompt styles (``params.prompts``):

- ``appendix_b`` (default): the system prompts of the seed's Appendix B word for word; the user
  message has the input lines of its examples (Step, Round, Funds, Overspent, offers as
  ``item_id,qty,base_price``, inventory, historical sales). Our additions, needed to play at all:
  the retailer's own id (to find its row in the history), the market history itself (the seed
  names ``market_history`` but gives no format), the indicative round's result, and "of N" after
  the step. Steps are shown 1-based ("Step: 6 of 6" on the last; the seed's example reads
  "Step: 0" without a total, and "Historical sales: (empty at step 0)" reads "step 1" here).
- ``extended``: plus hints that change what an LLM does: the pay-as-bid and void-set rules, "price
  only items you hold", "buyers mostly see retailers whose slogan matches them", item categories,
  average unit cost and base prices at retail, the number of competitors.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model

from marketarena.core.prompts import chat_messages, template_env


class Bid(BaseModel):
    model_config = ConfigDict(extra="forbid")
    qty: int = Field(ge=0)
    price: int = Field(ge=0)


class ProcurementAction(BaseModel):
    """{"bids": {"<item_id>": {"qty": <int>, "price": <int>}}}"""

    model_config = ConfigDict(extra="forbid")
    bids: dict[str, Bid] = Field(default_factory=dict)


class RetailAction(BaseModel):
    """{"prices": {"<item_id>": <int>}, "slogan": "<string>"}"""

    model_config = ConfigDict(extra="forbid")
    prices: dict[str, int] = Field(default_factory=dict)
    slogan: str = ""


# The answer schemas an episode's decisions carry. Python-side they are the two models above (a
# dict per item, validated leniently: the market drops unknown items with a note); their JSON
# schema, which structured output sends to the endpoint, names the catalogue's items as optional
# properties and allows no others. With an open ``additionalProperties`` dict a grammar-constrained
# small model (the bundled Gemma 270M) was seen inventing "item9", "item10", ... until max_tokens;
# with the items named, every answer is bounded (the client's strict mode then lists every item as
# required: a bid of qty 0 or a price for an item not held is harmless, the market skips or drops it).
_BID_SCHEMA = {
    "type": "object",
    "properties": {
        "qty": {"type": "integer", "minimum": 0},
        "price": {"type": "integer", "minimum": 0},
    },
    "required": ["qty", "price"],
    "additionalProperties": False,
}


def _item_object(items: tuple[str, ...], value: dict) -> dict:
    return {"properties": {x: dict(value) for x in items}, "additionalProperties": False}


@lru_cache(maxsize=None)
def procurement_action(items: tuple[str, ...]) -> type[ProcurementAction]:
    """:class:`ProcurementAction` whose JSON schema lists ``items`` (cached per catalogue)."""
    return create_model(
        "ProcurementAction",
        __base__=ProcurementAction,
        __doc__=ProcurementAction.__doc__,
        bids=(
            dict[str, Bid],
            Field(default_factory=dict, json_schema_extra=_item_object(items, _BID_SCHEMA)),
        ),
    )


@lru_cache(maxsize=None)
def retail_action(items: tuple[str, ...]) -> type[RetailAction]:
    """:class:`RetailAction` whose JSON schema lists ``items`` (cached per catalogue)."""
    return create_model(
        "RetailAction",
        __base__=RetailAction,
        __doc__=RetailAction.__doc__,
        prices=(
            dict[str, int],
            Field(
                default_factory=dict,
                json_schema_extra=_item_object(items, {"type": "integer", "minimum": 0}),
            ),
        ),
    )


class Offer(BaseModel):
    item: str
    category: str
    qty: int
    base_price: int


class ItemSummary(BaseModel):
    item: str
    supply: int
    units_won: int
    clearing_price: int | None  # lowest winning bid; None if nothing was won
    units_sold: int
    avg_sale_price: float | None


class SellerSummary(BaseModel):
    agent_id: str
    prices: dict[str, int]
    slogan: str  # quoted: a JSON string literal (core.prompts.quote_text), written by that retailer
    units_sold: int


class StepSummary(BaseModel):
    step: int
    items: list[ItemSummary]
    sellers: list[SellerSummary]
    _text: str | None = PrivateAttr(default=None)  # its block of the history, once rendered


class ProcurementObservation(BaseModel):
    agent_id: str
    step: int
    steps: int
    round: int  # 1-based, as in the paper's prompt ("Round: 1 of 2")
    rounds: int
    prompts: str = "appendix_b"  # params.prompts
    n_retailers: int
    funds: float
    overspent: bool
    offers: list[Offer]
    inventory: dict[str, int]
    indicative: dict[str, Bid] | None = None  # own units and prices the previous round would win
    indicative_clearing: dict[str, int | None] | None = None
    history: list[StepSummary] = Field(default_factory=list)


class RetailObservation(BaseModel):
    agent_id: str
    step: int
    steps: int
    n_retailers: int
    funds: float
    offers: list[Offer]
    inventory: dict[str, int]
    avg_cost: dict[str, float]
    max_slogan_words: int
    prompts: str = "appendix_b"  # params.prompts
    history: list[StepSummary] = Field(default_factory=list)


def render_messages(obs: ProcurementObservation | RetailObservation) -> list[dict[str, str]]:
    """System + user chat messages for one observation."""
    phase = "procurement" if isinstance(obs, ProcurementObservation) else "retail"
    return chat_messages(
        _env(), f"{phase}_system.j2", f"{phase}_user.j2", obs=obs, step_text=step_text
    )


def _env():
    return template_env("marketarena.markets.supply_chain")


def step_text(step: StepSummary) -> str:
    """A past step's block of the market history (``_history.j2``'s ``step``), rendered once
    and kept with it: the same for every retailer and every later decision point in the window,
    it was most of the time spent rendering a prompt (20 prompts per decision point by default)."""
    if step._text is None:
        step._text = str(_env().get_template("_history.j2").module.step(step))
    return step._text
