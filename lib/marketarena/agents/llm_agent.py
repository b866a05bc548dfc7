"""The generic LLM agent: any market, any OpenAI-compatible model (DESIGN.md sections 3 and 5).

An :class:`LLMAgent` renders its observation with the market's template files
(``PLUGIN.render_messages``), asks its model for an answer matching the decision's pydantic action
schema (``LLMClient.complete``: structured output, validation, bounded re-asks quoting the error,
cache, retries, cost guard) and hands the answer and the call record to the runner, which logs the
call in ``llm_calls.parquet`` and applies the market's fallback if no valid answer came.

:class:`LLMRuntime` is made once per run: one client (connection pools, response cache, cost guard
shared by every episode) and the model specs of ``params.models``. An LLM seat's sample index is
the episode's run index, so episodes are independent samples even at temperature > 0, and a replay
of episode r finds exactly the answers episode r received.
"""

from __future__ import annotations

from typing import Any, Callable

from marketarena.config import Params, RosterEntry
from marketarena.core.types import Decision, Reply
from marketarena.llm.client import LLMClient
from marketarena.llm.spec import ModelSpec, resolve


class LLMAgent:
    def __init__(self, agent_id: str, spec: ModelSpec, client: LLMClient,
                 render: Callable[[Any], list[dict]], sample: int):
        self.agent_id, self.spec, self.client = agent_id, spec, client
        self.render, self.sample = render, sample

    def reset(self, rng) -> None:  # sampling randomness is the endpoint's (seeded by the cache)
        pass

    async def act(self, observation: Any, decision: Decision) -> Reply:
        context = {"agent_id": self.agent_id, "step": decision.step, "round": decision.round,
                   "phase": decision.phase}
        result = await self.client.complete(self.spec, self.render(observation),
                                            decision.action_schema, sample=self.sample,
                                            context=context)
        row = {k: v for k, v in result.record.as_row().items() if k not in context}
        error = None if result.action is not None else f"llm: {result.error or 'no valid answer'}"
        return Reply(action=result.action, calls=[row], error=error)


class LLMRuntime:
    """What LLM seats share during one run; ``openai_factory`` lets tests plug in a fake endpoint."""

    def __init__(self, params: Params, openai_factory=None):
        self.models = params.models
        self.client = LLMClient(params.llm, openai_factory=openai_factory)

    def agent(self, agent_id: str, entry: RosterEntry, run: int,
              render: Callable[[Any], list[dict]]) -> LLMAgent:
        return LLMAgent(agent_id, resolve(self.models, entry.model), self.client, render, run)

    def check_keys(self, aliases: set[str]) -> None:
        """Fail before any episode if a model's API key variable is not set (names the variable)."""
        self.client.check_keys({a: self.models[a] for a in aliases})

    def progress(self) -> str:
        totals = self.client.usage()
        stats = self.client.cache.stats
        return (f"calls {totals.calls}, tokens {totals.prompt_tokens}+{totals.completion_tokens}, "
                f"${totals.cost_usd:.4f}, cache hits {stats.hits}")

    async def aclose(self) -> None:
        await self.client.aclose()


def llm_seat(runtime: LLMRuntime | None, agent_id: str, entry: RosterEntry, run: int,
             render: Callable[[Any], list[dict]], market: str) -> LLMAgent:
    """The agent for a roster entry of kind ``llm`` (what every market's build_episode calls)."""
    if runtime is None:
        raise RuntimeError(f"markets.{market}.roster: {entry.name!r} is an LLM agent, but this "
                           "episode was built without an LLM runtime (use core.simulate)")
    return runtime.agent(agent_id, entry, run, render)
