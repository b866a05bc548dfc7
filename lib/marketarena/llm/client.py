"""The LLM client: one structured, validated, cached, budgeted call to any OpenAI-compatible endpoint.

What: ``LLMClient.complete(spec, messages, schema, sample=, context=)`` asks the model behind ``spec`` for
a JSON answer matching the pydantic model ``schema`` and returns an ``LLMResult``: the validated action
(or None), the raw text, the last validation error, and a ``CallRecord`` (one row of
``llm_calls.parquet``). ``CostGuard`` is the run's budget; ``UsageTotals`` the running totals per alias.

Why: every market asks its LLM agents for one JSON action per decision point; this is the single place
that knows about endpoints, keys, structured output, re-asks, retries, caching and money, so markets and
agents only see "messages in, validated action (or None) out".

Behaviour and choices:
- Transport: ``openai.AsyncOpenAI``, one client per (base_url, key variable), created lazily on the first
  cache miss, so a full replay from the cache needs neither a key nor a server. The openai package's
  own retries are off (``max_retries=0``): ours below are counted and logged. ``openai_factory`` swaps
  the transport (``marketarena.llm.fake.FakeEndpoint.factory`` in tests).
- Concurrency: an ``asyncio.Semaphore`` per endpoint (base_url), sized by the first spec that uses it
  (a different ``max_concurrency`` on another alias of the same endpoint is logged and ignored). The
  semaphore is held only during an HTTP request, not during back-off sleeps. Endpoint state is rebuilt
  when the client is used from a new event loop (one ``asyncio.run`` per episode is fine).
- Structured output: ``json_schema`` sends the schema as ``response_format`` (``strict`` when the schema
  can be strict under OpenAI's rules: every object has fixed properties; a ``dict[str, X]`` field
  cannot, and is sent non-strict, which llama.cpp and vLLM still enforce by grammar);
  ``json_object_schema`` sends ``{"type": "json_object", "schema": ...}``, the form llama-cpp-python's
  server takes (it rejects ``json_schema``); ``json_object`` asks for any JSON object; ``none`` sends
  no ``response_format``. The answer is always parsed and
  validated with pydantic, whatever the endpoint promised.
- Re-asks: an answer that is not valid JSON for ``schema`` is re-asked up to ``spec.max_reasks`` times:
  the assistant's answer and a user message quoting the validation error are appended. After that the
  result has ``action=None``, ``valid=False`` and the market applies its fallback.
- Retries: 408 / 409 / 429 / 5xx, timeouts, connection errors and 200-responses that are not a chat
  completion are retried up to ``spec.max_retries`` times with exponential back-off and jitter (a
  ``Retry-After`` header is honoured, capped); other 4xx fail at once. Then ``LLMEndpointError`` names
  the alias, the base_url and the last status. Each request also has a hard ``spec.timeout_s``.
- Cache: every request (the first ask and each re-ask) is looked up before it is sent; only well-formed
  HTTP 200 chat completions are stored, invalid content included, so a replay walks the same re-ask
  path. Cached answers cost 0 and report the tokens they originally used. A request identical to one
  already on the wire waits for it and shares its answer (counted as cached): a live run then gets
  what its replay will get, even at temperature > 0 (agents that must sample independently need
  distinct prompts, e.g. their own name, or distinct ``sample`` indices).
- Money: tokens from the response ``usage`` (estimated as characters / 4 when an endpoint sends none),
  dollars from the spec's prices. Before each uncached request the shared ``CostGuard`` reserves a
  conservative estimate (prompt characters / 4 + ``max_tokens``, at the spec's prices) and refuses with
  ``BudgetExceeded`` if spent + reserved + estimate would pass ``max_cost_usd``.
- Secrets: the key is read from the environment only when a request must really be sent, is passed to
  the openai client and nowhere else; every message built from an endpoint's text is redacted; a
  401 / 403 never quotes the server. ``MissingAPIKey`` names the variable, not a value.
- Records: ``request_hash`` is the hash of the first request of the call (stable per decision);
  ``attempts`` counts model answers (1 + re-asks used), ``retries`` the HTTP retries; ``latency_s`` is
  the time spent in HTTP requests (0 for a fully cached call), not time queued behind the semaphore.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import os
import random
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

from pydantic import BaseModel, ValidationError

from marketarena.llm.cache import ResponseCache, canonical_json, request_key
from marketarena.llm.errors import (
    BudgetExceeded,
    CacheMiss,
    LLMEndpointError,
    MissingAPIKey,
    redact,
)
from marketarena.llm.spec import LLMSettings, ModelSpec

log = logging.getLogger("marketarena.llm")

A = TypeVar("A", bound=BaseModel)
Message = dict[str, Any]
OpenAIFactory = Callable[[str | None, str], Any]

DUMMY_API_KEY = "no-key-needed"  # sent to endpoints whose spec has api_key_env=None
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
REQUEST_FORMAT_VERSION = 1


# --------------------------------------------------------------------------------------------------
# records


@dataclass
class CallRecord:
    """One logical LLM call (first ask plus its re-asks): a row of ``llm_calls.parquet``."""

    model: str  # the alias
    request_hash: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = True
    attempts: int = 0
    valid: bool = False
    retries: int = 0
    context: dict[str, Any] = field(default_factory=dict)

    def as_row(self) -> dict[str, Any]:
        """Flat dict for a log row: the context keys (step, agent_id, ...) first, then the fields."""
        row = dict(self.context)
        row.update({k: v for k, v in asdict(self).items() if k != "context"})
        return row


@dataclass
class LLMResult(Generic[A]):
    action: A | None
    raw_text: str
    error: str | None
    record: CallRecord


@dataclass
class UsageTotals:
    calls: int = 0
    cached_calls: int = 0
    invalid_calls: int = 0
    attempts: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, record: CallRecord) -> None:
        self.calls += 1
        self.cached_calls += int(record.cached)
        self.invalid_calls += int(not record.valid)
        self.attempts += record.attempts
        self.retries += record.retries
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        self.cost_usd += record.cost_usd


# --------------------------------------------------------------------------------------------------
# budget


@dataclass
class _Reservation:
    amount: float
    alias: str


class CostGuard:
    """The run's dollar budget, shared by all calls (asyncio- and thread-safe).

    ``reserve`` (before an uncached request) refuses with ``BudgetExceeded`` when spent + reserved +
    this request's estimate would exceed ``max_cost_usd``; once it has refused, it refuses every later
    uncached request too (``tripped``), so that concurrent agents cannot slip past a stopping run.
    ``settle`` replaces a reservation by the call's real cost; ``release`` drops it (failed request).
    """

    def __init__(self, max_cost_usd: float | None = None) -> None:
        self.max_cost_usd = max_cost_usd
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.tripped = False
        self._lock = threading.Lock()

    @staticmethod
    def estimate(spec: ModelSpec, prompt_chars: int) -> float:
        """Conservative cost of one request: prompt characters / 4 tokens in, ``max_tokens`` out."""
        return spec.cost_usd(math.ceil(prompt_chars / 4), spec.max_tokens)

    def reserve(self, amount: float, alias: str) -> _Reservation:
        with self._lock:
            if self.max_cost_usd is not None:
                projected = self.spent_usd + self.reserved_usd + amount
                if self.tripped or projected > self.max_cost_usd:
                    self.tripped = True
                    raise BudgetExceeded(
                        f"budget max_cost_usd={self.max_cost_usd:.4f} reached: spent "
                        f"{self.spent_usd:.4f} USD, {self.reserved_usd:.4f} in flight, and the next call "
                        f"to {alias!r} may cost up to {amount:.4f}; stopping before exceeding it",
                        spent_usd=self.spent_usd,
                        limit_usd=self.max_cost_usd,
                    )
            self.reserved_usd += amount
            return _Reservation(amount, alias)

    def settle(self, reservation: _Reservation, cost_usd: float) -> None:
        with self._lock:
            self.reserved_usd = max(0.0, self.reserved_usd - reservation.amount)
            self.spent_usd += cost_usd

    def release(self, reservation: _Reservation) -> None:
        self.settle(reservation, 0.0)

    @property
    def remaining_usd(self) -> float | None:
        return None if self.max_cost_usd is None else self.max_cost_usd - self.spent_usd


# --------------------------------------------------------------------------------------------------
# schemas and parsing


def _schema_name(schema: type[BaseModel]) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "action"


def strict_json_schema(schema: type[BaseModel]) -> tuple[dict[str, Any], bool]:
    """The JSON schema of ``schema`` made strict the way OpenAI's structured outputs want it (every
    object with properties gets ``additionalProperties: false`` and all its properties required; a
    ``$ref`` with sibling keys is inlined; ``default: null`` is dropped), and whether strict mode can
    hold (False when some object is open, e.g. a ``dict[str, X]`` field)."""
    root = schema.model_json_schema()
    defs = root.get("$defs") or {}
    strict_ok = True

    def walk(node: Any) -> Any:
        nonlocal strict_ok
        if not isinstance(node, dict):
            return node
        node = dict(node)
        ref = node.get("$ref")
        if isinstance(ref, str) and len(node) > 1 and ref.startswith("#/$defs/"):
            node.pop("$ref")
            node = {**defs.get(ref.split("/")[-1], {}), **node}
        if isinstance(node.get("properties"), dict):
            node["properties"] = {name: walk(sub) for name, sub in node["properties"].items()}
            node.setdefault("additionalProperties", False)
            node["required"] = list(node["properties"])
        if isinstance(node.get("additionalProperties"), dict):
            node["additionalProperties"] = walk(node["additionalProperties"])
        if node.get("type") == "object" or "properties" in node or "additionalProperties" in node:
            if node.get("additionalProperties", True) is not False:
                strict_ok = False
        for key in ("items", "not", "propertyNames"):
            if isinstance(node.get(key), dict):
                node[key] = walk(node[key])
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if isinstance(node.get(key), list):
                node[key] = [walk(sub) for sub in node[key]]
        if "default" in node and node["default"] is None:
            node.pop("default")
        return node

    out = walk({k: v for k, v in root.items() if k != "$defs"})
    if defs:
        out["$defs"] = {name: walk(sub) for name, sub in defs.items()}
    return out, strict_ok


def response_format_for(schema: type[BaseModel], mode: str) -> dict[str, Any] | None:
    """The ``response_format`` request field for ``structured_output`` mode ``mode`` (a fresh copy;
    the schema is built once per (schema, mode), as pydantic's schema generation takes ~1 ms)."""
    cached = _response_format_cached(schema, mode)
    return None if cached is None else json.loads(cached)


@functools.lru_cache(maxsize=256)
def _response_format_cached(schema: type[BaseModel], mode: str) -> str | None:
    built = _build_response_format(schema, mode)
    return None if built is None else json.dumps(built)


def _build_response_format(schema: type[BaseModel], mode: str) -> dict[str, Any] | None:
    if mode == "none":
        return None
    if mode == "json_object":
        return {"type": "json_object"}
    json_schema, strict_ok = strict_json_schema(schema)
    if mode == "json_object_schema":  # llama-cpp-python's server: grammar from "schema"
        return {"type": "json_object", "schema": json_schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": _schema_name(schema), "schema": json_schema, "strict": strict_ok},
    }


_FENCE = re.compile(r"^```[A-Za-z]*\s*(.*?)\s*```$", re.S)


def _json_candidates(text: str) -> list[str]:
    stripped = text.strip()
    out = [stripped]
    fenced = _FENCE.match(stripped)
    if fenced:
        out.append(fenced.group(1))
    first, last = stripped.find("{"), stripped.rfind("}")
    if 0 <= first < last:
        out.append(stripped[first : last + 1])
    return out


def describe_validation_error(err: ValidationError) -> str:
    """A short, model-readable account of a pydantic error: ``loc: message (got ...)`` per problem."""
    parts = []
    for item in err.errors(include_url=False):
        loc = ".".join(str(p) for p in item["loc"]) or "(root)"
        got = item.get("input")
        shown = ""
        if item["type"] != "missing" and not isinstance(got, (dict, list)):
            shown = f" (got {json.dumps(got, default=str)[:60]})"
        parts.append(f"{loc}: {item['msg']}{shown}")
    return "; ".join(parts)


def parse_action(text: str, schema: type[A]) -> tuple[A | None, str | None]:
    """Parse ``text`` as JSON (also inside a ``` fence, or the outermost {...}) and validate it with
    ``schema``. Returns (action, None) or (None, error text)."""
    if not text or not text.strip():
        return None, "the answer was empty; a JSON object was expected"
    decode_error: str | None = None
    for candidate in _json_candidates(text):
        try:
            data = json.loads(candidate)
        except ValueError as err:
            decode_error = decode_error or f"the answer is not valid JSON: {err}"
            continue
        try:
            return schema.model_validate(data), None
        except ValidationError as err:
            return None, f"the JSON does not match the required schema: {describe_validation_error(err)}"
    return None, decode_error


def _reask_message(error: str) -> Message:
    return {
        "role": "user",
        "content": f"Your previous answer could not be used: {error}\n"
        "Reply again with only a JSON object that matches the required schema.",
    }


# --------------------------------------------------------------------------------------------------
# endpoint errors


@dataclass
class _Failure:
    retryable: bool
    status: int | str
    detail: str
    retry_after_s: float | None = None


def _classify(exc: BaseException) -> _Failure | None:
    """What kind of endpoint failure ``exc`` is, or None if it is not one (then it propagates)."""
    import openai

    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, openai.APITimeoutError)):
        return _Failure(True, "timeout", "the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
        return _Failure(True, "connection", f"connection error ({detail})")
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        retryable = code in (408, 409, 429) or code >= 500
        if code in (401, 403):
            detail = "authentication failed (the server's text is not shown, it may quote the key)"
        else:
            detail = str(getattr(exc, "message", "") or exc)
        retry_after = None
        try:
            header = exc.response.headers.get("retry-after")
            retry_after = float(header) if header is not None else None
        except (AttributeError, TypeError, ValueError):
            retry_after = None
        return _Failure(retryable, code, detail, retry_after)
    if isinstance(exc, openai.APIError):
        return _Failure(False, "error", str(exc))
    return None


class _BadResponse(Exception):
    """HTTP 200 whose body is not a chat completion."""


def _completion_dict(response: Any) -> dict[str, Any]:
    if isinstance(response, dict):
        data = response
    elif hasattr(response, "model_dump"):
        data = response.model_dump(mode="json", exclude_unset=True)
    else:
        raise _BadResponse(f"the endpoint answered with {type(response).__name__}: {str(response)[:200]!r}")
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise _BadResponse(f"the endpoint's answer is not a chat completion: {canonical_json(data)[:200]}")
    return data


def _tokens(data: dict[str, Any], conversation: list[Message]) -> tuple[int, int]:
    """(prompt, completion) tokens from ``usage``; characters / 4 for a count the endpoint left out."""
    usage = data.get("usage") or {}
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    completion = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if not isinstance(prompt, int):
        prompt = math.ceil(len(canonical_json(conversation)) / 4)
    if not isinstance(completion, int):
        completion = math.ceil(len(_answer_text(data)[0]) / 4)
    return prompt, completion


def _answer_text(data: dict[str, Any]) -> tuple[str, str | None]:
    choice = data["choices"][0]
    message = choice.get("message") or {}
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return (content if isinstance(content, str) else ""), choice.get("finish_reason")


# --------------------------------------------------------------------------------------------------
# the client


@dataclass
class _Endpoint:
    client: Any = field(repr=False)
    api_key: str = field(repr=False)  # kept only to redact it from endpoint messages


class LLMClient:
    """Structured, validated, cached and budgeted chat completions over OpenAI-compatible endpoints.

    Use one instance per run (it holds the HTTP connection pools, semaphores, cache counters and
    totals); ``async with LLMClient(...)`` or ``await client.aclose()`` closes the connections.
    """

    def __init__(
        self,
        settings: LLMSettings | None = None,
        *,
        cache: ResponseCache | None = None,
        cost_guard: CostGuard | None = None,
        openai_factory: OpenAIFactory | None = None,
        environ: Mapping[str, str] | None = None,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        rng: random.Random | None = None,
        on_record: Callable[[CallRecord], None] | None = None,
    ) -> None:
        self.settings = settings or LLMSettings()
        self.cache = cache if cache is not None else ResponseCache(self.settings.cache_dir)
        self.cost_guard = cost_guard if cost_guard is not None else CostGuard(self.settings.max_cost_usd)
        self._factory = openai_factory or _default_openai_factory
        self._environ = environ if environ is not None else os.environ
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._rng = rng or random.Random()  # jitter only: never affects answers or logs
        self.on_record = on_record
        self.totals: dict[str, UsageTotals] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: dict[tuple[str | None, str | None], _Endpoint] = {}
        self._semaphores: dict[str | None, tuple[asyncio.Semaphore, int]] = {}
        self._warned_concurrency: set[str] = set()
        self._inflight: dict[str, asyncio.Future[dict[str, Any]]] = {}

    # -- public -----------------------------------------------------------------------------------

    async def complete(
        self,
        spec: ModelSpec,
        messages: Sequence[Message],
        schema: type[A],
        *,
        sample: int = 0,
        context: Mapping[str, Any] | None = None,
    ) -> LLMResult[A]:
        """Ask ``spec``'s model for an answer matching ``schema``; see the module docstring."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # connection pools, semaphores, futures belong to one event loop
            self._loop, self._clients, self._semaphores, self._inflight = loop, {}, {}, {}
        conversation: list[Message] = [dict(m) for m in messages]
        response_format = response_format_for(schema, spec.structured_output)
        record = CallRecord(model=spec.alias, request_hash="", context=dict(context or {}))
        action: A | None = None
        raw_text = ""
        error: str | None = None
        for attempt in range(spec.max_reasks + 1):
            request = self._cache_request(spec, conversation, response_format, sample)
            key = request_key(request)
            if attempt == 0:
                record.request_hash = key
            data = self.cache.get(key, request)
            pending = self._inflight.get(key) if data is None else None
            if pending is not None:  # the same request is on the wire already: share its answer
                data = await asyncio.shield(pending)
            if data is None:
                if self.settings.cache_only:
                    raise CacheMiss(
                        f"model {spec.alias!r}: request {key[:12]}... is not in the cache "
                        f"{self.cache.cache_dir} and llm.cache_only is set" + self._where(record)
                    )
                record.cached = False
                data = await self._fetch_once(key, spec, conversation, response_format, request, record)
                record.cost_usd += self._usage_cost(spec, data, conversation, record)
            else:
                self._usage_cost(spec, data, conversation, record)  # tokens only: cached costs 0
            record.attempts = attempt + 1
            raw_text, finish_reason = _answer_text(data)
            action, error = parse_action(raw_text, schema)
            if action is not None:
                break
            if finish_reason == "length":
                error = f"{error} (the answer was cut off at max_tokens={spec.max_tokens})"
            if attempt < spec.max_reasks:
                conversation.append({"role": "assistant", "content": raw_text})
                conversation.append(_reask_message(error or "invalid answer"))
        record.valid = action is not None
        self._account(record)
        return LLMResult(action=action, raw_text=raw_text, error=error, record=record)

    def usage(self) -> UsageTotals:
        """Totals over all aliases."""
        total = UsageTotals()
        for part in self.totals.values():
            for name in total.__dataclass_fields__:
                setattr(total, name, getattr(total, name) + getattr(part, name))
        return total

    def check_keys(self, specs: Sequence[ModelSpec] | Mapping[str, ModelSpec]) -> None:
        """Raise ``MissingAPIKey`` now if a spec's key variable is unset (call before a live run)."""
        for spec in specs.values() if isinstance(specs, Mapping) else specs:
            self._api_key(spec)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for endpoint in clients:
            close = getattr(endpoint.client, "close", None)
            if close is not None:
                try:
                    await close()
                except RuntimeError:  # its event loop is gone
                    pass

    async def __aenter__(self) -> "LLMClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # -- internals --------------------------------------------------------------------------------

    @staticmethod
    def _cache_request(
        spec: ModelSpec, conversation: list[Message], response_format: dict[str, Any] | None, sample: int
    ) -> dict[str, Any]:
        return {
            "v": REQUEST_FORMAT_VERSION,
            "model": spec.model,
            "messages": list(conversation),
            "temperature": spec.temperature,
            "max_tokens": spec.max_tokens,
            "response_format": response_format,
            "sample": sample,
        }

    def _account(self, record: CallRecord) -> None:
        self.totals.setdefault(record.model, UsageTotals()).add(record)
        if self.on_record is not None:
            self.on_record(record)

    @staticmethod
    def _usage_cost(
        spec: ModelSpec, data: dict[str, Any], conversation: list[Message], record: CallRecord
    ) -> float:
        prompt, completion = _tokens(data, conversation)
        record.prompt_tokens += prompt
        record.completion_tokens += completion
        return spec.cost_usd(prompt, completion)

    @staticmethod
    def _where(record: CallRecord) -> str:
        if not record.context:
            return ""
        return " (" + ", ".join(f"{k}={v}" for k, v in record.context.items()) + ")"

    def _api_key(self, spec: ModelSpec) -> str:
        if spec.api_key_env is None:
            return DUMMY_API_KEY
        value = self._environ.get(spec.api_key_env)
        if not value or not value.strip():
            raise MissingAPIKey(
                f"model {spec.alias!r}: the environment variable {spec.api_key_env} is not set or empty; "
                f"it must hold the API key for {spec.base_url or OPENAI_DEFAULT_URL} "
                "(or set api_key_env: null for an endpoint that needs no key)"
            )
        return value.strip()

    def _endpoint(self, spec: ModelSpec) -> tuple[_Endpoint, asyncio.Semaphore]:
        client_key = (spec.base_url, spec.api_key_env)
        endpoint = self._clients.get(client_key)
        if endpoint is None:
            api_key = self._api_key(spec)
            endpoint = _Endpoint(self._factory(spec.base_url, api_key), api_key)
            self._clients[client_key] = endpoint
        sem_entry = self._semaphores.get(spec.base_url)
        if sem_entry is None:
            sem_entry = (asyncio.Semaphore(spec.max_concurrency), spec.max_concurrency)
            self._semaphores[spec.base_url] = sem_entry
        elif sem_entry[1] != spec.max_concurrency and spec.alias not in self._warned_concurrency:
            self._warned_concurrency.add(spec.alias)
            log.warning(
                "model %r asks max_concurrency=%d for %s, which already has %d; keeping %d",
                spec.alias,
                spec.max_concurrency,
                spec.base_url or OPENAI_DEFAULT_URL,
                sem_entry[1],
                sem_entry[1],
            )
        return endpoint, sem_entry[0]

    def _wire_body(
        self, spec: ModelSpec, conversation: list[Message], response_format: dict[str, Any] | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": spec.model,
            "messages": list(conversation),
            "temperature": spec.temperature,
        }
        # OpenAI's newer models only take max_completion_tokens; llama.cpp / vLLM / Ollama take max_tokens.
        body["max_completion_tokens" if spec.base_url is None else "max_tokens"] = spec.max_tokens
        if response_format is not None:
            body["response_format"] = response_format
        return body

    async def _fetch_once(
        self,
        key: str,
        spec: ModelSpec,
        conversation: list[Message],
        response_format: dict[str, Any] | None,
        request: dict[str, Any],
        record: CallRecord,
    ) -> dict[str, Any]:
        """Fetch and cache the answer to ``request``; identical requests arriving meanwhile wait for
        this one and share its answer (as they would share the cached one on replay)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            data = await self._fetch(spec, conversation, response_format, request, record)
            self.cache.put(key, request, data)
        except BaseException as err:
            if isinstance(err, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(err)
                future.exception()  # retrieved: no "never retrieved" warning when nobody waited
            raise
        else:
            future.set_result(data)
            return data
        finally:
            self._inflight.pop(key, None)

    def _backoff(self, retry: int, failure: _Failure) -> float:
        cap = min(self.backoff_max_s, self.backoff_base_s * (2**retry))
        delay = cap / 2 + self._rng.uniform(0, cap / 2)
        if failure.retry_after_s is not None:
            delay = max(delay, min(failure.retry_after_s, self.backoff_max_s))
        return delay

    async def _fetch(
        self,
        spec: ModelSpec,
        conversation: list[Message],
        response_format: dict[str, Any] | None,
        request: dict[str, Any],
        record: CallRecord,
    ) -> dict[str, Any]:
        endpoint, semaphore = self._endpoint(spec)
        body = self._wire_body(spec, conversation, response_format)
        estimate = CostGuard.estimate(
            spec, len(canonical_json(conversation)) + len(canonical_json(response_format))
        )
        url = spec.base_url or OPENAI_DEFAULT_URL
        failure: _Failure | None = None
        tried = 0
        for retry in range(spec.max_retries + 1):
            tried += 1
            async with semaphore:
                try:
                    reservation = self.cost_guard.reserve(estimate, spec.alias)
                except BudgetExceeded as err:
                    err.record = record
                    err.args = (err.args[0] + self._where(record),)
                    raise
                started = time.perf_counter()
                try:
                    response = await asyncio.wait_for(
                        endpoint.client.chat.completions.create(**body, timeout=spec.timeout_s),
                        timeout=spec.timeout_s,
                    )
                    data = _completion_dict(response)
                except _BadResponse as err:
                    self.cost_guard.release(reservation)
                    failure = _Failure(True, "bad response", str(err))
                except Exception as err:  # noqa: BLE001 - classified below, unknown ones re-raised
                    self.cost_guard.release(reservation)
                    failure = _classify(err)
                    if failure is None:
                        raise
                    if failure.status == "timeout":
                        failure.detail += f" (timeout_s={spec.timeout_s:g})"
                except BaseException:  # cancelled (e.g. the run is stopping): free the reservation
                    self.cost_guard.release(reservation)
                    raise
                else:
                    record.latency_s += time.perf_counter() - started
                    self.cost_guard.settle(reservation, spec.cost_usd(*_tokens(data, conversation)))
                    return data
                record.latency_s += time.perf_counter() - started
            detail = redact(failure.detail, endpoint.api_key)
            if not failure.retryable or retry == spec.max_retries:
                break
            delay = self._backoff(retry, failure)
            record.retries += 1
            log.warning(
                "model %r at %s: %s (status %s); retry %d/%d in %.1fs",
                spec.alias,
                url,
                detail[:200],
                failure.status,
                retry + 1,
                spec.max_retries,
                delay,
            )
            await asyncio.sleep(delay)
        assert failure is not None
        raise LLMEndpointError(
            f"model {spec.alias!r} at {url}: last status {failure.status} after {tried} "
            f"request{'s' if tried != 1 else ''}"
            + ("" if failure.retryable else " (not retryable)")
            + f": {redact(failure.detail, endpoint.api_key)[:500]}"
            + self._where(record),
            alias=spec.alias,
            base_url=url,
            status=failure.status,
            record=record,
        )


def _default_openai_factory(base_url: str | None, api_key: str) -> Any:
    import openai

    return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0)
