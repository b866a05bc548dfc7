"""Seeded generators for agents, derived from the episode seed (DESIGN.md 3).

The market draws its own streams from ``SeedSequence([seed, 0])``; agents get
``SeedSequence([seed, 1]).spawn(n)`` in seat order, so an agent's randomness never depends on how
many draws the market or another agent made.
"""

from __future__ import annotations

import numpy as np


def agent_generators(seed: int, n: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence([seed, 1]).spawn(n)]
