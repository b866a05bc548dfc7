"""``skeptical``: seed 001's Skeptical Guardian (lemon buyers, section 4.1, appendix A).

Before each buying decision the guardian makes an extra call, a *review* of the listings it is
shown (``purpose: review`` in ``llm_calls``): it cross-references each listing's price against the
expected range of the claimed condition, checks whether the seller's reputation fits the
description, looks for patterns across the listings, and reflects on its own past purchases (which
the buyer's prompt already lists). The review's instructions are the market's
(``markets/lemon/templates/harness_skeptical_review.j2``), its answer a fixed schema
(:class:`Review`); the review is then shown with the buying prompt, and the guardian's instructions
(``markets/lemon/templates/harness_skeptical.j2``) are added to its system message. Other decisions (votes) are plain.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from marketarena.agents.harnesses.base import TEMPLATES, Harness
from marketarena.core.params import Strict
from marketarena.core.prompts import template_env
from marketarena.core.types import Reply


class Assessment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    listing: str
    risk: Literal["low", "medium", "high"]
    reason: str = Field(max_length=2000)


class Review(BaseModel):
    """``{"assessments": [{"listing", "risk": low|medium|high, "reason"}]}``."""

    model_config = ConfigDict(extra="forbid")
    assessments: list[Assessment]


class SkepticalParams(Strict):
    phases: list[str] = Field(
        default_factory=lambda: ["buy"], description="decisions reviewed first"
    )


class Skeptical(Harness):
    name = "skeptical"
    Params = SkepticalParams
    roles = frozenset({"buyer"})

    def reset(self, rng: Any = None) -> None:
        self.review: Review | None = None

    def blocks(self, observation, decision, extras) -> list[str]:
        review = extras.get("review")
        if review is None:
            return []
        return [
            template_env(TEMPLATES)
            .get_template("skeptical_review.j2")
            .render(review=review)
            .strip()
        ]

    async def respond(self, agent, observation, decision, retry=None) -> Reply:
        if decision.phase not in self.params.phases:
            return await super().respond(agent, observation, decision, retry)
        rows = []
        if retry is None or self.review is None:
            ask = self.messages(agent, observation, decision, None)
            ask[-1]["content"] += "\n\n" + (
                self.market_text_named("harness_skeptical_review.j2", obs=observation) or ""
            )
            review, row = await agent.ask(ask, Review, decision, purpose="review")
            self.review = review.action
            rows.append(row)
        schema = decision.schema_for(agent.agent_id)
        messages = self.messages(agent, observation, decision, retry, review=self.review)
        result, row = await agent.ask(messages, schema, decision, purpose="act")
        rows.append(row)
        error = None if result.action is not None else f"llm: {result.error or 'no valid answer'}"
        return Reply(action=result.action, calls=rows, error=error)
