"""The LLM layer: model specs, a cached / validated / budgeted client, a scripted fake, a local server.

Public API (see each module's docstring for the why):

- ``spec``: ``ModelSpec``, ``MockSpec``, ``LLMSettings``, ``parse_models``, ``parse_settings``, ``resolve``
- ``client``: ``LLMClient`` (``await client.complete(spec, messages, Schema, sample=, context=)``),
  ``LLMResult``, ``CallRecord``, ``UsageTotals``
- ``transport``: keys, retries, concurrency, the endpoint (or the mock) behind a request
- ``http``: ``ChatClient``, the HTTP of one chat completion (aiohttp), and its errors
- ``schema``: ``parse_action``, ``response_format_for``, ``strict_json_schema``, re-ask messages
- ``budget``: ``CostGuard``, ``SpendLedger``, request bounds and charges
- ``caching``: the provider's prompt cache: cached prompt tokens read from ``usage``, and a
  prefix cache that predicts them (``PrefixCache``)
- ``mock``: the offline ``provider: mock`` (random schema-valid or scripted answers)
- ``cache``: ``ResponseCache``, ``request_key``, ``canonical_json``
- ``errors``: ``LLMError``, ``LLMConfigError``, ``UnknownModelAlias``, ``MissingAPIKey``,
  ``InvalidAPIKey``, ``LLMEndpointError``, ``BudgetExceeded``, ``CacheMiss``, ``CacheError``,
  ``LLMLayerError``
- ``fake``: ``FakeEndpoint`` and its behaviours, for unit tests
- ``local_server`` (optional extra): ``serve`` (foreground, for ``marketarena serve-local``),
  ``start_server`` -> ``LocalServer`` (``.base_url``, ``.spec()``, ``.stop()``), ``wait_until_ready``,
  ``model_path``, ``local_model_spec``, ``llama_cpp_available``

Importing this package does not import aiohttp; the HTTP client imports it on its first request.
"""

from marketarena.llm.budget import CostGuard, SpendLedger
from marketarena.llm.cache import ResponseCache, canonical_json, request_key
from marketarena.llm.client import CallRecord, LLMClient, LLMResult, UsageTotals
from marketarena.llm.errors import (
    BudgetExceeded,
    CacheError,
    CacheMiss,
    InvalidAPIKey,
    LLMConfigError,
    LLMEndpointError,
    LLMError,
    LLMLayerError,
    MissingAPIKey,
    UnknownModelAlias,
)
from marketarena.llm.schema import parse_action, response_format_for
from marketarena.llm.spec import (
    LLMSettings,
    MockSpec,
    ModelSpec,
    parse_models,
    parse_settings,
    resolve,
)

__all__ = [
    "BudgetExceeded",
    "CacheError",
    "CacheMiss",
    "InvalidAPIKey",
    "LLMLayerError",
    "MockSpec",
    "SpendLedger",
    "CallRecord",
    "CostGuard",
    "LLMClient",
    "LLMConfigError",
    "LLMEndpointError",
    "LLMError",
    "LLMResult",
    "LLMSettings",
    "MissingAPIKey",
    "ModelSpec",
    "ResponseCache",
    "UnknownModelAlias",
    "UsageTotals",
    "canonical_json",
    "parse_action",
    "parse_models",
    "parse_settings",
    "request_key",
    "resolve",
    "response_format_for",
]
