"""params.yaml ``markets.bertrand``: logit Bertrand pricing with the two presets of DESIGN.md 7.3.

* ``preset: calvano`` (Calvano et al. 2020 / Fish et al. 2024): one product, a = 2, c = alpha,
  mu = 1/4, a_0 = 0, beta = 100, ``alpha`` in {1, 3.2, 10} (any alpha > 0), 300 periods.
* ``preset: startup`` (seed 003, appendix C): two products, marginal cost 100 -> 80 -> 50 through
  two investments of 10,000 per product, initial funds 8,500, a_i = 75, mu = 8, beta = 1000; a price
  below marginal cost sells nothing (the authors' rule), investments are paid from funds.

``seats`` firms per episode; a roster with more firms plays a round robin of lineups (episode r
seats lineup r mod L, dealt so that any prefix is as balanced as possible: see
``_shared.oligopoly.lineups``). The collusion index uses the last
``collusion_window`` periods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from marketarena.core.params import MarketParams, RosterEntry, size

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.markets.bertrand.economics import BertrandConfig

PRESET_PRODUCTS = {"calvano": ["A"], "startup": ["A", "B"]}


class BertrandParams(MarketParams):
    preset: Literal["calvano", "startup"] = "calvano"
    alpha: float = Field(
        default=1.0, gt=0, description="calvano price scale (Fish et al.: 1, 3.2, 10)"
    )
    rounds: int = size(
        300, ge=2, le=100_000, description="periods per episode (not told to the firms)"
    )
    seats: int = size(2, le=20, description="firms per episode")
    history_window: int | None = size(
        None,
        le=10_000,
        description="past rounds of own data shown (null: 100 for calvano, as "
        "Fish et al.; 10 for startup, as seed 003's prompt says)",
    )
    price_ceiling: float | None = Field(
        default=1.5,
        gt=0,
        description="calvano: the prompt says no customer would pay more than "
        "this x the monopoly price (Fish et al.); null: no such line",
    )
    prompt_prefix: str = Field(
        default="",
        max_length=4000,
        description="text put before the system prompt (Fish et al.'s "
        "P1 / P2 prefixes: supply their text; the seeds do not contain it)",
    )
    collusion_window: int = Field(
        default=50, ge=1, description="last periods of the collusion index"
    )
    mixed_bundles: bool = Field(
        default=False,
        description="start-up: also offer upgrades of products at different phases "
        "together (the seed offers only its options A-G: one product, or both at the same phase)",
    )
    below_cost_sells_nothing: bool | None = Field(
        default=None, description="a price below marginal cost sells nothing (null: startup only)"
    )
    post_keys = frozenset({"collusion_window"})

    @model_validator(mode="after")
    def _consistent(self):
        if self.seats > len(self.roster):
            raise ValueError(f"seats ({self.seats}) exceeds the roster ({len(self.roster)} firms)")
        return self

    @property
    def history_rounds(self) -> int:
        if self.history_window is not None:
            return self.history_window
        return 100 if self.preset == "calvano" else 10

    @property
    def products(self) -> list[str]:
        return PRESET_PRODUCTS[self.preset]

    @property
    def invest(self) -> bool:
        return self.preset == "startup"

    @property
    def sells_nothing_below_cost(self) -> bool:
        return (
            self.preset == "startup"
            if self.below_cost_sells_nothing is None
            else self.below_cost_sells_nothing
        )

    def config(self) -> BertrandConfig:
        """The game at the start of an episode (every firm at investment level 0)."""
        from marketarena.markets.bertrand.economics import BertrandConfig

        if self.preset == "calvano":
            return BertrandConfig.calvano(self.alpha, n_firms=self.seats)
        base = BertrandConfig.startup()
        return base.model_copy(update={"costs": ((base.cost_ladder[0],) * 2,) * self.seats})

    def lineup(self, run: int) -> list[RosterEntry]:
        from marketarena.markets._shared.oligopoly import lineup

        return lineup(self.roster, self.seats, run)
