"""params.yaml ``markets.<instance>`` of kind ``crash``: seed 001's B2C market ("The Crash").

Defaults are the seed's appendix F: 5 firms, 50 consumers, unit cost 1, initial cash 500, overhead
2 a day, tax 5% of cash a day, history 3 days, 365 days, discovery limit 3.

The settings grid lives inside an instance: ``discovery_limits`` x ``stabilizing`` are lists, and
episode ``r`` plays cell ``r mod cells`` (cells in the order discovery limit, then stabilizing), with
seeds from (seed, r); so ``runs = cells x seeds per cell``. The paper's 54-run grid is
``discovery_limits: [1, 3, 5]``, ``stabilizing: [0, 1, 2, 3, 4, 5]``, ``runs: 54``.

Seats: ``firms`` seats ``F1..Fn``; in a cell with ``s`` stabilizing firms, the first ``s`` seats are
held by the roster entry named ``stabilizer`` (one player holding several seats) and the others by
``competitors``, cycled in order (default: every other roster entry). So a firm *kind* is a player,
and the leaderboard ranks kinds by their mean profit per seat.

Choices where the seed and the authors' code differ (see ``rules.py`` and ``market.py``): tax on
cash 5% a day as the seed and DESIGN.md say, the code's extra "platform fee" (another 5% of cash,
commented as 10% of revenue) only as ``platform_fee`` (default 0); unsold stock perishes at the end
of the day as in the code (``unsold: perish``), or carries over with a holding cost per unit and day
(``unsold: carry``, the paper's formal holding cost f); consumers do not buy at or above
``max_price`` (the code's consumers buy at any price).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from marketarena.core.params import MAX_AMOUNT, MarketParams, Strict, size
from marketarena.metrics.eas import EASParams, Term

#: personas of non-stabilizing firms (the authors' code); seat i of the competitors is shown persona
#: i mod len (an LLM firm reads it in its prompt; scripted firms ignore it)
DEFAULT_PERSONAS = {
    "competitive": "You are a competitive firm: you aim to win customers from your rivals.",
    "volume_seeker": "You are a volume-seeking firm: you aim to sell as many units as you can.",
    "reactive": "You are a reactive firm: you respond quickly to what your competitors do.",
    "cautious": "You are a cautious firm: you avoid risks to your cash and your survival.",
}


class ConsumerParams(Strict):
    """Daily budgets: (U(income_lo, income_hi) + labour_hours x U(skill_lo, skill_hi)) / 365."""

    income_lo: float = Field(default=50.0, ge=0, le=MAX_AMOUNT)
    income_hi: float = Field(default=200.0, ge=0, le=MAX_AMOUNT)
    labour_hours: float = Field(default=40.0, ge=0, le=8760, description="at most the hours of a year")
    skill_lo: float = Field(default=1.24, ge=0, le=MAX_AMOUNT)
    skill_hi: float = Field(default=159.1, ge=0, le=MAX_AMOUNT)
    arrival_rate: float = Field(default=0.6, gt=0, le=10, description="shoppers a day ~ "
                                "Poisson(rate x M), at most M (so a rate above a few changes nothing)")

    @model_validator(mode="after")
    def _ranges(self):
        for lo, hi in (("income_lo", "income_hi"), ("skill_lo", "skill_hi")):
            if getattr(self, lo) > getattr(self, hi):
                raise ValueError(f"{lo} must not exceed {hi}")
        return self


def default_eas() -> EASParams:
    """Fixed anchors of crash's EAS (``metrics/eas.py``): stability (no bankruptcies; daily mean
    price steady within 1 unit cost of SD), welfare (price near unit cost: |p/c - 1| up to 1;
    orders filled), profitability (profit per firm and day, 0 to 10 unit costs)."""
    return EASParams(components={
        "stability": [Term(metric="bankruptcy_rate", lo=0, hi=1, better="lower"),
                      Term(metric="price_volatility", lo=0, hi=1.0, better="lower")],
        "welfare": [Term(metric="price_deviation", lo=0, hi=1.0, better="lower"),
                    Term(metric="fill_rate", lo=0, hi=1, better="higher")],
        "profitability": [Term(metric="profit_per_firm_day", lo=0, hi=10.0, better="higher")],
    })


class CrashParams(MarketParams):
    firms: int = size(5, le=100, description="seats F1..Fn")
    consumers: int = size(50, le=100_000)
    days: int = size(365, le=100_000, description="T; an episode ends earlier when "
                      "every firm is bankrupt")
    discovery_limits: list[Annotated[int, Field(ge=1, le=100)]] = Field(
        default_factory=lambda: [3], min_length=1, description="consumer-side discovery limit per cell")
    stabilizing: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=lambda: [0], min_length=1, description="stabilizing firms per cell")
    stabilizer: str | None = Field(default=None, description="roster entry holding stabilizing seats")
    competitors: list[str] | None = Field(default=None,
                                          description="roster entries cycled over the other seats")
    firm_discovery_limit: int | None = Field(default=None, ge=0,
                                             description="competitor prices a firm sees (null: all)")
    unit_cost: float = Field(default=1.0, ge=1e-6, le=10_000, description="10^-6 to 10^4: a "
                             "posted price is at most 10^6 (the answer's schema)")
    initial_cash: float = Field(default=500.0, ge=0, le=MAX_AMOUNT)
    overhead: float = Field(default=2.0, ge=0, le=MAX_AMOUNT, description="per firm and day")
    tax_rate: float = Field(default=0.05, ge=0, lt=1, description="share of cash taxed each day")
    platform_fee: float = Field(default=0.0, ge=0, lt=1,
                                description="another share of cash each day (the authors' code: 0.05)")
    unsold: Literal["perish", "carry"] = "perish"
    holding_cost: float = Field(default=0.0, ge=0, le=MAX_AMOUNT,
                                description="per unit and day, unsold: carry")
    max_price: float = Field(default=10.0, gt=0, le=1e6, description="consumers' choke price "
                             "(posted prices are at most 10^6)")
    history: int = size(3, ge=0, le=1000, description="H: days of own history shown")
    consumer: ConsumerParams = Field(default_factory=ConsumerParams)
    personas: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_PERSONAS),
                                     description="persona name -> text; LLM competitors cycle them")
    eas: EASParams = Field(default_factory=default_eas)

    post_keys = frozenset({"eas"})

    @model_validator(mode="after")
    def _seats(self):
        names = [e.name for e in self.roster]
        if any(s > self.firms for s in self.stabilizing):
            raise ValueError(f"stabilizing: more stabilizing firms than firms ({self.firms})")
        if any(s > 0 for s in self.stabilizing):
            if self.stabilizer is None:
                raise ValueError("stabilizing > 0 needs 'stabilizer', the roster entry holding "
                                 "those seats")
        for name in [self.stabilizer] * (self.stabilizer is not None) + (self.competitors or []):
            if name not in names:
                raise ValueError(f"{name!r} is not a roster name (roster: {', '.join(names)})")
        if not self.competitor_names() and any(s < self.firms for s in self.stabilizing):
            raise ValueError("no competitor firms: add roster entries besides the stabilizer")
        if not self.personas:
            raise ValueError("personas: give at least one")
        return self

    def competitor_names(self) -> list[str]:
        if self.competitors is not None:
            return list(self.competitors)
        return [e.name for e in self.roster if e.name != self.stabilizer]

    @property
    def cells(self) -> list[tuple[int, int]]:
        """(discovery limit, stabilizing firms) per cell."""
        return [(d, s) for d in self.discovery_limits for s in self.stabilizing]

    def cell_of(self, run: int) -> tuple[int, int]:
        return self.cells[run % len(self.cells)]
