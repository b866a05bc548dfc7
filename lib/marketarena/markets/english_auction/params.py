"""params.yaml ``markets.<instance>`` of kind ``english_auction``: AucArena (seed 004).

Defaults are the seed's: the ten items of its Table 2 (two at each start price 1,000 to 5,000;
true value = 2 x start price; every bidder's estimate 10% above the true value), minimum increment
10% of the start price, budgets 10,000 / 20,000 / 40,000 (its Figure 5 and appendix B.2), item
orders random, ascending and descending (start price). The settings grid budget x order lives
inside an instance: auction ``r`` of a lineup plays cell ``r mod cells`` (the seed repeats each
setting 10 times: ``runs = 10 x cells`` = 90).

Who bids (the lineups):

- ``baselines: [a, b]`` -- the seed's *standard competition* (section 4.1): the named roster entries
  are fixed bidders in every auction, and every other roster entry is a *challenger* that takes the
  remaining seat in turn. Each challenger plays ``runs`` auctions; challenger c's auction r is
  ``ep-<c>-<r:04d>`` with the seed of (``seed``, r), so every challenger meets the same item orders
  and the baselines draw the same randomness (common random numbers). Adding a challenger adds its
  auctions and replays none of the others'. Seats: the baselines in the order listed, then the
  challenger (``Bidder 1..3``).
- ``baselines`` unset (null) -- every roster entry bids in every auction, in roster order
  (``ep-<r:04d>``, ``runs`` auctions): the seed's ablation (Figure 7: adaptive, static and no-plan
  bidders against each other) and its 4-bidder objectives study.

A bidder's desire and plan strategy (adaptive, static, none) are its own: a scripted strategy's
params, or an LLM bidder's ``bdi`` harness params.

Every number is bounded so that no accepted value can overflow what the market computes (prices,
budgets and their sums stay far below 2^53) or make an item last for ever: at the bounds an item
ends within ``rules.round_bound`` <= 10^11 rounds, and at the defaults within 392.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, model_validator

from marketarena.core.params import MAX_RUNS, MarketParams, Strict, size

#: prices and budgets at most this (whole dollars): their sums stay exact in float64
MAX_MONEY = 10**9


class Item(Strict):
    name: str = Field(min_length=1, max_length=60)
    start_price: StrictInt = Field(gt=0, le=MAX_MONEY)
    description: str = Field(default="", max_length=200)


#: the seed's Table 2 (appendix A.3), in its order
SEED_ITEMS = [
    Item(name="Widget A", start_price=1000, description="A widget for all your needs"),
    Item(name="Gadget B", start_price=3000, description="A gadget with all the latest features"),
    Item(
        name="Thingamajig C", start_price=4000, description="A little thing that is sure to impress"
    ),
    Item(
        name="Doodad D", start_price=2000, description="A durable doodad that will last for years"
    ),
    Item(
        name="Equipment E", start_price=5000, description="A piece of equipment for any tough job"
    ),
    Item(name="Gizmo F", start_price=3000, description="A gizmo that will surprise and delight"),
    Item(name="Implement G", start_price=2000, description="A implement for everyday tasks"),
    Item(
        name="Apparatus H", start_price=4000, description="An apparatus for specialized operations"
    ),
    Item(
        name="Contraption I", start_price=1000, description="A contraption that sparks creativity"
    ),
    Item(name="Mechanism J", start_price=5000, description="A mechanism for repetitive tasks"),
]

Order = Literal["random", "ascending", "descending"]


class EnglishAuctionParams(MarketParams):
    runs: StrictInt = Field(
        default=90,
        ge=1,
        le=MAX_RUNS,
        description="auctions per lineup (per challenger with baselines)",
    )
    items: list[Item] = Field(
        default_factory=lambda: list(SEED_ITEMS), min_length=1, max_length=200
    )
    value_factor: float = Field(
        default=2.0, gt=0, le=100, description="true value = factor x start price"
    )
    overestimate: float = Field(
        default=0.1, ge=-0.9, le=10, description="every bidder's estimate = true value x (1 + this)"
    )
    min_increment: float = Field(
        default=0.1,
        ge=0.01,
        le=10,
        description="a bid beats the last round's highest by this x start price",
    )
    budgets: list[StrictInt] = Field(
        default_factory=lambda: [10_000, 20_000, 40_000], min_length=1, max_length=50
    )
    orders: list[Order] = Field(
        default_factory=lambda: ["random", "ascending", "descending"], min_length=1
    )
    baselines: list[str] | None = Field(
        default=None,
        min_length=1,
        description="roster names of the fixed bidders of the standard "
        "competition; every other entry is a challenger in turn (null: everyone bids in every auction)",
    )
    max_rounds: StrictInt | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="bidding rounds per item at most (null: none; an "
        "item ends by itself, see rules.round_bound); a capped item is sold to its leader, logged as "
        "event round_cap",
    )
    bid_attempts: int = size(
        10,
        le=100,
        description="answers per bid: a failed bid is asked "
        "again with the reason; after the last the bidder withdraws (event "
        "forced_withdrawal)",
    )
    belief_attempts: int = size(
        4,
        le=20,
        description="answers per belief update: errors are fed "
        "back, then the auctioneer corrects the belief (event belief_corrected)",
    )
    plan_attempts: int = size(3, le=20, description="answers per plan or replan")
    rating_passes: StrictInt = Field(
        default=20,
        ge=1,
        le=1000,
        description="TrueSkill passes in "
        "shuffled order per rating: the board's mu is their median, and "
        "each bootstrap resample of its interval is rated the same way",
    )

    post_keys = frozenset({"rating_passes"})

    @model_validator(mode="after")
    def _check(self):
        names = [i.name for i in self.items]
        if len(set(names)) != len(names):
            raise ValueError(f"items: names must be unique, got {names}")
        if any(not 0 < b <= MAX_MONEY for b in self.budgets):
            raise ValueError(
                f"budgets: each must be a whole number of dollars in 1..{MAX_MONEY:,} "
                f"(got {self.budgets})"
            )
        roster = [e.name for e in self.roster]
        if self.baselines is not None:
            unknown = [b for b in self.baselines if b not in roster]
            if unknown:
                raise ValueError(f"baselines: {unknown} are not roster entries (roster: {roster})")
            if len(set(self.baselines)) != len(self.baselines):
                raise ValueError(f"baselines: a name appears twice ({self.baselines})")
            if not self.challengers:
                raise ValueError(
                    f"baselines: {self.baselines} leave no challenger; the standard "
                    "competition seats the baselines plus one other roster entry per "
                    "auction (add one, or set baselines: null to seat everyone)"
                )
        elif len(self.roster) < 2:
            raise ValueError("roster: an auction needs at least two bidders")
        return self

    # ------------------------------------------------------------------ the lineups
    @property
    def challengers(self) -> list[str]:
        """Roster names that take the challenger seat in turn (none without ``baselines``)."""
        fixed = set(self.baselines or ())
        return [e.name for e in self.roster if e.name not in fixed] if self.baselines else []

    def lineups(self) -> list[tuple[str | None, list[str]]]:
        """(challenger or None, roster names in seat order) of every lineup."""
        if self.baselines is None:
            return [(None, [e.name for e in self.roster])]
        return [(c, [*self.baselines, c]) for c in self.challengers]

    @property
    def cells(self) -> list[tuple[int, str]]:
        return [(b, o) for b in self.budgets for o in self.orders]

    def cell_of(self, run: int) -> tuple[int, str]:
        return self.cells[run % len(self.cells)]

    def true_value(self, item: Item) -> float:
        return item.start_price * self.value_factor

    def estimate(self, item: Item) -> float:
        return self.true_value(item) * (1 + self.overestimate)
