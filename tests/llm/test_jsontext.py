"""jsontext: a request's JSON with its shared response_format spliced in is exactly json.dumps's,
so cache keys, stored entries and the bytes sent are what they were before the splice."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marketarena.core import logs
from marketarena.llm import jsontext
from marketarena.llm.http import ChatClient
from marketarena.llm.response_cache import canonical_json, request_key
from marketarena.llm.schema import SharedFormat

FORMAT = SharedFormat(
    {
        "type": "json_schema",
        "json_schema": {
            "name": "Bids",
            "strict": False,
            "schema": {
                "type": "object",
                "properties": {"zeta": {"type": "integer"}, "alpha": {"title": "prix €"}},
            },
        },
    }
)


def canonical(obj):
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def request(**extra):
    return {
        "v": 2,
        "model": "m",
        "messages": [{"role": "user", "content": 'prix: 5 €\n"x"'}],
        "temperature": 0.7,
        "max_tokens": 300,
        "response_format": FORMAT,
        "sample": 3,
        "endpoint": "http://localhost:8080/v1",
        **extra,
    }


CASES = [
    request(),
    {
        "format": 1,
        "key": "abc",
        "request": request(),
        "response": {"choices": [], "usage": {"a": 1}},
    },
    {"deep": {"deeper": {"format": FORMAT}}},  # below the second level: encoded as json does
    {},
    {"a": {}},
    {"b": True, "a": None, "c": [1, 2.5, "é", None]},
    FORMAT,
    [request()],
    "text",
    7,
    {"big": 10**30, "neg": -3, "float": 1e-7, "flag": False},
]


@pytest.mark.parametrize("obj", CASES, ids=range(len(CASES)))
def test_the_text_is_json_dumps_text(obj):
    assert jsontext.dumps(obj, canonical=True) == canonical(obj)
    assert jsontext.dumps(obj) == compact(obj)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values | st.just(FORMAT), max_size=6))
def test_any_json_object_gives_json_dumps_text(obj):
    assert jsontext.dumps(obj, canonical=True) == canonical(obj)
    assert jsontext.dumps(obj) == compact(obj)


def test_the_compact_text_keeps_the_schemas_property_order():
    """A server building a grammar from the schema follows its properties' order: the body keeps
    it (zeta before alpha), the canonical text (the cache key's) sorts."""
    assert jsontext.dumps({"response_format": FORMAT}).index("zeta") < jsontext.dumps(
        {"response_format": FORMAT}
    ).index("alpha")
    text = jsontext.dumps({"response_format": FORMAT}, canonical=True)
    assert text.index("alpha") < text.index("zeta")


def test_an_encoded_value_is_spliced_in_as_kept():
    """The kept texts are what is used (so the format is encoded once): a format changed after
    its texts were made (which no caller may do) still shows its first text."""
    shared = jsontext.Encoded({"type": "json_object"})
    before = (shared.canonical, shared.compact)
    shared["type"] = "changed"
    assert (
        jsontext.dumps({"response_format": shared}, canonical=True)
        == '{"response_format":%s}' % before[0]
    )
    assert (
        jsontext.dumps({"a": {"response_format": shared}})
        == '{"a":{"response_format":%s}}' % before[1]
    )


def test_the_cache_key_is_the_key_of_the_plain_encoding():
    """Caches written before the splice still answer: the key is the sha256 of the same text."""
    plain = logs.canonical_json(json.loads(json.dumps(request())), strict=True)
    assert canonical_json(request()) == plain
    assert request_key(request()) == hashlib.sha256(plain.encode("utf-8")).hexdigest()


def test_nan_is_refused_in_canonical_text_as_json_does():
    with pytest.raises(ValueError):
        jsontext.dumps({"temperature": math.nan}, canonical=True)
    assert jsontext.dumps({"temperature": math.nan}) == compact({"temperature": math.nan})


def test_keys_that_are_not_strings_are_encoded_as_json_does():
    assert jsontext.dumps({1: "a", 2: {"b": FORMAT}}) == compact({1: "a", 2: {"b": FORMAT}})


def test_the_body_sent_is_the_compact_json_of_the_request():
    sent = []

    async def wire(url, headers, data, timeout):
        sent.append(data)
        return 200, {}, b'{"choices": [{"message": {"content": "{}"}}]}'

    body = {k: v for k, v in request().items() if k not in ("v", "sample", "endpoint")}
    asyncio.run(ChatClient("http://localhost:1/v1", "k", wire=wire).complete(body, 5.0))
    assert sent == [compact(body).encode("utf-8")]
