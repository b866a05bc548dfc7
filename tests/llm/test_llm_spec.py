"""ModelSpec / LLMSettings validation: errors name the bad field and never echo a key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from marketarena.llm import (
    LLMConfigError,
    LLMSettings,
    ModelSpec,
    UnknownModelAlias,
    parse_models,
    parse_settings,
    resolve,
)


def test_defaults():
    spec = ModelSpec(
        alias="local", model="gemma", base_url="http://127.0.0.1:8080/v1/", api_key_env=None
    )
    assert (
        spec.temperature == 0 and spec.max_reasks == 2 and spec.structured_output == "json_schema"
    )
    assert spec.base_url == "http://127.0.0.1:8080/v1"  # trailing slash dropped
    assert spec.api_key_env is None
    # OpenAI itself (no base_url) without api_key_env means OPENAI_API_KEY
    assert ModelSpec(alias="g", model="gpt-4o").api_key_env == "OPENAI_API_KEY"
    settings = LLMSettings()
    assert (
        str(settings.cache_dir) == ".cache/llm"
        and settings.max_cost_usd is None
        and not hasattr(settings, "samples")
    )


def test_cost():
    spec = ModelSpec(alias="g", model="gpt-4o", price_in_per_mtok=2.5, price_out_per_mtok=10)
    assert spec.cost_usd(1_000_000, 100_000) == pytest.approx(3.5)


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("temperature", 3.0, "temperature"),
        ("max_tokens", 0, "max_tokens"),
        ("structured_output", "xml", "structured_output"),
        ("base_url", "localhost:8080", "base_url"),
        ("max_concurrency", 0, "max_concurrency"),
        ("temprature", 0.5, "temprature"),  # typo: extra keys are refused
    ],
)
def test_parse_models_names_the_bad_field(field, value, words):
    with pytest.raises(LLMConfigError) as info:
        parse_models({"m1": {"model": "x", field: value}})
    assert f"models.m1.{words}" in str(info.value)


@pytest.mark.parametrize(
    "field, value, bound",
    [
        ("max_tokens", 10**18, "1000000"),
        ("max_tokens", 1_000_001, "1000000"),
        ("max_concurrency", 10**9, "1000"),
        ("timeout_s", 1e9, "3600"),
        ("max_retries", 10**6, "100"),
        ("max_reasks", 1000, "20"),
        ("price_in_per_mtok", 1e12, "10000"),
        ("price_out_per_mtok", 1e12, "10000"),
    ],
)
def test_every_number_of_a_model_entry_is_bounded_above(field, value, bound):
    """The audit's E1: max_tokens 10**18 and max_concurrency 10**9 were accepted."""
    with pytest.raises(LLMConfigError) as info:
        parse_models({"m1": {"model": "x", field: value}})
    assert str(info.value) == f"models.m1.{field}: Input should be less than or equal to {bound}"
    top = {
        "max_tokens": 1_000_000,
        "max_concurrency": 1000,
        "timeout_s": 3600.0,
        "max_retries": 100,
        "max_reasks": 20,
        "price_in_per_mtok": 10_000.0,
        "price_out_per_mtok": 10_000.0,
    }
    assert (
        getattr(parse_models({"m1": {"model": "x", field: top[field]}})["m1"], field) == top[field]
    )


@pytest.mark.parametrize(
    "field", ["timeout_s", "price_in_per_mtok", "price_out_per_mtok", "temperature"]
)
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_no_number_of_a_model_entry_may_be_nan_or_infinite(field, value):
    with pytest.raises(LLMConfigError, match=rf"^models\.m1\.{field}: "):
        parse_models({"m1": {"model": "x", field: value}})


def test_retry_back_off_is_bounded():
    for field, bound in (("backoff_base_s", "600"), ("backoff_max_s", "3600")):
        with pytest.raises(
            LLMConfigError, match=rf"llm\.{field}: Input should be less than or equal to {bound}"
        ):
            parse_settings({field: 1e9})


def test_a_key_pasted_into_api_key_env_is_refused_without_echoing_it():
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    with pytest.raises(LLMConfigError) as info:
        parse_models({"m": {"model": "x", "api_key_env": key}})
    assert "models.m.api_key_env" in str(info.value) and "NAME" in str(info.value)
    assert key not in str(info.value) and key[:10] not in str(info.value)
    with pytest.raises(ValidationError) as raw:
        ModelSpec(alias="m", model="x", api_key_env=key)
    assert key not in str(raw.value)


def test_parse_models_fills_alias_from_key_and_checks_it():
    specs = parse_models({"gpt-4o": {"model": "gpt-4o-2024-08-06", "price_in_per_mtok": 2.5}})
    assert specs["gpt-4o"].alias == "gpt-4o"
    with pytest.raises(LLMConfigError, match="models.a.alias"):
        parse_models({"a": {"alias": "b", "model": "x"}})


def test_parse_settings_names_the_bad_field():
    assert parse_settings({"max_cost_usd": 5}).max_cost_usd == 5
    with pytest.raises(LLMConfigError, match=r"llm\.max_cost_usd"):
        parse_settings({"max_cost_usd": -1})
    with pytest.raises(LLMConfigError, match=r"llm\.samples"):  # removed: it did nothing
        parse_settings({"samples": 2})


def test_resolve_lists_known_aliases():
    specs = parse_models({"b": {"model": "x"}, "a": {"model": "y"}})
    assert resolve(specs, "a").model == "y"
    with pytest.raises(UnknownModelAlias, match=r"'c' \(known aliases: a, b\)"):
        resolve(specs, "c")
    with pytest.raises(UnknownModelAlias, match="none declared"):
        resolve({}, "c")
