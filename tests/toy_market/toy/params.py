"""The toy market's params (``markets.<instance>`` with ``market: toy``)."""

from __future__ import annotations

from pydantic import Field

from marketarena.core.params import MarketParams, size


class ToyParams(MarketParams):
    rounds: int = size(5, le=1_000, description="rounds of an episode")
    value: int = Field(default=10, ge=1, le=1_000, description="the buyer's value of the good")
    cost: int = Field(default=2, ge=0, le=1_000, description="a seller's cost of a unit")
