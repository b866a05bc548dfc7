"""``marketarena estimate`` against a real run on the fake endpoint: the dry run on the mock
provider (with baseline stand-ins deciding for the LLM seats) predicts the calls and prompt tokens
of a run whose model answers sensibly, within 10%; its wall time is the ideal of its calls.

Markets whose episodes last as long whatever the seats do (double_auction's rounds, cournot's).
Where a model's play decides how long an episode lasts (a crash market that collapses), the
estimate is that of a market where the LLM seats play like their stand-in."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from marketarena.config import parse_params
from marketarena.estimate import describe, estimate
from marketarena.llm.fake import FakeEndpoint, schema_answer, with_usage
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import load_inputs, simulate

ROOT = Path(__file__).resolve().parents[1]


def sensible(body: dict):
    """A model that answers like a modest player: cournot firms make 20 and 10 units and keep
    notes; double_auction traders shade their value by 5; anything else a random valid answer."""
    props = body["response_format"]["json_schema"]["schema"].get("properties", {})
    text = body["messages"][-1]["content"]
    if "chosen_quantities" in props:
        return with_usage(body, {"observations_and_thoughts": "steady",
                                 "new_content": {"PLANS.txt": "hold", "INSIGHTS.txt": "A dearer"},
                                 "chosen_quantities": {"Product_A": 20, "Product_B": 10}})
    if "quote" in props:
        value = int(re.search(r"Your private (?:value|cost): (\d+)", text).group(1))
        return with_usage(body, {"quote": max(0, value - 5) if "(buyer)" in text else min(100, value + 5)})
    return schema_answer(body)


def params_for(tmp_path: Path, kind: str):
    block = yaml.safe_load((ROOT / "lib/marketarena/markets" / kind / "tiny_params.yaml").read_text())
    llm = {"name": "gpt", "kind": "llm", "model": "fake"}
    if kind == "double_auction":
        block.update(pool=[e["name"] for e in block["roster"]], entrant_games=10, runs=2, rounds=12)
        block["roster"].append(llm)
    else:
        block["roster"] = [{**llm, "name": "myopic"} if e["name"] == "myopic" else e
                           for e in block["roster"]]
        block["runs"] = 6
    return parse_params({
        "models": {"fake": {"model": "fake-model", "base_url": "http://fake.invalid/v1",
                            "api_key_env": None, "max_tokens": 200, "max_concurrency": 4,
                            "price_in_per_mtok": 1.0, "price_out_per_mtok": 4.0}},
        "llm": {"cache_dir": str(tmp_path / "llm")}, "markets": {kind: block}})


@pytest.mark.parametrize("kind", ["double_auction", "cournot"])
def test_estimate_predicts_calls_and_prompt_tokens_of_a_real_run(tmp_path, kind):
    params = params_for(tmp_path, kind)
    paths = Paths(tmp_path)
    run_reference(kind, params, paths)
    _, resources = load_inputs(kind, params, paths.data)
    found = estimate(kind, params, resources, latency_s=0.5, sample=None)
    fake = FakeEndpoint(responder=sensible)
    simulate(kind, params, paths.data, tmp_path / "eps", progress=False,
             openai_factory=fake.factory)
    calls = pd.concat(pd.read_parquet(p) for p in (tmp_path / "eps").rglob("llm_calls.parquet"))
    (model,) = found.models
    assert len(calls) > 0
    assert model.calls == pytest.approx(len(calls), rel=0.10)
    assert model.prompt_tokens == pytest.approx(calls["prompt_tokens"].sum(), rel=0.10)
    assert model.requests_max == model.calls * 3  # max_reasks 2
    assert model.cost_usd == pytest.approx(
        (model.prompt_tokens * 1.0 + model.completion_tokens * 4.0) / 1e6)
    assert model.cost_max_usd > model.cost_usd
    # wall time: the longest chain of sequential requests, or the requests over 4 at a time
    assert found.wall_s == pytest.approx(max(found.depth * 0.5, model.requests * 0.5 / 4))
    assert any("calls" in line for line in describe(found))


def test_a_sample_of_episodes_is_scaled_to_the_plan(tmp_path):
    params = params_for(tmp_path, "double_auction")
    _, resources = load_inputs("double_auction", params, tmp_path)
    whole = estimate("double_auction", params, resources, sample=None)
    part = estimate("double_auction", params, resources, sample=3)
    assert (whole.episodes, whole.sampled, part.sampled) == (10, 10, 3)
    assert part.models[0].calls == pytest.approx(whole.models[0].calls)  # 12 rounds a game


def test_no_llm_seats_no_estimate(tmp_path):
    params = parse_params({"markets": {"crash": yaml.safe_load(
        (ROOT / "lib/marketarena/markets/crash/tiny_params.yaml").read_text())}})
    assert estimate("crash", params, None) is None


@pytest.mark.parametrize("option, value, shown", [
    ("--latency", "-1", "--latency -1.0: must be a finite number of seconds >= 0"),
    ("--latency", "nan", "--latency nan: must be a finite number of seconds >= 0"),
    ("--latency", "inf", "--latency inf: must be a finite number of seconds >= 0"),
    ("--sample", "-3", "--sample -3: must be >= 0 (0: every episode)")])
def test_nonsense_options_are_refused_in_one_line(tmp_path, option, value, shown):
    """The audit's E2: `--latency -1` printed a wall time of -6.0 s; nan, inf and `--sample -3`
    were taken."""
    from typer.testing import CliRunner

    from marketarena.cli import app

    block = yaml.safe_load((ROOT / "lib/marketarena/markets/cournot/tiny_params.yaml").read_text())
    block["roster"][0] = {**block["roster"][0], "kind": "llm", "model": "mock"}
    block["roster"][0].pop("strategy", None)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"models": {"mock": {"model": "m", "provider": "mock"}},
                                    "markets": {"cournot": block}}))
    res = CliRunner().invoke(app, ["estimate", "--params", str(path), option, value])
    assert res.exit_code == 2 and res.output.splitlines() == [f"error: {shown}"], res.output
