"""Market registry: market name -> its subpackage ``marketarena.markets.<name>``.

Each market subpackage exposes ``PLUGIN``, a :class:`MarketPlugin` that tells the generic stages how
to validate its params, build a market and its agents for one episode, compute its metrics and draw
its figures. Adding a market means adding a folder and its name to ``MARKETS``; no stage changes.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

MARKETS = ("supply_chain",)


@dataclass(frozen=True)
class MarketPlugin:
    name: str
    params_model: type
    #: (full Params) -> JSON-able dict of the shared params an episode depends on (fingerprint)
    shared_params: Callable[..., Any]
    #: (data folder) -> input files the simulation reads (personas, embeddings, references)
    input_files: Callable[..., Any]
    #: (market params, shared resources, run index) -> (Market, dict[agent_id, Agent], agents table)
    build_episode: Callable[..., Any]
    #: loads what the market needs once per run (persona embeddings, the embedder, ...)
    load_resources: Callable[..., Any]
    #: (episodes folder, data folder, params) -> dict of metric frames
    compute_metrics: Callable[..., Any]
    #: (metrics folder, figures folder, tables folder, params) -> list of written paths
    draw_figures: Callable[..., Any]
    #: (agents table, EpisodeResult) -> per-agent summary frame for `marketarena play`
    summarize: Callable[..., Any]
    #: column of the per-agent metrics that ranks agents within an episode (TrueSkill)
    rank_by: str
    #: names of the per-agent metric columns, for stats and leaderboards
    metric_columns: tuple[str, ...]


def get_plugin(name: str) -> MarketPlugin:
    if name not in MARKETS:
        raise KeyError(f"unknown market {name!r} (known: {', '.join(MARKETS)})")
    return importlib.import_module(f"marketarena.markets.{name}").PLUGIN


def market_params_model(name: str) -> type:
    return get_plugin(name).params_model
