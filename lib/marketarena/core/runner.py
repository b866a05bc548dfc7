"""The episode runner: one loop for every market.

At each decision point all acting agents are asked concurrently (``asyncio.gather``); the answers are
then processed in the order of ``decision.observations`` so the outcome never depends on which
answer arrived first. Every answer goes through two checks:

1. the agent's pydantic action schema (``decision.schema_for``: shape and types), then
2. the market's own rules (``Market.check``, pure: budget, known items, minimum increments...).
   A broken rule is an error; ``Checked.action`` may then name the market's own response to it
   (e.g. a void bid set flagged as overspent), else the fallback applies.

An answer that breaks a market rule is asked again, with the reason, while the decision allows more
attempts (``Decision.max_attempts``); the other agents' answers wait. Every attempt is a row of
``decisions`` (``attempt`` 0, 1, ...). What is still invalid after the last attempt (or fails the
schema: an LLM's schema errors are already re-asked by its client) is replaced by
``Market.fallback`` and logged with ``valid=False``, the reason and its kind (``failure``:
``format`` when the answer gave no action of the schema, i.e. text that did not parse, fields that
failed validation, no answer at all or an agent that raised; ``rule`` when it parsed but broke a
market rule, whether the fallback or the market's own response then plays; empty when valid; a
harness playing its engine's fallback for a rule it checks itself says so, ``Reply.failure``). A
decision's kind is its last attempt's: a rule broken, re-asked, then an answer that did not parse is
a format failure. Logs written before the column have no ``failure``: their kinds are unknown
(``metrics/validity.py``). A scripted agent that raises is treated the same way (logged, fallback
applied), so one broken strategy cannot end an episode for the others; a :class:`RunAborted` (endpoint down, budget spent, replay cache miss, an LLM-layer
fault) ends the run and loses only the episode in flight.

Seats that retire (``EventLog.retire``) must never act again: the runner raises if a market asks
one. Log tables of the runner: ``decisions``, ``llm_calls`` (what was asked and answered: identical
in a live run and its replay), ``llm_costs`` (how each answer was obtained: cost, latency, cache,
HTTP retries; row for row beside ``llm_calls``), ``llm_messages`` and ``events``.

``llm_messages`` is what every LLM call said, written here because every market's calls pass
through the runner: one row per model answer (``reask`` 0 for the first ask, 1, 2... for the
client's re-asks after an answer that did not parse), keyed like ``llm_calls`` plus ``call``, the
call's position among the ``llm_calls`` rows of the same decision attempt (a harness may make
several). ``messages`` is a JSON list of ``{role, content}``: the whole prompt for ``reask`` 0,
then only what the re-ask added (the previous answer, the error quoted); ``answer`` is the model's
raw text and ``error`` why it was not accepted (empty when it parsed). Texts are cut at
``llm.client.LOG_TEXT_CHARS`` characters, marked where cut. Identical in a live run and its replay.
"""

from __future__ import annotations

import asyncio
import collections
import json
import weakref
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import BaseModel, ValidationError

from marketarena.core.scripted import ScriptedAgent
from marketarena.core.seeding import agent_generators
from marketarena.core.types import (
    Agent,
    AgentId,
    Decision,
    Market,
    Reply,
    Retry,
    Rows,
    RunAborted,
    as_frame,
)


class EpisodeResult:
    """The logs of one played episode: the runner's tables (``decisions``, ``llm_calls``,
    ``llm_costs``, ``events``) and the market's (``tables``), as DataFrames when read. ``raw``
    holds them as produced (DataFrames or :class:`Rows`), for the log writer. No repr: asyncio
    formats results, and it would render every table."""

    def __init__(
        self,
        runner: dict[str, pd.DataFrame | Rows],
        market: dict[str, pd.DataFrame | Rows],
        extra: dict[str, Any] | None = None,
    ):
        self.raw: dict[str, pd.DataFrame | Rows] = {**runner, **market}
        self.market_names = list(market)
        self.extra = extra or {}
        self._frames: dict[str, pd.DataFrame] = {}

    def __repr__(self) -> str:
        return f"EpisodeResult(tables={list(self.raw)})"

    def frame(self, name: str) -> pd.DataFrame:
        if name not in self._frames:
            self._frames[name] = as_frame(self.raw[name])
        return self._frames[name]

    decisions = property(lambda self: self.frame("decisions"))
    llm_calls = property(lambda self: self.frame("llm_calls"))
    llm_costs = property(lambda self: self.frame("llm_costs"))
    events = property(lambda self: self.frame("events"))

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """The market's own tables."""
        return {name: self.frame(name) for name in self.market_names}

    def log_tables(self) -> dict[str, pd.DataFrame]:
        """Every table of the episode folder the runner and the market produced."""
        return {name: self.frame(name) for name in self.raw}


DECISION_COLUMNS = [
    "step",
    "round",
    "phase",
    "agent_id",
    "attempt",
    "action",
    "valid",
    "error",
    "notes",
    "failure",
]
CALL_KEYS = ["step", "round", "phase", "agent_id", "attempt"]
LLM_CALL_COLUMNS = CALL_KEYS + [
    "purpose",
    "model",
    "request_hash",
    "prompt_tokens",
    "completion_tokens",
    "attempts",
    "valid",
    "cached_prompt_tokens",
]
LLM_COST_COLUMNS = CALL_KEYS + ["purpose", "cost_usd", "latency_s", "cached", "retries"]
LLM_MESSAGE_COLUMNS = CALL_KEYS + ["purpose", "call", "reask", "messages", "answer", "error"]
EVENT_COLUMNS = ["step", "round", "agent_id", "event", "detail"]


def _as_reply(raw: Any) -> Reply:
    return raw if isinstance(raw, Reply) else Reply(action=raw)


def _dump(action: Any) -> str:
    """The action as logged: JSON in the answer's own wire format (field aliases such as
    ``PLANS.txt``), keys sorted. A model whose fields are hashable is rendered once per distinct
    (model, field types and values) and remembered: scripted seats repeat a few hundred answers
    over a tournament's millions of decisions."""
    if not isinstance(action, BaseModel):
        return json.dumps(action, sort_keys=True, ensure_ascii=False, default=str)
    try:
        key = (type(action), tuple((k, type(v), v) for k, v in action.__dict__.items()))
        text = _DUMPED.get(key)
    except TypeError:  # an unhashable field (a list, a dict): rendered every time
        key, text = None, None
    if text is None:
        text = json.dumps(
            action.model_dump(mode="json", by_alias=True),
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        if key is not None and len(_DUMPED) < 100_000:
            _DUMPED[key] = text
    return text


_DUMPED: dict[tuple, str] = {}


@dataclass
class Verdict:
    action: Any  # what the market applies (or None when a re-ask may still come)
    valid: bool
    error: str | None
    notes: list[str]
    rule_broken: bool = False  # schema-valid but against a market rule: may be asked again
    answer: BaseModel | None = None
    failure: str = ""  # why invalid (``decisions.failure``): format | rule; empty when valid


def judge(market: Market, decision: Decision, agent_id: AgentId, reply: Reply) -> Verdict:
    """Schema, then the market's rules; the fallback for anything invalid."""
    if reply.action is None:
        return Verdict(
            market.fallback(agent_id, decision),
            False,
            reply.error or "no action",
            [],
            failure=reply.failure or "format",
        )
    schema = decision.schema_for(agent_id)
    try:
        action = (
            reply.action
            if isinstance(reply.action, schema)
            else schema.model_validate(
                reply.action.model_dump() if isinstance(reply.action, BaseModel) else reply.action
            )
        )
    except ValidationError as exc:
        reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return Verdict(
            market.fallback(agent_id, decision), False, f"schema: {reason}", [], failure="format"
        )
    checked = market.check(agent_id, action, decision)
    if checked.error is not None:  # the market's own response to the break, else its fallback
        applied = (
            checked.action if checked.action is not None else market.fallback(agent_id, decision)
        )
        return Verdict(
            applied,
            False,
            checked.error,
            checked.notes,
            rule_broken=True,
            answer=action,
            failure="rule",
        )
    return Verdict(checked.action, True, None, checked.notes, answer=action)


def play_episode(market: Market, agents: dict[AgentId, Agent], seed: int) -> EpisodeResult:
    """Synchronous wrapper: run one episode in its own event loop.

    The result is handed out through a closure, not as the return value of ``asyncio.run``: on
    CPython 3.11, ``asyncio.run`` ends by formatting an error message that contains the repr of its
    main task, result included, and pandas would render every log table of the episode into it.
    """
    box: list[EpisodeResult] = []

    async def main() -> None:
        box.append(await run_episode(market, agents, seed))

    asyncio.run(main())
    return box[0]


def play_quietly(market: Market, agents: dict[AgentId, Any], seed: int) -> Market:
    """Play one episode of scripted agents as :func:`run_episode` plays it (same seeding, same
    order, same checks) but without building any log: for reference tables that need thousands of
    games. Agents answer through their synchronous ``decide``; an answer ``run_episode`` would log
    as invalid raises ``RuntimeError`` here. Returns the market, holding its own tables."""
    decision = market.reset(seed)
    for agent, rng in zip(agents.values(), agent_generators(seed, len(agents))):
        agent.reset(rng)
    while decision is not None:
        actions: dict[AgentId, Any] = {}
        for agent_id, observation in decision.observations.items():
            verdict = judge(
                market,
                decision,
                agent_id,
                _as_reply(agents[agent_id].decide(observation, decision)),
            )
            if not verdict.valid:
                raise RuntimeError(
                    f"{market.name}: scripted seat {agent_id} answered invalidly at "
                    f"step {decision.step}: {verdict.error}"
                )
            actions[agent_id] = verdict.action
        decision = market.step(actions)
    return market


def _ask_now(
    agent: ScriptedAgent, observation: Any, decision: Decision, retry: Retry | None
) -> Any:
    """A scripted agent's answer, called directly (what awaiting its ``act`` returns); an exception
    is returned as ``asyncio.gather(return_exceptions=True)`` would return it."""
    try:
        return (
            agent.decide(observation, decision)
            if retry is None
            else agent.revise(observation, decision, retry)
        )
    except Exception as exc:  # noqa: BLE001 - logged as the seat's invalid answer, as with gather
        return exc


async def _ask(agent: Agent, observation: Any, decision: Decision, retry: Retry | None) -> Any:
    return await (
        agent.act(observation, decision)
        if retry is None
        else agent.act(observation, decision, retry)
    )


async def run_episode(
    market: Market, agents: dict[AgentId, Agent], seed: int, *, share_loop: bool = False
) -> EpisodeResult:
    """Play one episode to the end and return its logs. ``agents`` maps each acting agent id (a
    seat's actor) to its agent, in seat order (that order fixes each agent's seeded generator).
    ``share_loop``: after every step that awaited nothing (scripted seats only), give way
    (:func:`give_way`) until the event loop has nothing else to do, for episodes played side by
    side: a run of scripted steps (an episode without LLM seats, the days after an LLM firm's
    bankruptcy) then fills the loop's idle time instead of holding up the answers the other
    episodes wait for. The logs are the same either way."""
    decision = market.reset(seed)
    for agent, rng in zip(agents.values(), agent_generators(seed, len(agents))):
        agent.reset(rng)
    log = _Log()
    while decision is not None:
        retired = getattr(market, "retired", ())
        gone = [a for a in decision.observations if a in retired]
        if gone:
            raise RuntimeError(
                f"{market.name}: retired seats {gone} asked to act at step {decision.step}"
            )
        actions: dict[AgentId, Any] = {}
        pending: dict[AgentId, Retry | None] = dict.fromkeys(decision.observations)
        scripted_only = True
        for attempt in range(max(1, decision.max_attempts)):
            acting = list(pending)
            if all(type(agents[a]).act is ScriptedAgent.act for a in acting):
                raw = [
                    _ask_now(agents[a], decision.observations[a], decision, pending[a])
                    for a in acting
                ]  # scripted seats only: no coroutines, the same answers
            else:
                scripted_only = False
                raw = await asyncio.gather(
                    *(
                        _ask(agents[a], decision.observations[a], decision, pending[a])
                        for a in acting
                    ),
                    return_exceptions=True,
                )
            last = attempt == max(1, decision.max_attempts) - 1
            pending = {}
            for agent_id, answer in zip(acting, raw):
                if isinstance(answer, BaseException):
                    if isinstance(answer, RunAborted) or not isinstance(answer, Exception):
                        raise answer  # run-level failure, KeyboardInterrupt, CancelledError, ...
                    reply = Reply(
                        action=None, error=f"agent raised {type(answer).__name__}: {answer}"
                    )
                else:
                    reply = _as_reply(answer)
                verdict = judge(market, decision, agent_id, reply)
                log.decision(decision, agent_id, attempt, reply, verdict)
                if verdict.rule_broken and not last:
                    pending[agent_id] = Retry(attempt + 2, verdict.answer, verdict.error or "")
                else:
                    actions[agent_id] = verdict.action
            if not pending:
                break
        decision = market.step({a: actions[a] for a in decision.observations})
        if share_loop and scripted_only:
            await give_way()
    return EpisodeResult(
        {
            "decisions": log.rows("decisions"),
            "llm_calls": log.rows("llm_calls"),
            "llm_costs": log.rows("llm_costs"),
            "llm_messages": log.rows("llm_messages"),
            "events": _events(getattr(market, "events", [])),
        },
        market.tables(),
    )


#: turns of the event loop a step that gives way waits at most (:func:`give_way`)
GIVE_WAY_TURNS = 200

#: per event loop: the steps giving way, first come first served (:func:`give_way`)
_GIVING_WAY: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, collections.deque]" = (
    weakref.WeakKeyDictionary()
)


async def give_way(turns: int = GIVE_WAY_TURNS) -> None:
    """Wait until nothing but other steps giving way is ready to run in the event loop, then
    return, one waiting step at a time in the order they came (or after ``turns`` turns of the
    loop however busy it is: a scripted episode is slowed, never stopped).

    Scripted steps are idle-time work in a run with LLM seats: they wait on no endpoint, while an
    answer that arrives behind them holds up its episode's next request. crash's LLM benchmark
    plays 36 scripted episodes beside 60 with an LLM firm: taking turns with every answer
    (``asyncio.sleep(0)``) the run took 10.80-11.34 s, giving way 10.75-10.88 s (5 pairs, run in
    turn). "Ready" is asyncio's queue of callbacks due this turn (the loop's ``_ready``, CPython's
    since 3.4); a loop without one (another implementation) gets one turn."""
    loop = asyncio.get_running_loop()
    ready = getattr(loop, "_ready", None)
    if ready is None:
        await asyncio.sleep(0)
        return
    waiting = _GIVING_WAY.setdefault(loop, collections.deque())
    me = object()
    waiting.append(me)
    try:
        for _ in range(turns):
            await asyncio.sleep(0)
            # queued: the other waiting steps' wake-ups (one each), and nothing else
            if waiting[0] is me and len(ready) < len(waiting):
                return
    finally:
        waiting.remove(me)


def _events(events: list) -> Rows:
    return Rows(EVENT_COLUMNS, [(e.step, e.round, e.agent_id, e.event, e.detail) for e in events])


class _Log:
    """Rows of the runner's own tables, built as the episode goes."""

    COLUMNS = {
        "decisions": DECISION_COLUMNS,
        "llm_calls": LLM_CALL_COLUMNS,
        "llm_costs": LLM_COST_COLUMNS,
        "llm_messages": LLM_MESSAGE_COLUMNS,
    }

    def __init__(self) -> None:
        self.decisions: list[tuple] = []  # in DECISION_COLUMNS order
        self.calls: list[dict] = []  # one per LLM call, the keys of llm_calls and llm_costs
        self.messages: list[tuple] = []  # in LLM_MESSAGE_COLUMNS order

    def decision(
        self, decision: Decision, agent_id: AgentId, attempt: int, reply: Reply, verdict: Verdict
    ) -> None:
        self.decisions.append(
            (
                decision.step,
                decision.round,
                decision.phase,
                agent_id,
                attempt,
                _dump(reply.action),
                verdict.valid,
                verdict.error or "",
                "; ".join(verdict.notes),
                verdict.failure,
            )
        )
        for n, call in enumerate(reply.calls):
            row = {
                "step": decision.step,
                "round": decision.round,
                "phase": decision.phase,
                "agent_id": agent_id,
                "attempt": attempt,
                "purpose": "act",
                **call,
            }
            self.calls.append(row)
            self.messages.extend(
                (
                    *(row[k] for k in CALL_KEYS),
                    row["purpose"],
                    n,
                    x["reask"],
                    x["messages"],
                    x["answer"],
                    x["error"],
                )
                for x in call.get("exchanges", ())
            )

    def rows(self, name: str) -> Rows:
        columns = self.COLUMNS[name]
        if name == "decisions":
            return Rows(columns, self.decisions)
        if name == "llm_messages":
            return Rows(columns, self.messages)
        return Rows(columns, [tuple(r.get(c) for c in columns) for r in self.calls])
