"""Helpers for tests of a market (ours, or a new market's author's): seats answered by plain
functions, and a whole episode over the fake OpenAI-compatible endpoint (``llm/fake.py``).

    result, table, market = play_scripted("english_auction", params, {"B1": my_bids})
    result, table = play_over_fake("lemon", params, FakeEndpoint(responder=...))

A function seat is called as ``fn(phase, observation, retry)``: ``retry`` is None on the first
answer of a decision and a ``core.types.Retry`` (the rule broken, the previous answer) when the
market asks again. Seats not given keep the agents the roster builds.

The contract every market meets is :mod:`marketarena.testing.contract` (PettingZoo's
``api_test``): ``contract.check_all(kind, folder)`` proves a market, ours or one registered from
elsewhere (``core.registry.register``). Importing this package does not import it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pandas as pd

from marketarena.config import Params
from marketarena.core.runner import EpisodeResult, run_episode
from marketarena.core.types import Decision, Retry


class FnAgent:
    """A seat whose answers come from ``fn(phase, observation, retry)``."""

    def __init__(self, agent_id: str, fn: Callable[[str, Any, Retry | None], Any]):
        self.agent_id, self.fn = agent_id, fn

    def reset(self, rng) -> None:
        pass

    async def act(self, obs, decision: Decision, retry: Retry | None = None):
        return self.fn(decision.phase, obs, retry)


def play_scripted(
    kind_or_instance: str,
    params: Params,
    fns: dict[str, Callable],
    run: int = 0,
    seed: int | None = None,
) -> tuple[EpisodeResult, pd.DataFrame, Any]:
    """Episode ``run`` of an instance with the actors in ``fns`` answered by functions; ``seed``
    (default: the episode's own) seeds the market. Returns (result, agents table, market)."""
    from marketarena.simulate import build

    market, agents, table, spec = build(kind_or_instance, params, run)
    for actor, fn in fns.items():
        agents[actor] = FnAgent(actor, fn)
    result = asyncio.run(run_episode(market, agents, spec.seed if seed is None else seed))
    return result, table, market


def play_over_fake(
    kind_or_instance: str,
    params: Params,
    fake,
    run: int = 0,
    resources: Any = None,
    seed: int | None = None,
) -> tuple[EpisodeResult, pd.DataFrame]:
    """Episode ``run`` of an instance whose LLM seats call ``fake`` (a ``FakeEndpoint``) over
    the real client, cache and budget; ``seed`` as in :func:`play_scripted`. Returns (result,
    agents table)."""
    from marketarena.agents.llm_agent import LLMRuntime
    from marketarena.simulate import build

    async def go():
        runtime = LLMRuntime(params, openai_factory=fake.factory)
        try:
            market, agents, table, spec = build(
                kind_or_instance, params, run, resources=resources, llm=runtime
            )
            return await run_episode(market, agents, spec.seed if seed is None else seed), table
        finally:
            await runtime.aclose()

    return asyncio.run(go())
