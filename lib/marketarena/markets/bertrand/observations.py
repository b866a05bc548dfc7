"""What a Bertrand firm sees and answers (seed 003, appendix C.4; Fish et al. 2024).

:class:`BertrandObservation`: the firm's marginal cost per product, its last ``history_window``
rounds (per product: marginal cost, own price, the competitors' prices, market share, quantity sold,
profit, investment level; per round: profit, total profit, funds) and,
in the start-up preset, the investment options it can take now (letters; only affordable upgrades
are offered, A is always "no investment"). Competitors' prices are shown (seed C.2); their
quantities, costs and investments are not; nor is the number of rounds.

The answer: ``{"observations_and_thoughts", "new_content": {PLANS.txt, INSIGHTS.txt},
"chosen_prices": {"Product_<name>": number >= 0}}`` plus, in the start-up preset,
``"investment_option": "<letter>"``.

Wording: the start-up preset's system prompt is the seed's (C, Figure 10) word for word when there
are two products ("For BOTH Product A and B", its parenthesised examples); with more products the
same text is generalised ("For EACH product"). In the start-up preset the history's "Total profit
so far" is the firm's running funds (initial funds + profits - investments), because the prompt
says investment costs are taken from it; in the Calvano preset it is the sum of profits.

Calvano preset (Fish et al. 2024, as far as the stored descriptions allow; their prompt text is not
in the seeds and could not be checked word for word): 100 rounds of history by default, a product
line "No customer would pay more than $X." with X = ``price_ceiling`` (1.5) x the monopoly price,
and ``prompt_prefix`` for their P1 / P2 prefixes (supply the text).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from marketarena.markets._shared.oligopoly import action_model, product_key, render

FIELD = "chosen_prices"


def action_schema(products: tuple[str, ...], invest: bool):
    extra = (("investment_option", (str, ...)),) if invest else ()
    return action_model("BertrandStartup" if invest else "Bertrand", FIELD, tuple(products), extra)


class InvestmentOption(BaseModel):
    letter: str
    upgrades: dict[str, int]  # product -> new level (empty: no investment)
    cost: float
    text: str


class ProductRecord(BaseModel):
    product: str
    cost: float
    price: float
    competitor_prices: list[float]
    share: float  # own share of the units sold in this product market (0 when nobody sold)
    quantity: float
    profit: float
    level: int = 0


class RoundRecord(BaseModel):
    round: int
    products: list[ProductRecord]
    profit: float
    total_profit: float
    funds: float
    investment: str = ""


class BertrandObservation(BaseModel):
    agent_id: str
    round: int
    preset: str
    products: list[str]
    costs: dict[str, float]
    levels: dict[str, int]
    history_window: int
    funds: float
    initial_funds: float | None = None
    options: list[InvestmentOption] = Field(default_factory=list)
    history: list[RoundRecord] = Field(default_factory=list)
    ceiling: dict[str, float] | None = None  # calvano: "No customer would pay more than $X."
    prefix: str = ""  # params.prompt_prefix, before the system prompt

    @property
    def keys(self) -> list[str]:
        return [product_key(p) for p in self.products]


def render_messages(obs: BertrandObservation, **extras) -> list[dict[str, str]]:
    return render(
        "marketarena.markets.bertrand", obs, f"{obs.preset}_system.j2", "bertrand_user.j2", **extras
    )
