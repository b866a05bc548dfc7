"""LLM retailers in supply_chain over an OpenAI-compatible HTTP endpoint (a scripted fake under the
real openai client): a live run, its replay from the cache with no endpoint at all, the budget
guard, and the API key never reaching the logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marketarena.core.run_logs import read_run_log, read_run_table
from marketarena.core.types import RunAborted
from marketarena.llm.client import UsageTotals
from marketarena.llm.fake import FakeEndpoint, Reply, Status
from marketarena.simulate import simulate
from tests.agents.conftest import (
    assert_replayed,
    calls_with_costs,
    run_log,
    supply_chain_params,
    tables,
)

pytestmark = pytest.mark.slow
SECRET = "sk-test-0123456789abcdefghijklmnop"


def responder(body):
    system = body["messages"][0]["content"]
    if "sealed-bid auction" in system:
        return Reply(
            {"bids": {"item1": {"qty": 20, "price": 55}, "item3": {"qty": 5, "price": 160}}}
        )
    if (
        any(m["role"] == "assistant" for m in body["messages"])
        or "You are retailer R02" in body["messages"][1]["content"]
    ):
        return Reply({"prices": {"item1": 80, "item3": 240}, "slogan": "Green, fair and eco goods"})
    return Reply("{not json")  # R01's first retail answer is invalid: it is re-asked


MODELS = {
    "fake": {
        "model": "fake-model",
        "base_url": "http://fake.invalid/v1",
        "api_key_env": "MARKETARENA_TEST_KEY",
        "max_tokens": 64,
        "price_in_per_mtok": 1000.0,
        "price_out_per_mtok": 1000.0,
    }
}
ROSTER = [
    {"name": "llm_a", "kind": "llm", "model": "fake"},
    {"name": "llm_b", "kind": "llm", "model": "fake"},
    {"name": "cp", "kind": "baseline", "strategy": "cost_plus"},
    {"name": "vol", "kind": "baseline", "strategy": "volume"},
]


def make_params(tmp_path: Path, price_in: float = 1000.0, **llm):
    models = {"fake": {**MODELS["fake"], "price_in_per_mtok": price_in}}
    return supply_chain_params(tmp_path, models, ROSTER, llm=llm, runs=2, steps=2)


def one_at_a_time(params):
    """``params`` playing one episode at a time (for scripts that count answers in arrival order)."""
    execution = params.execution.model_copy(update={"episodes_in_flight": 1})
    return params.model_copy(update={"execution": execution})


@pytest.fixture
def setup(tmp_path, monkeypatch, world):
    monkeypatch.setenv("MARKETARENA_TEST_KEY", SECRET)
    params = make_params(tmp_path)
    return tmp_path, params, world(params)


def test_live_run_then_replay_without_endpoint(setup, monkeypatch):
    tmp_path, params, paths = setup
    fake = FakeEndpoint(responder=responder)
    simulate(
        "supply_chain",
        params,
        paths.data,
        tmp_path / "live",
        progress=False,
        openai_factory=fake.factory,
    )
    calls = calls_with_costs(tmp_path / "live")
    # 2 LLM seats × (2 bidding rounds + 1 retail) × 2 steps × 2 episodes
    assert len(calls) == 24 and calls["valid"].all() and not calls["cached"].any()
    assert set(calls["agent_id"]) == {"R01", "R02"} and (calls["cost_usd"] > 0).all()
    retail_r01 = calls[(calls["agent_id"] == "R01") & (calls["phase"] == "retail")]
    assert (retail_r01["attempts"] == 2).all()  # invalid first answer, re-asked once
    assert fake.n_calls == 24 + len(retail_r01)
    # llm_messages: one row per model answer, the prompt and the raw answer as the model saw them
    said = tables(tmp_path / "live", "llm_messages")
    assert len(said) == calls["attempts"].sum() == fake.n_calls
    r01 = said[(said["agent_id"] == "R01") & (said["phase"] == "retail")]
    assert list(r01["reask"]) == [0, 1] * len(retail_r01) and (r01["call"] == 0).all()
    first = r01[r01["reask"] == 0].iloc[0]
    prompt = json.loads(first["messages"])
    assert [m["role"] for m in prompt] == ["system", "user"] and "You are retailer R01" in prompt[
        1
    ]["content"]
    assert first["answer"] == "{not json" and "not valid JSON" in first["error"]
    second = r01[r01["reask"] == 1].iloc[0]
    assert (
        json.loads(second["answer"])["slogan"] == "Green, fair and eco goods"
        and second["error"] == ""
    )
    assert any(r.body["messages"][:2] == prompt for r in fake.requests)  # exactly what was sent
    dec = tables(tmp_path / "live", "decisions")
    llm_dec = dec[dec["agent_id"].isin(["R01", "R02"])]
    assert llm_dec["valid"].all()
    assert tables(tmp_path / "live", "trades").query("agent_id == 'R01'")["qty"].sum() > 0
    assert fake.api_keys_seen == {SECRET}
    run = json.loads((run_log(tmp_path / "live") / "ep-0000" / "run.json").read_text())
    (logged,) = run["episodes"]
    usage = logged["llm"]["fake"]  # summed per model alias in the episode's run log
    episode = calls[calls["ep"] == "ep-0000"]
    assert usage["calls"] == 12 and usage["attempts"] == 12 + 2 and usage["cached_calls"] == 0
    assert set(usage) == set(UsageTotals.__dataclass_fields__)  # the client's vocabulary
    assert usage["cost_usd"] == pytest.approx(episode["cost_usd"].sum()) == logged["cost_usd"]
    totals = read_run_log(run_log(tmp_path / "live")).set_index("episode_id")
    assert (
        totals.loc["ep-0000", "calls"] == 12
        and totals.loc["ep-0000", "cost_usd"] == logged["cost_usd"]
    )

    # replay: no endpoint, no key, cache only -> zero network calls, identical episode logs
    monkeypatch.delenv("MARKETARENA_TEST_KEY")
    replay = make_params(tmp_path, cache_only=True)
    simulate("supply_chain", replay, paths.data, tmp_path / "replay", progress=False)
    assert_replayed(tmp_path / "live", tmp_path / "replay")
    # the key is in no file the run wrote
    for f in tmp_path.rglob("*"):
        if f.is_file() and f.suffix in (".json", ".parquet"):
            assert SECRET.encode() not in f.read_bytes(), f


def test_budget_stops_cleanly_and_keeps_finished_episodes(setup):
    tmp_path, params, paths = setup
    # output tokens only: 20 per answer = 0.02 $, 14 answers per episode = 0.28 $; before each call
    # the guard reserves max_tokens (64) = 0.064 $, two seats at a time: episode 1 fits in 0.45 $
    # (at most 0.28 + 2 × 0.064), episode 2 is refused a call once 0.32 $ are spent
    # one episode at a time, so that the first one finishes within the budget (side by side both
    # would be cut in the middle)
    # the guard itself: the run starts although its estimate passes the cap (stop_on_estimate)
    tight = one_at_a_time(
        make_params(tmp_path, price_in=0.0, max_cost_usd=0.45, stop_on_estimate=False)
    )
    fake = FakeEndpoint(responder=responder)
    with pytest.raises(RunAborted):
        simulate(
            "supply_chain",
            tight,
            paths.data,
            tmp_path / "eps",
            progress=False,
            openai_factory=fake.factory,
        )
    finished = sorted(p.name for p in (tmp_path / "eps").glob("ep-*"))
    assert finished == ["ep-0000"]
    spent = read_run_table(run_log(tmp_path / "eps"))["cost_usd"].sum()
    assert spent == pytest.approx(14 * 0.02)


def test_missing_key_variable_stops_before_any_episode(setup, monkeypatch):
    tmp_path, params, paths = setup
    monkeypatch.delenv("MARKETARENA_TEST_KEY")
    with pytest.raises(RunAborted, match="MARKETARENA_TEST_KEY"):
        simulate(
            "supply_chain",
            params,
            paths.data,
            tmp_path / "none",
            progress=False,
            openai_factory=FakeEndpoint(responder=responder).factory,
        )
    assert not (tmp_path / "none").exists() or not list((tmp_path / "none").glob("ep-*"))


def test_endpoint_that_dies_mid_run_keeps_finished_episodes_and_resumes(setup, monkeypatch):
    tmp_path, params, paths = setup
    calls = {"n": 0}

    def dying(body):  # episode 0 takes 14 answers; from then on the server answers 500s
        calls["n"] += 1
        return responder(body) if calls["n"] <= 14 else Status(500, "upstream model crashed")

    models = {"fake": {**MODELS["fake"], "max_retries": 1}}
    flaky = one_at_a_time(supply_chain_params(tmp_path, models, ROSTER, runs=2, steps=2))
    with pytest.raises(RunAborted) as err:
        simulate(
            "supply_chain",
            flaky,
            paths.data,
            tmp_path / "eps",
            progress=False,
            openai_factory=FakeEndpoint(responder=dying).factory,
        )
    message = str(err.value)
    assert "500" in message and "fake.invalid" in message and SECRET not in message
    assert sorted(p.name for p in (tmp_path / "eps").glob("ep-*")) == ["ep-0000"]
    before = (tmp_path / "eps" / "ep-0000" / "decisions.parquet").read_bytes()

    # the endpoint is back: the next run plays only episode 1 (episode 0's answers are cached too)
    healthy = FakeEndpoint(responder=responder)
    summary = simulate(
        "supply_chain",
        flaky,
        paths.data,
        tmp_path / "eps",
        progress=False,
        openai_factory=healthy.factory,
    )
    assert summary["skipped"] == 1 and summary["played"] == 1
    assert (tmp_path / "eps" / "ep-0000" / "decisions.parquet").read_bytes() == before
    assert healthy.n_calls == 12 + 2  # episode 1 only: 12 calls, R01's 2 retail re-asks
