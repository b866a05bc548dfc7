"""ResponseCache: canonical keys, file layout, atomic JSON entries, corrupt entries read as misses."""

from __future__ import annotations

import json
import threading

import pytest

from marketarena.llm import ResponseCache, canonical_json, request_key
from marketarena.llm.response_cache import request_keys

REQUEST = {
    "model": "m",
    "messages": [{"role": "user", "content": "héllo"}],
    "temperature": 0,
    "sample": 0,
}
RESPONSE = {
    "choices": [{"message": {"content": "{}"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1},
}


def test_key_is_canonical():
    reordered = {
        "sample": 0,
        "temperature": 0,
        "messages": [{"content": "héllo", "role": "user"}],
        "model": "m",
    }
    assert request_key(REQUEST) == request_key(reordered)
    assert request_key(REQUEST) != request_key({**REQUEST, "sample": 1})
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_put_get_layout_and_counts(tmp_path):
    cache = ResponseCache(tmp_path)
    key = request_key(REQUEST)
    assert cache.get(key, REQUEST) is None
    path = cache.put(key, REQUEST, RESPONSE)
    assert path == tmp_path / key[:2] / f"{key}.json"
    entry = json.loads(path.read_text(encoding="utf-8"))  # plain JSON, no pickle
    assert entry["key"] == key and entry["response"] == RESPONSE and entry["request"] == REQUEST
    assert cache.get(key, REQUEST) == RESPONSE
    assert (cache.stats.hits, cache.stats.misses, cache.stats.writes) == (1, 1, 1)
    assert not list(tmp_path.rglob("*.tmp"))


def test_corrupt_or_mismatched_entries_are_misses(tmp_path):
    cache = ResponseCache(tmp_path)
    key = request_key(REQUEST)
    path = cache.put(key, REQUEST, RESPONSE)
    path.write_text('{"key": "' + key + '", "response": {"choi')  # torn write
    assert cache.get(key, REQUEST) is None and cache.stats.corrupt == 1
    cache.put(
        key, {**REQUEST, "model": "other"}, RESPONSE
    )  # stored request differs from the asked one
    assert cache.get(key, REQUEST) is None and cache.stats.corrupt == 2
    cache.put(key, REQUEST, RESPONSE)  # overwritten by a good entry
    assert cache.get(key, REQUEST) == RESPONSE


def test_concurrent_writers_of_one_key_leave_one_whole_entry(tmp_path):
    cache = ResponseCache(tmp_path)
    key = request_key(REQUEST)
    threads = [threading.Thread(target=cache.put, args=(key, REQUEST, RESPONSE)) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ResponseCache(tmp_path).get(key, REQUEST) == RESPONSE
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [f"{key}.json"]


def test_disabled_cache(tmp_path):
    cache = ResponseCache(tmp_path, enabled=False)
    key = request_key(REQUEST)
    assert cache.put(key, REQUEST, RESPONSE) is None and cache.get(key) is None
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("left_out", ["endpoint", "a", "zz", "model"])
def test_request_keys_from_one_encoding_are_the_two_request_keys(left_out):
    """The key and the key without one field, computed from one encoding of the rest, are what
    two ``request_key`` calls give: with the field sorting first (the endpoint), last, in the
    middle, and absent."""
    request = {
        "v": 2,
        "model": "m",
        "messages": [{"role": "user", "content": 'prix: 5 €, "x"'}],
        "temperature": 0.0,
        "max_tokens": 50,
        "response_format": None,
        "sample": 1,
        "endpoint": "http://127.0.0.1:8080/v1",
    }
    if left_out not in request:
        request[left_out] = {"nested": [1, 2.5, "é"]}
    rest = {k: v for k, v in request.items() if k != left_out}
    assert request_keys(request, left_out) == (request_key(request), request_key(rest))
    assert request_keys(rest, left_out) == (request_key(rest), request_key(rest))


def test_a_dangling_link_where_the_entry_belongs_is_corrupt_not_missing(tmp_path):
    """Looked up with one ``lstat``: nothing there is a miss; a link to nothing is an unusable
    entry (a warning, counted corrupt), and storing the answer replaces it."""
    cache = ResponseCache(tmp_path)
    key = request_key(REQUEST)
    assert cache.get(key, REQUEST) is None and (cache.stats.misses, cache.stats.corrupt) == (1, 0)
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.symlink_to(tmp_path / "gone.json")
    assert cache.get(key, REQUEST) is None and (cache.stats.misses, cache.stats.corrupt) == (2, 1)
    cache.put(key, REQUEST, RESPONSE)
    assert cache.get(key, REQUEST) == RESPONSE and not path.is_symlink()
