"""The harness base class and the ``plain`` harness (see the package docstring).

A harness answers for an :class:`~marketarena.agents.llm_agent.LLMAgent` through two helpers of
the agent: ``agent.render(observation, **extras)`` (the market's chat messages) and
``await agent.ask(messages, schema, purpose=...)`` (one validated, cached, budgeted call, which
returns the result and its log row). A harness builds its blocks from its own templates
(``agents/templates/``) and, when the market has one, from ``harness_<name>.j2`` in the market's
templates (market-specific instructions such as the Stabilizing Firm's rules), appended to the
system message.

A rejected answer (a market rule broke, ``retry``) is asked again in the same conversation: the
model's previous answer and the market's reason are appended, as the seed's auction re-prompts do.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, ClassVar, Protocol

from jinja2 import Template, TemplateNotFound
from pydantic import BaseModel

from marketarena.core.params import Strict
from marketarena.core.prompts import template_env
from marketarena.core.types import Decision, Reply, Retry


class LLMAgent(Protocol):
    """What a harness uses of the agent it answers for (``agents.llm_agent.LLMAgent``; named
    here, not imported, so that the agent, which holds its harness, and the harnesses do not
    import each other)."""

    agent_id: str

    def render(self, observation: Any, **extras: Any) -> list[dict[str, str]]: ...

    def signals(self, observation: Any) -> dict[str, float]: ...

    async def ask(
        self,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        decision: Decision,
        purpose: str = "act",
    ) -> tuple[Any, dict[str, Any]]: ...


TEMPLATES = "marketarena.agents"


class NoParams(Strict):
    pass


def dump(action: Any) -> str:
    if isinstance(action, BaseModel):
        action = action.model_dump(mode="json", by_alias=True)
    return json.dumps(action, sort_keys=True, ensure_ascii=False)


class Harness:
    name: ClassVar[str] = ""
    Params: ClassVar[type[BaseModel]] = NoParams
    #: the seat roles this harness suits (None: any); checked before a run (``core/seating.py``)
    roles: ClassVar[frozenset[str] | None] = None
    #: the most re-asks one of its calls makes (None: the model entry's ``max_reasks``); a
    #: publisher's harness that plays their answer rules makes none (``marketarena estimate``)
    max_reasks: ClassVar[int | None] = None

    def __init__(self, params: dict | BaseModel | None, market: str):
        self.params = self.Params.model_validate({} if params is None else params)
        self.market = market

    def reset(self, rng: Any = None) -> None:
        """Start of an episode: forget everything. ``rng``: the seat's seeded generator (a
        harness that draws something of its own, as Agent Bazaar's buyer its persona)."""

    # -- what the model is shown ------------------------------------------------------------------
    def extras(self, agent: "LLMAgent", observation: Any, decision: Decision) -> dict[str, Any]:
        """Template variables for this call (blocks the harness adds)."""
        return {}

    def messages(
        self,
        agent: "LLMAgent",
        observation: Any,
        decision: Decision,
        retry: Retry | None,
        **more: Any,
    ) -> list[dict[str, str]]:
        """The market's messages for this call, the market's ``harness_<name>.j2`` appended to the
        system message, the harness's blocks to the user message, a re-ask's turns at the end.
        ``more``: template variables of this call besides :meth:`extras`."""
        extras = {**self.extras(agent, observation, decision), **more}
        messages = [dict(m) for m in agent.render(observation, **extras)]
        own = self.market_text(obs=observation, decision=decision, **extras)
        if own:
            messages[0]["content"] = f"{messages[0]['content']}\n\n{own}"
        for block in self.blocks(observation, decision, extras):
            messages[-1]["content"] = f"{messages[-1]['content']}\n\n{block}"
        if retry is not None:
            messages += retry_messages(retry)
        return messages

    def blocks(self, observation: Any, decision: Decision, extras: dict[str, Any]) -> list[str]:
        """Text blocks appended to the user message (rendered from the harness's templates)."""
        return []

    def market_text(self, **context: Any) -> str | None:
        """The market's ``harness_<name>.j2`` rendered (with ``obs``, ``decision`` and the
        harness's template variables), or None when the market has none."""
        return self.market_text_named(f"harness_{self.name}.j2", **context)

    def market_text_named(self, template: str, **context: Any) -> str | None:
        """One of the market's templates rendered, or None when the market has none of that name."""
        found = market_template(self.market, template)
        return None if found is None else found.render(**context).strip() or None

    # -- what happens after ------------------------------------------------------------------------
    def remember(self, observation: Any, decision: Decision, action: BaseModel | None) -> None:
        """After the answer of a decision (None: no valid answer)."""

    async def respond(
        self, agent: "LLMAgent", observation: Any, decision: Decision, retry: Retry | None = None
    ) -> Reply:
        schema = decision.schema_for(agent.agent_id)
        result, row = await agent.ask(
            self.messages(agent, observation, decision, retry), schema, decision, purpose="act"
        )
        self.remember(observation, decision, result.action)
        error = None if result.action is not None else f"llm: {result.error or 'no valid answer'}"
        return Reply(action=result.action, calls=[row], error=error)


@lru_cache(maxsize=None)
def market_template(market: str, name: str) -> Template | None:
    """The market's template ``name``, or None when it has none. Remembered either way: Jinja
    keeps the templates it found, not the search that failed, and a market without a harness's
    template searched its package on every call (a tenth of a prompt's rendering)."""
    from marketarena.core.registry import market_kind

    try:
        return template_env(market_kind(market).package).get_template(name)
    except (TemplateNotFound, ModuleNotFoundError, ValueError, KeyError):
        return None


def retry_messages(retry: Retry) -> list[dict[str, str]]:
    text = template_env(TEMPLATES).get_template("retry.j2").render(retry=retry)
    return [
        {"role": "assistant", "content": dump(retry.previous)},
        {"role": "user", "content": text},
    ]


class Plain(Harness):
    """The market's prompt, one call per decision."""

    name = "plain"
