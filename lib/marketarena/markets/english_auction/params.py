"""params.yaml ``markets.<instance>`` of kind ``english_auction``: AucArena (seed 004).

Defaults are the seed's standard competition: the ten items of its Table 2 (two at each start price
1,000 to 5,000; true value = 2 x start price; every bidder's estimate 10% above the true value),
minimum increment 10% of the start price, budgets 20,000 and 40,000, item orders random, ascending
and descending (start price): the settings grid budget x order lives inside an instance, episode
``r`` plays cell ``r mod cells`` (``runs = cells x repeats``; the seed repeats each setting 10 times).

Seats: every roster entry bids in every auction, in roster order (``Bidder 1..N``); the seed's
standard competition seats three (two fixed baselines and a challenger), its objectives study four.
A bidder's desire (maximise profit or items) and plan strategy (adaptive, static, none) are its
own: a scripted strategy's params, or an LLM bidder's ``bdi`` harness params.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from marketarena.core.params import MarketParams, Strict, size


class Item(Strict):
    name: str = Field(min_length=1, max_length=60)
    start_price: int = Field(gt=0, le=10**9)
    description: str = Field(default="", max_length=200)


#: the seed's Table 2 (appendix A.3), in its order
SEED_ITEMS = [
    Item(name="Widget A", start_price=1000, description="A widget for all your needs"),
    Item(name="Gadget B", start_price=3000, description="A gadget with all the latest features"),
    Item(name="Thingamajig C", start_price=4000, description="A little thing that is sure to impress"),
    Item(name="Doodad D", start_price=2000, description="A durable doodad that will last for years"),
    Item(name="Equipment E", start_price=5000, description="A piece of equipment for any tough job"),
    Item(name="Gizmo F", start_price=3000, description="A gizmo that will surprise and delight"),
    Item(name="Implement G", start_price=2000, description="A implement for everyday tasks"),
    Item(name="Apparatus H", start_price=4000, description="An apparatus for specialized operations"),
    Item(name="Contraption I", start_price=1000, description="A contraption that sparks creativity"),
    Item(name="Mechanism J", start_price=5000, description="A mechanism for repetitive tasks"),
]

Order = Literal["random", "ascending", "descending"]


class EnglishAuctionParams(MarketParams):
    items: list[Item] = Field(default_factory=lambda: list(SEED_ITEMS), min_length=1)
    value_factor: float = Field(default=2.0, gt=0, le=100,
                                description="true value = factor x start price")
    overestimate: float = Field(default=0.1, ge=-0.9, le=10,
                                description="every bidder's estimate = true value x (1 + this)")
    min_increment: float = Field(default=0.1, gt=0, le=10,
                                 description="a bid beats the last round's highest by this x start price")
    budgets: list[Annotated[int, Field(gt=0, le=10**12)]] = Field(
        default_factory=lambda: [20_000, 40_000], min_length=1)
    orders: list[Order] = Field(default_factory=lambda: ["random", "ascending", "descending"],
                                min_length=1)
    max_rounds: int = size(50, le=10_000, description="bidding rounds per item at most")
    bid_attempts: int = size(3, le=10, description="answers per bid: a failed bid is asked "
                              "again with the reason, then the bidder withdraws")
    belief_attempts: int = size(4, le=10, description="answers per belief update: errors "
                                 "are fed back, then the auctioneer corrects the belief")
    plan_attempts: int = size(3, le=10, description="answers per plan or replan")

    post_keys = frozenset()

    @model_validator(mode="after")
    def _check(self):
        names = [i.name for i in self.items]
        if len(set(names)) != len(names):
            raise ValueError(f"items: names must be unique, got {names}")
        if len(self.roster) < 2:
            raise ValueError("roster: an auction needs at least two bidders")
        return self

    @property
    def cells(self) -> list[tuple[int, str]]:
        return [(b, o) for b in self.budgets for o in self.orders]

    def cell_of(self, run: int) -> tuple[int, str]:
        return self.cells[run % len(self.cells)]

    def true_value(self, item: Item) -> float:
        return item.start_price * self.value_factor

    def estimate(self, item: Item) -> float:
        return self.true_value(item) * (1 + self.overestimate)
