"""The wire: one request to an OpenAI-compatible endpoint, with keys, concurrency, retries and money.

- Clients: one ``llm.http.ChatClient`` per (base_url, key variable), created on the first request
  that must really be sent, so a replay from the cache needs neither a key nor a server.
  ``provider: mock`` models get the offline mock (``llm/mock.py``) instead; tests plug in
  ``llm.fake.FakeEndpoint.factory`` (the same client over an in-process wire).
- Keys come from the environment variable the spec names, are checked (set, ASCII, no whitespace or
  control characters: ``InvalidAPIKey`` names the variable, never the value), sent as the bearer
  token and used for nothing else but redacting messages.
- Concurrency: slots per endpoint (:func:`slot_key`, ``llm.slots``), as many as ``slot_sizes``
  says for it (``simulate`` passes the smallest ``max_concurrency`` of the models on that
  endpoint, so that no model's limit is passed), else as many as the first spec that uses it
  says; held only during a request, not during back-off sleeps; the next free one goes to the
  least advanced episode's request; shared with the run's other worker processes when it has
  them (``shared_slots``, sized the same way).
- Retries: 408 / 409 / 429 / 5xx, timeouts, connection errors (a reset, a truncated body) and 200s
  that are not a chat completion (garbage, empty ``choices``) are retried up to ``spec.max_retries``
  times with exponential back-off and jitter (``Retry-After`` honoured, capped); other 4xx fail at
  once. Then ``LLMEndpointError`` names the alias, the base_url and the last status.
- Money: every attempt reserves its upper bound (``llm/cost.py``) with the run's ``CostGuard``
  (``llm/budget.py``) and settles the charge of the usage it reports (the reservations asked in one
  turn of the event loop in one transaction of the ledger at its end, :class:`_Reservations`; the
  settle is queued for the guard's next transaction, see ``CostGuard``). An attempt the endpoint
  refused with an HTTP status, or that never reached it (connection refused), releases its
  reservation; one that may have been served without its answer reaching us (a timeout, a
  connection lost after sending, a malformed answer, a cancellation while in flight) is charged its
  bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from marketarena.llm.budget import CostGuard
from marketarena.llm.cost import Bound, Charge, charge_for
from marketarena.llm.errors import (
    BudgetExceeded,
    InvalidAPIKey,
    LLMEndpointError,
    MissingAPIKey,
    redact,
)
from marketarena.llm.http import (
    OPENAI_DEFAULT_URL,
    BadResponse,
    ChatClient,
    ConnectionFailed,
    StatusError,
)
from marketarena.llm.response_cache import canonical_json
from marketarena.llm.slots import SharedSlots, Slots
from marketarena.llm.spec import ModelSpec

log = logging.getLogger("marketarena.llm")

# (base_url, api_key) -> a client with ``async complete(body, timeout) -> dict`` and ``close()``
OpenAIFactory = Callable[[str | None, str], Any]
DUMMY_API_KEY = "no-key-needed"  # sent to endpoints whose spec has api_key_env=None


@dataclass
class Failure:
    retryable: bool
    status: int | str
    detail: str
    retry_after_s: float | None = None
    served: bool = True  # the endpoint may have served (and billed) the request


def classify(exc: BaseException) -> Failure | None:
    """What kind of endpoint failure ``exc`` is, or None if it is not one (then it propagates)."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Failure(True, "timeout", "the request timed out")
    if isinstance(exc, ConnectionFailed):
        return Failure(True, "connection", f"connection error ({exc})", served=exc.sent)
    if isinstance(exc, StatusError):
        code = exc.status
        retryable = code in (408, 409, 429) or code >= 500
        if code in (401, 403):
            detail = "authentication failed (the server's text is not shown, it may quote the key)"
        else:
            detail = f"HTTP {code}: {exc.message}"
        return Failure(retryable, code, detail, exc.retry_after_s, served=False)
    return None


def completion_dict(data: Any) -> dict[str, Any]:
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise BadResponse(
            f"the endpoint's answer is not a chat completion: {canonical_json(data)[:200]}"
        )
    return data


def answer_text(data: dict[str, Any]) -> tuple[str, str | None]:
    choice = data["choices"][0]
    message = choice.get("message") or {}
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return (content if isinstance(content, str) else ""), choice.get("finish_reason")


def default_openai_factory(base_url: str | None, api_key: str) -> Any:
    return ChatClient(base_url, api_key)


def check_api_key(variable: str, value: str) -> str:
    """The key, or ``InvalidAPIKey`` naming the variable (never the value) when it could not be a
    key: non-ASCII, or with whitespace or control characters inside (a pasted newline once put a
    key in full into error messages, escaped where redaction could not find it)."""
    if not value.isascii():
        raise InvalidAPIKey(
            f"the environment variable {variable} holds non-ASCII characters; an "
            "API key is ASCII (check for a pasted quote or a look-alike character)"
        )
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise InvalidAPIKey(
            f"the environment variable {variable} holds whitespace or control "
            "characters inside the key (a pasted newline?)"
        )
    return value


@dataclass
class Endpoint:
    client: Any = field(repr=False)
    api_key: str = field(repr=False)  # kept only to redact it from endpoint messages


@dataclass
class Attempts:
    """What the retry loop tells the caller about one request: retries, time in requests, the
    answer's charge, and the bounds charged for attempts that went unanswered (``unanswered_usd``)."""

    retries: int = 0
    latency_s: float = 0.0
    charge: Charge | None = None
    unanswered_usd: float = 0.0

    def add_unanswered(self, guard: CostGuard, reservation: Any, bound: Bound) -> None:
        """An attempt that may have been served but brought no answer: charged its bound."""
        guard.settle(reservation, Charge.bound(bound))
        self.unanswered_usd += bound.usd


class _Reservations:
    """The budget reservations the requests of one event loop ask for, made in one transaction at
    the end of the loop's turn (``CostGuard.reserve_all``), in the loop itself.

    A reservation is on disk before its request leaves, and it is taken once the request holds a
    slot, so that a run killed meanwhile is charged for exactly the requests the endpoint may have
    received. It was made in a thread, so that the ledger's file I/O would not stall the loop; but
    the thread's hop there and back held the slot 6 ms on average (2.7 ms median) in crash's LLM
    benchmark, where the transaction itself takes 0.2-1 ms, and the slot is what the run waits
    for: in the loop, once per turn for every request that asked in it (supply_chain's twenty at a
    decision point: one transaction), the benchmark ran 0.04-0.39 s faster in each of four pairs.
    A request cancelled before its turn ended has its reservation released."""

    def __init__(self, guard: CostGuard) -> None:
        self.guard = guard
        self._asked: list[tuple[float, str, asyncio.Future[Any]]] = []

    async def reserve(self, usd: float, alias: str) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if not self._asked:
            loop.call_soon(self._commit)
        self._asked.append((usd, alias, future))
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                self.guard.release(future.result())  # reserved, but the result never reached us
            raise

    def _commit(self) -> None:
        asked, self._asked = self._asked, []
        try:
            outcomes = self.guard.reserve_all([(usd, alias) for usd, alias, _ in asked])
        except Exception as err:  # noqa: BLE001 - the ledger unreadable: every request fails
            for _, _, future in asked:
                if not future.done():
                    future.set_exception(err)
            return
        for (_, _, future), outcome in zip(asked, outcomes):
            if future.done():  # cancelled while it waited for the turn to end
                if not isinstance(outcome, BaseException):
                    self.guard.release(outcome)
            elif isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)


def slot_key(spec: ModelSpec) -> str | None:
    """The endpoint whose ``max_concurrency`` a spec's requests count against: its base_url (None:
    OpenAI's), or each mock model on its own."""
    return f"mock:{spec.alias}" if spec.provider == "mock" else spec.base_url


class Transport:
    """Sends requests; one per ``LLMClient`` (it holds the connection pools and slots of one
    event loop, rebuilt when the client is used from a new loop). ``shared_slots``: {slot_key:
    ``SharedSlots``' arguments (a ``multiprocessing`` semaphore the run's processes share, its
    size, their board, this process's seat on it: ``llm.slots``)};
    ``slot_sizes``: {slot_key: slots} of the endpoints this process alone uses."""

    def __init__(
        self,
        factory: OpenAIFactory | None,
        environ: Mapping[str, str] | None,
        backoff_base_s: float,
        backoff_max_s: float,
        rng: random.Random | None = None,
        shared_slots: Mapping[str | None, tuple[Any, ...]] | None = None,
        slot_sizes: Mapping[str | None, int] | None = None,
    ):
        self._factory = factory or default_openai_factory
        self._environ = environ if environ is not None else os.environ
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self._rng = rng or random.Random()  # jitter only: never affects answers or logs
        self._clients: dict[tuple[str, str | None, str | None], Endpoint] = {}
        self._slots: dict[str | None, Slots] = {}
        self._shared_slots = dict(shared_slots or {})
        self._slot_sizes = dict(slot_sizes or {})
        self._warned: set[str] = set()
        self._reserving: dict[int, _Reservations] = {}  # per guard (its id), in this loop
        self.on_wire: Callable[[], None] = lambda: None  # called as each request is sent

    def new_loop(self) -> None:
        self._clients, self._slots, self._reserving = {}, {}, {}

    def _reservations(self, guard: CostGuard) -> _Reservations:
        batch = self._reserving.get(id(guard))
        if batch is None or batch.guard is not guard:
            batch = self._reserving[id(guard)] = _Reservations(guard)
        return batch

    def api_key(self, spec: ModelSpec) -> str:
        if spec.api_key_env is None or spec.provider == "mock":
            return DUMMY_API_KEY
        value = self._environ.get(spec.api_key_env)
        if not value or not value.strip():
            raise MissingAPIKey(
                f"model {spec.alias!r}: the environment variable {spec.api_key_env} is not set or empty; "
                f"it must hold the API key for {spec.base_url or OPENAI_DEFAULT_URL} "
                "(or set api_key_env: null for an endpoint that needs no key)"
            )
        return check_api_key(spec.api_key_env, value.strip())

    def _endpoint(self, spec: ModelSpec) -> tuple[Endpoint, Slots]:
        key = (
            (spec.provider, spec.alias, None)
            if spec.provider == "mock"
            else (spec.provider, spec.base_url, spec.api_key_env)
        )
        endpoint = self._clients.get(key)
        if endpoint is None:
            api_key = self.api_key(spec)
            if spec.provider == "mock":
                from marketarena.llm.mock import MockOpenAI

                client = MockOpenAI(spec)
            else:
                client = self._factory(spec.base_url, api_key)
            endpoint = self._clients[key] = Endpoint(client, api_key)
        sem_key = slot_key(spec)
        slots = self._slots.get(sem_key)
        if slots is None and sem_key in self._shared_slots:
            slots = self._slots[sem_key] = SharedSlots(*self._shared_slots[sem_key])
        elif slots is None:
            slots = self._slots[sem_key] = Slots(
                self._slot_sizes.get(sem_key, spec.max_concurrency)
            )
        elif (
            slots.size != spec.max_concurrency
            and sem_key not in self._shared_slots
            and sem_key not in self._slot_sizes
            and spec.alias not in self._warned
        ):
            self._warned.add(spec.alias)
            log.warning(
                "model %r asks max_concurrency=%d for %s, which already has %d; keeping %d",
                spec.alias,
                spec.max_concurrency,
                spec.base_url or OPENAI_DEFAULT_URL,
                slots.size,
                slots.size,
            )
        return endpoint, slots

    @staticmethod
    def body(
        spec: ModelSpec,
        conversation: list[dict],
        response_format: dict | None,
        script: dict | None = None,
    ) -> dict[str, Any]:
        """The request body; ``script`` (which scripted answer: ``llm/mock.py``) only ever goes
        to the mock provider."""
        body: dict[str, Any] = {
            "model": spec.model,
            "messages": list(conversation),
            "temperature": spec.temperature,
        }
        body[spec.completion_cap_field] = spec.max_tokens
        if response_format is not None:
            body["response_format"] = response_format
        if script is not None and spec.provider == "mock":
            body["script"] = script
        return body

    def _backoff(self, retry: int, failure: Failure) -> float:
        cap = min(self.backoff_max_s, self.backoff_base_s * (2**retry))
        delay = cap / 2 + self._rng.uniform(0, cap / 2)
        if failure.retry_after_s is not None:
            delay = max(delay, min(failure.retry_after_s, self.backoff_max_s))
        return delay

    async def send(
        self,
        spec: ModelSpec,
        conversation: list[dict],
        response_format: dict | None,
        guard: CostGuard,
        where: str,
        attempts: Attempts,
        progress: tuple = (),
        script: dict | None = None,
    ) -> dict[str, Any]:
        """The completion for one request, retried as the module docstring says; the budget is
        reserved per attempt and settled with the reported usage. ``attempts`` is filled in as it
        goes (retries and latency count even when the request finally fails). ``progress``: how
        far its episode is (``client.progress_of``), its place in the queue for a slot.
        ``script``: which scripted answer a mock scripted per phase gives (``llm/mock.py``)."""
        endpoint, slots = self._endpoint(spec)
        body = self.body(spec, conversation, response_format, script)
        bound = Bound.of(spec, conversation, response_format)
        url = spec.base_url or ("mock" if spec.provider == "mock" else OPENAI_DEFAULT_URL)
        failure: Failure | None = None
        tried = 0
        for retry in range(spec.max_retries + 1):
            tried += 1
            await slots.acquire(progress)
            try:
                try:
                    reservation = await self._reservations(guard).reserve(bound.usd, spec.alias)
                except BudgetExceeded as err:
                    err.args = (err.args[0] + where,)
                    raise
                started = time.perf_counter()
                self.on_wire()
                try:
                    async with asyncio.timeout(spec.timeout_s):  # no task of its own (wait_for's)
                        response = await endpoint.client.complete(body, spec.timeout_s)
                    data = completion_dict(response)
                except BadResponse as err:
                    attempts.add_unanswered(guard, reservation, bound)
                    failure = Failure(True, "bad response", str(err))
                except Exception as err:  # noqa: BLE001 - classified below, unknown ones re-raised
                    failure = classify(err)
                    if failure is None or failure.served:
                        attempts.add_unanswered(guard, reservation, bound)
                    else:
                        guard.release(reservation)
                    if failure is None:
                        raise
                    if failure.status == "timeout":
                        failure.detail += f" (timeout_s={spec.timeout_s:g})"
                except BaseException:  # cancelled (e.g. the run is stopping) while in flight
                    attempts.add_unanswered(guard, reservation, bound)
                    raise
                else:
                    attempts.latency_s += time.perf_counter() - started
                    attempts.charge = charge_for(spec, data.get("usage"), bound)
                    guard.settle(reservation, attempts.charge)
                    if attempts.charge.over_bound:
                        log.warning(
                            "model %r at %s reported more tokens than the request's bound "
                            "(%r); charged the bound, and a run with llm.max_cost_usd "
                            "stops before the next call",
                            spec.alias,
                            url,
                            data.get("usage"),
                        )
                    elif not attempts.charge.trusted:
                        log.warning(
                            "model %r at %s reported no usable usage (%r); charged the "
                            "request's upper bound",
                            spec.alias,
                            url,
                            data.get("usage"),
                        )
                    return data
                attempts.latency_s += time.perf_counter() - started
            finally:
                slots.release()
            detail = redact(failure.detail, endpoint.api_key)
            if not failure.retryable or retry == spec.max_retries:
                break
            delay = self._backoff(retry, failure)
            attempts.retries += 1
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
            + where,
            alias=spec.alias,
            base_url=url,
            status=failure.status,
        )

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for endpoint in clients:
            close = getattr(endpoint.client, "close", None)
            if close is not None:
                with contextlib.suppress(RuntimeError):  # its event loop is gone
                    await close()
