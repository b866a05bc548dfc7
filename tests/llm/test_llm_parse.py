"""Answer parsing and the JSON schema sent as response_format."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from marketarena.llm import parse_action, response_format_for
from marketarena.llm.schema import strict_json_schema


class Bid(BaseModel):
    item: Literal["item1", "item2"]
    qty: int = Field(ge=0)
    price: int = Field(ge=0, description="unit price")
    note: str | None = None


class Plan(BaseModel):
    bids: list[Bid]
    best: Bid = Field(description="the main bid")


class OpenBids(BaseModel):
    bids: dict[str, Bid]


GOOD = '{"bids": [{"item": "item1", "qty": 2, "price": 50}], "best": {"item": "item2", "qty": 1, "price": 9}}'


def test_parse_plain_fenced_and_embedded_json():
    assert parse_action(GOOD, Plan)[0].best.qty == 1
    assert parse_action(f"```json\n{GOOD}\n```", Plan)[0] is not None
    assert parse_action(f"Sure! Here it is: {GOOD} Good luck.", Plan)[0] is not None


def test_parse_errors_are_readable():
    action, error = parse_action('{"bids": [{"item": "item9", "qty": -1, "price": 5}]}', Plan)
    assert action is None
    assert "bids.0.item" in error and "bids.0.qty" in error and "best: Field required" in error
    assert parse_action("", Plan)[1].startswith("the answer was empty")
    assert "not valid JSON" in parse_action("{bids: oops", Plan)[1]


def test_strict_schema_for_fixed_objects():
    schema, strict = strict_json_schema(Plan)
    assert strict is True
    bid = schema["$defs"]["Bid"]
    assert bid["additionalProperties"] is False and bid["required"] == [
        "item",
        "qty",
        "price",
        "note",
    ]
    assert "default" not in bid["properties"]["note"]
    assert "$ref" not in schema["properties"]["best"]  # $ref with siblings (description) is inlined
    assert schema["properties"]["best"]["description"] == "the main bid"


def test_open_dicts_are_sent_non_strict():
    fmt = response_format_for(OpenBids, "json_schema")
    assert fmt["json_schema"]["strict"] is False and fmt["json_schema"]["name"] == "OpenBids"
    llama = response_format_for(OpenBids, "json_object_schema")
    assert (
        llama["type"] == "json_object" and llama["schema"]["properties"]["bids"]["type"] == "object"
    )
    assert response_format_for(OpenBids, "json_object") == {"type": "json_object"}
    assert response_format_for(OpenBids, "none") is None


def test_response_format_is_a_fresh_copy():
    first = response_format_for(Plan, "json_schema")
    first["json_schema"]["name"] = "mutated"
    assert response_format_for(Plan, "json_schema")["json_schema"]["name"] == "Plan"


def test_the_shared_response_format_is_one_object_bounded_as_its_copies():
    from marketarena.llm.cost import prompt_token_bound
    from marketarena.llm.schema import shared_response_format

    shared = shared_response_format(Plan, "json_schema")
    assert (
        shared
        is shared_response_format(Plan, "json_schema")
        == response_format_for(Plan, "json_schema")
    )
    messages = [{"role": "user", "content": "plan"}]
    assert (
        prompt_token_bound(messages, shared)
        == prompt_token_bound(messages, shared)
        == prompt_token_bound(messages, response_format_for(Plan, "json_schema"))
    )
