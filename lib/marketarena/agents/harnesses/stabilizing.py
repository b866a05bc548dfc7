"""``stabilizing``: seed 001's Stabilizing Firm (crash): the ``reflection`` harness with the
market's own instructions (``markets/crash/templates/harness_stabilizing.j2``, after the authors'
stabilizing-firm prompt: hold a target markup above unit cost plus overhead, do not follow
competitors down, buy supply conservatively, stable prices are your brand).

Each past day is scored by the signals crash reports the day after (``CrashRules.harness_signals``)
with the authors' weights: ``market_health + max(0, profit) / initial cash`` (their
agents/firm.py, ``reflect``: the market's survival-and-price health in [0, 1] plus the day's
profit as a share of the initial cash, losses counting 0), so a day's profit weighs little beside
the market's health; the top ``k`` (3, as the authors) are shown each day, with the day's profit
in dollars (weight 0) for the firm to read.
"""

from __future__ import annotations

from pydantic import Field

from marketarena.agents.harnesses.reflection import Reflection, ReflectionParams


class StabilizingParams(ReflectionParams):
    weights: dict[str, float] = Field(
        default_factory=lambda: {"market_health": 1.0, "profit_score": 1.0, "profit": 0.0},
        description="signal -> weight of a past day's score (default: the authors' composite)",
    )


class Stabilizing(Reflection):
    name = "stabilizing"
    Params = StabilizingParams
