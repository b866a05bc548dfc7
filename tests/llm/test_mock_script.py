"""The mock's per-phase script (``llm/mock.py``): ``mock.answers`` as a mapping of a market's
phase (or ``default``) to a list gives a seat's k-th request in a phase that phase's answer k mod
its length, re-asks included; the position is in the cache key, so a replay gets what the fresh
run got and an edited script is asked afresh. A phase with neither its key nor ``default`` stops
the call naming the model and the phase; a key that names no phase of the market the model is
seated in is refused when the params are read. The list form picks by the request's hash, as
before."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from marketarena.config import ParamsError, parse_params
from marketarena.llm import LLMClient, LLMConfigError, LLMSettings, parse_models

from .conftest import ask


class Quote(BaseModel):
    model_config = ConfigDict(extra="forbid")
    quote: int


MESSAGES = [{"role": "user", "content": "Your quote?"}]


def mock(answers, alias="m"):
    return parse_models(
        {
            alias: {
                "model": alias,
                "provider": "mock",
                "mock": {"policy": "scripted", "answers": answers},
            }
        }
    )[alias]


def call(cache, spec, phase="quote", turn=0, messages=MESSAGES):
    client = LLMClient(LLMSettings(cache_dir=cache))
    return ask(client, spec, messages, Quote, context={"phase": phase}, turn=turn)


def test_a_phase_gives_its_answers_in_turn_a_reask_taking_the_next(tmp_path):
    spec = mock({"quote": ["not json", '{"quote": 1}', '{"quote": 2}'], "default": ["x"]})
    first = call(tmp_path, spec, turn=0)  # turn 0: "not json", re-asked: turn 1
    assert first.action == Quote(quote=1) and first.record.attempts == 2
    assert [e["answer"] for e in first.record.exchanges] == ["not json", '{"quote": 1}']
    # the seat's next call in the phase starts at turn 2 (two requests made); then it wraps
    assert call(tmp_path, spec, turn=2).action == Quote(quote=2)
    wrapped = call(tmp_path, spec, turn=3)  # 3 mod 3 = 0: "not json", then turn 4: quote 1
    assert wrapped.action == Quote(quote=1) and wrapped.record.attempts == 2
    # the same request at another turn is another request: not answered from the cache
    assert first.record.request_hash != wrapped.record.request_hash


def test_a_replay_gets_what_the_fresh_run_got_and_an_edited_script_is_asked_afresh(tmp_path):
    spec = mock({"quote": ['{"quote": 5}', '{"quote": 6}']})
    fresh = [call(tmp_path, spec, turn=t) for t in (0, 1)]
    replay = [call(tmp_path, spec, turn=t) for t in (0, 1)]
    assert [r.action.quote for r in fresh] == [r.action.quote for r in replay] == [5, 6]
    assert not any(r.record.cached for r in fresh) and all(r.record.cached for r in replay)
    edited = mock({"quote": ['{"quote": 7}']})  # same alias and model name, same cache
    again = call(tmp_path, edited, turn=0)
    assert again.action == Quote(quote=7) and not again.record.cached


def test_default_answers_the_phases_the_script_does_not_name(tmp_path):
    spec = mock({"quote": ["garbage"], "default": ['{"quote": 3}']})
    assert call(tmp_path, spec, phase="other").action == Quote(quote=3)
    bad = call(tmp_path, spec, phase="quote")
    assert bad.action is None and bad.record.attempts == 3  # max_reasks 2: garbage each time


def test_a_phase_with_no_script_and_no_default_stops_naming_the_model_and_phase(tmp_path):
    spec = mock({"quote": ['{"quote": 1}']}, alias="idle")
    with pytest.raises(LLMConfigError, match=r"model 'idle'.*phase 'retail'.*keys: quote"):
        call(tmp_path, spec, phase="retail")


def test_the_list_form_picks_by_the_request_whatever_the_turn(tmp_path):
    answers = [f'{{"quote": {i}}}' for i in range(50)]
    spec = mock(answers)
    picked = [call(tmp_path / str(t), spec, turn=t).action.quote for t in range(3)]
    assert len(set(picked)) == 1  # the turn is not read: the request's hash picks
    other = call(tmp_path / "o", spec, messages=[{"role": "user", "content": "Again?"}])
    assert other.action.quote != picked[0]  # another request, another pick (1 in 50 alike)


@pytest.mark.parametrize(
    "answers, message",
    [
        ({"retail": '{"prices": {}}'}, "key 'retail': must be a list of answers"),
        ({"retail": []}, "key 'retail': needs at least one answer"),
        ({}, "at least one entry in answers"),
    ],
)
def test_a_malformed_script_is_refused_naming_the_key(answers, message):
    with pytest.raises(LLMConfigError, match=f"models.m.mock.*{message}"):
        mock(answers)


def supply_chain_params(answers):
    return parse_params(
        {
            "models": {
                "idle": {
                    "model": "idle",
                    "provider": "mock",
                    "mock": {"policy": "scripted", "answers": answers},
                }
            },
            "markets": {
                "supply_chain": {
                    "roster": [
                        {"name": "cp", "kind": "baseline", "strategy": "cost_plus"},
                        {"name": "idle", "kind": "llm", "model": "idle"},
                    ]
                }
            },
        }
    )


def test_a_key_naming_no_phase_of_the_market_is_refused_listing_its_phases():
    ok = {"procurement": ['{"bids": {}}'], "default": ["garbage"]}
    assert supply_chain_params(ok).models["idle"].mock.by_phase
    with pytest.raises(ParamsError) as err:
        supply_chain_params({"procurement": ['{"bids": {}}'], "price": ['{"price": 1}']})
    assert (
        "models.idle.mock.answers.price: names no phase of market supply_chain (seated at "
        "markets.supply_chain.roster.1); its phases: procurement, retail (or default"
    ) in str(err.value)
