"""The objectives study (the seed's Figure 8) offline: the scripted item bidders do not have the
niche built in (issue 55). A ``maximize_items`` planner walks the items in a seeded random order
(``rank: shuffle``), not cheapest first, so an expensive item gets its top priority as often as
its place in a random order allows; ``rank: cheapest`` (the old rule, the niche scripted) never
gives it one when the cheap items use up the budget first."""

from __future__ import annotations

import numpy as np
import pytest

from marketarena.markets.english_auction.baselines import Planner
from marketarena.markets.english_auction.observations import ItemView, PlanObservation

# 4 cheap items and 1 expensive one; at expected price 1.5 x start a budget of 7,500 covers the
# expensive item alone (7,500) or the 4 cheap ones (6,000), never both
ITEMS = [
    ItemView(name=f"cheap {k}", description="", start_price=1000, estimate=2200) for k in range(4)
]
ITEMS.append(ItemView(name="dear", description="", start_price=5000, estimate=11000))
OBS = PlanObservation(agent_id="B1", me="Bidder 1", budget=7500, items=ITEMS)
N = 400


def dear_on_top(params: dict) -> float:
    """Share of N seeded planners whose first plan gives the expensive item priority 3."""
    hits = 0
    for seed in range(N):
        planner = Planner("B1", {"expected_price": 1.5, **params})
        planner.reset(np.random.default_rng(seed))
        hits += planner.priorities(OBS)["dear"] == 3
    return hits / N


def test_an_item_bidder_ranks_items_without_regard_to_price():
    assert Planner.Params(desire="maximize_items").ranking == "shuffle"
    assert Planner.Params(desire="maximize_profit").ranking == "impression"
    # a random order puts the expensive item first (then it alone fits the budget) 1 time in 5
    share = dear_on_top({"desire": "maximize_items"})
    assert share == pytest.approx(1 / 5, abs=4 * np.sqrt(0.2 * 0.8 / N))
    # the noise of the impressions plays no part in the shuffled order
    assert dear_on_top({"desire": "maximize_items", "noise": 0.0}) == share
    # the rules that order by price: cheapest first never, best impression first always
    assert dear_on_top({"desire": "maximize_items", "rank": "cheapest"}) == 0
    assert dear_on_top({"desire": "maximize_profit", "noise": 0.0}) == 1


def test_a_shuffled_plan_still_fits_the_budget():
    planner = Planner("B1", {"desire": "maximize_items", "expected_price": 1.5})
    for seed in range(50):
        planner.reset(np.random.default_rng(seed))
        prios = planner.priorities(OBS)
        assert set(prios) == {i.name for i in ITEMS}
        top = [i for i in ITEMS if prios[i.name] == 3]
        assert sum(1.5 * i.start_price for i in top) <= OBS.budget
