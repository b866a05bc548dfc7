"""The JSON text of a request whose shared parts carry their text already encoded.

Every request of one (schema, mode) sends the same ``response_format`` object
(``schema.shared_response_format``), and its JSON schema was most of each request's encoding: the
cache key (canonical: sorted keys), the body sent (keys in their order) and the cache entry each
encoded it again, 40-50 us a request before its decision point's last request could leave. An
:class:`Encoded` dict keeps both its texts once made; :func:`dumps` splices them in where the
dict stands (at the top level of the object or one level below) and encodes everything else as
``json.dumps`` does. The result is exactly ``json.dumps``'s text with the same options (tested):
with ``canonical`` that of ``cache.canonical_json`` (sorted keys, no spaces, non-ASCII kept, NaN
refused), else the compact text sent over HTTP (keys in their order: a server building a grammar
from the schema follows the order of its properties).
"""

from __future__ import annotations

import functools
import json
from json.encoder import encode_basestring  # a string as JSON, non-ASCII kept (C, when built)
from typing import Any

_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class Encoded(dict):
    """A JSON object that is never modified once made, so its texts are encoded once and kept."""

    @functools.cached_property
    def canonical(self) -> str:
        return _CANONICAL(self)

    @functools.cached_property
    def compact(self) -> str:
        return _COMPACT(self)


def dumps(obj: Any, canonical: bool = False) -> str:
    """``obj`` as ``json.dumps`` encodes it (``canonical``: sorted keys, NaN refused; else keys in
    their order; both without spaces, non-ASCII kept), an :class:`Encoded` value at the top or
    second level spliced in as its kept text."""
    return _dumps(obj, canonical, 2)


def _dumps(obj: Any, canonical: bool, depth: int) -> str:
    if isinstance(obj, Encoded):
        return obj.canonical if canonical else obj.compact
    encode = _CANONICAL if canonical else _COMPACT
    if depth == 0 or type(obj) is not dict or not all(type(k) is str for k in obj):
        return encode(obj)  # also what json.dumps makes of keys that are not strings
    keys = sorted(obj) if canonical else obj
    return (
        "{"
        + ",".join(f"{encode_basestring(k)}:{_value(obj[k], canonical, depth - 1)}" for k in keys)
        + "}"
    )


def _value(value: Any, canonical: bool, depth: int) -> str:
    """A value's text; strings and integers directly (an encoder's call costs a microsecond)."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if kind is int:
        return int.__repr__(value)
    return _dumps(value, canonical, depth)
