"""The episode runner: concurrent actions per decision point, validation, fallback, seeding."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest
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

    def check(self, agent_id, action, decision):
        if not 0 <= action.value <= 10:
            return Checked(None, f"value {action.value} out of range")
        return Checked(action, None, ["clipped"] if action.value == 10 else [])

    def fallback(self, agent_id, decision):
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
    agents = {
        "A": Agent("A", Guess(value=10), barrier),
        "B": Agent("B", {"value": 99}, barrier),  # rule-invalid
        "C": Agent(
            "C", Reply(action={"value": "x"}, calls=[{"model": "m", "cost_usd": 0.5}]), barrier
        ),
    }  # schema-invalid, with one LLM call
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
    agents = {
        "A": Agent("A", Guess(value=3)),
        "B": Agent("B", RuntimeError("boom")),
        "C": Agent("C", None),
    }
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


# ------------------------------------------------------------------ re-asks, schemas, retirement
class Bid(BaseModel):
    amount: int


class Pass(BaseModel):
    reason: str


class AuctionMarket:
    """One decision: a bid must be >= 10 (a rule), asked again up to 3 attempts; B answers a
    different schema; C retires after the first decision and must never act again."""

    name = "auction"

    def __init__(self, attempts=3, ask_retired=False):
        self.attempts, self.ask_retired = attempts, ask_retired

    def reset(self, seed):
        from marketarena.core.types import Event

        self.t, self.applied, self.checks = 0, [], 0
        self.events, self.retired = [], set()
        self._event = Event
        return self._decision()

    def _decision(self):
        acting = ["A", "B"] if (self.t > 0 and not self.ask_retired) else ["A", "B", "C"]
        return Decision(
            "bid",
            self.t,
            0,
            {a: {"t": self.t} for a in acting},
            {"A": Bid, "B": Pass, "C": Bid},
            max_attempts=self.attempts,
        )

    def check(self, agent_id, action, decision):
        self.checks += 1
        if isinstance(action, Bid) and action.amount < 10:
            return Checked(None, f"bid {action.amount} below the minimum 10")
        return Checked(action)

    def fallback(self, agent_id, decision):
        return None

    def step(self, actions):
        self.applied.append(dict(actions))
        if self.t == 0:
            self.retired.add("C")
            self.events.append(self._event(0, 0, "C", "retired", "out of money"))
        self.t += 1
        return self._decision() if self.t < 2 else None

    def tables(self):
        return {}


class Learner:
    """Bids 5, then (told why) 5 + 10 x attempt; records the retries it was given."""

    def __init__(self, agent_id, answers=None):
        self.agent_id, self.retries, self.answers = agent_id, [], answers

    def reset(self, rng):
        pass

    async def act(self, obs, decision, retry=None):
        if self.answers is not None:
            return self.answers
        self.retries.append(retry)
        return Bid(amount=5) if retry is None else Bid(amount=5 + 10 * (retry.attempt - 1))


def test_a_rule_break_is_asked_again_with_the_reason_and_every_attempt_is_logged():
    market = AuctionMarket(attempts=3)
    a = Learner("A")
    agents = {"A": a, "B": Learner("B", Pass(reason="no")), "C": Learner("C", Bid(amount=3))}
    result = asyncio.run(run_episode(market, agents, seed=0))
    d = result.decisions
    first = d[(d["step"] == 0) & (d["agent_id"] == "A")]
    assert first["attempt"].tolist() == [0, 1] and first["valid"].tolist() == [False, True]
    assert first["error"].iloc[0] == "bid 5 below the minimum 10"
    assert a.retries[1].attempt == 2 and a.retries[1].error == "bid 5 below the minimum 10"
    assert a.retries[1].previous == Bid(amount=5)
    assert market.applied[0]["A"] == Bid(amount=15)
    # C never learns: three attempts, then the fallback (None)
    c = d[(d["step"] == 0) & (d["agent_id"] == "C")]
    assert c["attempt"].tolist() == [0, 1, 2] and not c["valid"].any()
    assert market.applied[0]["C"] is None
    # B answers its own schema; a Bid-shaped answer from B would be a schema error
    assert d[(d["agent_id"] == "B")]["valid"].all()


def test_one_attempt_means_no_reask():
    market = AuctionMarket(attempts=1)
    result = asyncio.run(
        run_episode(
            market,
            {
                "A": Learner("A"),
                "B": Learner("B", Pass(reason="x")),
                "C": Learner("C", Bid(amount=30)),
            },
            seed=0,
        )
    )
    assert (result.decisions["attempt"] == 0).all()
    assert market.applied[0]["A"] is None


def test_retired_seats_are_logged_and_never_act_again():
    agents = {
        "A": Learner("A", Bid(amount=20)),
        "B": Learner("B", Pass(reason="x")),
        "C": Learner("C", Bid(amount=20)),
    }
    result = asyncio.run(run_episode(AuctionMarket(), agents, seed=0))
    assert result.events.to_dict("records") == [
        {"step": 0, "round": 0, "agent_id": "C", "event": "retired", "detail": "out of money"}
    ]
    assert set(result.decisions.query("step == 1")["agent_id"]) == {"A", "B"}
    with pytest.raises(RuntimeError, match="retired seats"):
        asyncio.run(run_episode(AuctionMarket(ask_retired=True), agents, seed=0))


def test_llm_calls_split_what_was_asked_from_how_it_was_obtained():
    call = {
        "model": "m",
        "request_hash": "h",
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "attempts": 1,
        "valid": True,
        "cost_usd": 0.5,
        "latency_s": 0.2,
        "cached": False,
        "retries": 2,
        "purpose": "review",
    }
    agents = {
        "A": Agent("A", Reply(action=Guess(value=1), calls=[call])),
        "B": Agent("B", Guess(value=2)),
        "C": Agent("C", Guess(value=3)),
    }
    result = asyncio.run(run_episode(CountingMarket(), agents, seed=1))
    calls, costs = result.llm_calls, result.llm_costs
    assert len(calls) == len(costs) == 2
    assert "latency_s" not in calls and "cached" not in calls and "cost_usd" not in calls
    assert costs[["cost_usd", "latency_s", "cached", "retries"]].iloc[0].tolist() == [
        0.5,
        0.2,
        False,
        2,
    ]
    assert calls["purpose"].tolist() == ["review", "review"]
    assert (
        (calls[["step", "agent_id", "attempt"]] == costs[["step", "agent_id", "attempt"]])
        .all()
        .all()
    )


def test_with_share_loop_scripted_episodes_side_by_side_take_turns():
    """``share_loop``: after each step that awaited nothing (scripted seats only) an episode
    hands the event loop over, so episodes side by side take turns instead of one playing to its
    end while the others' answers wait; their logs are the same either way."""
    from marketarena.core.scripted import ScriptedAgent

    class Steady(ScriptedAgent):
        def decide(self, observation, decision):
            return Guess(value=1)

    class Named(CountingMarket):
        def __init__(self, name, seen):
            self.label, self.seen = name, seen

        def step(self, actions):
            self.seen.append((self.label, self.t))
            return super().step(actions)

    def side_by_side(share_loop):
        seen = []

        async def main():
            return await asyncio.gather(
                *(
                    run_episode(
                        Named(name, seen), {a: Steady(a) for a in "ABC"}, 3, share_loop=share_loop
                    )
                    for name in ("x", "y")
                )
            )

        return seen, asyncio.run(main())

    taking_turns, shared = side_by_side(True)
    one_then_other, alone = side_by_side(False)
    assert taking_turns == [("x", 0), ("y", 0), ("x", 1), ("y", 1)]
    assert one_then_other == [("x", 0), ("x", 1), ("y", 0), ("y", 1)]
    for a, b in zip(shared, alone):
        pd.testing.assert_frame_equal(a.decisions, b.decisions)


def test_a_step_giving_way_waits_for_the_work_ready_in_the_loop():
    """``give_way`` (a scripted step beside LLM episodes) returns only once nothing else is ready
    to run: here after all five turns of a busy task, where ``asyncio.sleep(0)`` returns after
    one."""
    from marketarena.core.runner import give_way

    async def main(pause):
        order = []

        async def busy():
            for _ in range(5):
                order.append("busy")
                await asyncio.sleep(0)

        task = asyncio.create_task(busy())
        await asyncio.sleep(0)
        await pause()
        order.append("step")
        await task
        return order

    assert asyncio.run(main(give_way)) == ["busy"] * 5 + ["step"]
    assert asyncio.run(main(lambda: asyncio.sleep(0))).index("step") < 5


def test_steps_giving_way_take_turns_and_a_busy_loop_only_slows_them():
    """Steps giving way in an otherwise idle loop go one at a time, in the order they came; in a
    loop that is never idle, each still goes after ``turns`` turns."""
    from marketarena.core.runner import give_way

    async def scripted(name, order, turns):
        for _ in range(3):
            order.append(name)
            await give_way(turns)

    async def idle():
        order = []
        await asyncio.gather(scripted("a", order, 200), scripted("b", order, 200))
        return order

    async def busy():
        order, spinning = [], True

        async def spin():
            while spinning:
                await asyncio.sleep(0)

        spinner = asyncio.create_task(spin())
        await asyncio.wait_for(scripted("a", order, 10), timeout=5)
        spinning = False
        await spinner
        return order

    assert asyncio.run(idle()) == ["a", "b"] * 3
    assert asyncio.run(busy()) == ["a"] * 3
