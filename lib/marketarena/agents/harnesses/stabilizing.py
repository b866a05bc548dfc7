"""``stabilizing``: seed 001's Stabilizing Firm (crash): the ``reflection`` harness with the
market's own instructions (``markets/crash/templates/harness_stabilizing.j2``: hold the price above
unit cost plus overhead, do not follow competitors down, buy supply conservatively).

Each past day is scored by the signals crash reports the day after (``CrashPlugin.harness_signals``):
its profit in dollars and the market's health in [0, 1] (the authors' survival-and-price composite),
weighted 0.1 and 1 by default (a $10 profit weighs as much as a perfectly healthy market); the
top ``k`` (3, as the authors) are shown each day.
"""

from __future__ import annotations

from pydantic import Field

from marketarena.agents.harnesses.reflection import Reflection, ReflectionParams


class StabilizingParams(ReflectionParams):
    weights: dict[str, float] = Field(default_factory=lambda: {"profit": 0.1, "market_health": 1.0},
                                      description="signal -> weight of a past day's score")


class Stabilizing(Reflection):
    name = "stabilizing"
    Params = StabilizingParams
