"""params.yaml ``markets.cournot``: the seed-003 multi-product Cournot game (DESIGN.md 7.3).

Defaults are the seed's asymmetric experiment: 2 firms x 2 products, 50 rounds (never told to the
firms), inverse demand P = a - Q/b with a = 100, b = 2 per product, marginal costs firm 1 (40, 50),
firm 2 (50, 40), capacity 100 per firm and round, market data of the last 30 rounds shown.
``costs`` has one row per seat (firm) and one column per product: the number of rows is the number
of firms in an episode. The roster may hold more firms than seats: episode ``r`` then seats lineup
``r mod L`` of the ``L`` combinations of roster entries (seat order = roster order), dealt so that
any prefix is as balanced as possible (``_shared.oligopoly.lineups``: rounds in which every firm
plays once), so ``runs = L`` plays every pairing once (a round robin) and fewer runs still seat every
firm about equally often. ``marketarena validate`` shows who meets whom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, model_validator

from marketarena.core.params import MarketParams, RosterEntry, Strict, size

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.markets.cournot.economics import CournotConfig


#: demand levels, slopes and capacities: between 10^-6 and 10^6 (the Nash solver's range)
Level = Annotated[float, Field(ge=1e-6, le=1e6)]


class BootstrapParams(Strict):
    """The specialisation test (seed appendix B.3): circular block bootstrap of the mean CV."""

    block: int = Field(default=7, ge=1)
    n_resamples: int = Field(default=10_000, ge=100)
    seed: int = Field(default=0, ge=0)
    level: float = Field(default=0.95, gt=0, lt=1)
    alpha: float = Field(default=0.05, gt=0, lt=1, description="significance level of the table")


class CournotParams(MarketParams):
    rounds: int = size(
        50, ge=2, le=100_000, description="rounds per episode (not told to the firms)"
    )
    products: list[str] = Field(
        default_factory=lambda: ["A", "B"],
        min_length=1,
        description="product names; the JSON keys are Product_<name>",
    )
    a: Level | list[Level] = Field(
        default=100.0, description="demand intercept (or one per product)"
    )
    b: Level | list[Level] = Field(default=2.0, description="slope divisor: P = a - Q/b")
    costs: list[list[Annotated[float, Field(ge=0, le=1e6)]]] = Field(
        default_factory=lambda: [[40.0, 50.0], [50.0, 40.0]],
        description="marginal cost per seat (row) and product (column)",
    )
    capacity: Level | list[Level] = Field(
        default=100.0, description="max total units per firm and round"
    )
    history_window: int = size(30, le=10_000, description="past rounds of own data shown")
    nash_tol: float = Field(
        default=1e-8, ge=1e-12, le=1e-3, description="iterative best response: max change"
    )
    nash_max_iter: int = size(1000, le=1_000_000)
    bootstrap: BootstrapParams = Field(default_factory=BootstrapParams)

    post_keys = frozenset({"bootstrap"})

    @model_validator(mode="after")
    def _consistent(self):
        if len(set(self.products)) != len(self.products):
            raise ValueError(f"products must be unique, got {self.products}")
        if len(self.costs) > len(self.roster):
            raise ValueError(
                f"costs has {len(self.costs)} rows (seats) but the roster has only "
                f"{len(self.roster)} firms"
            )
        if any(len(row) != len(self.products) for row in self.costs):
            raise ValueError(
                f"every row of costs needs one cost per product ({len(self.products)})"
            )
        self.config()  # shapes and signs of a, b, capacity
        return self

    @property
    def seats(self) -> int:
        return len(self.costs)

    def lineups(self) -> list[tuple[int, ...]]:
        """Roster indices seated in each lineup (episode r plays lineup r mod len)."""
        from marketarena.markets._shared.oligopoly import lineups

        return lineups(len(self.roster), self.seats)

    def lineup(self, run: int) -> list[RosterEntry]:
        from marketarena.markets._shared.oligopoly import lineup

        return lineup(self.roster, self.seats, run)

    def config(self) -> CournotConfig:
        from marketarena.markets.cournot.economics import CournotConfig

        def tup(v):
            return tuple(float(x) for x in v) if isinstance(v, list) else float(v)

        return CournotConfig(
            a=tup(self.a),
            b=tup(self.b),
            capacity=tup(self.capacity),
            costs=tuple(tuple(float(x) for x in row) for row in self.costs),
        )
