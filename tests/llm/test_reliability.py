"""Issue 16, the LLM layer: faults are never scored as answers, the budget holds (bounds, bad usage,
overruns, resumes, several processes), secrets stay out of messages, re-asks stay small, and the
mock provider answers offline."""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing as mp

import pytest
from pydantic import BaseModel, Field, ValidationError

from marketarena.config import ParamsError, parse_params
from marketarena.core.types import RunAborted
from marketarena.llm import (
    BudgetExceeded,
    CacheError,
    CostGuard,
    InvalidAPIKey,
    LLMClient,
    LLMLayerError,
    LLMSettings,
    ModelSpec,
    SpendLedger,
)
from marketarena.llm.cost import Bound, charge_for, prompt_token_bound
from marketarena.llm.errors import redact
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.llm.ledger import read_ledger
from marketarena.llm.mock import random_instance
from marketarena.llm.schema import REASK_ANSWER_CHARS, response_format_for, strict_json_schema
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import simulate
from tests.llm.conftest import ask

KEY_ENV = "MARKETARENA_TEST_KEY"
SECRET = "sk-test-reliability-0123456789abcdef"


class Quote(BaseModel):
    price: float = Field(ge=0, le=10)


MESSAGES = [
    {"role": "system", "content": "Set a price. Ünïcode costs bytes: €€€"},
    {"role": "user", "content": 'Answer {"price": x}.'},
]


def spec(**over) -> ModelSpec:
    data = {
        "alias": "fake",
        "model": "fake-model",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": KEY_ENV,
        "max_retries": 1,
        "max_reasks": 1,
        "max_tokens": 50,
        "price_in_per_mtok": 1000.0,
        "price_out_per_mtok": 1000.0,
    }
    data.update(over)
    return ModelSpec(**data)


def bound_of(s: ModelSpec) -> Bound:
    """The bound of the one request these tests send (MESSAGES, answered as a Quote)."""
    return Bound.of(s, MESSAGES, response_format_for(Quote, s.structured_output))


def client(fake, tmp_path, guard=None, environ=None, **settings) -> LLMClient:
    return LLMClient(
        LLMSettings(cache_dir=tmp_path / "cache", **settings),
        openai_factory=fake.factory,
        cost_guard=guard,
        environ=environ if environ is not None else {KEY_ENV: SECRET},
        backoff_base_s=0.001,
        backoff_max_s=0.01,
    )


def run(coro):
    return asyncio.run(coro)


# ------------------------------------------------------------------ the budget
def test_the_bound_covers_any_byte_level_tokenizer():
    bound = prompt_token_bound(MESSAGES, None)
    text = "".join(m["content"] for m in MESSAGES)
    assert bound >= len(text.encode("utf-8")) > len(text) // 4
    b = Bound.of(spec(), MESSAGES, None)
    assert b.completion_tokens == 50 and b.usd == pytest.approx((b.prompt_tokens + 50) * 1000 / 1e6)


def test_an_endpoint_counting_more_tokens_than_chars_over_4_cannot_pass_the_cap(tmp_path):
    # the old guard reserved chars/4 + max_tokens; this endpoint reports every byte as a token
    s = spec()
    bound = bound_of(s)
    fake = FakeEndpoint(
        responder=lambda body: Reply(
            {"price": 1.0}, prompt_tokens=bound.prompt_tokens, completion_tokens=50
        )
    )
    guard = CostGuard(max_cost_usd=1.0)
    c = client(fake, tmp_path, guard)
    with pytest.raises(BudgetExceeded):
        for i in range(1000):
            run(c.complete(s, MESSAGES, Quote, sample=i))
    assert guard.spent_usd <= 1.0
    assert fake.n_calls == int(1.0 // bound.usd)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -100000, "completion_tokens": -5},
        {"prompt_tokens": "12", "completion_tokens": 3},
        {"prompt_tokens": True, "completion_tokens": 3},
        {"prompt_tokens": 10**12, "completion_tokens": 1},
        None,
    ],
)
def test_unusable_usage_is_charged_the_bound_never_less(usage):
    s = spec()
    bound = Bound.of(s, MESSAGES, None)
    charge = charge_for(s, usage, bound)
    assert not charge.trusted and charge.usd == bound.usd > 0


def test_an_overrun_is_charged_the_bound_recorded_and_stops_the_next_call(tmp_path):
    s = spec()
    bound = bound_of(s)
    over = bound.prompt_tokens * 3  # the audit's 3x: the claim costs more than the bound
    fake = FakeEndpoint(
        responder=lambda body: Reply({"price": 1.0}, prompt_tokens=over, completion_tokens=50)
    )
    ledger = SpendLedger(tmp_path / "spend.json")
    guard = CostGuard(max_cost_usd=100.0, ledger=ledger)
    c = client(fake, tmp_path, guard)
    result = run(c.complete(s, MESSAGES, Quote, sample=0))
    assert result.record.prompt_tokens == over  # the tokens as reported...
    assert result.record.cost_usd == pytest.approx(
        bound.usd
    )  # ...but never charged beyond the bound
    with pytest.raises(BudgetExceeded, match="more tokens than the request's upper bound"):
        run(c.complete(s, MESSAGES, Quote, sample=1))
    assert fake.n_calls == 1
    state = read_ledger(tmp_path / "spend.json")
    assert state["spent_usd"] == pytest.approx(bound.usd)
    overrun = state["overruns"][0]
    assert overrun["charged_usd"] == pytest.approx(overrun["reserved_usd"])
    assert overrun["claimed_usd"] > overrun["charged_usd"]


@pytest.mark.parametrize("factor, in_flight", [(3, 1), (9, 3)])
def test_over_reported_usage_never_carries_the_spend_past_the_limit(tmp_path, factor, in_flight):
    """The audit's $5.81 against 3 (3x, one at a time) and $52.28 against 30 (9x, 3 in flight)."""
    s = spec(max_concurrency=in_flight)
    bound = bound_of(s)
    fake = FakeEndpoint(
        responder=lambda body: Reply(
            {"price": 1.0},
            prompt_tokens=factor * bound.prompt_tokens,
            completion_tokens=50,
            delay_s=0.01,
        )
    )
    limit = 2.5 * bound.usd  # the old code charged the first claim alone 3 or 9 bounds
    guard = CostGuard(max_cost_usd=limit, ledger=SpendLedger(tmp_path / "spend.json"))
    c = client(fake, tmp_path, guard)

    async def many():
        return await asyncio.gather(
            *(c.complete(s, MESSAGES, Quote, sample=i) for i in range(40)), return_exceptions=True
        )

    results = run(many())
    assert any(isinstance(r, BudgetExceeded) for r in results)
    assert guard.spent_usd <= limit
    assert 1 <= fake.n_calls <= in_flight  # the calls already sent when the first overrun came back


def test_the_spend_persists_across_resumed_runs(tmp_path):
    s = spec()
    fake = FakeEndpoint(
        responder=lambda body: Reply({"price": 1.0}, prompt_tokens=10, completion_tokens=10)
    )
    per_call = s.cost_usd(10, 10)
    limit = 2 * bound_of(s).usd  # room for a few calls, whatever the runs
    spent = []
    for attempt in range(3):  # three "runs", each a fresh client on the same ledger
        guard = CostGuard(max_cost_usd=limit, ledger=SpendLedger(tmp_path / "spend.json"))
        c = client(fake, tmp_path / f"c{attempt}", guard)
        try:
            for i in range(100):
                run(c.complete(s, MESSAGES, Quote, sample=100 * attempt + i))
        except BudgetExceeded:
            pass
        spent.append(guard.spent_usd)
    assert (
        spent[0] <= limit
        and spent[1] == pytest.approx(spent[0])
        and spent[2] == pytest.approx(spent[0])
    )
    assert fake.n_calls == round(spent[0] / per_call)  # runs 2 and 3 could not spend more


def _reserve_in_a_process(path, limit, amount, n, out):
    guard = CostGuard(max_cost_usd=limit, ledger=SpendLedger(path))
    granted = 0
    for _ in range(n):
        try:
            r = guard.reserve(amount, "m")
        except BudgetExceeded:
            break
        granted += 1
        guard.settle(r, amount)
    guard.flush()  # the last settle is queued until a transaction writes it (as a client's close)
    out.put(granted)


def test_one_ledger_is_one_budget_for_several_processes(tmp_path):
    path = tmp_path / "spend.json"
    SpendLedger(path)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_reserve_in_a_process, args=(path, 1.0, 1 / 64, 40, out))
        for _ in range(3)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    granted = sum(out.get(timeout=5) for _ in procs)
    assert granted == 64  # exactly 1 / (1/64), across the three processes
    assert read_ledger(path)["spent_usd"] == pytest.approx(1.0)


# ------------------------------------------------------------------ faults are not answers
def test_a_cache_entry_that_is_not_utf8_or_is_a_directory_is_refetched(tmp_path, caplog):
    s = spec()
    fake = FakeEndpoint(responder=lambda body: Reply({"price": 1.0}))
    c = client(fake, tmp_path)
    first = ask(c, s, MESSAGES, Quote)
    (path,) = c.cache.cache_dir.rglob("*.json")  # the one entry (its key holds the endpoint)
    assert first.action == Quote(price=1.0)
    path.write_bytes(b"\xff\xfe not utf-8")
    with caplog.at_level(logging.WARNING):
        again = ask(client(fake, tmp_path), s, MESSAGES, Quote)
    assert again.action == Quote(price=1.0) and fake.n_calls == 2
    assert str(path) in caplog.text and json.loads(path.read_text())["key"] == path.stem
    path.unlink()
    path.mkdir()
    third = ask(client(fake, tmp_path), s, MESSAGES, Quote)
    assert third.action == Quote(price=1.0) and path.is_dir()


def test_an_unwritable_cache_ends_the_run_naming_the_path(tmp_path):
    s = spec()
    fake = FakeEndpoint(responder=lambda body: Reply({"price": 1.0}))
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "ab").write_text("a file where a folder should be")
    c = client(fake, tmp_path)
    c.cache.path_for = lambda key: cache_dir / "ab" / f"{key}.json"  # every entry under the file
    with pytest.raises(CacheError, match="llm.cache_dir"):
        ask(c, s, MESSAGES, Quote)
    assert issubclass(CacheError, RunAborted)


@pytest.mark.parametrize(
    "value, problem",
    [
        ("sk-é-0123456789abcdefgh", "non-ASCII"),
        ("sk-abc\ndef0123456789", "control"),
        ("sk-abc def0123456789", "whitespace"),
    ],
)
def test_a_key_that_cannot_be_a_key_is_refused_naming_the_variable(tmp_path, value, problem):
    c = client(FakeEndpoint(), tmp_path, environ={KEY_ENV: value})
    with pytest.raises(InvalidAPIKey) as info:
        c.check_keys([spec()])
    assert KEY_ENV in str(info.value) and value.strip() not in str(info.value)


def test_redaction_catches_every_printed_form_of_a_key():
    from urllib.parse import quote

    key = "sk-abcdefghijkl/0123+456789"
    texts = [
        f"Authorization: Bearer {key}",
        repr(f"b'Bearer {key}'"),
        f"url?k={quote(key, safe='')}",
        str(key.encode()),
    ]
    for text in texts:
        assert "abcdefghijkl" not in redact(text, key), text


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pass@api.example.com/v1",
        "https://api.example.com/v1?api_key=sk-123456",
        "https://api.example.com/v1?token=abc",
    ],
)
def test_credentials_in_base_url_are_refused_and_never_echoed(url):
    with pytest.raises(ParamsError) as info:
        parse_params(
            {
                "models": {"m": {"model": "x", "base_url": url, "api_key_env": None}},
                "markets": {
                    "cournot": {
                        "roster": [
                            {"name": "a", "kind": "baseline", "strategy": "nash"},
                            {"name": "b", "kind": "baseline", "strategy": "nash"},
                        ]
                    }
                },
            }
        )
    message = str(info.value)
    assert "models.m.base_url" in message and "api_key_env" in message
    assert "pass" not in message and "sk-123456" not in message and "abc" not in message


def test_a_template_bug_in_an_llm_seat_ends_the_run(tmp_path):
    from marketarena.agents.harnesses import harness_class
    from marketarena.agents.llm_agent import LLMAgent
    from marketarena.core.types import Decision

    class Broken:
        def render_messages(self, obs, **extras):
            raise KeyError("a template variable nobody passed")

    fake = FakeEndpoint(responder=lambda body: Reply({"price": 1.0}))
    agent = LLMAgent(
        "F1", spec(), client(fake, tmp_path), Broken(), 0, harness_class("plain")({}, "x")
    )
    with pytest.raises(LLMLayerError, match="KeyError"):
        run(agent.act({}, Decision("price", 0, 0, {"F1": {}}, Quote)))
    assert fake.n_calls == 0


# ------------------------------------------------------------------ re-asks stay small
def test_a_runaway_answer_is_quoted_back_only_in_part(tmp_path):
    huge = "9" * 5_000_000
    answers = iter([Reply(huge), Reply({"price": 1.0})])
    fake = FakeEndpoint(responder=lambda body: next(answers))
    result = run(client(fake, tmp_path).complete(spec(), MESSAGES, Quote))
    assert result.action == Quote(price=1.0)
    reask = fake.requests[1].body["messages"]
    assert len(reask[-2]["content"]) < REASK_ANSWER_CHARS + 100
    cache_bytes = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*.json"))
    assert cache_bytes < 5_100_000 + 20_000  # the huge answer is stored once, not carried again


# ------------------------------------------------------------------ the mock provider
class Listing(BaseModel):
    tier: str = Field(
        pattern="^(mint|good|fair|poor)$",
        json_schema_extra={"enum": ["mint", "good", "fair", "poor"]},
    )
    price: int = Field(ge=1000, le=50000)
    words: list[str] = Field(min_length=1, max_length=3)
    note: str | None = None


class Principal(BaseModel):
    listings: dict[str, Listing]
    bid: float = Field(gt=0, lt=1)


def test_random_valid_answers_validate_and_are_deterministic():
    import numpy as np

    schema, _ = strict_json_schema(Principal)
    for seed in range(30):
        value = random_instance(schema, np.random.default_rng(seed))
        Principal.model_validate(value)
        assert value == random_instance(schema, np.random.default_rng(seed))


def test_the_mock_provider_plays_llm_seats_offline_through_simulate(tmp_path):
    models = {
        "mock": {"model": "mock-random", "provider": "mock", "mock": {"seed": 3}},
        "fixed": {
            "model": "mock-fixed",
            "provider": "mock",
            "mock": {
                "policy": "scripted",
                "answers": [
                    {
                        "observations_and_thoughts": "",
                        "new_content": {"PLANS.txt": "p", "INSIGHTS.txt": ""},
                        "chosen_quantities": {"Product_A": 25, "Product_B": 5},
                    }
                ],
            },
        },
    }
    roster = [
        {"name": "rand", "kind": "llm", "model": "mock"},
        {"name": "fixed", "kind": "llm", "model": "fixed"},
    ]
    params = parse_params(
        {
            "models": models,
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {"cournot": {"runs": 2, "rounds": 4, "roster": roster}},
        }
    )
    paths = Paths(tmp_path)
    run_reference("cournot", params, paths)
    simulate("cournot", params, paths.data, tmp_path / "a", progress=False)
    states = __import__("pandas").read_parquet(tmp_path / "a" / "ep-0000" / "states.parquet")
    fixed = states[states["agent_id"] == "F2"]
    assert set(fixed["planned"]) == {25.0, 5.0}
    calls = __import__("pandas").read_parquet(tmp_path / "a" / "ep-0000" / "llm_calls.parquet")
    assert calls["valid"].all() and len(calls) == 8
    import shutil

    shutil.rmtree(tmp_path / "llm")  # no cache: the same answers again, from the requests alone
    simulate("cournot", params, paths.data, tmp_path / "b", progress=False)
    for name in ("states.parquet", "decisions.parquet", "llm_calls.parquet"):
        assert (tmp_path / "a" / "ep-0001" / name).read_bytes() == (
            tmp_path / "b" / "ep-0001" / name
        ).read_bytes()


def test_mock_settings_are_checked():
    with pytest.raises(ValidationError, match="needs the answer's schema"):
        ModelSpec(alias="m", model="m", provider="mock", structured_output="none")
    with pytest.raises(ValidationError, match="at least one entry"):
        ModelSpec(alias="m", model="m", provider="mock", mock={"policy": "scripted"})
    with pytest.raises(ValidationError, match="provider: mock"):
        ModelSpec(
            alias="m",
            model="m",
            base_url="http://x/v1",
            api_key_env=None,
            mock={"policy": "random_valid"},
        )
