"""Scripted retailers for supply_chain: baselines that span bidding, pricing and messaging styles.

Every strategy is a :class:`ScriptedRetailer` with a pydantic params model (the roster entry's
``params``; unknown keys are errors). The shared skeleton:

- **bidding** — for each offered item (optionally only some ``categories``) bid
  ``qty = round(share × supply / n_retailers)`` units at ``price = ceil(base × (1 + shade))``;
  if the bid set costs more than ``budget × funds`` every quantity is scaled down to fit;
- **pricing** — post ``ceil(average unit cost × (1 + markup))`` for every item held;
- **slogan** — one slogan of the ``tribe`` bank (``slogans.yaml``), drawn each step.

Strategies change one part of that skeleton:

| strategy   | what differs |
|------------|--------------|
| cost_plus  | nothing: fixed shade, fixed markup |
| reserve    | bids exactly the base (reserve) price, wins only what others leave |
| volume     | bids high and wide for many units, prices with a thin markup |
| pacer      | spends ``funds / steps left`` per step; in a settling round raises bids on items the indicative round did not fill to the indicative clearing price + ``raise_frac`` × base |
| targeter   | aims one tribe: its slogans, and prices at ``price_multiple`` × base (just under that tribe's willingness to pay, if it guessed right) |
| follower   | bids one above last step's clearing price and undercuts last step's average sale price by ``undercut`` |
| random     | draws shade, share, markup and slogan tribe at random each step; with ``overspend_prob`` it ignores its budget (exercises the invalid-bid path) |
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources
from typing import ClassVar

import yaml
from pydantic import Field

from marketarena.core.params import Strict
from marketarena.core.scripted import ScriptedAgent, StrategyTable
from marketarena.core.types import Decision
from marketarena.markets.supply_chain.observations import (
    Bid,
    ProcurementAction,
    ProcurementObservation,
    RetailAction,
    RetailObservation,
)


@lru_cache(maxsize=1)
def slogan_bank() -> dict[str, list[str]]:
    text = resources.files("marketarena.markets.supply_chain").joinpath("slogans.yaml").read_text()
    return yaml.safe_load(text)


class RetailerParams(Strict):
    """Shared by every scripted retailer; ``tribe`` must name a bank of ``slogans.yaml``."""

    shade: float = Field(default=0.05, ge=0, description="bid price = ceil(base × (1 + shade))")
    share: float = Field(default=1.0, gt=0, description="units bid = share × supply / retailers")
    budget: float = Field(default=0.9, gt=0, le=1, description="max share of funds bid per step")
    markup: float = Field(default=0.5, ge=-0.9, description="price = ceil(unit cost × (1+markup))")
    categories: list[str] | None = Field(default=None, description="bid only on these categories")
    tribe: str = Field(default="generic", description="slogan bank in slogans.yaml")


class ScriptedRetailer(ScriptedAgent):
    strategy: ClassVar[str] = "cost_plus"
    Params: ClassVar[type[RetailerParams]] = RetailerParams

    @classmethod
    def check_params(cls, params: RetailerParams, table) -> None:
        if params.tribe not in slogan_bank():
            raise ValueError(
                f"tribe: no slogan bank {params.tribe!r} "
                f"(known: {', '.join(sorted(slogan_bank()))})"
            )

    def decide(self, observation, decision: Decision):
        if isinstance(observation, ProcurementObservation):
            return self.bid(observation)
        return self.retail(observation)

    # -------------------------------------------------------------- bidding
    def bid_price(self, obs: ProcurementObservation, item: str, base: int) -> int:
        return math.ceil(base * (1 + self.params.shade))

    def bid_qty(self, obs: ProcurementObservation, item: str, supply: int) -> int:
        return round(self.params.share * supply / obs.n_retailers)

    def budget_cap(self, obs: ProcurementObservation) -> float:
        return self.params.budget * obs.funds

    def bid(self, obs: ProcurementObservation) -> ProcurementAction:
        cats = self.params.categories
        wanted = {
            o.item: (self.bid_qty(obs, o.item, o.qty), self.bid_price(obs, o.item, o.base_price))
            for o in obs.offers
            if cats is None or o.category in cats
        }
        return ProcurementAction(bids=fit_budget(wanted, self.budget_cap(obs)))

    # -------------------------------------------------------------- retail
    def retail_price(self, obs: RetailObservation, item: str, cost: float, base: int) -> int:
        return math.ceil(cost * (1 + self.params.markup))

    def slogan_tribe(self) -> str:
        return self.params.tribe

    def retail(self, obs: RetailObservation) -> RetailAction:
        base = {o.item: o.base_price for o in obs.offers}
        prices = {
            item: max(0, self.retail_price(obs, item, obs.avg_cost[item], base[item]))
            for item, units in obs.inventory.items()
            if units > 0
        }
        bank = slogan_bank()[self.slogan_tribe()]
        return RetailAction(prices=prices, slogan=bank[int(self.rng.integers(len(bank)))])


def fit_budget(wanted: dict[str, tuple[int, int]], cap: float) -> dict[str, Bid]:
    """Scale quantities down (floor) so that Σ qty × price <= cap; drop zero-quantity bids."""
    total = sum(q * p for q, p in wanted.values())
    scale = min(1.0, cap / total) if total > 0 else 1.0
    bids = {item: Bid(qty=int(math.floor(q * scale)), price=p) for item, (q, p) in wanted.items()}
    return {item: b for item, b in bids.items() if b.qty > 0}


class CostPlus(ScriptedRetailer):
    strategy = "cost_plus"


class ReserveParams(RetailerParams):
    share: float = Field(default=1.5, gt=0)
    markup: float = Field(default=0.8, ge=-0.9)


class Reserve(ScriptedRetailer):
    strategy = "reserve"
    Params = ReserveParams

    def bid_price(self, obs, item, base):
        return base


class VolumeParams(RetailerParams):
    shade: float = Field(default=0.3, ge=0)
    share: float = Field(default=2.5, gt=0)
    budget: float = Field(default=1.0, gt=0, le=1)
    markup: float = Field(default=0.15, ge=-0.9)


class Volume(ScriptedRetailer):
    strategy = "volume"
    Params = VolumeParams


class PacerParams(RetailerParams):
    shade: float = Field(default=0.1, ge=0)
    share: float = Field(default=1.5, gt=0)
    raise_frac: float = Field(
        default=0.05, ge=0, description="bump over the indicative clearing price, × base"
    )


class Pacer(ScriptedRetailer):
    strategy = "pacer"
    Params = PacerParams

    def budget_cap(self, obs):
        return min(self.params.budget * obs.funds, obs.funds / max(1, obs.steps - obs.step))

    def bid_price(self, obs, item, base):
        price = super().bid_price(obs, item, base)
        if obs.indicative_clearing is None:
            return price
        clearing = obs.indicative_clearing.get(item)
        won = obs.indicative.get(item) if obs.indicative else None
        wanted = self.bid_qty(obs, item, next(o.qty for o in obs.offers if o.item == item))
        if clearing is not None and (won is None or won.qty < wanted):
            price = max(price, clearing + math.ceil(self.params.raise_frac * base))
        return price


class TargeterParams(RetailerParams):
    tribe: str = Field(default="ethical")
    price_multiple: float = Field(
        default=2.2, gt=0, description="price = base × this, at least cost + 5%"
    )


class Targeter(ScriptedRetailer):
    strategy = "targeter"
    Params = TargeterParams

    def retail_price(self, obs, item, cost, base):
        return max(math.ceil(cost * 1.05), math.floor(base * self.params.price_multiple))


class FollowerParams(RetailerParams):
    undercut: float = Field(
        default=0.05, ge=0, lt=1, description="undercut last average sale price"
    )


class Follower(ScriptedRetailer):
    strategy = "follower"
    Params = FollowerParams

    def _last(self, obs, item):
        return (
            next((i for i in obs.history[-1].items if i.item == item), None)
            if obs.history
            else None
        )

    def bid_price(self, obs, item, base):
        last = self._last(obs, item)
        if last is None or last.clearing_price is None:
            return super().bid_price(obs, item, base)
        return max(base, last.clearing_price + 1)

    def retail_price(self, obs, item, cost, base):
        last = self._last(obs, item)
        if last is None or last.avg_sale_price is None:
            return super().retail_price(obs, item, cost, base)
        return max(
            math.ceil(cost * 1.02), math.floor(last.avg_sale_price * (1 - self.params.undercut))
        )


class RandomParams(RetailerParams):
    max_shade: float = Field(default=0.4, ge=0)
    max_markup: float = Field(default=1.2, ge=0)
    overspend_prob: float = Field(default=0.1, ge=0, le=1)


class RandomRetailer(ScriptedRetailer):
    strategy = "random"
    Params = RandomParams

    def bid(self, obs):
        p = self.params
        shade = self.rng.uniform(0, p.max_shade)
        share = self.rng.uniform(0.5, 2.0)
        reckless = self.rng.random() < p.overspend_prob
        wanted = {
            o.item: (round(share * o.qty / obs.n_retailers), math.ceil(o.base_price * (1 + shade)))
            for o in obs.offers
        }
        if reckless:  # ignores its budget: the whole bid set is void if it overshoots funds
            return ProcurementAction(
                bids={i: Bid(qty=3 * q, price=pr) for i, (q, pr) in wanted.items()}
            )
        return ProcurementAction(bids=fit_budget(wanted, p.budget * obs.funds))

    def retail_price(self, obs, item, cost, base):
        return math.ceil(cost * (1 + self.rng.uniform(0, self.params.max_markup)))

    def slogan_tribe(self):
        banks = sorted(slogan_bank())
        return banks[int(self.rng.integers(len(banks)))]


STRATEGIES = StrategyTable(
    "supply_chain",
    {
        cls.strategy: cls
        for cls in (CostPlus, Reserve, Volume, Pacer, Targeter, Follower, RandomRetailer)
    },
)
