"""Provider prompt caching: the cached prompt tokens a response reports are read in every
provider's field, recorded per call, priced at the model's cached-input price (and no lower bound
of the budget relies on them), replayed from the response cache as reported, and written to the
run log and the results site's run table of a real run on the fake endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from marketarena.config import parse_params
from marketarena.core.run_logs import read_run_table
from marketarena.llm.cost import Bound, charge_for
from marketarena.llm.errors import LLMConfigError
from marketarena.llm.fake import FakeEndpoint, Reply, prompt_caching, with_usage
from marketarena.llm.prompt_cache import PrefixCache, cached_tokens, prompt_text, repeat_share
from marketarena.llm.spec import parse_models
from tests.llm.conftest import ask
from tests.llm.test_llm_client import GOOD, MESSAGES, Bids, make_client, make_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "usage, expected",
    [
        (
            {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 64}},
            64,
        ),  # OpenAI, xAI...
        ({"prompt_tokens": 100, "prompt_cache_hit_tokens": 32}, 32),  # DeepSeek
        ({"prompt_tokens": 100, "cached_tokens": 16}, 16),  # Moonshot
        ({"prompt_tokens": 100, "cache_read_input_tokens": 8}, 8),  # Anthropic's name
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 500}}, 100),  # capped
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": -5}}, 0),
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": "64"}}, 0),
        ({"prompt_tokens": 100, "prompt_tokens_details": None}, 0),
        ({"prompt_tokens": 100}, 0),
        (None, 0),
    ],
)
def test_cached_tokens_are_read_in_each_providers_field(usage, expected):
    assert cached_tokens(usage, 100) == expected


def test_cached_tokens_cost_the_cached_price_and_default_to_the_input_price():
    spec = make_spec(price_cached_in_per_mtok=0.1)
    bound = Bound(10_000, 1024, 1.0)
    charge = charge_for(
        spec,
        {
            "prompt_tokens": 1000,
            "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 800},
        },
        bound,
    )
    assert charge.cached_tokens == 800 and charge.trusted
    assert charge.usd == pytest.approx((200 * 1.0 + 800 * 0.1 + 20 * 4.0) / 1e6)
    no_discount = make_spec()  # no cached price given: nothing is assumed
    assert no_discount.cost_usd(1000, 20, 800) == pytest.approx((1000 * 1.0 + 20 * 4.0) / 1e6)


def test_a_cached_price_above_the_input_price_is_refused_naming_the_key():
    with pytest.raises(
        LLMConfigError, match="models.m: .*price_cached_in_per_mtok must not exceed"
    ):
        parse_models(
            {
                "m": {
                    "model": "m",
                    "api_key_env": "K",
                    "price_in_per_mtok": 1.0,
                    "price_cached_in_per_mtok": 2.0,
                }
            }
        )
    with pytest.raises(LLMConfigError, match="price_cached_in_per_mtok"):
        parse_models({"m": {"model": "m", "api_key_env": "K", "price_cached_in_per_mtok": 1e9}})


def test_the_client_records_cached_tokens_and_a_replay_reports_them_at_no_cost(tmp_path):
    spec = make_spec(price_cached_in_per_mtok=0.25)
    fake = FakeEndpoint([Reply(GOOD, prompt_tokens=1000, completion_tokens=50, cached_tokens=768)])
    record = ask(make_client(fake, tmp_path), spec, MESSAGES, Bids).record
    assert (record.prompt_tokens, record.cached_prompt_tokens) == (1000, 768)
    assert record.cost_usd == pytest.approx((232 * 1.0 + 768 * 0.25 + 50 * 4.0) / 1e6)
    assert record.as_row()["cached_prompt_tokens"] == 768
    replay = ask(make_client(FakeEndpoint([]), tmp_path), spec, MESSAGES, Bids).record
    assert replay.cached and replay.cost_usd == 0 and replay.cached_prompt_tokens == 768


def test_the_prefix_cache_serves_whole_blocks_of_a_long_prompts_shared_prefix():
    cache = PrefixCache(min_tokens=100, block_tokens=16, remembered=2)
    rules = "r" * 4000  # 1,000 tokens the prompts share
    assert cache.serve(rules + "round 1") == 0  # nothing cached yet
    assert cache.serve(rules + "round 2") == 992  # 1,001 shared tokens, in blocks of 16
    assert cache.serve("x" * 800) == 0  # nothing shared
    assert cache.serve(rules + "round 3") == 992  # the round 2 prompt is still remembered
    assert cache.serve("short") == 0  # under min_tokens
    cache.serve("y" * 800)
    assert cache.serve(rules + "round 4") == 0  # the rules were forgotten (2 remembered)
    assert repeat_share([("B1", "abcdefgh"), ("B1", "abcdXXXX"), ("S1", "abcdefgh")]) == (1, 6)
    assert prompt_text([{"role": "user", "content": "hi"}]) == "<|user|>\nhi\n"


def test_a_run_on_an_endpoint_that_caches_prompts_logs_and_prices_them(tmp_path):
    """The fake endpoint reports ``prompt_tokens_details.cached_tokens`` as a prefix-caching
    provider would: the episode's llm_calls, the run log and the site's run table show them, and
    the logged cost prices them at the cached rate."""
    from marketarena.core.reader import EpisodeReader
    from marketarena.money import usd
    from marketarena.pipeline import Paths
    from marketarena.report.board import number
    from marketarena.report.site import _environment, _markdown, instance_page, run_size
    from marketarena.simulate import simulate

    block = yaml.safe_load((ROOT / "lib/marketarena/markets/crash/tiny_params.yaml").read_text())
    block["roster"] = [
        {"name": "myopic", "kind": "llm", "model": "fake"} if e["name"] == "myopic" else e
        for e in block["roster"]
    ]
    params = parse_params(
        {
            "models": {
                "fake": {
                    "model": "f",
                    "base_url": "http://fake.invalid/v1",
                    "api_key_env": None,
                    "price_in_per_mtok": 2.0,
                    "price_cached_in_per_mtok": 0.5,
                    "price_out_per_mtok": 8.0,
                }
            },
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {"crash": block},
        }
    )
    fake = FakeEndpoint(
        responder=prompt_caching(
            lambda body: with_usage(body, {"price": 2.5, "supply": 15}),
            min_tokens=0,
            block_tokens=1,
        )
    )
    paths = Paths(tmp_path)
    simulate(
        "crash",
        params,
        paths.data,
        paths.episodes("crash"),
        progress=False,
        openai_factory=fake.factory,
    )
    reader = EpisodeReader(paths.episodes("crash"))
    calls = reader.table("llm_calls")
    assert 0 < calls["cached_prompt_tokens"].sum() < calls["prompt_tokens"].sum()
    costs = read_run_table(paths.run_logs("crash"))
    expected = (
        (calls["prompt_tokens"] - calls["cached_prompt_tokens"]) * 2.0
        + calls["cached_prompt_tokens"] * 0.5
        + calls["completion_tokens"] * 8.0
    ) / 1e6
    assert costs["cost_usd"].to_numpy() == pytest.approx(expected.to_numpy())
    run = json.loads(next(paths.run_logs("crash").rglob("run.json")).read_text())
    usage = run["episodes"][0]["llm"]["fake"]
    assert usage["cached_prompt_tokens"] > 0
    (model,) = run_size(reader, params)["models"]
    assert model["cached_prompt_tokens"] == calls["cached_prompt_tokens"].sum()
    assert model["list_cost_usd"] == pytest.approx(expected.sum())
    page = instance_page("crash", params, paths, tmp_path / "site", _markdown())
    html = _environment().get_template("instance.html.j2").render(page=page, nav=[], here="crash")
    assert "of which cached by the provider" in html
    assert f"<td>{number(model['cached_prompt_tokens'])}</td>" in html
    assert usd(model["list_cost_usd"]) in html
