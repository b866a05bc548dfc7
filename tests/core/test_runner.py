"""The episode runner: concurrent actions per decision point, validation, fallback, seeding."""

from __future__ import annotations

import asyncio

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.runner import run_episode
from marketarena.core.types import Checked, Decision, Reply


class Guess(BaseModel):
    value: int


class CountingMarket:
    """Two decision points; an action is valid if 0 <= value <= 10; fallback is value 0."""

    name = "counting"

    def reset(self, seed):
        self.t, self.applied = 0, []
        return self._decision()

    def _decision(self):
        return Decision("guess", self.t, 0, {a: {"t": self.t} for a in ("A", "B", "C")}, Guess)

    def check(self, agent_id, action):
        if not 0 <= action.value <= 10:
            return Checked(None, f"value {action.value} out of range")
        return Checked(action, None, ["clipped"] if action.value == 10 else [])

    def fallback(self, agent_id, phase):
        return Guess(value=0)

    def step(self, actions):
        self.applied.append({a: act.value for a, act in actions.items()})
        self.t += 1
        return self._decision() if self.t < 2 else None

    def tables(self):
        return {"applied": pd.DataFrame(self.applied)}


class Barrier:
    """All agents must be inside act() at the same time, or nobody gets out: proves concurrency."""

    def __init__(self, n):
        self.n, self.inside, self.event = n, 0, asyncio.Event()

    async def wait(self):
        self.inside += 1
        if self.inside == self.n:
            self.event.set()
        await asyncio.wait_for(self.event.wait(), timeout=5)


class Agent:
    def __init__(self, agent_id, answer, barrier=None):
        self.agent_id, self.answer, self.barrier, self.rng = agent_id, answer, barrier, None

    def reset(self, rng):
        self.rng = rng

    async def act(self, obs, decision):
        if self.barrier and decision.step == 0:
            await self.barrier.wait()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_actions_of_a_decision_point_run_concurrently_and_are_validated():
    barrier = Barrier(3)
    agents = {"A": Agent("A", Guess(value=10), barrier),
              "B": Agent("B", {"value": 99}, barrier),  # rule-invalid
              "C": Agent("C", Reply(action={"value": "x"}, calls=[{"model": "m", "cost_usd": 0.5}]),
                         barrier)}  # schema-invalid, with one LLM call
    market = CountingMarket()
    result = asyncio.run(run_episode(market, agents, seed=1))
    assert market.applied == [{"A": 10, "B": 0, "C": 0}] * 2
    d = result.decisions.set_index(["step", "agent_id"])
    assert d.loc[(0, "A"), "valid"] and d.loc[(0, "A"), "notes"] == "clipped"
    assert not d.loc[(0, "B"), "valid"] and d.loc[(0, "B"), "error"] == "value 99 out of range"
    assert d.loc[(0, "C"), "error"].startswith("schema: value")
    assert d.loc[(0, "B"), "action"] == '{"value": 99}'
    assert len(result.llm_calls) == 2 and (result.llm_calls["agent_id"] == "C").all()


def test_an_agent_that_raises_gets_the_fallback_and_others_continue():
    agents = {"A": Agent("A", Guess(value=3)), "B": Agent("B", RuntimeError("boom")),
              "C": Agent("C", None)}
    market = CountingMarket()
    result = asyncio.run(run_episode(market, agents, seed=1))
    assert market.applied[0] == {"A": 3, "B": 0, "C": 0}
    d = result.decisions.set_index(["step", "agent_id"])
    assert d.loc[(0, "B"), "error"] == "agent raised RuntimeError: boom"
    assert d.loc[(0, "C"), "error"] == "no action"


def test_agents_get_independent_generators_derived_from_the_episode_seed():
    def draws(seed):
        agents = {a: Agent(a, Guess(value=1)) for a in "ABC"}
        asyncio.run(run_episode(CountingMarket(), agents, seed))
        return [agents[a].rng.random() for a in "ABC"]

    a, b = draws(7), draws(7)
    assert a == b and len(set(a)) == 3 and draws(8) != a
