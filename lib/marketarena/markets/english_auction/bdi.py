"""``bdi``: AucArena's Belief-Desire-Intention bidder (seed 004 section 3.2 and appendix A.2, the
ablation of section 4.3), english_auction's own harness (``EnglishAuctionRules.own_harnesses``: a
harness no other market offers lives in its market's folder; the shared ones in
``agents/harnesses/``), holding its conversation as the authors' Bidder does (auction-arena:
src/bidder_base.py).

Params:

- ``desire``: ``maximize_profit`` (default) or ``maximize_items``, the objective the prompts state;
- ``plan``: ``adaptive`` (default: the model plans, and replans after every item), ``static`` (it
  plans once; a replan keeps that plan without a call), ``none`` (no plan and no planning call:
  the market records no priorities, and no plan text is ever shown).

The messages of each call (the market's templates render each instruction; this harness only
orders them):

- plan: system, plan instruction;
- bid: system, the last (re)plan instruction and the model's answer to it, verbatim (the seed's
  "(Re-)Plan Instruction, (Updated) Plan"; not for ``none``), then this item's bidding so far:
  each earlier round's message and the model's answer (its reasons and bid), a failed bid's
  re-ask and the answer to it, then this round's message. The first round's message is the full
  bid instruction (with the bidder's status first for ``static`` and ``none``, which see no
  replan); later rounds' only the auctioneer's words, as in the authors' ``get_bid_instruct``;
- belief update: system, belief instruction (its re-asks appended);
- replan: system, the last (re)plan instruction and answer, the replan instruction.

A re-ask after a rule breach (a failed bid, a wrong status, an invalid plan) is the auctioneer's
message (``observations.render_reask``) after the model's own previous answer. An answer that is
not valid JSON for the schema, after the LLM client's own re-asks, is a format failure: logged
with the client's error and the model's raw text (quoted, at most 2,000 characters); the market's
fallback applies.
"""

from __future__ import annotations

from typing import Any, Literal

from marketarena.agents.harnesses.base import Harness
from marketarena.core.params import Strict
from marketarena.core.prompts import quote_text
from marketarena.core.types import Reply
from marketarena.markets.english_auction.observations import PlanSkipped, render_reask

RAW_CHARS = 2000


class BDIParams(Strict):
    desire: Literal["maximize_profit", "maximize_items"] = "maximize_profit"
    plan: Literal["adaptive", "static", "none"] = "adaptive"


class BDI(Harness):
    name = "bdi"
    Params = BDIParams

    def reset(self, rng: Any = None) -> None:
        self.plan_turns: list[dict[str, str]] = []  # the last (re)plan instruction and answer
        self.item: int | None = None  # the item (step) whose bidding item_turns hold
        self.item_turns: list[dict[str, str]] = []
        self.turns: list[dict[str, str]] = []  # this plan / belief decision's turns so far

    def extras(self, agent, observation, decision):
        return {"desire": self.params.desire, "show_status": self.params.plan != "adaptive"}

    async def respond(self, agent, observation, decision, retry=None) -> Reply:
        phase, mode = decision.phase, self.params.plan
        if phase == "plan" and mode == "none":
            return Reply(action=PlanSkipped(skipped="none"))
        if phase == "replan" and mode != "adaptive":
            return Reply(action=PlanSkipped(skipped=mode))
        system, instruction = agent.render(observation, **self.extras(agent, observation, decision))
        user = (
            instruction
            if retry is None
            else {
                "role": "user",
                "content": render_reask(observation, phase, retry.previous, retry.error),
            }
        )
        if phase == "bid":
            if decision.step != self.item:
                self.item, self.item_turns = decision.step, []
            turns = self.item_turns
            before = ([] if mode == "none" else self.plan_turns) + turns
        else:
            if retry is None:
                self.turns = []
            turns = self.turns
            before = (self.plan_turns if phase == "replan" else []) + turns
        schema = decision.schema_for(agent.agent_id)
        result, row = await agent.ask([system, *before, user], schema, decision, purpose="act")
        turns += [user, {"role": "assistant", "content": result.raw_text}]
        if phase in ("plan", "replan"):
            self.plan_turns = [turns[0], turns[-1]]
        if result.action is None:
            raw = quote_text(result.raw_text, max_chars=RAW_CHARS)
            return Reply(
                action=None,
                calls=[row],
                error=f"llm: {result.error or 'no valid answer'}; raw answer: {raw}",
            )
        return Reply(action=result.action, calls=[row])
