"""The generic LLM agent: any market, any OpenAI-compatible model (DESIGN.md sections 3 and 5).

An :class:`LLMAgent` answers each decision through its harness (``agents/harnesses``; ``plain``
renders the market's templates and asks once): the harness builds the messages, and
:meth:`LLMAgent.ask` asks the model for an answer matching the decision's pydantic action schema
(``LLMClient.complete``: structured output, validation, bounded re-asks quoting the error, cache,
retries, cost guard) and returns the call's log row, which the runner writes to ``llm_calls`` /
``llm_costs``, and its messages and raw answers to ``llm_messages``. When no valid answer came,
the market's fallback applies.

:class:`LLMRuntime` is made once per run: one client (connection pools, response cache, cost guard
shared by every episode) and the model specs of ``params.models``. An LLM seat's sample index is
the episode's run index, so episodes are independent samples even at temperature > 0, and a replay
of episode r finds exactly the answers episode r received.

An agent counts the requests it has made in each phase of its episode (first asks and re-asks,
every call of its harness): a mock scripted per phase gives the ``k``-th of a phase that phase's
answer ``k`` (``llm/mock.py``). An agent plays one seat in one episode, whose calls come one after
another, so the count is the same in every run of the episode, whatever runs beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from marketarena.agents.harnesses import Harness, harness_class
from marketarena.core.params import RosterEntry
from marketarena.core.types import Decision, Reply, Retry, RunAborted
from marketarena.llm.budget import CostGuard
from marketarena.llm.client import LLMClient, LLMResult
from marketarena.llm.errors import LLMLayerError
from marketarena.llm.ledger import SpendLedger
from marketarena.llm.spec import ModelSpec, resolve
from marketarena.money import usd

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.core.rules import MarketRules

#: columns of a call row the runner already knows from the decision
CONTEXT_KEYS = ("agent_id", "step", "round", "phase")


class LLMAgent:
    def __init__(
        self,
        agent_id: str,
        spec: ModelSpec,
        client: LLMClient,
        rules: "MarketRules",
        sample: int,
        harness: Harness,
    ):
        self.agent_id, self.spec, self.client = agent_id, spec, client
        self.rules, self.sample, self.harness = rules, sample, harness
        self.turns: dict[str, int] = {}  # requests made per phase (module docstring)

    def reset(self, rng) -> None:  # sampling randomness is the endpoint's (seeded by the cache)
        self.turns = {}
        self.harness.reset(rng)

    def render(self, observation: Any, **extras: Any) -> list[dict[str, str]]:
        """The market's chat messages for ``observation`` (with a harness's template variables)."""
        return self.rules.render_messages(observation, **extras)

    def signals(self, observation: Any) -> dict[str, float]:
        return self.rules.harness_signals(observation)

    async def ask(
        self,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        decision: Decision,
        purpose: str = "act",
    ) -> tuple[LLMResult, dict[str, Any]]:
        """One validated call; returns the result and its log row (``purpose`` says which of a
        harness's calls it was)."""
        context = {
            "agent_id": self.agent_id,
            "step": decision.step,
            "round": decision.round,
            "phase": decision.phase,
        }
        turn = self.turns.get(decision.phase, 0)
        result = await self.client.complete(
            self.spec, messages, schema, sample=self.sample, context=context, turn=turn
        )
        self.turns[decision.phase] = turn + result.record.attempts
        row = {k: v for k, v in result.record.as_row().items() if k not in CONTEXT_KEYS}
        row["purpose"] = purpose
        row["exchanges"] = result.record.exchanges  # the runner's llm_messages rows
        return result, row

    async def act(self, observation: Any, decision: Decision, retry: Retry | None = None) -> Reply:
        """The harness's answer. Only the model's own answer may become an invalid decision: any
        other failure (a template bug, a cache that cannot be read or written, a transport error
        nobody classified) ends the run with ``LLMLayerError`` naming the cause."""
        try:
            return await self.harness.respond(self, observation, decision, retry)
        except RunAborted:
            raise
        except Exception as exc:
            raise LLMLayerError(
                f"LLM seat {self.agent_id} ({self.spec.alias}, harness {self.harness.name}) at step "
                f"{decision.step}, {decision.phase}: {type(exc).__name__}: {exc}"
            ) from exc


class LLMRuntime:
    """What LLM seats share during one run; ``openai_factory`` lets tests plug in a fake endpoint.
    With ``ledger_path`` the budget is a :class:`~marketarena.llm.ledger.SpendLedger` there (shared by
    processes, kept across resumed runs; ``exclusive_ledger``: the caller holds the instance's run
    lock, so reservations left in the ledger are a dead run's and are charged now); without it, an
    in-memory guard for this run. ``shared_slots``: the endpoints' ``max_concurrency`` shared with
    the run's other worker processes (``llm.slots``); ``slot_sizes``: the slots of each endpoint
    this process alone uses (``simulate.endpoint_limits``)."""

    def __init__(
        self,
        params,
        openai_factory=None,
        ledger_path=None,
        exclusive_ledger=False,
        shared_slots=None,
        slot_sizes=None,
    ):
        self.models = params.models
        ledger = (
            SpendLedger(ledger_path, exclusive=exclusive_ledger)
            if ledger_path is not None
            else None
        )
        self.client = LLMClient(
            params.llm,
            openai_factory=openai_factory,
            cost_guard=CostGuard(params.llm.max_cost_usd, ledger),
            shared_slots=shared_slots,
            slot_sizes=slot_sizes,
        )

    def agent(
        self, agent_id: str, entry: RosterEntry, run: int, rules: "MarketRules", market: str
    ) -> LLMAgent:
        harness = harness_class(rules.harness_of(entry), rules)(entry.params, market)
        return LLMAgent(
            agent_id, resolve(self.models, entry.model), self.client, rules, run, harness
        )

    def check_keys(self, aliases: set[str]) -> None:
        """Fail before any episode if a model's API key variable is unset or cannot hold a key
        (names the variable), or if the response cache cannot be written (names llm.cache_dir)."""
        self.client.check_keys({a: self.models[a] for a in aliases})
        self.client.check_cache_writable()

    def progress(self) -> str:
        totals = self.client.usage()
        stats = self.client.cache.stats
        cached = f" ({totals.cached_prompt_tokens} cached)" if totals.cached_prompt_tokens else ""
        return (
            f"calls {totals.calls} ({totals.attempts - totals.calls} re-asked, "
            f"{totals.invalid_calls} invalid), tokens {totals.prompt_tokens}{cached}"
            f"+{totals.completion_tokens}, {usd(totals.cost_usd)}, cache hits {stats.hits}"
        )

    async def aclose(self) -> None:
        await self.client.aclose()
