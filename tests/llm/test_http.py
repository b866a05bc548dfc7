"""``llm.http.ChatClient`` over real HTTP (aiohttp's wire against a stdlib server on loopback):
what is sent, and how every kind of answer and failure comes back. The retry, budget and chaos
behaviour on top of it is tested in ``test_llm_client.py``, ``test_reliability.py`` and
``test_chaos_http.py``."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import BaseModel

from marketarena.llm import LLMClient, LLMSettings
from marketarena.llm.errors import LLMEndpointError
from marketarena.llm.fake import LoopbackEndpoint, Reply
from marketarena.llm.http import (
    OPENAI_DEFAULT_URL,
    BadResponse,
    ChatClient,
    ConnectionFailed,
    StatusError,
    resolve_base_url,
)
from marketarena.llm.spec import ModelSpec


class Quote(BaseModel):
    quote: int


class Server:
    """Answers every POST with ``(status, headers, body)`` from ``answer``; records requests."""

    def __init__(self, answer):
        self.seen: list[tuple[str, dict, bytes]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("content-length", 0)))
                server.seen.append((self.path, dict(self.headers), data))
                status, headers, body = answer(data)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


def complete(base_url, body, timeout=5.0, api_key="sk-test"):
    async def go():
        client = ChatClient(base_url, api_key)
        try:
            return await client.complete(body, timeout)
        finally:
            await client.close()

    return asyncio.run(go())


def test_the_body_goes_as_json_with_the_key_as_bearer_and_the_answer_comes_back_as_a_dict():
    answer = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": '{"q": 1}'}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    server = Server(
        lambda data: (200, {"content-type": "application/json"}, json.dumps(answer).encode())
    )
    try:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "prix: 5 €"}],
            "max_tokens": 9,
        }
        assert complete(server.base_url, body) == answer
    finally:
        server.close()
    path, headers, data = server.seen[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-test"
    assert json.loads(data) == body  # UTF-8 JSON, nothing added or dropped


def test_an_error_status_brings_its_message_and_retry_after():
    error = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode()
    server = Server(lambda data: (429, {"Retry-After": "7"}, error))
    try:
        with pytest.raises(StatusError) as caught:
            complete(server.base_url, {"model": "m", "messages": []})
    finally:
        server.close()
    assert (caught.value.status, caught.value.message, caught.value.retry_after_s) == (
        429,
        "slow down",
        7.0,
    )


def test_an_error_body_that_is_not_json_is_quoted_in_part():
    server = Server(
        lambda data: (502, {"content-type": "text/html"}, b"<html>bad gateway" + b"x" * 2000)
    )
    try:
        with pytest.raises(StatusError) as caught:
            complete(server.base_url, {"model": "m", "messages": []})
    finally:
        server.close()
    assert caught.value.status == 502 and caught.value.message.startswith("<html>bad gateway")
    assert len(caught.value.message) == 500


def test_a_200_that_is_not_json_is_a_bad_response():
    server = Server(lambda data: (200, {"content-type": "text/html"}, b"<html>login page</html>"))
    try:
        with pytest.raises(BadResponse, match="login page"):
            complete(server.base_url, {"model": "m", "messages": []})
    finally:
        server.close()


def test_a_redirect_is_not_followed():
    server = Server(lambda data: (307, {"Location": "http://127.0.0.1:1/elsewhere"}, b""))
    try:
        with pytest.raises(StatusError) as caught:
            complete(server.base_url, {"model": "m", "messages": []})
    finally:
        server.close()
    assert caught.value.status == 307 and len(server.seen) == 1


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connection_says_nothing_was_sent():
    with pytest.raises(ConnectionFailed) as caught:
        complete(f"http://127.0.0.1:{closed_port()}/v1", {"model": "m", "messages": []})
    assert caught.value.sent is False


def test_a_server_that_hangs_up_may_have_served_the_request():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def hang_up():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.close()  # read the request, answer nothing

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        with pytest.raises(ConnectionFailed) as caught:
            complete(
                f"http://127.0.0.1:{listener.getsockname()[1]}/v1", {"model": "m", "messages": []}
            )
    finally:
        listener.close()
    assert caught.value.sent is True


def test_no_answer_within_the_timeout_is_a_timeout():
    def slow(data):
        time.sleep(1.0)
        return 200, {}, b"{}"

    server = Server(slow)
    try:
        with pytest.raises(TimeoutError):
            complete(server.base_url, {"model": "m", "messages": []}, timeout=0.2)
    finally:
        server.close()


def test_base_url_none_is_openai_or_OPENAI_BASE_URL():
    assert resolve_base_url(None, {}) == OPENAI_DEFAULT_URL
    assert resolve_base_url(None, {"OPENAI_BASE_URL": "http://h:1/v1/"}) == "http://h:1/v1"
    assert resolve_base_url("http://x/v1", {"OPENAI_BASE_URL": "http://h:1/v1"}) == "http://x/v1"


def test_a_refused_connection_is_retried_and_releases_its_reservations(tmp_path):
    """Through the whole client: nothing reached the endpoint, so nothing is charged."""
    spec = ModelSpec(
        alias="m",
        model="m",
        base_url=f"http://127.0.0.1:{closed_port()}/v1",
        api_key_env=None,
        max_retries=2,
        price_in_per_mtok=1000.0,
        price_out_per_mtok=1000.0,
    )
    client = LLMClient(
        LLMSettings(cache_dir=tmp_path / "cache", max_cost_usd=5.0),
        backoff_base_s=0.0,
        backoff_max_s=0.0,
    )

    async def go():
        try:
            await client.complete(spec, [{"role": "user", "content": "hi"}], Quote)
        finally:
            await client.aclose()

    with pytest.raises(LLMEndpointError, match="last status connection after 3 requests"):
        asyncio.run(go())
    assert client.cost_guard.spent_usd == 0.0


def test_the_proxy_comes_from_the_environment_unless_no_proxy_covers_the_host(monkeypatch):
    from marketarena.llm.http import env_proxy

    for name in (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    assert env_proxy("https://api.example.com/v1/chat/completions") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.local:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.internal")
    assert env_proxy("https://api.example.com/v1/chat/completions") == "http://proxy.local:3128"
    assert env_proxy("https://llm.internal/v1/chat/completions") is None
    assert env_proxy("http://localhost:8080/v1/chat/completions") is None
    assert env_proxy("http://api.example.com/v1/chat/completions") is None  # no http proxy set


def test_requests_go_through_the_proxy_the_environment_names(monkeypatch):
    """A plain HTTP proxy (our stdlib server) receives the request with the absolute URL."""
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"}}]}
    proxy = Server(
        lambda data: (200, {"content-type": "application/json"}, json.dumps(answer).encode())
    )
    for name in ("no_proxy", "NO_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))
    try:
        assert complete("http://llm.example.invalid/v1", {"model": "m", "messages": []}) == answer
    finally:
        proxy.close()
    assert proxy.seen[0][0] == "http://llm.example.invalid/v1/chat/completions"


def test_the_loopback_endpoint_answers_when_its_delay_ends_with_the_answer_made_meanwhile():
    """The benchmarks' endpoint: the answer is made during the delay (a remote server's CPU is not
    the client's) and sent when the delay since the request's arrival ends, never before; a slow
    responder (1 s here) does not lengthen the call. Margins of most of a second: an ordering, not
    a speed, is checked."""
    made = []

    def slow(body):
        made.append(time.monotonic())
        time.sleep(1.0)
        return Reply({"q": 1})

    with LoopbackEndpoint(slow, delay_s=1.5) as endpoint:
        start = time.monotonic()
        answer = complete(endpoint.base_url, {"model": "m", "messages": []})
        took = time.monotonic() - start
    assert json.loads(answer["choices"][0]["message"]["content"]) == {"q": 1}
    assert made[0] - start < 0.8  # made early in the delay, not once it is over
    assert 1.5 <= took < 2.3  # sent when the delay ends (made after it: 2.5 s)
