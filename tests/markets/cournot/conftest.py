"""Small Cournot worlds: params, a market with the real references, scripted firms, a runner."""

from __future__ import annotations

import asyncio

import pytest

from marketarena.config import parse_params
from marketarena.core.runner import run_episode
from marketarena.markets.cournot.economics import reference_summary
from marketarena.markets.cournot.params import CournotParams
from marketarena.simulate import build


def entry(name, strategy, **params):
    return {"name": name, "kind": "baseline", "strategy": strategy, "params": params}


def cournot_params(roster, **overrides):
    block = {
        "runs": 1,
        "rounds": 6,
        "roster": roster,
        "bootstrap": {"n_resamples": 500},
        **overrides,
    }
    return parse_params({"markets": {"cournot": block}})


def play(params, run=0, seed=0):
    mp: CournotParams = params.markets["cournot"]
    ref = reference_summary(mp.config())
    market, agents, table, _ = build("cournot", params, run, resources=ref)
    return asyncio.run(run_episode(market, agents, seed)), table, market


@pytest.fixture
def pair():
    return cournot_params([entry("nash", "nash"), entry("collude", "collude")])
