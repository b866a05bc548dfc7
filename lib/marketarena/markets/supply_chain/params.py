"""params.yaml ``markets.supply_chain``: the Market-Bench setting (seed 000, DESIGN.md 7.1).

Defaults reproduce the paper's Table 4 / Table 5: 20 retailers, 6 steps, 2 bidding rounds,
β = 10 buyers per retailer (200 per step), α = 1.5 (initial funds 22,500), r = 0.95, h = 0,
K_max = 20, τ = 1.0, eight items from commodity to Veblen. Buyer tribes, λ, ρ and willingness to pay
live under ``personas`` because the persona table is shared by the personas/embed stages.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from marketarena.core.params import MarketParams, RosterEntry, Strict, size


class ItemSpec(Strict):
    id: str = Field(min_length=1)
    category: str
    qty: int = Field(gt=0, le=10**7, description="units offered by the supplier each step")
    base_price: int = Field(gt=0, le=10**9, description="reserve price of the procurement auction")


DEFAULT_ITEMS = [
    ItemSpec(id="item1", category="commodity", qty=200, base_price=50),
    ItemSpec(id="item2", category="commodity", qty=200, base_price=50),
    ItemSpec(id="item3", category="standard", qty=133, base_price=150),
    ItemSpec(id="item4", category="standard", qty=133, base_price=150),
    ItemSpec(id="item5", category="standard", qty=134, base_price=150),
    ItemSpec(id="item6", category="luxury", qty=75, base_price=800),
    ItemSpec(id="item7", category="luxury", qty=75, base_price=800),
    ItemSpec(id="item8", category="veblen", qty=50, base_price=2000),
]


class SupplyChainParams(MarketParams):
    steps: int = size(6, le=10_000, description="T")
    rounds: int = size(2, le=100, description="bidding rounds per step; the last settles")
    beta: int = size(10, le=1000, description="buyers per step = beta × retailers")
    alpha: float = Field(
        default=1.5, gt=0, le=1000, description="initial funds = alpha × catalogue value / m"
    )
    demand_ratio: float = Field(
        default=0.95, gt=0, le=100, description="r: per-item demand = round(r·Q)"
    )
    holding_cost: float = Field(
        default=0.0, ge=0, le=100, description="h: cost per unit of base value held, per step"
    )
    k_max: int = size(20, le=1000, description="upper bound on a buyer's consideration set")
    tau: float = Field(default=1.0, ge=1e-6, le=1e6, description="semantic temperature τ")
    slogan_max_words: int = Field(default=25, ge=1)
    slogan_max_chars: int = Field(
        default=200, ge=1, le=10_000, description="a slogan is cut to this many characters as well"
    )
    history_window: int = size(2, ge=0, le=10_000, description="past steps shown in observations")
    prompts: Literal["appendix_b", "extended"] = Field(
        default="appendix_b",
        description="appendix_b: the seed's Appendix B system prompts verbatim; "
        "extended: plus our hints (pay-as-bid and void-set rules, slogan matching, item categories, "
        "average unit cost, competitor count)",
    )
    items: list[ItemSpec] = Field(default_factory=lambda: list(DEFAULT_ITEMS), min_length=1)
    roster: list[RosterEntry] = Field(min_length=2)

    @model_validator(mode="after")
    def _consistent(self):
        ids = [item.id for item in self.items]
        if len(set(ids)) != len(ids):
            raise ValueError(f"items: item ids must be unique, got {ids}")
        return self

    @property
    def catalogue_value(self) -> int:
        return sum(item.qty * item.base_price for item in self.items)

    @property
    def initial_funds(self) -> float:
        """K = α · Σ_x Q_x · P_base(x) / m (22,500 at the defaults)."""
        return self.alpha * self.catalogue_value / len(self.roster)

    @property
    def buyers_per_step(self) -> int:
        return self.beta * len(self.roster)


def consideration_size(n_active: int, rho: float, k_max: int) -> int:
    """|V_j| = min(|A|, max(1, ceil(ρ·K_max))); rounded first so 0.6 × 20 is 12, not 13."""
    return min(n_active, max(1, math.ceil(round(rho * k_max, 9))))
