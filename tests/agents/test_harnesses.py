"""Harnesses by hand: what the model is shown, what is remembered, what a re-ask looks like."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from marketarena.agents.harnesses import harness_class, registry, validate_harness
from marketarena.agents.harnesses.notes import NOTE_MAX_CHARS
from marketarena.agents.llm_agent import LLMAgent
from marketarena.core.types import Decision, Retry
from marketarena.llm.client import LLMClient
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.llm.spec import LLMSettings, parse_models


class Price(BaseModel):
    price: float


class Obs(BaseModel):
    day: int
    profit: float
    health: float


class Plugin:
    """The two hooks an LLM agent needs from a market plugin."""

    def render_messages(self, obs, **extras):
        return [
            {"role": "system", "content": "You set a price."},
            {"role": "user", "content": f'Day {obs.day + 1}. Answer {{"price": x}}.'},
        ]

    def harness_signals(self, obs):
        return {"profit": obs.profit, "health": obs.health}


def agent(tmp_path, harness, answers, params=None):
    spec = parse_models(
        {"m": {"model": "fake", "base_url": "http://fake.invalid/v1", "api_key_env": None}}
    )["m"]
    fake = FakeEndpoint(responder=lambda body: Reply(answers(body)))
    client = LLMClient(LLMSettings(cache_dir=tmp_path), openai_factory=fake.factory)
    h = harness_class(harness)(params or {}, "nonexistent_market")
    a = LLMAgent("F1", spec, client, Plugin(), 0, h)
    a.reset(None)
    return a, fake


def decide(a, obs, step, retry=None):
    return asyncio.run(a.act(obs, Decision("price", step, 0, {"F1": obs}, Price), retry))


def test_registry_lists_the_core_harnesses_and_checks_params():
    assert {"plain", "notes", "reflection"} <= set(registry())
    with pytest.raises(ValueError, match=r"roster.4.harness: unknown harness 'magic'"):
        validate_harness("magic", {}, "roster.4")
    with pytest.raises(ValueError, match=r"roster.4.params.k"):
        validate_harness("reflection", {"k": 0}, "roster.4")


def test_plain_asks_once_and_a_rejected_answer_is_asked_again_with_the_reason(tmp_path):
    a, fake = agent(tmp_path, "plain", lambda body: {"price": 2.0})
    reply = decide(a, Obs(day=0, profit=0, health=1), 0)
    assert reply.action == Price(price=2.0) and len(reply.calls) == 1
    assert reply.calls[0]["purpose"] == "act"
    decide(a, Obs(day=0, profit=0, health=1), 0, Retry(2, Price(price=0.5), "price below cost 1"))
    messages = fake.requests[-1].body["messages"]
    assert messages[-2] == {"role": "assistant", "content": json.dumps({"price": 0.5})}
    assert "rejected your answer" in messages[-1]["content"]
    assert "price below cost 1" in messages[-1]["content"]


def test_reflection_shows_the_top_k_past_steps_by_their_signals(tmp_path):
    prices = iter([1.0, 2.0, 3.0, 4.0, 5.0])
    a, fake = agent(
        tmp_path,
        "reflection",
        lambda body: {"price": next(prices)},
        params={"k": 2, "weights": {"profit": 1.0, "health": 10.0}},
    )
    # outcome of day t is read from day t+1's observation: scores 5+0, 1+10, 3+5, 0+0
    outcomes = [(0, 1.0), (5, 0.0), (1, 1.0), (3, 0.5), (0, 0.0)]
    for day, (profit, health) in enumerate(outcomes):
        decide(a, Obs(day=day, profit=profit, health=health), day)
    user = fake.requests[-1].body["messages"][-1]["content"]
    block = user.split("Your best past steps", 1)[1]
    lines = [ln for ln in block.splitlines() if ln.startswith("- step")]
    # the best two of steps 1..4: step 2 (price 2.0, score 11), step 3 (price 3.0, score 8)
    assert len(lines) == 2
    assert lines[0].startswith('- step 2: you answered {"price": 2.0}') and "score 11" in lines[0]
    assert lines[1].startswith('- step 3: you answered {"price": 3.0}') and "score 8" in lines[1]
    first = fake.requests[0].body["messages"][-1]["content"]
    assert "Your best past steps" not in first  # nothing to reflect on yet


def test_notes_keep_the_last_valid_answer_and_are_capped(tmp_path):
    from marketarena.agents.harnesses.notes import Notes, NotesHarness

    class WithNotes(BaseModel):
        class Content(BaseModel):
            plans: str
            insights: str

        new_content: Content

    h = NotesHarness({"max_chars": 5}, "cournot")
    h.reset()
    d = Decision("q", 0, 0, {}, WithNotes)
    h.remember(None, d, WithNotes(new_content={"plans": "abcdefgh", "insights": "xy"}))
    assert h.extras(None, None, d)["notes"] == Notes("abcde", "xy")
    h.remember(None, d, None)  # no valid answer: the old notes stay
    assert h.extras(None, None, d)["notes"] == Notes("abcde", "xy")
    assert NOTE_MAX_CHARS == 4000
