"""The LLM client: one structured, validated, cached, budgeted call to any OpenAI-compatible endpoint.

``LLMClient.complete(spec, messages, schema, sample=, context=)`` asks the model behind ``spec`` for
a JSON answer matching the pydantic model ``schema`` and returns an ``LLMResult``: the validated
action (or None), the raw text, the last validation error, and a ``CallRecord`` (one row of the
episode's ``llm_calls`` / ``llm_costs``). Every market asks its LLM agents through this one place.

Where each part lives: the wire (keys, retries, concurrency, the mock provider) in ``transport.py``;
schemas, parsing and re-ask messages in ``schema.py``; money in ``budget.py`` (the guard),
``cost.py`` (bounds and charges) and ``ledger.py``; the response cache in ``response_cache.py``.
This module ties them together:

- Cache: every request (the first ask and each re-ask) is looked up before it is sent; only
  well-formed chat completions are stored, invalid content included, so a replay walks the same
  re-ask path. Cached answers cost 0 and report the tokens they originally used (the prompt
  tokens the provider served from *its* prompt cache among them: ``cached_prompt_tokens``,
  ``llm/prompt_cache.py``, priced at the model's cached-input price when fetched). A request
  identical to one already on the wire waits for it and shares its answer (counted as cached): a
  live run then gets what its replay will get, even at temperature > 0 (agents that must sample
  independently need distinct prompts or ``sample`` indices). The key is the sha256 of the canonical
  request (model name, messages, sampling, response format, cap, sample index; for a mock
  scripted per phase, also the phase, the seat's turn in it and a digest of the script:
  ``llm/mock.py``) and, for a model with a ``base_url``, the endpoint it is sent to
  (:func:`endpoint_key`): another server, even serving a model of the same name, is asked, not
  answered from the first one's cache.
- Re-asks: an answer that is not valid JSON for ``schema`` (or, for a ``schema.TextAnswer``, not
  in its format) is re-asked up to ``spec.max_reasks`` times (at most the schema's own cap),
  quoting the error (and at most ``schema.REASK_ANSWER_CHARS`` of the answer); after that the
  result has ``action=None`` and the market applies its fallback. That is the only way a call can
  end in an invalid decision: any other failure (endpoint down after retries, budget, a cache that
  cannot be written, a key that cannot be a key) raises a ``RunAborted`` subclass.
- Cache writes: an answer is stored by one writer thread while the call goes on (an atomic
  write is a few hundred microseconds of file work, and every answer of a decision point used to
  wait for its own before the market could move on). Until its file is there, the answer is
  kept in memory and an identical request gets it from there, as a cache hit. The thread holds
  its writes while the market works on the answers: from an answer's arrival until
  ``CACHE_WRITE_AFTER_SEND_S`` after the next requests have left (a decision point's all leave in
  one turn of the event loop), at most ``CACHE_WRITE_HOLD_S`` (its file work, with the GIL it
  takes back after each system call, then overlaps the wait for the endpoint instead of slowing
  the market's step, the next prompts, their sending and the endpoint taking them). Before an
  episode's logs are committed, the wait ``store_answers()`` returns is called: a unit on disk
  always has its answers in the cache, so an interrupted run replays what it kept; a client never
  closed still stores every answer. A write that fails (``OSError``) ends the run with
  ``CacheError`` naming ``llm.cache_dir``, raised by the next call, by that wait or by
  ``aclose()``, whichever comes first.
- Records: ``request_hash`` is the hash of the first request of the call without its endpoint
  (stable per decision, so logs are the same whichever server or port answered; the cache key
  holds the endpoint);
  ``attempts`` counts model answers (1 + re-asks used), ``retries`` the HTTP retries; ``latency_s``
  is time in HTTP requests (0 for a fully cached call), not time queued behind the semaphore.
  ``exchanges`` holds what was said, one entry per answer (``reask`` 0, 1, ...): the messages this
  request added to the conversation (all of them for the first ask; the previous answer and the
  re-ask quoting its error after that), the model's raw answer and why it was not accepted
  (``error``, empty when it parsed). Each message and answer is cut at ``LOG_TEXT_CHARS``
  characters, marked where cut. The runner writes them as the episode's ``llm_messages`` table:
  the episode logs, not the response cache, are the record of what a model was asked.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel

from marketarena.llm.budget import CostGuard
from marketarena.llm.cost import Bound, charge_for
from marketarena.llm.errors import (
    BudgetExceeded,
    CacheError,
    CacheMiss,
    LLMConfigError,
    LLMEndpointError,
)
from marketarena.llm.response_cache import ResponseCache, request_keys
from marketarena.llm.schema import (
    parse_action,
    reask_messages,
    reasks_for,
    shared_response_format,
)
from marketarena.llm.spec import LLMSettings, ModelSpec
from marketarena.llm.transport import Attempts, OpenAIFactory, Transport, answer_text

A = TypeVar("A", bound=BaseModel)
Message = dict[str, Any]

REQUEST_FORMAT_VERSION = 2  # 2: the completion cap is keyed by the field the request sends
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
#: longest a cache write waits for the next request to leave (the module docstring)
CACHE_WRITE_HOLD_S = 0.05
#: how long after a turn's requests have left the held cache writes go (:meth:`LLMClient._sent`)
CACHE_WRITE_AFTER_SEND_S = 0.005


def endpoint_key(base_url: str) -> str:
    """The endpoint as the cache key holds it: scheme, host and port, path, normalised so that
    spellings of one server agree (case, default ports, a trailing slash, ``localhost`` /
    ``127.0.0.1`` / ``::1``) and different servers or ports differ."""
    parts = urlsplit(base_url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    host = "localhost" if host in _LOOPBACK else host
    port = parts.port if parts.port not in (None, {"http": 80, "https": 443}.get(scheme)) else None
    return f"{scheme}://{host}{f':{port}' if port else ''}{parts.path.rstrip('/')}"


#: characters of one message or answer kept in ``CallRecord.exchanges`` (the ``llm_messages`` log)
LOG_TEXT_CHARS = 50_000


def capped(text: str, limit: int = LOG_TEXT_CHARS) -> str:
    """``text``, or its first ``limit`` characters and a note of how many more were not logged."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters not logged]"


def exchange(
    reask: int, messages: Sequence[Message], answer: str, error: str | None
) -> dict[str, Any]:
    """One answer of a call as ``CallRecord.exchanges`` holds it (texts capped, messages as JSON)."""
    said = [
        {"role": str(m.get("role", "")), "content": capped(str(m.get("content") or ""))}
        for m in messages
    ]
    return {
        "reask": reask,
        "messages": json.dumps(said, ensure_ascii=False),
        "answer": capped(answer),
        "error": error or "",
    }


@dataclass
class CallRecord:
    """One logical LLM call (first ask plus its re-asks): a row of ``llm_calls`` / ``llm_costs``."""

    model: str  # the alias
    request_hash: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, served from the provider's prompt cache
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = True
    attempts: int = 0
    valid: bool = False
    retries: int = 0
    context: dict[str, Any] = field(default_factory=dict)
    exchanges: list[dict[str, Any]] = field(default_factory=list)  # see the module docstring

    def as_row(self) -> dict[str, Any]:
        """Flat dict for a log row: the context keys (step, agent_id, ...) first, then the fields
        (not ``exchanges``, which are rows of their own table)."""
        row = dict(self.context)
        row.update(
            {
                f.name: getattr(self, f.name)
                for f in fields(self)
                if f.name not in ("context", "exchanges")
            }
        )
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
    cached_prompt_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, record: CallRecord) -> None:
        self.calls += 1
        self.cached_calls += int(record.cached)
        self.invalid_calls += int(not record.valid)
        self.attempts += record.attempts
        self.retries += record.retries
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        self.cached_prompt_tokens += record.cached_prompt_tokens
        self.cost_usd += record.cost_usd

    def merge(self, other: "UsageTotals") -> "UsageTotals":
        """Add ``other``'s totals to these; returns self."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self


def progress_of(context: Mapping[str, Any]) -> tuple[float, float]:
    """How far the episode asking is: its decision point's (step, round), 0 where the context has
    none; the endpoint's next free slot goes to the least advanced (``llm.slots``)."""
    return tuple(
        v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
        for v in (context.get("step"), context.get("round"))
    )  # type: ignore[return-value]


class LLMClient:
    """Structured, validated, cached and budgeted chat completions over OpenAI-compatible endpoints.

    Use one instance per run (it holds the HTTP connection pools, semaphores, cache counters and
    totals); ``async with LLMClient(...)`` or ``await client.aclose()`` closes the connections.
    ``shared_slots``: the endpoints' slots shared with the run's other processes;
    ``slot_sizes``: the slots of the others (both ``transport.Transport``).
    """

    def __init__(
        self,
        settings: LLMSettings | None = None,
        *,
        cache: ResponseCache | None = None,
        cost_guard: CostGuard | None = None,
        openai_factory: OpenAIFactory | None = None,
        environ: Mapping[str, str] | None = None,
        backoff_base_s: float | None = None,
        backoff_max_s: float | None = None,
        rng: random.Random | None = None,
        on_record: Callable[[CallRecord], None] | None = None,
        shared_slots: Mapping[str | None, tuple[Any, ...]] | None = None,
        slot_sizes: Mapping[str | None, int] | None = None,
    ) -> None:
        self.settings = settings or LLMSettings()
        self.cache = cache if cache is not None else ResponseCache(self.settings.cache_dir)
        self.cost_guard = (
            cost_guard if cost_guard is not None else CostGuard(self.settings.max_cost_usd)
        )
        self.transport = Transport(
            openai_factory,
            environ,
            self.settings.backoff_base_s if backoff_base_s is None else backoff_base_s,
            self.settings.backoff_max_s if backoff_max_s is None else backoff_max_s,
            rng,
            shared_slots,
            slot_sizes,
        )
        self.on_record = on_record
        self.totals: dict[str, UsageTotals] = {}
        self.in_flight = 0  # calls under way (the progress line shows them)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inflight: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._unstored: dict[str, dict[str, Any]] = {}  # answers whose cache write is to come
        self._writer: ThreadPoolExecutor | None = None  # made at the first write
        # the writer thread's queue: (releases when queued, hold until, key, request, answer)
        self._queued: deque[tuple[int, float, str, dict[str, Any], dict[str, Any]]] = deque()
        self._draining = False  # a drain of the queue is under way or handed to the thread
        self._releases = 0  # turns that sent requests (and flushes asked) so far: what ends a hold
        self._release_due = False  # a release is scheduled (``_sent``)
        self._write_failed: str | None = None  # why the first failed write failed
        self._write_failed_told = False  # raised to someone already
        self.transport.on_wire = self._sent

    # -- public -----------------------------------------------------------------------------------

    async def complete(
        self,
        spec: ModelSpec,
        messages: Sequence[Message],
        schema: type[A],
        *,
        sample: int = 0,
        context: Mapping[str, Any] | None = None,
        turn: int = 0,
    ) -> LLMResult[A]:
        """Ask ``spec``'s model for an answer matching ``schema``; see the module docstring.
        ``turn``: how many requests the asking seat has made in this phase (``context["phase"]``)
        of its episode so far; only a mock scripted per phase reads it (``llm/mock.py``)."""
        self.in_flight += 1
        try:
            return await self._complete(spec, messages, schema, sample, context, turn)
        finally:
            self.in_flight -= 1

    async def _complete(
        self,
        spec: ModelSpec,
        messages: Sequence[Message],
        schema: type[A],
        sample: int,
        context: Mapping[str, Any] | None,
        turn: int,
    ) -> LLMResult[A]:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # connection pools, semaphores, futures belong to one event loop
            self._loop, self._inflight, self._release_due = loop, {}, False
            self.transport.new_loop()
        conversation: list[Message] = [dict(m) for m in messages]
        response_format = shared_response_format(schema, spec.structured_output)
        record = CallRecord(model=spec.alias, request_hash="", context=dict(context or {}))
        script = None
        if spec.provider == "mock" and spec.mock is not None and spec.mock.by_phase:
            from marketarena.llm.mock import phase_script

            script = phase_script(spec, record.context.get("phase"), self._where(record))
        action: A | None = None
        raw_text = ""
        error: str | None = None
        said = 0  # messages of the conversation already in record.exchanges
        reasks = reasks_for(schema, spec.max_reasks)
        for attempt in range(reasks + 1):
            request = self._cache_request(spec, conversation, response_format, sample)
            if script is not None:  # a mock scripted per phase: which answer is in the key
                request["script"] = {**script, "turn": turn + attempt}
            key, without_endpoint = request_keys(request, "endpoint")
            if attempt == 0:  # the logged hash: the same whatever the endpoint's address
                record.request_hash = without_endpoint
            self._check_writes()
            data = self._unstored.get(key)
            if data is not None:  # fetched, its write under way: what the cache will answer
                self.cache.stats.hits += 1
            else:
                data = self.cache.get(key, request)
            pending = self._inflight.get(key) if data is None else None
            if pending is not None:  # the same request is on the wire already: share its answer
                data = await asyncio.shield(pending)
            if data is None:
                if self.settings.cache_only:
                    raise CacheMiss(
                        f"model {spec.alias!r}: request {key[:12]}... is not in the cache "
                        f"{self.cache.cache_dir} and llm.cache_only is set (the key "
                        "holds the model, the prompt, the sampling and the endpoint "
                        "base_url: a change of any misses)" + self._where(record)
                    )
                record.cached = False
                data = await self._fetch_once(
                    key, spec, conversation, response_format, request, record
                )
            else:  # tokens of the stored answer; a cached answer costs nothing
                charge = charge_for(
                    spec, data.get("usage"), Bound.of(spec, conversation, response_format)
                )
                record.prompt_tokens += charge.prompt_tokens
                record.completion_tokens += charge.completion_tokens
                record.cached_prompt_tokens += charge.cached_tokens
            record.attempts = attempt + 1
            raw_text, finish_reason = answer_text(data)
            action, error = parse_action(raw_text, schema)
            if action is None and finish_reason == "length":
                error = f"{error} (the answer was cut off at max_tokens={spec.max_tokens})"
            record.exchanges.append(exchange(attempt, conversation[said:], raw_text, error))
            said = len(conversation)
            if action is not None:
                break
            if attempt < reasks:
                conversation += reask_messages(raw_text, error or "invalid answer")
        record.valid = action is not None
        self._account(record)
        return LLMResult(action=action, raw_text=raw_text, error=error, record=record)

    def usage(self) -> UsageTotals:
        """Totals over all aliases."""
        total = UsageTotals()
        for part in self.totals.values():
            total.merge(part)
        return total

    def check_keys(self, specs: Sequence[ModelSpec] | Mapping[str, ModelSpec]) -> None:
        """Raise now if a spec's key variable is unset or cannot hold a key (call before a live run)."""
        for spec in specs.values() if isinstance(specs, Mapping) else specs:
            self.transport.api_key(spec)

    def check_cache_writable(self) -> None:
        """Raise ``LLMConfigError`` naming ``llm.cache_dir`` if answers could not be stored there
        (checked once before a live run: later, a failed write would abort mid-episode)."""
        if not self.cache.enabled:
            return
        path = self.cache.cache_dir
        try:
            path.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".probe-", dir=path)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise LLMConfigError(
                f"llm.cache_dir: cannot write the response cache at {path} "
                f"({type(exc).__name__}: {exc.strerror or exc})"
            ) from None

    def store_answers(self) -> Callable[[], None]:
        """Begin storing every answer fetched so far (call in the client's event loop) and return
        a wait, callable from any thread, that returns once they are in the response cache and
        raises ``CacheError`` if one could not be written."""
        written = self._flush()

        def wait() -> None:
            if written is not None:
                written.result()
            self._check_writes()

        return wait

    async def aclose(self) -> None:
        """Close the connections, wait for the answers still being stored (``CacheError`` if one
        could not be and no call or wait has said so yet) and write the settles still queued to
        the spend ledger."""
        try:
            await self.transport.aclose()
        finally:
            try:
                written, writer, self._writer = self._flush(), self._writer, None
                if written is not None:
                    await asyncio.wrap_future(written)
                    writer.shutdown()
                if not self._write_failed_told:
                    self._check_writes()
            finally:
                self.cost_guard.flush()

    async def __aenter__(self) -> "LLMClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # -- internals --------------------------------------------------------------------------------

    @staticmethod
    def _cache_request(
        spec: ModelSpec,
        conversation: list[Message],
        response_format: dict[str, Any] | None,
        sample: int,
    ) -> dict[str, Any]:
        request = {
            "v": REQUEST_FORMAT_VERSION,
            "model": spec.model,
            "messages": list(conversation),
            "temperature": spec.temperature,
            spec.completion_cap_field: spec.max_tokens,
            "response_format": response_format,
            "sample": sample,
        }
        if spec.base_url is not None:  # OpenAI itself and the mock provider keep their old keys
            request["endpoint"] = endpoint_key(spec.base_url)
        return request

    def _account(self, record: CallRecord) -> None:
        self.totals.setdefault(record.model, UsageTotals()).add(record)
        if self.on_record is not None:
            self.on_record(record)

    def _store(self, key: str, request: dict[str, Any], data: dict[str, Any]) -> None:
        """Queue ``data`` for the writer thread, which puts it in the cache once a request has left
        or ``CACHE_WRITE_HOLD_S`` have passed; it is answered from memory until its file is there
        (see the module docstring). The thread is handed a queue's worth at a time, not an answer
        at a time (each hand-over wakes it, and it then takes the GIL from the loop), and the two
        threads share no lock: one the writer held while the loop waited for it cost the loop a
        GIL switch interval (5 ms), now and then seconds in a double_auction run."""
        if not self.cache.enabled:
            return  # nothing is stored
        self._unstored[key] = data
        self._queued.append(
            (self._releases, time.monotonic() + CACHE_WRITE_HOLD_S, key, request, data)
        )
        if not self._draining:
            self._draining = True
            if self._writer is None:
                self._writer = ThreadPoolExecutor(1, thread_name_prefix="marketarena-cache")
            self._writer.submit(self._drain)

    def _sent(self) -> None:
        """A request is leaving: the held writes go ``CACHE_WRITE_AFTER_SEND_S`` later, once every
        request leaving in this turn of the event loop is on the wire and the endpoint has them (a
        decision point's twenty leave in one turn). Released at the first, the writer's file work
        took the GIL between their sends; at the end of the turn, it still took the GIL and a core
        while they went out and the endpoint took them: in supply_chain's LLM benchmark (a
        loopback endpoint on the same 2 cores) the last answer of a decision point came 7.5 ms
        after the endpoint's 500 ms on average, 4.5 ms with the writes 5 ms later (the HTTP layer
        alone: 3 ms); the run took 9.30-9.41 s against 9.34-9.45 s (5 pairs, medians 9.34 and
        9.41 s). crash's and double_auction's runs took the same time either way."""
        if not self._release_due:
            self._release_due = True
            asyncio.get_running_loop().call_later(CACHE_WRITE_AFTER_SEND_S, self._release)

    def _release(self) -> None:
        """Requests have left (or the answers are wanted on disk now): the held writes go."""
        self._release_due = False
        self._releases += 1

    def _flush(self) -> Future | None:
        """Release the held writes; a future done once every write queued so far is (the writer
        thread takes its work in order, so a no-op after them ends after them), None when there
        is no writer."""
        self._release()
        return None if self._writer is None else self._writer.submit(lambda: None)

    def _drain(self) -> None:
        """In the writer thread: the queued writes in order, each once a request has left since
        it was queued or its hold is over (looked at every millisecond: an ``Event`` would share
        its lock with the loop); a failure is kept for the calls to raise."""
        while True:
            try:
                released, due, key, request, data = self._queued.popleft()
            except IndexError:
                self._draining = False
                if not self._queued:  # else a write queued meanwhile saw the drain under way
                    return
                self._draining = True
                continue
            while self._releases == released and time.monotonic() < due:
                time.sleep(0.001)
            try:
                self.cache.put(key, request, data)
            except Exception as exc:  # noqa: BLE001 - raised to the run as CacheError
                if self._write_failed is None:
                    self._write_failed = (
                        f"llm.cache_dir: cannot store an answer at {self.cache.path_for(key)} "
                        f"({type(exc).__name__}: {getattr(exc, 'strerror', None) or exc})"
                    )
            self._unstored.pop(key, None)

    def _check_writes(self) -> None:
        """Raise ``CacheError`` if a write has failed, every time asked: once an answer could
        not be stored, no call goes on and no unit is committed."""
        if self._write_failed is not None:
            self._write_failed_told = True
            raise CacheError(self._write_failed)

    @staticmethod
    def _where(record: CallRecord) -> str:
        if not record.context:
            return ""
        return " (" + ", ".join(f"{k}={v}" for k, v in record.context.items()) + ")"

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
        attempts = Attempts()
        try:
            try:
                data = await self.transport.send(
                    spec,
                    conversation,
                    response_format,
                    self.cost_guard,
                    self._where(record),
                    attempts,
                    progress_of(record.context),
                    request.get("script"),
                )
            finally:
                record.retries += attempts.retries
                record.latency_s += attempts.latency_s
                record.cost_usd += attempts.unanswered_usd  # attempts charged their bound
            record.prompt_tokens += attempts.charge.prompt_tokens
            record.completion_tokens += attempts.charge.completion_tokens
            record.cached_prompt_tokens += attempts.charge.cached_tokens
            record.cost_usd += attempts.charge.usd
            self._store(key, request, data)
        except BaseException as err:
            if isinstance(err, (LLMEndpointError, BudgetExceeded)):
                err.record = record
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
