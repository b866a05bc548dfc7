"""What a Cournot firm sees and answers (seed 003, appendix B.4).

:class:`CournotObservation` holds the firm's own data only: its marginal costs and capacity, its
last ``history_window`` rounds (per product: cost, quantity, market share, market price, profit;
per round: profit and total profit so far); the PLANS / INSIGHTS notes it wrote last round come
from the ``notes`` harness.
Never shown: the number of rounds, the number or identity of competitors, their costs or quantities,
and the demand function (the seed's prompts are "intentionally vague"). A firm whose plan exceeded
its capacity sees a note saying it was scaled down.

:func:`render_messages` renders it with ``templates/cournot_system.j2`` (the seed's prompt shell,
B.4.1) and ``templates/cournot_user.j2`` (files, market data in the B.4.2 format, JSON template).
The answer must validate against :func:`action_schema` (strict JSON, see ``common.action_model``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from marketarena.markets._shared.oligopoly import action_model, product_key, render

FIELD = "chosen_quantities"


def action_schema(products: tuple[str, ...]):
    """``{"observations_and_thoughts", "new_content": {PLANS.txt, INSIGHTS.txt},
    "chosen_quantities": {"Product_<name>": number >= 0, ...}}``."""
    return action_model("Cournot", FIELD, tuple(products))


class ProductRecord(BaseModel):
    product: str
    cost: float
    quantity: float
    share: float | None  # own share of the product's total (None when nobody produced it)
    price: float
    profit: float


class RoundRecord(BaseModel):
    round: int  # 1-based
    products: list[ProductRecord]
    profit: float
    total_profit: float
    scaled: bool = False  # the plan exceeded capacity and was scaled down


class CournotObservation(BaseModel):
    agent_id: str
    round: int  # 1-based; the total is not shown
    products: list[str]
    costs: dict[str, float]
    capacity: float
    history_window: int
    history: list[RoundRecord] = Field(default_factory=list)
    note: str | None = None

    @property
    def keys(self) -> list[str]:
        return [product_key(p) for p in self.products]


def render_messages(obs: CournotObservation, **extras) -> list[dict[str, str]]:
    """System + user chat messages for one observation (``notes`` from the notes harness)."""
    return render(
        "marketarena.markets.cournot", obs, "cournot_system.j2", "cournot_user.j2", **extras
    )
