"""``marketarena estimate`` against real runs on the fake endpoint: the dry runs on the mock
provider predict the calls and prompt tokens of a run whose model answers sensibly, within 10%,
where the market's episodes last as long whatever the seats do (double_auction's rounds,
cournot's); where the play decides (english_auction's bids, crash's survival), the estimate's
range covers a run of random answers. Earlier runs' logs give the re-ask rate and the provider's
prompt-cache share; costs never print as $0.00; a range above llm.max_cost_usd is warned of. The
accuracy across every market: benchmarks/bench_estimate.py (docs/cost.md)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from benchmarks.bench_estimate import sensible  # the benchmark's modest player, per market
from marketarena.config import parse_params
from marketarena.core.run_logs import read_run_table
from marketarena.estimate import describe, earlier_usage, estimate, warnings
from marketarena.llm.fake import FakeEndpoint, prompt_caching, schema_answer, with_usage
from marketarena.money import usd
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import load_inputs, simulate

ROOT = Path(__file__).resolve().parents[1]


def params_for(tmp_path: Path, kind: str, seat: str = "myopic", **model):
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets" / kind / "tiny_params.yaml").read_text()
    )
    llm = {"name": "gpt", "kind": "llm", "model": "fake"}
    if kind == "double_auction":
        block.update(pool=[e["name"] for e in block["roster"]], entrant_games=10, runs=2, rounds=12)
        block["roster"].append(llm)
    else:
        block["roster"] = [
            {**llm, "name": seat} if e["name"] == seat else e for e in block["roster"]
        ]
        block["runs"] = 6
    return parse_params(
        {
            "models": {
                "fake": {
                    "model": "fake-model",
                    "base_url": "http://fake.invalid/v1",
                    "api_key_env": None,
                    "max_tokens": 200,
                    "max_concurrency": 4,
                    "price_in_per_mtok": 1.0,
                    "price_out_per_mtok": 4.0,
                    **model,
                }
            },
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {kind: block},
        }
    )


def changed(params, kind: str, **keys):
    """``params`` with ``keys`` of ``markets.<kind>`` set, parsed again as a user's file is (its
    models and llm sections kept)."""
    block = params.markets[kind].model_dump(mode="json", exclude_defaults=True)
    return parse_params(
        {
            **params.model_dump(mode="json", include={"models", "llm"}),
            "markets": {kind: {**block, **keys}},
        }
    )


def run_on_fake(tmp_path: Path, kind: str, params, responder, name: str = "run") -> pd.DataFrame:
    """The instance played on the fake endpoint into ``<tmp>/<name>``; its run log in
    ``<tmp>/run_logs/<kind>``; its llm_calls."""
    own = params.model_copy(
        update={"llm": params.llm.model_copy(update={"cache_dir": tmp_path / f"llm-{name}"})}
    )
    simulate(
        kind,
        own,
        tmp_path,
        tmp_path / name,
        progress=False,
        openai_factory=FakeEndpoint(responder=responder).factory,
        run_dir=tmp_path / "run_logs" / kind,
    )
    return pd.concat(pd.read_parquet(p) for p in (tmp_path / name).rglob("llm_calls.parquet"))


@pytest.mark.parametrize("kind", ["double_auction", "cournot"])
def test_estimate_predicts_calls_and_prompt_tokens_of_a_real_run(tmp_path, kind):
    params = params_for(tmp_path, kind)
    paths = Paths(tmp_path)
    run_reference(kind, params, paths)
    _, resources = load_inputs(kind, params, paths.data)
    found = estimate(kind, params, resources, latency_s=0.5, sample=None)
    fake = FakeEndpoint(responder=sensible)
    simulate(
        kind, params, paths.data, tmp_path / "eps", progress=False, openai_factory=fake.factory
    )
    calls = pd.concat(pd.read_parquet(p) for p in (tmp_path / "eps").rglob("llm_calls.parquet"))
    (model,) = found.models
    assert len(calls) > 0
    assert model.calls == pytest.approx(len(calls), rel=0.10)
    assert model.prompt_tokens == pytest.approx(calls["prompt_tokens"].sum(), rel=0.10)
    assert model.requests_max == model.calls * 3  # max_reasks 2
    assert model.reask_source == "prior" and model.requests == pytest.approx(model.calls * 1.05)
    assert model.cost_usd == pytest.approx(  # no cached price: cached tokens cost the input price
        (model.prompt_tokens * 1.0 + model.completion_tokens * 4.0) / 1e6
    )
    assert model.cost_lo < model.cost_usd < model.cost_hi < model.cost_max_usd
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


def test_with_a_stopping_rule_the_estimate_says_the_least_share_it_plays(tmp_path):
    """double_auction: an entrant's 10 games, looks every 4 from min_games 6: the first possible
    stop is after 8 (80%). cournot: myopic as the LLM sits in 4 of the 6 lineup episodes (its
    two lineups of the three, twice), all with LLM seats; a look after every game: 1 of 4."""
    for kind, stop, share in (
        ("double_auction", {"batch": 4, "min_games": 6, "top_k": 1}, 0.8),
        ("cournot", {"batch": 1, "min_games": 1, "rank_width": 1}, 0.25),
    ):
        params, paths = params_for(tmp_path, kind), Paths(tmp_path / kind)
        run_reference(kind, params, paths)
        assert (
            estimate(kind, params, load_inputs(kind, params, paths.data)[1], sample=2).stop_floor
            is None
        )
        params = changed(params, kind, stop=stop)
        e = estimate(kind, params, load_inputs(kind, params, paths.data)[1], sample=2)
        assert e.stop_floor == pytest.approx(share)
        line = describe(e)[-1]
        assert f"markets.{kind}.stop" in line and f"between {share:.0%} of them" in line


def test_no_llm_seats_no_estimate(tmp_path):
    params = parse_params(
        {
            "markets": {
                "crash": yaml.safe_load(
                    (ROOT / "lib/marketarena/markets/crash/tiny_params.yaml").read_text()
                )
            }
        }
    )
    assert estimate("crash", params, None) is None


@pytest.mark.parametrize(
    "option, value, shown",
    [
        (
            "--reask-rate",
            "-0.5",
            "--reask-rate -0.5: must be a number of re-asks per call from 0 to 20",
        ),
        ("--latency", "-1", "--latency -1.0: must be a finite number of seconds >= 0"),
        ("--latency", "nan", "--latency nan: must be a finite number of seconds >= 0"),
        ("--latency", "inf", "--latency inf: must be a finite number of seconds >= 0"),
        ("--sample", "-3", "--sample -3: must be >= 0 (0: every episode)"),
    ],
)
def test_nonsense_options_are_refused_in_one_line(tmp_path, option, value, shown):
    """The audit's E2: `--latency -1` printed a wall time of -6.0 s; nan, inf and `--sample -3`
    were taken."""
    from typer.testing import CliRunner

    from marketarena.cli import app

    block = yaml.safe_load((ROOT / "lib/marketarena/markets/cournot/tiny_params.yaml").read_text())
    block["roster"][0] = {**block["roster"][0], "kind": "llm", "model": "mock"}
    block["roster"][0].pop("strategy", None)
    path = tmp_path / "params.yaml"
    path.write_text(
        yaml.safe_dump(
            {"models": {"mock": {"model": "m", "provider": "mock"}}, "markets": {"cournot": block}}
        )
    )
    res = CliRunner().invoke(app, ["estimate", "--params", str(path), option, value])
    assert res.exit_code == 2 and res.output.splitlines() == [f"error: {shown}"], res.output


@pytest.mark.parametrize("kind, seat", [("english_auction", "increment"), ("crash", "myopic")])
def test_where_the_play_decides_the_length_the_range_covers_a_run_of_random_answers(
    tmp_path, kind, seat
):
    """The audit's english_auction: estimated 73 calls (the rule bidder's play), the run made
    204. Now every baseline of the role plays, and the mock's random answers too: their calls
    are shown, and the range holds the run's calls and dollars."""
    params = params_for(tmp_path, kind, seat)
    paths = Paths(tmp_path)
    run_reference(kind, params, paths)
    _, resources = load_inputs(kind, params, paths.data)
    found = estimate(kind, params, resources, sample=None, reask_rate=0.0)
    (model,) = found.models
    assert len(model.plays) > 2 and "random" in model.plays  # the length depended on the play
    calls = run_on_fake(tmp_path, kind, params, schema_answer)
    cost = read_run_table(tmp_path / "run_logs" / kind)["cost_usd"].sum()
    assert model.calls_lo <= len(calls) <= model.calls_hi
    assert model.cost_lo <= cost <= model.cost_hi
    assert f"random answers {model.plays['random'].calls:,.0f}" in describe(found)[1]


def test_the_range_holds_a_firm_that_goes_bankrupt_sooner_than_every_play(tmp_path):
    """A crash firm selling at half its unit cost and restocking to 30 units a day goes bankrupt
    sooner than the baselines in most episodes, and than the mock's random answers in total; the
    random answers go bankrupt on day 1 in some episodes. The range runs over the plays episode
    by episode (``dry_run.envelope``): it holds the run before any run, at the prior re-asks."""
    from benchmarks.bench_estimate import underpricer

    kind = "crash"
    params = changed(params_for(tmp_path, kind), kind, runs=11, days=60)
    paths = Paths(tmp_path)
    run_reference(kind, params, paths)
    _, resources = load_inputs(kind, params, paths.data)
    found = estimate(kind, params, resources, sample=None)
    (model,) = found.models
    calls = run_on_fake(tmp_path, kind, params, underpricer)
    cost = read_run_table(tmp_path / "run_logs" / kind)["cost_usd"].sum()
    assert len(calls) < min(p.calls for p in model.plays.values())  # sooner than every play
    assert model.calls_lo <= len(calls) <= model.calls_hi
    assert model.cost_lo <= cost <= model.cost_hi
    assert model.calls_hi == max(p.calls for p in model.plays.values())  # the stabilizer's


def test_earlier_runs_give_the_re_ask_rate_and_the_providers_cache_share(tmp_path):
    """A model that breaks the schema in one answer of three, behind a provider that caches
    prompt prefixes: after its first run the estimate of the next one takes both from its log."""
    params = params_for(tmp_path, "double_auction", price_cached_in_per_mtok=0.1)

    def flaky(body):
        messages = body["messages"]
        if any(m["role"] == "assistant" for m in messages):  # re-asked: it answers well
            return with_usage(body, sensible({**body, "messages": messages[:2]}).content)
        if int(hashlib.sha256(json.dumps(body).encode()).hexdigest(), 16) % 3 == 0:
            return with_usage(body, "I quote 50")
        return sensible(body)

    calls = run_on_fake(
        tmp_path, "double_auction", params, prompt_caching(flaky, min_tokens=0, block_tokens=1)
    )
    assert calls["attempts"].sum() > len(calls)  # it was re-asked
    history = earlier_usage(tmp_path / "run_logs")
    _, resources = load_inputs("double_auction", params, tmp_path)
    (model,) = estimate("double_auction", params, resources, sample=None, history=history).models
    rate = calls["attempts"].sum() / len(calls) - 1
    assert model.reask_rate == pytest.approx(rate) and "earlier runs" in model.reask_source
    assert model.requests == pytest.approx(calls["attempts"].sum(), rel=0.10)
    share = calls["cached_prompt_tokens"].sum() / calls["prompt_tokens"].sum()
    assert model.cached_prompt_tokens == pytest.approx(share * model.prompt_tokens)
    assert model.cost_usd == pytest.approx(
        (
            (model.prompt_tokens - model.cached_prompt_tokens) * 1.0
            + model.cached_prompt_tokens * 0.1
            + model.completion_tokens * 4.0
        )
        / 1e6
    )
    assert (
        "cached by a prefix-caching provider"
        in describe(estimate("double_auction", params, resources, sample=2, history=history))[1]
    )


def test_sub_cent_costs_never_print_as_zero_and_a_range_above_the_limit_is_warned_of(tmp_path):
    params = params_for(tmp_path, "double_auction", price_in_per_mtok=0.05, price_out_per_mtok=0.2)
    _, resources = load_inputs("double_auction", params, tmp_path)
    found = estimate("double_auction", params, resources, sample=2)
    line = describe(found)[1]
    assert 0 < found.cost_usd < 0.005 and "$0.00 " not in line and "$0.00," not in line
    assert f"{usd(found.cost_usd)} (range" in line
    assert found.cost_hi < found.cost_max_usd
    assert warnings(found, limit=found.cost_max_usd * 1.01) == []
    (note,) = warnings(found, limit=found.cost_hi * 1.01)  # only the ceiling passes it
    assert note.startswith("note: double_auction: its ceiling")
    (warning,) = warnings(found, limit=found.cost_usd)
    assert warning.startswith("warning: double_auction: the estimate's range reaches")
    (earlier,) = warnings(found, limit=found.cost_hi * 2, spent=found.cost_hi * 1.5)
    assert "warning" in earlier and "its earlier runs spent" in earlier


@pytest.mark.parametrize(
    "cost, shown",
    [
        (0.0774, "$0.077"),
        (0.0027, "$0.0027"),
        (0.45, "$0.45"),
        (1234.5, "$1,234.50"),
        (0, "$0"),
        (0.0999, "$0.10"),
        (0.996, "$1.00"),
        (1e-7, "$0.00000010"),
    ],
)
def test_dollars_print_to_the_cent_or_in_two_significant_figures(cost, shown):
    assert usd(cost) == shown


def test_the_cli_warns_when_the_range_passes_max_cost_usd(tmp_path):
    from typer.testing import CliRunner

    from marketarena.cli import app

    block = yaml.safe_load((ROOT / "lib/marketarena/markets/cournot/tiny_params.yaml").read_text())
    block["roster"][0] = {**block["roster"][0], "kind": "llm", "model": "mock"}
    block["roster"][0].pop("strategy", None)
    path = tmp_path / "params.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "models": {
                    "mock": {
                        "model": "m",
                        "provider": "mock",
                        "price_in_per_mtok": 2.5,
                        "price_out_per_mtok": 10.0,
                    }
                },
                "llm": {"max_cost_usd": 0.001},
                "markets": {"cournot": block},
            }
        )
    )
    res = CliRunner().invoke(app, ["estimate", "--params", str(path), "--sample", "2"])
    assert res.exit_code == 0, res.output
    assert "warning: cournot: the estimate's range reaches" in res.output
    assert res.output.splitlines()[-1].startswith("total: $0.0")


def test_a_blind_baseline_bounds_the_range_but_is_never_the_point():
    """lemon's random buyer buys at every step and reviews every purchase: the play that asks most
    (123 calls in the benchmark against the sensible model's 98). It stands for no model, so the
    point is the most persistent baseline that reads the game; the blind play stays in the range."""
    from marketarena.estimate import PlayTotals, model_estimate
    from marketarena.llm.client import UsageTotals
    from marketarena.llm.spec import ModelSpec

    spec = ModelSpec(
        alias="mock",
        model="mock-random",
        provider="mock",
        price_in_per_mtok=1.0,
        price_out_per_mtok=4.0,
    )
    plays = {
        "random": PlayTotals(calls=102, prompt_tokens=60_000),
        "stand-in:guardian": PlayTotals(calls=92, prompt_tokens=45_000),
        "stand-in:reputation": PlayTotals(calls=90, prompt_tokens=44_000),
        "stand-in:random": PlayTotals(calls=123, prompt_tokens=54_000),
    }
    m = model_estimate(
        "lemon", "mock", spec, 8, plays, 0.0, UsageTotals(), None, blind={"stand-in:random"}
    )
    assert m.calls == 92 and m.prompt_tokens == 45_000
    assert (m.calls_lo, m.calls_hi) == (90, 123)
    # every stand-in blind: the most persistent of them, as before
    only = {"random": plays["random"], "stand-in:random": plays["stand-in:random"]}
    m = model_estimate(
        "lemon", "mock", spec, 8, only, 0.0, UsageTotals(), None, blind={"stand-in:random"}
    )
    assert m.calls == 123


def _crash_estimate(plays, here=None, **model):
    from marketarena.estimate import model_estimate
    from marketarena.llm.client import UsageTotals
    from marketarena.llm.spec import ModelSpec

    spec = ModelSpec(alias="m", model="m", price_in_per_mtok=1.0, price_out_per_mtok=4.0, **model)
    return model_estimate("crash_x", "m", spec, 4, plays, 0.0, UsageTotals(), here, market="crash")


def test_a_declared_kind_prices_that_kinds_completion_tokens(tiny_priors):
    """conftest.TINY_PRIORS: a thinking model writes 400 tokens a call in crash (300 to 500),
    whatever the mock's 12; 100 calls, no re-asks, $1 / $4 a million tokens."""
    from marketarena.estimate import PlayTotals

    play = PlayTotals(calls=100, prompt_tokens=50_000, completion_tokens=1_200)
    m = _crash_estimate({"random": play, "stand-in:x": play}, answers_like="thinking")
    assert m.completion_tokens == pytest.approx(100 * 400)
    assert m.cost_usd == pytest.approx((50_000 * 1.0 + 100 * 400 * 4.0) / 1e6)  # $0.21
    # the range: the kind's least and most, the spread and re-asks (0 and 2 points) on top
    assert m.cost_lo == pytest.approx(0.85 * (50_000 + 100 * 300 * 4.0) / 1e6)
    # at 2% re-asks each resending the 500-token answer and 60 tokens more
    prompt_hi = 50_000 * 1.02 + 100 * 0.02 * (500 + 60)
    assert m.cost_hi == pytest.approx(1.15 * (prompt_hi + 100 * 500 * 1.02 * 4.0) / 1e6)
    assert "thinking prior" in m.completion_source
    bare = _crash_estimate({"random": play, "stand-in:x": play}, answers_like="bare_json")
    assert bare.completion_tokens == pytest.approx(100 * 20) and bare.cost_usd < m.cost_usd


def test_an_undeclared_kind_has_a_range_over_every_kind(tiny_priors):
    from marketarena.completion_priors import KINDS
    from marketarena.estimate import PlayTotals

    plays = {
        "random": PlayTotals(calls=80, prompt_tokens=40_000, completion_tokens=960),
        "stand-in:x": PlayTotals(calls=100, prompt_tokens=50_000, completion_tokens=1_200),
    }
    none = _crash_estimate(plays)
    assert none.completion_tokens == pytest.approx(100 * 100)  # chain_of_thought's point
    for kind in KINDS:
        k = _crash_estimate(plays, answers_like=kind)
        assert none.cost_lo <= k.cost_lo <= k.cost_usd <= k.cost_hi <= none.cost_hi
    assert "answers_like" in none.completion_source


def test_the_models_own_runs_take_precedence_over_its_kind(tiny_priors):
    from marketarena.estimate import PlayTotals
    from marketarena.llm.client import UsageTotals

    play = PlayTotals(calls=100, prompt_tokens=50_000, completion_tokens=1_200)
    here = UsageTotals(calls=50, attempts=50, completion_tokens=1_500)  # 30 a call
    m = _crash_estimate({"random": play, "stand-in:x": play}, here, answers_like="thinking")
    assert m.completion_tokens == pytest.approx(100 * 30)
    assert m.cost_usd == pytest.approx((50_000 + 100 * 30 * 4.0) / 1e6)
    assert m.completion_source == "its earlier runs of crash_x (50 calls)"


def test_answers_like_is_checked_naming_the_key():
    from pydantic import ValidationError

    from marketarena.llm.spec import ModelSpec

    with pytest.raises(ValidationError, match=r"answers_like"):
        ModelSpec(alias="m", model="m", answers_like="verbose")


def test_the_rating_cost_keeps_an_llm_the_params_already_seat(tmp_path):
    """``estimate --rate`` adds the rated entrant beside the roster's own LLM entries: the params'
    models stay (it once replaced them and failed with "unknown model alias")."""
    from marketarena import rating_cost

    params = params_for(tmp_path, "cournot")
    rated = rating_cost.with_entrant(params, "cournot")
    assert set(rated.models) == {"fake", rating_cost.ALIAS}
    models = {e.model for e in rated.markets["cournot"].roster if e.kind == "llm"}
    assert models == {"fake", rating_cost.ALIAS}
