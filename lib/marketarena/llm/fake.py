"""A scripted fake OpenAI-compatible endpoint for unit tests: canned answers, errors and usage.

What: ``FakeEndpoint(script)`` answers chat-completion requests from a list of behaviours, in arrival
order (or from a function of the request body): ``Reply`` (a 200 completion with given content and
token usage), ``Status`` (an HTTP error such as 500 or 429), ``Timeout`` and ``ConnectFail`` (transport
failures), ``Hang`` (no answer for a while, to trip the client's own timeout) and ``Garbage`` (a 200
whose body is not a chat completion). ``FakeEndpoint.factory`` plugs into
``LLMClient(openai_factory=...)``; ``requests`` records what was sent.

Why at the HTTP layer: the fake is the wire under the real ``llm.http.ChatClient`` (it gets the
request's URL, headers and body bytes and answers with a status, headers and body bytes, or raises
what aiohttp's wire raises), so the tests exercise the client's real request building, answer
parsing and error mapping (a 500's error body, ``Retry-After``, a refused connection, a body that
is not JSON), not a hand-made imitation of them. No socket is opened; a call takes well under a
millisecond.

Scenario helpers build the usual scripts: ``valid``, ``invalid_then_valid``, ``always_invalid``,
``timeout_then``, ``server_errors_then``. ``schema_answer`` is a responder for any market: a
random answer valid for the schema the request sends (seeded by the request, as the mock provider
draws it), with the usage an endpoint would report (about 4 bytes a token). ``prompt_caching``
wraps a responder so that its answers report the prompt tokens a provider's prefix cache would
serve (``usage.prompt_tokens_details.cached_tokens``).

Both endpoints count requests in flight: ``in_flight`` now, ``max_in_flight`` the most at once.

``LoopbackEndpoint(responder, delay_s)`` is the same idea over real HTTP, for benchmarks: a stdlib
threaded server on 127.0.0.1 (a free port) that answers every chat completion with
``responder(body)`` after a fixed delay, so wall times can be compared with (decision points) x
(latency).

``ChaosEndpoint(responder, fault_rate, seed, slow_s)`` is a loopback endpoint that misbehaves on a
seeded schedule: a request (identified by the hash of its body, so the schedule does not depend on
arrival order) gets 0 to 3 faults before its answer, each one of 429 with ``Retry-After``, a 5xx,
a connection reset, an answer slower than the client's timeout, a truncated body, or a 200 with no
``choices``. ``injected`` counts the faults served.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import struct
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Sequence, Union
from urllib.parse import urlsplit

from pydantic import BaseModel

from marketarena.llm.http import ChatClient, ConnectionFailed

FAKE_BASE_URL = "http://fake-endpoint.invalid/v1"


@dataclass(frozen=True)
class Reply:
    """HTTP 200 with a chat completion whose message content is ``content`` (a dict or pydantic model
    is sent as its JSON)."""

    content: str | dict[str, Any] | BaseModel | None
    prompt_tokens: int | None = 50
    completion_tokens: int | None = 20
    finish_reason: str = "stop"
    delay_s: float = 0.0
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens, as OpenAI's


@dataclass(frozen=True)
class Status:
    """An HTTP error status with an OpenAI-style error body."""

    code: int
    message: str = "fake endpoint error"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Timeout:
    """The transport times out reading the answer (the wire raises ``TimeoutError``)."""


@dataclass(frozen=True)
class ConnectFail:
    """The transport cannot connect (the wire raises ``ConnectionFailed``, nothing sent)."""


@dataclass(frozen=True)
class Hang:
    """No answer for ``seconds`` (longer than the spec's ``timeout_s`` trips the client's timeout)."""

    seconds: float


@dataclass(frozen=True)
class Garbage:
    """HTTP 200 whose body is not a chat completion."""

    body: str = "<html><body>502 Bad Gateway</body></html>"
    content_type: str = "text/html"


Behaviour = Union[Reply, Status, Timeout, ConnectFail, Hang, Garbage]
Responder = Callable[[dict[str, Any]], Behaviour]


def _content_text(content: str | dict[str, Any] | BaseModel | None) -> str | None:
    if isinstance(content, BaseModel):
        return content.model_dump_json()
    if isinstance(content, dict):
        return json.dumps(content)
    return content


@dataclass
class FakeRequest:
    body: dict[str, Any]
    path: str
    base_url: str | None


@dataclass
class FakeEndpoint:
    """Answers from ``script`` in arrival order (``repeat_last``: keep answering with the last one),
    or from ``responder(body)``. Running out of script answers 418 with a message saying so."""

    script: Sequence[Behaviour] = ()
    responder: Responder | None = None
    repeat_last: bool = False
    requests: list[FakeRequest] = field(default_factory=list)
    api_keys_seen: set[str] = field(default_factory=set, repr=False)
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def n_calls(self) -> int:
        return len(self.requests)

    def _next(self, body: dict[str, Any]) -> Behaviour:
        if self.responder is not None:
            return self.responder(body)
        index = len(self.requests) - 1
        if index < len(self.script):
            return self.script[index]
        if self.repeat_last and self.script:
            return self.script[-1]
        return Status(418, f"fake endpoint: script exhausted after {len(self.script)} answers")

    def factory(self, base_url: str | None, api_key: str) -> Any:
        """A ``ChatClient`` whose wire is this fake (signature of ``openai_factory``)."""
        self.api_keys_seen.add(api_key)

        async def wire(
            url: str, headers: Any, data: bytes, timeout: float
        ) -> tuple[int, dict, bytes]:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return await self._answer(url, data, base_url)
            finally:
                self.in_flight -= 1

        return ChatClient(base_url or FAKE_BASE_URL, api_key, wire=wire)

    async def _answer(self, url: str, data: bytes, base_url: str | None) -> tuple[int, dict, bytes]:
        body = json.loads(data) if data else {}
        self.requests.append(FakeRequest(body=body, path=urlsplit(url).path, base_url=base_url))
        behaviour = self._next(body)
        json_type = {"content-type": "application/json"}
        if isinstance(behaviour, Reply):
            if behaviour.delay_s:
                await asyncio.sleep(behaviour.delay_s)
            answer = completion_json(body.get("model", "fake"), behaviour, len(self.requests))
            return 200, json_type, json.dumps(answer).encode()
        if isinstance(behaviour, Status):
            error = {
                "error": {
                    "message": behaviour.message,
                    "type": "fake_error",
                    "code": behaviour.code,
                }
            }
            return (
                behaviour.code,
                {**json_type, **dict(behaviour.headers)},
                json.dumps(error).encode(),
            )
        if isinstance(behaviour, Timeout):
            raise TimeoutError("fake read timeout")
        if isinstance(behaviour, ConnectFail):
            raise ConnectionFailed("fake connection refused", sent=False)
        if isinstance(behaviour, Hang):
            await asyncio.sleep(behaviour.seconds)
            return 504, json_type, json.dumps({"error": {"message": "fake hang ended"}}).encode()
        if isinstance(behaviour, Garbage):
            return 200, {"content-type": behaviour.content_type}, behaviour.body.encode()
        raise TypeError(f"unknown fake behaviour {behaviour!r}")


def completion_json(model: str, reply: Reply, serial: int = 1) -> dict[str, Any]:
    """The body of a chat completion answering with ``reply`` (deterministic: fixed ``created``)."""
    body: dict[str, Any] = {
        "id": f"chatcmpl-fake-{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": _content_text(reply.content)},
                "finish_reason": reply.finish_reason,
            }
        ],
    }
    if reply.prompt_tokens is not None or reply.completion_tokens is not None:
        usage = {
            "prompt_tokens": reply.prompt_tokens or 0,
            "completion_tokens": reply.completion_tokens or 0,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if reply.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        body["usage"] = usage
    return body


#: a loopback endpoint makes its answer this long after a request arrives (at most its delay)
PREPARE_AFTER_S = 0.05


class LoopbackEndpoint:
    """A real OpenAI-compatible HTTP endpoint on loopback answering ``responder(body)`` (a ``Reply``;
    its own ``delay_s`` is ignored) ``delay_s`` seconds after the request arrived, each request in
    its own thread. The answer is made during the delay, ``PREPARE_AFTER_S`` after the request came
    (when a client has sent its requests and waits), not once the delay is over: a remote server's
    CPU is not the client's, and an answer made at the end would add its time to every call and
    meet the client's next requests on the cores both share. ``delay_s`` may be changed between
    calls; ``base_url`` is ready once constructed; ``close()`` (or leaving the ``with`` block)
    stops it."""

    def __init__(self, responder: Callable[[dict[str, Any]], Reply], delay_s: float = 0.0):
        self.delay_s, self.n_calls = delay_s, 0
        self.in_flight = self.max_in_flight = 0
        self._count = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # headers and body leave in one write (no Nagle / delayed-ACK stall)
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "loopback", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                delay = endpoint.delay_s
                due = time.monotonic() + delay
                with endpoint._count:
                    endpoint.n_calls += 1
                    endpoint.in_flight += 1
                    endpoint.max_in_flight = max(endpoint.max_in_flight, endpoint.in_flight)
                try:
                    time.sleep(min(delay, PREPARE_AFTER_S))
                    answer = completion_json(body.get("model", "loopback"), responder(body))
                    time.sleep(max(0.0, due - time.monotonic()))
                finally:
                    with endpoint._count:
                        endpoint.in_flight -= 1
                self._send(answer)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # many simultaneous connects overflow the default 5
            daemon_threads = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "LoopbackEndpoint":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


FAULTS = ("429", "5xx", "reset", "slow", "truncated", "empty")


class ChaosEndpoint(LoopbackEndpoint):
    """A loopback endpoint with seeded faults before each answer (see the module docstring)."""

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], Reply],
        fault_rate: float = 0.4,
        seed: int = 0,
        slow_s: float = 1.5,
    ):
        self.fault_rate, self.seed, self.slow_s = fault_rate, seed, slow_s
        self.injected: dict[str, int] = dict.fromkeys(FAULTS, 0)
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        super().__init__(responder)
        chaos = self

        class Handler(self._server.RequestHandlerClass):  # type: ignore[name-defined]
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw)
                fault = chaos._next_fault(hashlib.sha256(raw).hexdigest())
                if fault is None:
                    chaos.n_calls += 1
                    self._send(completion_json(body.get("model", "chaos"), responder(body)))
                    return
                if fault in ("429", "5xx"):
                    data = json.dumps({"error": {"message": f"chaos {fault}"}}).encode()
                    self.send_response(429 if fault == "429" else 503)
                    if fault == "429":
                        self.send_header("retry-after", "0")
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                elif fault == "reset":  # RST instead of an answer
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.close_connection = True
                    self.connection.close()
                elif fault == "slow":
                    time.sleep(chaos.slow_s)
                    self.close_connection = True
                elif fault == "truncated":
                    data = json.dumps(completion_json("chaos", responder(body))).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.close_connection = True
                else:  # a 200 that is not a chat completion
                    self._send({"id": "chaos", "object": "chat.completion", "choices": []})

        self._server.RequestHandlerClass = Handler

    def _next_fault(self, request_hash: str) -> str | None:
        """The fault for this attempt of this request: a request's faults are fixed by its hash."""
        with self._lock:
            attempt = self._seen.get(request_hash, 0)
            self._seen[request_hash] = attempt + 1
        digest = hashlib.sha256(f"{self.seed}:{request_hash}".encode()).digest()
        n_faults = 0 if digest[0] / 255 >= self.fault_rate else 1 + digest[1] % 3
        if attempt >= n_faults:
            return None
        fault = FAULTS[digest[2 + attempt] % len(FAULTS)]
        with self._lock:
            self.injected[fault] += 1
        return fault


# ---- scenario helpers -----------------------------------------------------------------------------


def schema_answer(body: dict[str, Any]) -> Reply:
    """A random answer valid for the request's ``response_format`` schema, drawn with a generator
    seeded by the request (the same request always gets the same answer, whatever the order), and
    the usage of about 4 UTF-8 bytes a token: a market-agnostic stand-in for a model."""
    import numpy as np

    from marketarena.llm.mock import _schema_of, random_instance

    raw = json.dumps(body, sort_keys=True).encode("utf-8")
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(raw).digest()[:8], "little"))
    answer = json.dumps(
        random_instance(_schema_of(body.get("response_format")), rng), sort_keys=True
    )
    return with_usage(body, answer)


def with_usage(
    body: dict[str, Any], answer: str | dict[str, Any], cached_tokens: int | None = None
) -> Reply:
    """``answer`` with the usage of about 4 UTF-8 bytes a token (the mock provider's count) and,
    when given, the prompt tokens served from the provider's prompt cache."""
    from marketarena.llm.response_cache import canonical_json

    text = answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)
    prompt = len(canonical_json(body.get("messages", [])).encode("utf-8"))
    return Reply(
        text,
        prompt_tokens=-(-prompt // 4),
        completion_tokens=-(-len(text.encode()) // 4),
        cached_tokens=cached_tokens,
    )


def prompt_caching(
    responder: Responder, min_tokens: int | None = None, block_tokens: int | None = None
) -> Responder:
    """``responder`` behind a provider's automatic prompt cache (``prompt_cache.PrefixCache``,
    OpenAI's rule unless ``min_tokens`` and ``block_tokens`` say otherwise): each ``Reply`` reports
    as ``cached_tokens`` the tokens of its prompt the cache serves, at most its ``prompt_tokens``."""
    from marketarena.llm import prompt_cache

    cache = prompt_cache.PrefixCache(
        prompt_cache.MIN_CACHED_PROMPT_TOKENS if min_tokens is None else min_tokens,
        prompt_cache.CACHE_BLOCK_TOKENS if block_tokens is None else block_tokens,
    )

    def answer(body: dict[str, Any]) -> Behaviour:
        reply = responder(body)
        cached = cache.serve(prompt_cache.prompt_text(body.get("messages", [])))
        if not isinstance(reply, Reply):
            return reply
        return replace(reply, cached_tokens=min(cached, reply.prompt_tokens or 0))

    return answer


def valid(answer: dict[str, Any] | BaseModel, **usage: Any) -> list[Behaviour]:
    return [Reply(answer, **usage)]


def invalid_then_valid(
    bad: str | dict[str, Any], good: dict[str, Any] | BaseModel, **usage: Any
) -> list[Behaviour]:
    return [Reply(bad, **usage), Reply(good, **usage)]


def always_invalid(bad: str | dict[str, Any], times: int, **usage: Any) -> list[Behaviour]:
    return [Reply(bad, **usage) for _ in range(times)]


def timeout_then(
    answer: dict[str, Any] | BaseModel, timeouts: int = 1, **usage: Any
) -> list[Behaviour]:
    return [Timeout() for _ in range(timeouts)] + [Reply(answer, **usage)]


def server_errors_then(
    answer: dict[str, Any] | BaseModel, errors: int = 1, code: int = 500, **usage: Any
) -> list[Behaviour]:
    return [Status(code) for _ in range(errors)] + [Reply(answer, **usage)]
