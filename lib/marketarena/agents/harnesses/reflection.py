"""``reflection``: the agent is shown its own best past steps, scored by the market's signals.

After each decision the harness remembers the answer; at the next decision the market reports
the outcome as numbers (``MarketRules.harness_signals(observation)``, e.g. crash's last-day profit
and market health, each on a comparable scale). A step's score is the weighted sum of its signals
(``weights``; empty = every signal with weight 1). Each prompt then shows the ``k`` best steps so
far (score, then the earlier step, first), with the answer given and the signals it earned, as a
"what worked" block (template ``agents/templates/reflection.j2``). Seed 001's Stabilizing Firm is
this harness plus the crash market's own instructions (its ``templates/harness_<name>.j2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from marketarena.agents.harnesses.base import TEMPLATES, Harness, dump
from marketarena.core.params import Strict
from marketarena.core.prompts import template_env


@dataclass(frozen=True)
class PastStep:
    step: int
    action: str  # the answer, as JSON
    signals: dict[str, float]
    score: float


class ReflectionParams(Strict):
    k: int = Field(default=3, ge=1, description="best past steps shown")
    weights: dict[str, float] = Field(
        default_factory=dict, description="signal -> weight (empty: every signal, weight 1)"
    )
    memory: int = Field(default=1000, ge=1, description="past steps remembered (the latest)")


class Reflection(Harness):
    name = "reflection"
    Params = ReflectionParams

    def reset(self, rng: Any = None) -> None:
        self.past: list[PastStep] = []
        self.pending: tuple[int, str] | None = None

    def score(self, signals: dict[str, float]) -> float:
        weights = self.params.weights or dict.fromkeys(signals, 1.0)
        return float(sum(w * signals.get(name, 0.0) for name, w in weights.items()))

    def top(self) -> list[PastStep]:
        return sorted(self.past, key=lambda s: (-s.score, s.step))[: self.params.k]

    def extras(self, agent, observation: Any, decision) -> dict[str, Any]:
        if self.pending is not None:
            step, action = self.pending
            signals = {k: float(v) for k, v in agent.signals(observation).items()}
            self.past.append(PastStep(step, action, signals, self.score(signals)))
            self.past = self.past[-self.params.memory :]
            self.pending = None
        return {"reflection": self.top()}

    def blocks(self, observation: Any, decision, extras: dict[str, Any]) -> list[str]:
        steps = extras["reflection"]
        if not steps:
            return []
        return [template_env(TEMPLATES).get_template("reflection.j2").render(steps=steps).strip()]

    def remember(self, observation: Any, decision, action: BaseModel | None) -> None:
        self.pending = None if action is None else (decision.step, dump(action))
