"""The episode runner: one loop for every market.

At each decision point all acting agents are asked concurrently (``asyncio.gather``); the answers are
then processed in the order of ``decision.observations`` so the outcome never depends on which
answer arrived first. Every answer goes through two checks:

1. the decision's pydantic ``action_schema`` (shape and types), then
2. the market's own rules (``Market.check``: budget, known items, ...).

An answer failing either is replaced by ``Market.fallback`` and logged with ``valid=False`` and the
reason. A raised exception inside an agent is treated the same way (logged, fallback applied), so
that one broken agent cannot end an episode for the others; except :class:`RunAborted` (endpoint
down, budget spent, replay cache miss), which ends the run and loses only the episode in flight.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel, ValidationError

from marketarena.core.seeding import agent_generators
from marketarena.core.types import Agent, AgentId, Decision, Market, Reply, RunAborted


@dataclass(repr=False)  # a repr would render every log table (asyncio formats results)
class EpisodeResult:
    decisions: pd.DataFrame
    llm_calls: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    extra: dict[str, Any] = field(default_factory=dict)


DECISION_COLUMNS = ["step", "round", "phase", "agent_id", "action", "valid", "error", "notes"]
LLM_CALL_COLUMNS = [
    "step", "round", "phase", "agent_id", "model", "request_hash", "prompt_tokens",
    "completion_tokens", "cost_usd", "latency_s", "cached", "attempts", "retries", "valid",
]


def _as_reply(raw: Any) -> Reply:
    return raw if isinstance(raw, Reply) else Reply(action=raw)


def _dump(action: Any) -> str:
    """The action as logged: JSON in the answer's own wire format (field aliases such as
    ``PLANS.txt``), keys sorted."""
    if isinstance(action, BaseModel):
        action = action.model_dump(mode="json", by_alias=True)
    return json.dumps(action, sort_keys=True, ensure_ascii=False, default=str)


def validate(market: Market, decision: Decision, agent_id: AgentId, reply: Reply):
    """Return (action to apply, valid, error, notes) for one agent's reply."""
    if reply.action is None:
        return market.fallback(agent_id, decision.phase), False, reply.error or "no action", []
    try:
        action = (
            reply.action
            if isinstance(reply.action, decision.action_schema)
            else decision.action_schema.model_validate(
                reply.action.model_dump() if isinstance(reply.action, BaseModel) else reply.action
            )
        )
    except ValidationError as exc:
        reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return market.fallback(agent_id, decision.phase), False, f"schema: {reason}", []
    checked = market.check(agent_id, action)
    if checked.error is not None:
        return market.fallback(agent_id, decision.phase), False, checked.error, checked.notes
    return checked.action, True, None, checked.notes


def play_episode(market: Market, agents: dict[AgentId, Agent], seed: int) -> EpisodeResult:
    """Synchronous wrapper: run one episode in its own event loop.

    The result is handed out through a closure, not as the return value of ``asyncio.run``: on
    CPython 3.11, ``asyncio.run`` ends by formatting an error message that contains the repr of its
    main task, result included, and pandas would render every log table of the episode into it
    (0.4 s per episode for supply_chain).
    """
    box: list[EpisodeResult] = []

    async def main() -> None:
        box.append(await run_episode(market, agents, seed))

    asyncio.run(main())
    return box[0]


async def run_episode(market: Market, agents: dict[AgentId, Agent], seed: int) -> EpisodeResult:
    """Play one episode to the end and return its decision log, LLM calls and market tables."""
    decision = market.reset(seed)
    for agent, rng in zip(agents.values(), agent_generators(seed, len(agents))):
        agent.reset(rng)
    decision_rows: list[dict] = []
    call_rows: list[dict] = []
    while decision is not None:
        acting = list(decision.observations)
        raw = await asyncio.gather(
            *(agents[a].act(decision.observations[a], decision) for a in acting),
            return_exceptions=True,
        )
        actions: dict[AgentId, BaseModel] = {}
        for agent_id, answer in zip(acting, raw):
            if isinstance(answer, BaseException):
                if isinstance(answer, RunAborted) or not isinstance(answer, Exception):
                    raise answer  # run-level failure, KeyboardInterrupt, CancelledError, ...
                reply = Reply(action=None, error=f"agent raised {type(answer).__name__}: {answer}")
            else:
                reply = _as_reply(answer)
            action, valid, error, notes = validate(market, decision, agent_id, reply)
            actions[agent_id] = action
            decision_rows.append(
                {
                    "step": decision.step, "round": decision.round, "phase": decision.phase,
                    "agent_id": agent_id, "action": _dump(reply.action), "valid": valid,
                    "error": error or "", "notes": "; ".join(notes),
                }
            )
            for call in reply.calls:
                call_rows.append(
                    {"step": decision.step, "round": decision.round, "phase": decision.phase,
                     "agent_id": agent_id, **call}
                )
        decision = market.step(actions)
    return EpisodeResult(
        decisions=pd.DataFrame(decision_rows, columns=DECISION_COLUMNS),
        llm_calls=pd.DataFrame(call_rows, columns=LLM_CALL_COLUMNS),
        tables=market.tables(),
    )
