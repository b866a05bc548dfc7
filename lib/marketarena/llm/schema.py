"""Answer schemas and parsing: what is sent as ``response_format`` and how an answer is read.

- ``strict_json_schema`` turns a pydantic model's JSON schema into the form OpenAI's strict structured
  outputs want (every object closed, every property required, ``$ref`` siblings inlined) and says
  whether strict mode can hold (a ``dict[str, X]`` field cannot);
- ``response_format_for(schema, mode)`` is the request field per ``structured_output`` mode
  (``json_schema``, llama-cpp-python's ``json_object_schema``, ``json_object``, ``none``), built once
  per (schema, mode);
- ``parse_action`` reads an answer as JSON (also inside a ``` fence, or the outermost ``{...}``) and
  validates it with pydantic, whatever the endpoint promised; ``describe_validation_error`` is the
  model-readable error a re-ask quotes;
- ``reask_messages`` is what a re-ask appends: the invalid answer cut to ``REASK_ANSWER_CHARS`` and
  the error;
- :class:`TextAnswer` is a schema that reads its own text, for a publisher's answer format played
  as they asked it (BAZAAR's ``<price>XX</price>``, issue 53): no ``response_format`` is sent
  (their prompt says the format; ``json_mode``: JSON mode, ``{"type": "json_object"}``, as Agent
  Bazaar's client asks, unless the model entry's ``structured_output`` is ``none``),
  ``from_text`` parses the answer, and ``max_reasks`` caps the re-asks (BAZAAR forfeits the
  round: 0).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from marketarena.llm.jsontext import Encoded

A = TypeVar("A", bound=BaseModel)
Message = dict[str, Any]

#: at most this much of an invalid answer (and of its error) is quoted back in a re-ask
REASK_ANSWER_CHARS = 500


class TextAnswer(BaseModel):
    """An answer in a format of its own, not JSON (module docstring): a subclass defines
    :meth:`from_text`; ``max_reasks`` (None: the model entry's) is the most re-asks it gets."""

    max_reasks: ClassVar[int | None] = None
    #: ask for JSON mode (``{"type": "json_object"}``), with no schema (module docstring)
    json_mode: ClassVar[bool] = False

    @classmethod
    def from_text(cls, text: str) -> tuple["TextAnswer | None", str | None]:
        """(the answer, None), or (None, why the text is not one)."""
        raise NotImplementedError

    @classmethod
    def from_action(cls, action: Any, observation: Any, messages: list) -> "TextAnswer | None":
        """The answer that says the market action ``action`` in this format, for the prompt
        ``messages`` built from ``observation`` (``marketarena estimate``'s stand-ins play a
        publisher's harness through it); None: the format cannot say it."""
        return None


def reasks_for(schema: type[BaseModel], configured: int) -> int:
    """The re-asks an answer of ``schema`` gets: the model entry's ``configured``, at most the
    schema's own cap (:class:`TextAnswer`)."""
    cap = getattr(schema, "max_reasks", None) if issubclass(schema, TextAnswer) else None
    return configured if cap is None else min(configured, cap)


def _schema_name(schema: type[BaseModel]) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "action"


def strict_json_schema(schema: type[BaseModel]) -> tuple[dict[str, Any], bool]:
    """The JSON schema of ``schema`` made strict the way OpenAI's structured outputs want it (every
    object with properties gets ``additionalProperties: false`` and all its properties required; a
    ``$ref`` with sibling keys is inlined; ``default: null`` is dropped), and whether strict mode can
    hold (False when some object is open, e.g. a ``dict[str, X]`` field)."""
    root = schema.model_json_schema()
    defs = root.get("$defs") or {}
    strict_ok = True

    def walk(node: Any) -> Any:
        nonlocal strict_ok
        if not isinstance(node, dict):
            return node
        node = dict(node)
        ref = node.get("$ref")
        if isinstance(ref, str) and len(node) > 1 and ref.startswith("#/$defs/"):
            node.pop("$ref")
            node = {**defs.get(ref.split("/")[-1], {}), **node}
        if isinstance(node.get("properties"), dict):
            node["properties"] = {name: walk(sub) for name, sub in node["properties"].items()}
            node.setdefault("additionalProperties", False)
            node["required"] = list(node["properties"])
        if isinstance(node.get("additionalProperties"), dict):
            node["additionalProperties"] = walk(node["additionalProperties"])
        is_object = (
            node.get("type") == "object" or "properties" in node or "additionalProperties" in node
        )
        if is_object and node.get("additionalProperties", True) is not False:
            strict_ok = False
        for key in ("items", "not", "propertyNames"):
            if isinstance(node.get(key), dict):
                node[key] = walk(node[key])
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if isinstance(node.get(key), list):
                node[key] = [walk(sub) for sub in node[key]]
        if "default" in node and node["default"] is None:
            node.pop("default")
        return node

    out = walk({k: v for k, v in root.items() if k != "$defs"})
    if defs:
        out["$defs"] = {name: walk(sub) for name, sub in defs.items()}
    return out, strict_ok


def response_format_for(schema: type[BaseModel], mode: str) -> dict[str, Any] | None:
    """The ``response_format`` request field for ``structured_output`` mode ``mode`` (a fresh copy;
    the schema is built once per (schema, mode), as pydantic's schema generation takes ~1 ms)."""
    shared = shared_response_format(schema, mode)
    return None if shared is None else json.loads(json.dumps(shared))


def compact_json_size(obj: Any) -> int:
    """Bytes of ``obj`` as compact UTF-8 JSON (what ``budget.prompt_token_bound`` counts)."""
    return len(json.dumps(obj, separators=(",", ":")).encode("utf-8"))


class SharedFormat(Encoded):
    """A ``response_format`` built once and shared by every request of its (schema, mode): never
    modified, so its size (``budget.prompt_token_bound``) and its JSON texts (``jsontext``) are
    computed once and kept."""

    @functools.cached_property
    def size(self) -> int:
        return compact_json_size(self)


@functools.lru_cache(maxsize=256)
def shared_response_format(schema: type[BaseModel], mode: str) -> SharedFormat | None:
    """:func:`response_format_for`'s field itself, one object per (schema, mode), which nobody
    may modify: the client only reads it (into the request it hashes, sends and bounds), and a
    copy per call was 17 us of each request's 20 prepared per decision point."""
    built = _build_response_format(schema, mode)
    return None if built is None else SharedFormat(built)


def _build_response_format(schema: type[BaseModel], mode: str) -> dict[str, Any] | None:
    if mode == "none":
        return None
    if issubclass(schema, TextAnswer):
        return {"type": "json_object"} if schema.json_mode else None
    if mode == "json_object":
        return {"type": "json_object"}
    json_schema, strict_ok = strict_json_schema(schema)
    if mode == "json_object_schema":  # llama-cpp-python's server: grammar from "schema"
        return {"type": "json_object", "schema": json_schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": _schema_name(schema), "schema": json_schema, "strict": strict_ok},
    }


_FENCE = re.compile(r"^```[A-Za-z]*\s*(.*?)\s*```$", re.S)


def _json_candidates(text: str) -> list[str]:
    stripped = text.strip()
    out = [stripped]
    fenced = _FENCE.match(stripped)
    if fenced:
        out.append(fenced.group(1))
    first, last = stripped.find("{"), stripped.rfind("}")
    if 0 <= first < last:
        out.append(stripped[first : last + 1])
    return out


def describe_validation_error(err: ValidationError) -> str:
    """A short, model-readable account of a pydantic error: ``loc: message (got ...)`` per problem."""
    parts = []
    for item in err.errors(include_url=False):
        loc = ".".join(str(p) for p in item["loc"]) or "(root)"
        got = item.get("input")
        shown = ""
        if item["type"] != "missing" and not isinstance(got, (dict, list)):
            shown = f" (got {json.dumps(got, default=str)[:60]})"
        parts.append(f"{loc}: {item['msg']}{shown}")
    return "; ".join(parts)


def parse_action(text: str, schema: type[A]) -> tuple[A | None, str | None]:
    """Parse ``text`` as JSON (also inside a ``` fence, or the outermost {...}) and validate it with
    ``schema``. Returns (action, None) or (None, error text). A :class:`TextAnswer` reads the
    text itself."""
    if issubclass(schema, TextAnswer):
        return schema.from_text(text or "")
    if not text or not text.strip():
        return None, "the answer was empty; a JSON object was expected"
    decode_error: str | None = None
    for candidate in _json_candidates(text):
        try:
            data = json.loads(candidate)
        except ValueError as err:
            decode_error = decode_error or f"the answer is not valid JSON: {err}"
            continue
        try:
            return schema.model_validate(data), None
        except ValidationError as err:
            return (
                None,
                f"the JSON does not match the required schema: {describe_validation_error(err)}",
            )
    return None, decode_error


def reask_messages(answer: str, error: str) -> list[Message]:
    """What a re-ask appends to the conversation: the model's answer, cut to ``REASK_ANSWER_CHARS``
    (a runaway answer must not be carried, and cached, whole into every later request), and a user
    message quoting the validation error."""
    if len(answer) > REASK_ANSWER_CHARS:
        answer = f"{answer[:REASK_ANSWER_CHARS]}…[answer cut: {len(answer)} characters in all]"
    return [
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": f"Your previous answer could not be used: {error[:REASK_ANSWER_CHARS]}\n"
            "Reply again with only a JSON object that matches the required schema.",
        },
    ]
