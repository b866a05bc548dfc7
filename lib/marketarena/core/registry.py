"""Market registry: market name -> its subpackage ``marketarena.markets.<name>``.

Each market subpackage exposes ``PLUGIN``, a :class:`MarketPlugin` that tells the generic stages how
to validate its params, build a market and its agents for one episode, compute its reference data,
metrics and ratings, and draw its figures. Markets are discovered: adding a folder with a
``PLUGIN`` adds a market, and no stage changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import marketarena.markets


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
    #: observation -> chat messages (rendered from the market's template files), for LLM agents
    render_messages: Callable[..., Any]
    #: column of the per-agent metrics that ranks agents within an episode (TrueSkill)
    rank_by: str
    #: names of the per-agent metric columns, for stats and leaderboards
    metric_columns: tuple[str, ...]
    #: (params, output folder) -> headline dict written as summary.json; None: no reference data
    compute_reference: Callable[..., Any] | None = None
    #: (per-agent metrics frame, params) -> leaderboard frame; None: the generic TrueSkill board
    leaderboard: Callable[..., Any] | None = None


@lru_cache(maxsize=1)
def market_names() -> tuple[str, ...]:
    return tuple(sorted(m.name for m in pkgutil.iter_modules(marketarena.markets.__path__)
                        if m.ispkg and not m.name.startswith("_")))


def get_plugin(name: str) -> MarketPlugin:
    if name not in market_names():
        raise KeyError(f"unknown market {name!r} (known: {', '.join(market_names())})")
    plugin = getattr(importlib.import_module(f"marketarena.markets.{name}"), "PLUGIN", None)
    if plugin is None:
        raise KeyError(f"market {name!r} is not ready: its package defines no PLUGIN")
    return plugin


def market_params_model(name: str) -> type:
    return get_plugin(name).params_model
