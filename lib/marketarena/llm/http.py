"""The HTTP of one chat completion: ``POST {base_url}/chat/completions``, the answer's JSON.

``ChatClient(base_url, api_key)`` sends a request body (plain JSON already: the transport builds
it) with the key as a bearer token and returns the answer as a dict. What can go wrong is said in
four exceptions the transport classifies (``transport.classify`` and ``Transport.send``):

- ``StatusError``: the endpoint answered with an HTTP error (its status, the message of an
  OpenAI-style error body or the start of the text, ``Retry-After`` in seconds);
- ``ConnectionFailed``: no complete answer came back; ``sent`` says whether the request may have
  reached the endpoint (a refused or unresolvable connection: no; a reset, a truncated body, a
  server that hung up: maybe, so it may bill it);
- ``TimeoutError``: no answer within the timeout;
- and ``BadResponse``: a 200 whose body is not a JSON object.

Why our own few lines and not the openai package's client: that client spent 2.8-3.1 ms of CPU a
request in its HTTP stack (httpx, its connection pool's bookkeeping, response models) against
0.53 ms for this one over aiohttp, measured side by side on 3,000 requests 32 at a time against
the loopback endpoint (``benchmarks/bench_llm_overhead.py --http``). With 32 requests in flight and a market to
simulate between them, that CPU was most of the gap between an LLM run and the endpoint's speed.
Nothing of the openai package was used beyond the request and its answer: the body is built,
retried, budgeted and parsed by us. As there, ``base_url`` None is OpenAI's API, or
``OPENAI_BASE_URL`` when set; a proxy comes from the usual environment variables
(``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``; credentials in its URL), looked up once per URL
(aiohttp's ``trust_env`` looks it up in a thread on every request); TLS certificates from certifi
when installed, else the system's.

The wire underneath is replaceable: ``ChatClient(..., wire=...)`` takes any async callable
``(url, headers, data, timeout) -> (status, headers, body)`` that raises ``ConnectionFailed`` or
``TimeoutError`` as aiohttp's wire does; ``llm.fake.FakeEndpoint`` plugs in an in-process one, so
the unit tests run this module's code, not an imitation of it.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Awaitable, Callable, Mapping

from marketarena.llm import jsontext

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"

Wire = Callable[
    [str, Mapping[str, str], bytes, float], Awaitable[tuple[int, Mapping[str, str], bytes]]
]


class StatusError(Exception):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, status: int, message: str, retry_after_s: float | None = None):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.message, self.retry_after_s = status, message, retry_after_s


class ConnectionFailed(Exception):
    """No complete answer came back; ``sent``: the request may have reached the endpoint."""

    def __init__(self, detail: str, sent: bool):
        super().__init__(detail)
        self.sent = sent


class BadResponse(Exception):
    """HTTP 200 whose body is not a chat completion."""


def resolve_base_url(base_url: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The URL requests go to: ``base_url``, else ``OPENAI_BASE_URL``, else OpenAI's API."""
    environ = os.environ if environ is None else environ
    return (base_url or environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL).rstrip("/")


def error_message(status: int, body: bytes) -> str:
    """An error body's message: OpenAI's ``{"error": {"message": ...}}``, else the text's start."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return data["message"]
    text = body.decode("utf-8", "replace").strip()
    return text[:500] if text else f"HTTP {status} with an empty body"


def retry_after(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in seconds (the HTTP-date form is ignored)."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class AiohttpWire:
    """The real wire: one aiohttp session (keep-alive connections, no limit of its own: the
    transport's semaphore per endpoint bounds the requests in flight), created in the event loop
    of its first request (a ``ChatClient``'s, whose one URL says whether it needs certificates)."""

    def __init__(self) -> None:
        self._session: Any = None
        self._proxies: dict[str, str | None] = {}

    async def __call__(
        self, url: str, headers: Mapping[str, str], data: bytes, timeout: float
    ) -> tuple[int, Mapping[str, str], bytes]:
        import aiohttp

        if url not in self._proxies:
            self._proxies[url] = env_proxy(url)
        if self._session is None:  # certificates only where TLS is spoken (17 ms to load them)
            tls = any(u and u.startswith("https:") for u in (url, self._proxies[url]))
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=_ssl_context() if tls else True)
            )
        try:
            async with self._session.post(
                url,
                data=data,
                headers=headers,
                allow_redirects=False,
                proxy=self._proxies[url],
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as response:
                return response.status, response.headers, await response.read()
        except aiohttp.ClientConnectorError as err:  # refused, unresolvable: nothing was sent
            raise ConnectionFailed(f"{type(err).__name__}: {err}", sent=False) from None
        except (aiohttp.ServerTimeoutError, asyncio.TimeoutError):
            raise TimeoutError("the request timed out") from None
        except aiohttp.ClientError as err:  # reset, truncated body, server hung up
            raise ConnectionFailed(f"{type(err).__name__}: {err}", sent=True) from None

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``<scheme>_proxy`` or ``all_proxy``, unless
    ``no_proxy`` covers its host), or None: the standard library's reading of them."""
    import urllib.request
    from urllib.parse import urlsplit

    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy is None or urllib.request.proxy_bypass_environment(parts.netloc, proxies):
        return None
    return proxy


def _ssl_context() -> Any:
    import ssl

    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class ChatClient:
    """Chat completions from one endpoint with one key (see the module docstring)."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str,
        wire: Wire | None = None,
        environ: Mapping[str, str] | None = None,
    ):
        self.url = resolve_base_url(base_url, environ) + "/chat/completions"
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self._wire = wire if wire is not None else AiohttpWire()

    async def complete(self, body: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        data = jsontext.dumps(body).encode("utf-8")  # a shared response_format as encoded once
        status, headers, answer = await self._wire(self.url, self._headers, data, timeout)
        if status >= 400:
            raise StatusError(status, error_message(status, answer), retry_after(headers))
        if status >= 300:
            raise StatusError(
                status, f"unexpected redirect or status ({error_message(status, answer)})"
            )
        try:
            parsed = json.loads(answer)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            text = answer.decode("utf-8", "replace")
            raise BadResponse(f"the endpoint's answer is not JSON: {text[:200]!r}")
        return parsed

    async def close(self) -> None:
        close = getattr(self._wire, "close", None)
        if close is not None:
            await close()
