"""Market registry: market kind -> its subpackage ``marketarena.markets.<kind>``.

Each market subpackage defines ``PLUGIN``, an instance of a
:class:`~marketarena.core.plugin.MarketPlugin` subclass. Markets are discovered: adding a folder
with a ``PLUGIN`` adds a market kind, and no stage changes. ``params.yaml`` may run a kind under
several instance names (``markets: {bertrand_a10: {market: bertrand, alpha: 10}}``);
:func:`plugin_for` resolves an instance to its plugin and params.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import marketarena.markets
from marketarena.core.plugin import MarketPlugin

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.core.params import MarketParams


@lru_cache(maxsize=1)
def market_names() -> tuple[str, ...]:
    """Every market kind (a folder of ``marketarena/markets`` not starting with ``_``)."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(marketarena.markets.__path__)
                        if m.ispkg and not m.name.startswith("_")))


def get_plugin(kind: str) -> MarketPlugin:
    if kind not in market_names():
        raise KeyError(f"unknown market {kind!r} (known: {', '.join(market_names())})")
    plugin = getattr(importlib.import_module(f"marketarena.markets.{kind}"), "PLUGIN", None)
    if not isinstance(plugin, MarketPlugin):
        raise KeyError(f"market {kind!r} is not ready: its package defines no PLUGIN")
    return plugin


def market_params_model(kind: str) -> type:
    return get_plugin(kind).params_model


def plugin_for(params: Any, instance: str) -> tuple[MarketPlugin, "MarketParams"]:
    """The plugin and params of market instance ``instance`` of ``params.markets``."""
    mp = params.markets[instance]
    return get_plugin(mp.market), mp
