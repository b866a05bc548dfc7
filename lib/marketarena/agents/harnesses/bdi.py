"""``bdi``: AucArena's Belief-Desire-Intention bidder (seed 004 section 3.2 and the ablation of
section 4.3), for the english_auction market.

The market asks every bidder the same four decisions (plan, bid, belief update, replan); this
harness decides which of them the model answers:

- ``desire``: ``maximize_profit`` (default) or ``maximize_items``, the objective the prompts state;
- ``plan``: ``adaptive`` (default: the model plans and replans after every item), ``static`` (the
  model plans once; every replan keeps that plan without a call), ``none`` (no plan: every item gets
  priority 2, and no planning call is ever made).

Bids and belief updates are always the model's.
"""

from __future__ import annotations

from typing import Literal


from marketarena.agents.harnesses.base import Harness
from marketarena.core.params import Strict
from marketarena.core.types import Reply


class BDIParams(Strict):
    desire: Literal["maximize_profit", "maximize_items"] = "maximize_profit"
    plan: Literal["adaptive", "static", "none"] = "adaptive"


class BDI(Harness):
    name = "bdi"
    Params = BDIParams

    def extras(self, agent, observation, decision):
        return {"desire": self.params.desire}

    async def respond(self, agent, observation, decision, retry=None) -> Reply:
        from marketarena.markets.english_auction.observations import PlanAction

        if decision.phase == "plan" and self.params.plan == "none":
            return Reply(action=PlanAction(priorities={i.name: 2 for i in observation.items}))
        if decision.phase == "replan" and self.params.plan in ("static", "none"):
            kept = {i.name: (observation.plan or {}).get(i.name, 2) for i in observation.items}
            return Reply(action=PlanAction(priorities=kept))
        return await super().respond(agent, observation, decision, retry)
