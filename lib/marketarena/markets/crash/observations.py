"""What a crash firm sees and answers (seed 001, section 3.1, equations 1-2).

:class:`FirmObservation`: the day, its cash, its stock, the unit cost, its overhead and the tax rate,
the number of consumers in the market and whether unsold stock carries over or perishes (as the
authors' firm prompt states the market size), the last ``history`` days of its own history (price
set, supply bought, units sold, revenue, expenses), and yesterday's prices of the competitors it
can see (a random sample of the active ones when ``firm_discovery_limit`` is set; their seat ids
beside, from the first day: the authors' firm code shows them by name), plus its persona. Not shown: the number of days, the consumers' budgets, how consumers choose (the
authors' prompt does not say), the other firms' cash.

The answer (:class:`FirmAction`): ``{"price": <number > 0>, "supply": <number >= 0>}``: the price
posted today and the units of the good bought today at the unit cost.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from marketarena.core.prompts import chat_messages, template_env

#: the largest price and supply an answer may give
MAX_PRICE, MAX_SUPPLY = 1e6, 1e7


class FirmAction(BaseModel):
    """``{"price": p, "supply": q}``."""

    model_config = ConfigDict(extra="forbid")
    price: float = Field(gt=0, le=MAX_PRICE, allow_inf_nan=False, description="price posted today")
    supply: float = Field(
        ge=0, le=MAX_SUPPLY, allow_inf_nan=False, description="units bought today"
    )


class DayRecord(BaseModel):
    day: int  # 1-based, as shown
    price: float
    supply: float
    units_sold: float
    revenue: float
    expenses: float  # supply + overhead + tax (+ fee, holding)
    profit: float


class FirmObservation(BaseModel):
    agent_id: str
    day: int  # 1-based
    persona: str
    stabilizing: bool
    cash: float
    stock: float
    unit_cost: float
    overhead: float
    tax_rate: float
    platform_fee: float = 0.0
    consumers: int  # the market's size, as the authors' prompt states it
    unsold: str  # "carry" or "perish"
    holding_cost: float = 0.0
    initial_cash: float
    history: list[DayRecord] = Field(default_factory=list)
    competitor_prices: list[float] = Field(default_factory=list)  # yesterday's, sampled
    competitor_names: list[str] = Field(default_factory=list)  # their seats, in that order
    active_firms: int
    health: float  # yesterday's market health in [0, 1] (survival and price near cost)
    last_profit: float  # yesterday's profit


def render_messages(obs: FirmObservation, **extras) -> list[dict[str, str]]:
    return chat_messages(
        template_env("marketarena.markets.crash"),
        "firm_system.j2",
        "firm_user.j2",
        obs=obs,
        **extras,
    )
