"""The LLM layer: model specs, a cached / validated / budgeted client, a scripted fake, a local server.

Public API (see each module's docstring for the why):

- ``spec``: ``ModelSpec``, ``LLMSettings``, ``parse_models``, ``parse_settings``, ``resolve``
- ``client``: ``LLMClient`` (``await client.complete(spec, messages, Schema, sample=, context=)``),
  ``LLMResult``, ``CallRecord``, ``CostGuard``, ``UsageTotals``, ``parse_action``, ``response_format_for``
- ``cache``: ``ResponseCache``, ``request_key``, ``canonical_json``
- ``errors``: ``LLMError``, ``LLMConfigError``, ``UnknownModelAlias``, ``MissingAPIKey``,
  ``LLMEndpointError``, ``BudgetExceeded``, ``CacheMiss``
- ``fake``: ``FakeEndpoint`` and its behaviours, for unit tests
- ``local_server`` (optional extra): ``serve`` (foreground, for ``marketarena serve-local``),
  ``start_server`` -> ``LocalServer`` (``.base_url``, ``.spec()``, ``.stop()``), ``wait_until_ready``,
  ``model_path``, ``local_model_spec``, ``llama_cpp_available``

Importing this package does not import ``openai``; the client imports it on first use.
"""

from marketarena.llm.cache import ResponseCache, canonical_json, request_key
from marketarena.llm.client import (
    CallRecord,
    CostGuard,
    LLMClient,
    LLMResult,
    UsageTotals,
    parse_action,
    response_format_for,
)
from marketarena.llm.errors import (
    BudgetExceeded,
    CacheMiss,
    LLMConfigError,
    LLMEndpointError,
    LLMError,
    MissingAPIKey,
    UnknownModelAlias,
)
from marketarena.llm.spec import LLMSettings, ModelSpec, parse_models, parse_settings, resolve

__all__ = [
    "BudgetExceeded",
    "CacheMiss",
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
