"""LLMClient over the scripted fake endpoint: validation, re-asks, retries, errors, cache, budget."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest
from pydantic import BaseModel, Field

from marketarena.llm import (
    BudgetExceeded,
    CacheMiss,
    CostGuard,
    LLMClient,
    LLMEndpointError,
    LLMSettings,
    MissingAPIKey,
    ModelSpec,
)
from marketarena.llm import client as client_module
from marketarena.llm.cost import Bound
from marketarena.llm.fake import (
    ConnectFail,
    FakeEndpoint,
    Garbage,
    Hang,
    Reply,
    Status,
    always_invalid,
    invalid_then_valid,
    server_errors_then,
    timeout_then,
    valid,
)
from marketarena.llm.schema import response_format_for
from tests.llm.conftest import ask

SECRET = "sk-test-THIS-MUST-NEVER-LEAK-0123456789"
KEY_ENV = "MARKETARENA_TEST_KEY"


class Bid(BaseModel):
    qty: int = Field(ge=0)
    price: int = Field(ge=0)


class Bids(BaseModel):
    bids: dict[str, Bid]


GOOD = {"bids": {"item1": {"qty": 3, "price": 60}}}
BAD_TYPE = {"bids": {"item1": {"qty": "ten", "price": 60}}}
MESSAGES = [
    {"role": "system", "content": "You are a retailer."},
    {"role": "user", "content": "Bid for item1."},
]


def make_spec(**overrides: Any) -> ModelSpec:
    data: dict[str, Any] = {
        "alias": "fake",
        "model": "fake-model",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": KEY_ENV,
        "max_retries": 3,
        "timeout_s": 5,
        "price_in_per_mtok": 1.0,
        "price_out_per_mtok": 4.0,
    }
    data.update(overrides)
    return ModelSpec(**data)


def make_client(fake: FakeEndpoint, tmp_path, **kwargs: Any) -> LLMClient:
    settings = kwargs.pop("settings", None) or LLMSettings(cache_dir=tmp_path / "cache")
    kwargs.setdefault("environ", {KEY_ENV: SECRET})
    return LLMClient(
        settings, openai_factory=fake.factory, backoff_base_s=0.001, backoff_max_s=0.01, **kwargs
    )


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def spec() -> ModelSpec:
    return make_spec()


def test_valid_answer_gives_action_record_and_request(spec, tmp_path):
    fake = FakeEndpoint(valid(GOOD, prompt_tokens=1000, completion_tokens=500))
    client = make_client(fake, tmp_path)
    result = run(client.complete(spec, MESSAGES, Bids, context={"step": 2, "agent_id": "r1"}))

    assert result.action == Bids.model_validate(GOOD)
    assert result.error is None
    assert json.loads(result.raw_text) == GOOD
    rec = result.record
    assert (rec.model, rec.valid, rec.cached, rec.attempts, rec.retries) == (
        "fake",
        True,
        False,
        1,
        0,
    )
    assert (rec.prompt_tokens, rec.completion_tokens) == (1000, 500)
    assert rec.cost_usd == pytest.approx((1000 * 1.0 + 500 * 4.0) / 1e6)
    assert len(rec.request_hash) == 64
    assert rec.as_row()["agent_id"] == "r1" and rec.as_row()["step"] == 2

    body = fake.requests[0].body
    assert body["model"] == "fake-model" and body["temperature"] == 0 and body["max_tokens"] == 1024
    assert body["messages"] == MESSAGES
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Bids"
    # dict[str, Bid] is an open object: not strict-able under OpenAI's rules, sent non-strict
    assert fmt["json_schema"]["strict"] is False
    assert fake.api_keys_seen == {SECRET}


def test_invalid_then_valid_reasks_quoting_the_error(spec, tmp_path):
    fake = FakeEndpoint(invalid_then_valid(BAD_TYPE, GOOD))
    result = run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids))

    assert result.action == Bids.model_validate(GOOD)
    assert result.record.attempts == 2 and result.record.valid
    assert fake.n_calls == 2
    second = fake.requests[1].body["messages"]
    assert second[: len(MESSAGES)] == MESSAGES
    assert second[len(MESSAGES)] == {"role": "assistant", "content": json.dumps(BAD_TYPE)}
    reask = second[len(MESSAGES) + 1]
    assert reask["role"] == "user"
    assert "bids.item1.qty" in reask["content"] and "valid integer" in reask["content"]
    assert result.record.prompt_tokens == 100  # summed over both answers (50 each)


def test_exchanges_record_every_request_and_raw_answer(spec, tmp_path):
    """What the episode's llm_messages table is built from: per answer, the messages that request
    added to the conversation, the raw answer and why it was not accepted."""
    fake = FakeEndpoint(invalid_then_valid("I bid 3 units at 60", GOOD))
    record = ask(make_client(fake, tmp_path), spec, MESSAGES, Bids).record
    first, second = record.exchanges
    assert (first["reask"], second["reask"]) == (0, 1)
    assert json.loads(first["messages"]) == MESSAGES  # the whole prompt of the first ask
    assert first["answer"] == "I bid 3 units at 60" and "not valid JSON" in first["error"]
    sent = fake.requests[1].body["messages"]
    assert json.loads(second["messages"]) == sent[len(MESSAGES) :]  # what the re-ask added
    assert json.loads(second["answer"]) == GOOD and second["error"] == ""
    assert "exchanges" not in record.as_row()  # not a column of llm_calls
    # a replay from the cache records the same exchanges
    again = run(make_client(FakeEndpoint([]), tmp_path).complete(spec, MESSAGES, Bids)).record
    assert again.cached and again.exchanges == record.exchanges


def test_exchanges_cut_long_texts_and_say_so(spec, tmp_path):
    from marketarena.llm.client import LOG_TEXT_CHARS

    long_prompt = [{"role": "user", "content": "x" * (LOG_TEXT_CHARS + 10)}]
    fake = FakeEndpoint(valid(GOOD))
    record = run(make_client(fake, tmp_path).complete(spec, long_prompt, Bids)).record
    logged = json.loads(record.exchanges[0]["messages"])[0]["content"]
    assert logged.startswith("x" * LOG_TEXT_CHARS) and logged.endswith(
        "10 more characters not logged]"
    )
    assert fake.requests[0].body["messages"] == long_prompt  # the model got all of it


def test_not_json_is_reasked_with_the_json_error(spec, tmp_path):
    fake = FakeEndpoint([Reply("I bid 3 units at 60"), Reply(GOOD)])
    result = run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids))
    assert result.record.valid and result.record.attempts == 2
    assert "not valid JSON" in fake.requests[1].body["messages"][-1]["content"]


def test_always_invalid_gives_none_after_max_reasks(tmp_path):
    spec = make_spec(max_reasks=2)
    fake = FakeEndpoint(always_invalid("not json at all", times=10))
    result = run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids))

    assert result.action is None
    assert result.record.valid is False
    assert result.record.attempts == 1 + spec.max_reasks == 3
    assert fake.n_calls == 3
    assert result.raw_text == "not json at all"
    assert result.error and "not valid JSON" in result.error


def test_truncated_answer_says_so(tmp_path):
    spec = make_spec(max_reasks=0)
    fake = FakeEndpoint([Reply('{"bids": {"item1": {"qty": 3', finish_reason="length")])
    result = run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids))
    assert result.action is None and "cut off at max_tokens" in result.error


def test_timeout_then_success_is_retried(spec, tmp_path):
    fake = FakeEndpoint(timeout_then(GOOD))
    result = run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids))
    assert result.record.valid and result.record.retries == 1 and result.record.attempts == 1
    assert fake.n_calls == 2


def test_own_per_call_timeout_trips_on_a_hanging_endpoint(tmp_path):
    spec = make_spec(timeout_s=0.05)
    fake = FakeEndpoint([Hang(5.0), Reply(GOOD)])
    result = run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids))
    assert result.record.valid and result.record.retries == 1


def test_500_then_ok_and_connection_error_then_ok(spec, tmp_path):
    fake = FakeEndpoint(server_errors_then(GOOD, errors=2, code=500))
    assert run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids)).record.retries == 2

    fake = FakeEndpoint([Status(429, headers=(("retry-after", "0"),)), ConnectFail(), Reply(GOOD)])
    result = run(make_client(fake, tmp_path / "b").complete(spec, MESSAGES, Bids))
    assert result.record.valid and result.record.retries == 2


def test_500s_exhausted_raise_endpoint_error_without_the_key(tmp_path, caplog):
    spec = make_spec(max_retries=2)
    leaky = f"upstream said: Incorrect API key provided: {SECRET}"
    fake = FakeEndpoint([Status(500, leaky)], repeat_last=True)
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMEndpointError) as info:
        run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids, context={"step": 4}))

    err = info.value
    message = str(err)
    assert fake.n_calls == 3  # 1 + max_retries
    assert "'fake'" in message and "http://127.0.0.1:9/v1" in message and "500" in message
    assert "step=4" in message
    assert (err.alias, err.base_url, err.status) == ("fake", "http://127.0.0.1:9/v1", 500)
    assert SECRET not in message and SECRET[:12] not in message
    assert SECRET not in caplog.text and SECRET[:12] not in caplog.text
    assert err.record.retries == 2
    assert not list((tmp_path / "cache").rglob("*.json"))  # failures are never cached


def test_auth_failure_is_not_retried_and_not_quoted(tmp_path):
    fake = FakeEndpoint([Status(401, f"Incorrect API key provided: {SECRET[:8]}****{SECRET[-4:]}")])
    with pytest.raises(LLMEndpointError) as info:
        run(make_client(fake, tmp_path).complete(make_spec(), MESSAGES, Bids))
    assert fake.n_calls == 1
    assert info.value.status == 401 and "not retryable" in str(info.value)
    assert SECRET[:8] not in str(info.value) and SECRET[-4:] not in str(info.value)


def test_garbage_200_is_retried_then_reported(tmp_path):
    fake = FakeEndpoint([Garbage()], repeat_last=True)
    with pytest.raises(LLMEndpointError, match="bad response"):
        run(make_client(fake, tmp_path).complete(make_spec(max_retries=1), MESSAGES, Bids))
    assert fake.n_calls == 2


def test_missing_key_names_the_variable_and_is_lazy(spec, tmp_path):
    fake = FakeEndpoint(valid(GOOD))
    with pytest.raises(MissingAPIKey, match=KEY_ENV):
        run(make_client(fake, tmp_path, environ={}).complete(spec, MESSAGES, Bids))
    assert fake.n_calls == 0
    # with the answer cached, no key is needed at all (offline replay)
    ask(make_client(fake, tmp_path), spec, MESSAGES, Bids)
    replay = run(make_client(fake, tmp_path, environ={}).complete(spec, MESSAGES, Bids))
    assert replay.record.cached and fake.n_calls == 1


def test_no_key_env_sends_a_dummy_key_not_the_environment_one(tmp_path):
    spec = make_spec(api_key_env=None)
    fake = FakeEndpoint(valid(GOOD))
    run(
        make_client(fake, tmp_path, environ={"OPENAI_API_KEY": SECRET}).complete(
            spec, MESSAGES, Bids
        )
    )
    assert SECRET not in fake.api_keys_seen and len(fake.api_keys_seen) == 1


def test_second_identical_call_is_served_from_cache(spec, tmp_path):
    fake = FakeEndpoint(invalid_then_valid(BAD_TYPE, GOOD, prompt_tokens=70, completion_tokens=30))
    first = ask(make_client(fake, tmp_path), spec, MESSAGES, Bids)
    calls = fake.n_calls

    replay_client = make_client(fake, tmp_path)
    second = run(replay_client.complete(spec, MESSAGES, Bids))
    assert fake.n_calls == calls == 2  # zero transport calls on replay
    assert (
        second.action == first.action
        and second.raw_text == first.raw_text
        and second.error == first.error
    )
    r1, r2 = first.record, second.record
    assert (r2.request_hash, r2.attempts, r2.valid) == (r1.request_hash, r1.attempts, r1.valid)
    assert (
        (r2.prompt_tokens, r2.completion_tokens)
        == (r1.prompt_tokens, r1.completion_tokens)
        == (140, 60)
    )
    assert r2.cached and not r1.cached
    assert r2.cost_usd == 0 and r1.cost_usd > 0 and r2.latency_s == 0
    assert replay_client.cache.stats.hits == 2 and replay_client.cache.stats.misses == 0


def cache_files(client: LLMClient) -> int:
    return sum(1 for _ in client.cache.cache_dir.rglob("*.json"))


def eventually(condition, within_s: float = 10.0) -> bool:
    """Whether ``condition()`` holds within ``within_s`` (the writer thread's work is awaited
    by polling, not by a fixed sleep)."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_an_answer_whose_write_is_held_is_served_from_memory(spec, tmp_path, monkeypatch):
    """While its cache write waits, an identical request gets the answer from memory (a hit, no
    HTTP), and the wait ``store_answers`` returns ends once the file is there."""
    monkeypatch.setattr(client_module, "CACHE_WRITE_HOLD_S", 60.0)
    fake = FakeEndpoint(valid(GOOD))
    client = make_client(fake, tmp_path)

    async def twice():
        first = await client.complete(spec, MESSAGES, Bids)
        on_disk = cache_files(client)
        second = await client.complete(spec, MESSAGES, Bids)
        await asyncio.to_thread(client.store_answers())
        return first, on_disk, second, cache_files(client)

    first, on_disk_before, second, on_disk_after = run(twice())
    assert on_disk_before == 0  # held: no request has left since the answer came
    assert second.record.cached and second.action == first.action and fake.n_calls == 1
    assert client.cache.stats.hits == 1 and on_disk_after == 1


def test_cache_writes_wait_for_the_next_request_to_leave(spec, tmp_path, monkeypatch):
    """An answer's write begins when the next request is sent (the market's work on the answers
    comes first), not before: the first answer is stored once the second request has left,
    while the second answer, after which nothing was sent, is still held. (The answers come in a
    later turn of the event loop than their requests, as over HTTP.)"""
    monkeypatch.setattr(client_module, "CACHE_WRITE_HOLD_S", 60.0)
    fake = FakeEndpoint([Reply(GOOD, delay_s=0.01)], repeat_last=True)
    client = make_client(fake, tmp_path)

    async def two_calls():
        await client.complete(spec, MESSAGES, Bids)
        held = cache_files(client)
        await client.complete(spec, MESSAGES, Bids, sample=1)
        return held, await asyncio.to_thread(eventually, lambda: cache_files(client) == 1)

    held, first_stored = run(two_calls())
    assert held == 0 and first_stored
    assert not eventually(lambda: cache_files(client) == 2, within_s=0.3)  # the second is held
    run(client.aclose())
    assert cache_files(client) == 2


def test_held_writes_go_a_moment_after_the_turns_requests_have_all_left(
    spec, tmp_path, monkeypatch
):
    """The requests of one event-loop turn (a decision point's seats) all leave before the held
    writes are let go, once, ``CACHE_WRITE_AFTER_SEND_S`` after that turn: the writer's file work
    then overlaps the wait for the endpoint, not the sends (released at the first send, it took
    the GIL between them) nor the moments after them (released at the end of their turn, it
    delayed the endpoint's answers by 3 ms a decision point)."""
    monkeypatch.setattr(client_module, "CACHE_WRITE_HOLD_S", 60.0)
    # wide enough that a loaded machine still answers the fake endpoint within it
    monkeypatch.setattr(client_module, "CACHE_WRITE_AFTER_SEND_S", 0.25)
    releases_at_send = []

    def responder(body):
        releases_at_send.append(client._releases)
        return Reply(GOOD)

    fake = FakeEndpoint(responder=responder)
    client = make_client(fake, tmp_path)

    async def one_then_three():
        seen = []
        await client.complete(spec, MESSAGES, Bids)
        seen.append(client._releases)  # answered at once: its release is still to come
        await asyncio.sleep(0.5)
        seen.append(client._releases)
        await asyncio.gather(*(client.complete(spec, MESSAGES, Bids, sample=k) for k in (1, 2, 3)))
        seen.append(client._releases)  # the turn's release is still to come
        await asyncio.sleep(0.5)
        seen.append(client._releases)
        return seen, await asyncio.to_thread(eventually, lambda: cache_files(client) == 4)

    seen, all_stored = run(one_then_three())
    first, *turn = releases_at_send
    assert turn == [first + 1] * 3  # one release after the first send; none within the turn
    assert seen == [first, first + 1, first + 1, first + 2]
    assert all_stored
    run(client.aclose())


def test_a_client_never_closed_still_stores_its_answers(spec, tmp_path):
    fake = FakeEndpoint(valid(GOOD))
    client = make_client(fake, tmp_path)
    run(client.complete(spec, MESSAGES, Bids))
    assert eventually(lambda: cache_files(client) == 1)  # after CACHE_WRITE_HOLD_S at most
    replay = run(make_client(FakeEndpoint([]), tmp_path).complete(spec, MESSAGES, Bids))
    assert replay.record.cached


def test_invalid_answers_are_cached_so_replay_takes_the_same_path(tmp_path):
    spec = make_spec(max_reasks=1)
    fake = FakeEndpoint(always_invalid("nope", times=2))
    first = ask(make_client(fake, tmp_path), spec, MESSAGES, Bids)
    second = run(make_client(fake, tmp_path).complete(spec, MESSAGES, Bids))
    assert fake.n_calls == 2
    assert first.action is None and second.action is None
    assert (second.error, second.record.attempts, second.record.cached) == (first.error, 2, True)


def test_cache_key_depends_on_sample_schema_and_sampling(spec, tmp_path):
    fake = FakeEndpoint([Reply(GOOD)], repeat_last=True)
    client = make_client(fake, tmp_path)
    hashes = {
        run(client.complete(spec, MESSAGES, Bids)).record.request_hash,
        run(client.complete(spec, MESSAGES, Bids, sample=1)).record.request_hash,
        run(client.complete(make_spec(temperature=0.7), MESSAGES, Bids)).record.request_hash,
        run(
            client.complete(make_spec(structured_output="json_object"), MESSAGES, Bids)
        ).record.request_hash,
    }
    assert len(hashes) == 4 and fake.n_calls == 4
    # the alias is not part of the key, nor how the endpoint is spelled...
    renamed = make_spec(
        alias="other", base_url=spec.base_url.replace("127.0.0.1", "LOCALHOST") + "/"
    )
    assert run(client.complete(renamed, MESSAGES, Bids)).record.cached and fake.n_calls == 4
    # ...but the endpoint is: another server under the same model name is asked, not replayed
    moved = make_spec(base_url="http://127.0.0.1:10/v1")
    assert not run(client.complete(moved, MESSAGES, Bids)).record.cached and fake.n_calls == 5


def test_cache_only_mode_refuses_a_miss(spec, tmp_path):
    fake = FakeEndpoint(valid(GOOD))
    settings = LLMSettings(cache_dir=tmp_path / "cache", cache_only=True)
    with pytest.raises(CacheMiss, match="cache_only"):
        run(make_client(fake, tmp_path, settings=settings).complete(spec, MESSAGES, Bids))
    assert fake.n_calls == 0


def test_cost_guard_stops_before_exceeding_the_budget(tmp_path):
    # estimate per request: ceil(prompt chars / 4) tokens in at $1/Mtok + 1000 tokens out at $10/Mtok
    spec = make_spec(max_tokens=1000, price_in_per_mtok=1.0, price_out_per_mtok=10.0)
    guard = CostGuard(max_cost_usd=0.025)
    fake = FakeEndpoint([Reply(GOOD, prompt_tokens=200, completion_tokens=900)], repeat_last=True)
    client = make_client(fake, tmp_path, cost_guard=guard)
    ok = 0
    with pytest.raises(BudgetExceeded) as info:
        for i in range(10):
            run(client.complete(spec, MESSAGES, Bids, sample=i))
            ok += 1
    assert ok == 2 and fake.n_calls == 2  # the third request was refused before it was sent
    assert guard.spent_usd <= guard.max_cost_usd
    assert guard.spent_usd == pytest.approx(2 * (200 * 1.0 + 900 * 10.0) / 1e6)
    assert info.value.limit_usd == 0.025 and guard.tripped
    # cached answers still flow once the budget is spent (replay of the finished part)
    assert run(client.complete(spec, MESSAGES, Bids, sample=0)).record.cached


def test_cost_guard_holds_under_concurrency(tmp_path):
    spec = make_spec(max_tokens=1000, price_out_per_mtok=10.0, max_concurrency=8)
    guard = CostGuard(max_cost_usd=0.05)  # room for at most 4 full estimates (~0.0100 each)
    fake = FakeEndpoint([Reply(GOOD, completion_tokens=1000, delay_s=0.01)], repeat_last=True)
    client = make_client(fake, tmp_path, cost_guard=guard)

    async def many():
        return await asyncio.gather(
            *(client.complete(spec, MESSAGES, Bids, sample=i) for i in range(12)),
            return_exceptions=True,
        )

    results = run(many())
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    assert refused and guard.spent_usd <= guard.max_cost_usd
    assert fake.n_calls == len(results) - len(refused)


def test_concurrency_is_limited_per_endpoint(tmp_path):
    spec = make_spec(max_concurrency=2)
    in_flight = peak = 0

    class Counting(FakeEndpoint):
        pass

    fake = FakeEndpoint([Reply(GOOD, delay_s=0.02)], repeat_last=True)
    original = fake._next

    def counting_next(body):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        asyncio.get_running_loop().call_later(0.015, _done)
        return original(body)

    def _done():
        nonlocal in_flight
        in_flight -= 1

    fake._next = counting_next
    client = make_client(fake, tmp_path)

    async def many():
        return await asyncio.gather(
            *(client.complete(spec, MESSAGES, Bids, sample=i) for i in range(6))
        )

    results = run(many())
    assert all(r.record.valid for r in results) and fake.n_calls == 6
    assert peak == 2


def test_structured_output_modes(tmp_path):
    fake = FakeEndpoint([Reply(GOOD)], repeat_last=True)
    client = make_client(fake, tmp_path)
    run(client.complete(make_spec(structured_output="json_object"), MESSAGES, Bids))
    run(client.complete(make_spec(structured_output="none"), MESSAGES, Bids))
    run(client.complete(make_spec(base_url=None, api_key_env=KEY_ENV), MESSAGES, Bid))
    assert fake.requests[0].body["response_format"] == {"type": "json_object"}
    assert "response_format" not in fake.requests[1].body
    openai_body = fake.requests[2].body  # OpenAI itself: strict schema, max_completion_tokens
    assert openai_body["response_format"]["json_schema"]["strict"] is True
    assert openai_body["max_completion_tokens"] == 1024 and "max_tokens" not in openai_body


def test_client_survives_several_event_loops(spec, tmp_path):
    fake = FakeEndpoint([Reply(GOOD)], repeat_last=True)
    client = make_client(fake, tmp_path)
    for i in range(3):  # e.g. one asyncio.run per episode
        assert run(client.complete(spec, MESSAGES, Bids, sample=i)).record.valid
    assert client.usage().calls == 3 and client.totals["fake"].cost_usd > 0


def test_records_reach_the_on_record_hook(spec, tmp_path):
    seen = []
    fake = FakeEndpoint(valid(GOOD))
    run(
        make_client(fake, tmp_path, on_record=seen.append).complete(
            spec, MESSAGES, Bids, context={"step": 0}
        )
    )
    assert len(seen) == 1 and seen[0].context == {"step": 0}


def test_a_call_cancelled_in_flight_is_charged_its_bound(spec, tmp_path):
    guard = CostGuard(max_cost_usd=1.0)
    fake = FakeEndpoint([Hang(5.0)])
    client = make_client(fake, tmp_path, cost_guard=guard)

    async def cancel_midway():
        task = asyncio.ensure_future(client.complete(spec, MESSAGES, Bids))
        while fake.n_calls == 0:
            await asyncio.sleep(0.001)
        assert guard.reserved_usd > 0
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cancel_midway())
    # the request reached the endpoint, which may bill it: the bound is charged, nothing dropped
    bound = Bound.of(spec, MESSAGES, response_format_for(Bids, spec.structured_output))
    assert guard.reserved_usd == 0 and guard.spent_usd == pytest.approx(bound.usd)


def test_identical_concurrent_requests_share_one_answer(tmp_path):
    spec = make_spec(temperature=1.0)
    fake = FakeEndpoint([Reply(GOOD, delay_s=0.02), Reply({"bids": {}})])
    client = make_client(fake, tmp_path)

    async def both():
        return await asyncio.gather(*(client.complete(spec, MESSAGES, Bids) for _ in range(2)))

    a, b = run(both())
    assert fake.n_calls == 1  # the second waited for the first instead of sampling anew
    assert a.raw_text == b.raw_text and a.record.request_hash == b.record.request_hash
    assert sorted([a.record.cached, b.record.cached]) == [False, True]
    assert a.record.cost_usd + b.record.cost_usd == pytest.approx(
        max(a.record.cost_usd, b.record.cost_usd)
    )
