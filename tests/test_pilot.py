"""``marketarena estimate --pilot N`` (issue 56, ``pilot.py``): N planned episodes played with the
real model on the fake endpoint. Where the model's play sets the length (english_auction's
bidding), its own play is the point, closer to the real run than the most persistent baseline;
its re-ask rate is measured; its requests land in the response cache, which the run that follows
replays; a bad N is one error line."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from benchmarks.bench_estimate import eager, sensible
from marketarena.estimate import PRIOR_REASK_RATE, describe, estimate
from marketarena.llm.fake import FakeEndpoint, with_usage
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import load_inputs, simulate
from tests.test_estimate import params_for, run_on_fake

ROOT = Path(__file__).resolve().parents[1]


def flaky(body):
    """double_auction's sensible quotes, in free text one first ask in three (re-asked: valid)."""
    messages = body["messages"]
    if any(m["role"] == "assistant" for m in messages):
        return with_usage(body, sensible({**body, "messages": messages[:2]}).content)
    if int(hashlib.sha256(json.dumps(body).encode()).hexdigest(), 16) % 3 == 0:
        return with_usage(body, "I quote 50")
    return sensible(body)


def setup(tmp_path: Path, kind: str, seat: str = "myopic"):
    params = params_for(tmp_path, kind, seat)
    paths = Paths(tmp_path)
    run_reference(kind, params, paths)
    return params, load_inputs(kind, params, paths.data)[1]


def test_the_pilot_plays_a_long_bidder_as_it_bids(tmp_path):
    kind = "english_auction"
    params, resources = setup(tmp_path, kind, "increment")
    calls = run_on_fake(tmp_path, kind, params, eager)
    real = {"calls": len(calls), "prompt": calls["prompt_tokens"].sum()}
    (dry,) = estimate(kind, params, resources, sample=None, reask_rate=0.0).models
    fake = FakeEndpoint(responder=eager)
    found = estimate(kind, params, resources, sample=None, pilot=2, openai_factory=fake.factory)
    (piloted,) = found.models
    assert fake.n_calls > 0 and found.pilot.episodes == 2
    for got, key in ((piloted.calls, "calls"), (piloted.prompt_tokens, "prompt")):
        assert got == pytest.approx(real[key], rel=0.25)
    # the baselines stop earlier than this bidder: the dry run's point is farther off
    assert abs(piloted.calls - real["calls"]) < abs(dry.calls - real["calls"])
    assert abs(piloted.prompt_tokens - real["prompt"]) < abs(dry.prompt_tokens - real["prompt"])
    assert piloted.calls_lo <= piloted.calls <= piloted.calls_hi
    assert piloted.cost_lo <= piloted.cost_usd <= piloted.cost_hi
    assert found.pilot.spent_usd == pytest.approx(found.pilot.cost_usd)  # a fresh cache
    lines = describe(found)
    assert "(the pilot's play; plays:" in lines[1]
    assert re.search(r"pilot: .* in 2 of the \d+ episodes", lines[2])


def test_the_pilot_scales_by_the_seats_not_the_episodes(tmp_path):
    # crash seats the LLM firm twice in its fifth episode: 7 seats in 6 episodes; the pilot plays
    # the first (one seat), and a sensible firm is asked every day of every seat
    kind = "crash"
    params, resources = setup(tmp_path, kind)
    calls = run_on_fake(tmp_path, kind, params, sensible)
    seats = [  # per episode, in plan order: the calls of each seat
        pd.read_parquet(f).groupby("agent_id").size().tolist()
        for f in sorted((tmp_path / "run").rglob("llm_calls.parquet"))
    ]
    assert [len(s) for s in seats] == [1, 1, 1, 1, 2, 1]
    fake = FakeEndpoint(responder=sensible)
    found = estimate(kind, params, resources, sample=1, pilot=1, openai_factory=fake.factory)
    (m,) = found.models
    (first,) = seats[0]
    assert fake.n_calls == first  # the first episode's one seat, asked every day
    assert m.calls == 7 * first == len(calls)  # not 6 x: 14% short
    assert m.prompt_tokens == pytest.approx(calls["prompt_tokens"].sum(), rel=0.05)
    # what its one episode cost, not the plan's seventh
    assert found.pilot.cost_usd == pytest.approx(m.cost_usd / 7)


def test_the_pilot_measures_the_re_ask_rate(tmp_path):
    kind = "double_auction"
    params, resources = setup(tmp_path, kind)
    calls = run_on_fake(tmp_path, kind, params, flaky)
    requests = calls["attempts"].sum()
    assert requests > len(calls) * (1 + 2 * PRIOR_REASK_RATE)  # the prior is far off
    fake = FakeEndpoint(responder=flaky)
    (m,) = estimate(kind, params, resources, sample=2, pilot=2, openai_factory=fake.factory).models
    assert m.reask_source == "the pilot's" and m.reask_rate > 2 * PRIOR_REASK_RATE
    assert m.requests == pytest.approx(requests, rel=0.25)
    assert m.requests == pytest.approx(m.calls * (1 + m.reask_rate))


def test_the_run_replays_the_pilots_episodes_from_the_response_cache(tmp_path):
    kind = "english_auction"
    params, resources = setup(tmp_path, kind, "increment")
    alone = FakeEndpoint(responder=eager)
    own = params.model_copy(
        update={"llm": params.llm.model_copy(update={"cache_dir": tmp_path / "fresh"})}
    )
    simulate(kind, own, tmp_path, tmp_path / "alone", progress=False, openai_factory=alone.factory)
    piloted = FakeEndpoint(responder=eager)
    found = estimate(kind, params, resources, sample=2, pilot=2, openai_factory=piloted.factory)
    after = FakeEndpoint(responder=eager)
    simulate(
        kind, params, tmp_path, tmp_path / "after", progress=False, openai_factory=after.factory
    )
    assert 0 < piloted.n_calls < alone.n_calls
    assert after.n_calls == alone.n_calls - piloted.n_calls  # every pilot request replayed
    # a second pilot of the same episodes is answered by the cache: it spends nothing
    again = FakeEndpoint(responder=eager)
    second = estimate(kind, params, resources, sample=2, pilot=2, openai_factory=again.factory)
    assert again.n_calls == 0 and second.pilot.spent_usd == 0
    assert second.pilot.cost_usd == pytest.approx(found.pilot.cost_usd)
    assert found.pilot.cost_usd > 0


@pytest.mark.parametrize(
    "options, shown",
    [
        (["--pilot", "0"], "error: --pilot 0: must be >= 1"),
        (["--pilot", "-1"], "error: --pilot -1: must be >= 1"),
        # myopic as the LLM sits in 4 of the 6 lineup episodes
        (["--pilot", "5"], "error: --pilot 5: must be from 1 to 4"),
        (["--pilot", "1", "--rate"], "error: --pilot with --rate"),
        (["--pilot", "1", "--reask-rate", "0.1"], "error: --pilot with --reask-rate"),
    ],
)
def test_a_bad_pilot_is_one_error_line(tmp_path, options, shown):
    from typer.testing import CliRunner

    from marketarena.cli import app

    block = yaml.safe_load((ROOT / "lib/marketarena/markets/cournot/tiny_params.yaml").read_text())
    block["roster"][0] = {**block["roster"][0], "kind": "llm", "model": "mock"}
    block["roster"][0].pop("strategy", None)
    block["runs"] = 6
    path = tmp_path / "params.yaml"
    path.write_text(
        yaml.safe_dump(
            {"models": {"mock": {"model": "m", "provider": "mock"}}, "markets": {"cournot": block}}
        )
    )
    res = CliRunner().invoke(app, ["estimate", "cournot", "--params", str(path), *options])
    assert res.exit_code == 2, res.output
    (line,) = res.output.splitlines()
    assert line.startswith(shown)
