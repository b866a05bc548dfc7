"""The LLM layer: model specs, a cached / validated / budgeted client, a scripted fake, a local server.

Public API (see each module's docstring for the why):

- ``spec``: ``ModelSpec``, ``MockSpec``, ``LLMSettings``, ``parse_models``, ``parse_settings``, ``resolve``
- ``client``: ``LLMClient`` (``await client.complete(spec, messages, Schema, sample=, context=)``),
  ``LLMResult``, ``CallRecord``, ``UsageTotals``
- ``transport``: keys, retries, concurrency, the endpoint (or the mock) behind a request
- ``http``: ``ChatClient``, the HTTP of one chat completion (aiohttp), and its errors
- ``schema``: ``parse_action``, ``response_format_for``, ``strict_json_schema``, re-ask messages
- ``budget``: ``CostGuard``, which reserves a request's bound before it is sent
- ``cost``: a request's cost bound (``Bound``) and a call's charge (``Charge``, ``charge_for``)
- ``ledger``: ``SpendLedger``, the spend in a file shared by processes and runs, ``read_ledger``
  (which process made a reservation, and whether it is gone: ``core.owners``)
- ``prompt_cache``: the provider's prompt cache: cached prompt tokens read from ``usage``, and a
  prefix cache that predicts them (``PrefixCache``)
- ``mock``: the offline ``provider: mock`` (random schema-valid or scripted answers)
- ``response_cache``: our on-disk cache of answers: ``ResponseCache``, ``request_key``,
  ``canonical_json``
- ``errors``: ``LLMError``, ``LLMConfigError``, ``UnknownModelAlias``, ``MissingAPIKey``,
  ``InvalidAPIKey``, ``LLMEndpointError``, ``BudgetExceeded``, ``CacheMiss``, ``CacheError``,
  ``LLMLayerError``
- ``fake``: ``FakeEndpoint`` and its behaviours, for unit tests
- ``local_server`` (optional extra): ``serve`` (foreground, for ``marketarena serve-local``),
  ``start_server`` -> ``LocalServer`` (``.base_url``, ``.spec()``, ``.stop()``), ``wait_until_ready``,
  ``model_path``, ``local_model_spec``, ``llama_cpp_available``

The names in ``__all__`` are importable from the package (``from marketarena.llm import
LLMClient``), but the package imports none of its modules until one of them is asked for (PEP 562
``__getattr__``): ``marketarena.config`` imports ``llm.errors`` and ``llm.spec``, and a stage that
only reads its params would otherwise pay for the client, the budget and what they import.
Importing ``llm.client`` does not import aiohttp either; the HTTP client imports it on its first
request.
"""

from __future__ import annotations

import importlib
from typing import Any

#: each public name -> the module of this package that defines it
_HOMES = {
    "CostGuard": "budget",
    "SpendLedger": "ledger",
    "ResponseCache": "response_cache",
    "canonical_json": "response_cache",
    "request_key": "response_cache",
    "CallRecord": "client",
    "LLMClient": "client",
    "LLMResult": "client",
    "UsageTotals": "client",
    "BudgetExceeded": "errors",
    "CacheError": "errors",
    "CacheMiss": "errors",
    "InvalidAPIKey": "errors",
    "LLMConfigError": "errors",
    "LLMEndpointError": "errors",
    "LLMError": "errors",
    "LLMLayerError": "errors",
    "MissingAPIKey": "errors",
    "UnknownModelAlias": "errors",
    "parse_action": "schema",
    "response_format_for": "schema",
    "LLMSettings": "spec",
    "MockSpec": "spec",
    "ModelSpec": "spec",
    "parse_models": "spec",
    "parse_settings": "spec",
    "resolve": "spec",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (then kept as the package's own)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
