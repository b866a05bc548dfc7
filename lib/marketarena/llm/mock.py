"""The mock provider: offline, deterministic answers for LLM seats (``provider: mock``).

Selected in ``params.yaml`` like any model (inspect_ai's ``mockllm`` is the model)::

    models:
      mock-random: {model: mock-random, provider: mock}                 # random valid answers
      mock-fixed:  {model: mock-fixed, provider: mock,
                    mock: {policy: scripted, answers: [{"price": 1.5, "supply": 40}]}}
      lemon-idle:  {model: lemon-idle, provider: mock,                  # per phase, in turn
                    mock: {policy: scripted, answers: {buy: ['{"decision": "pass"}'],
                                                       default: ['garbage']}}}

It stands where the HTTP endpoint would (``transport.Transport`` gives it the request body), so the
whole client path runs as for a real model: cache, validation, re-asks, usage, cost, records.

- ``random_valid`` (default): an answer drawn at random from the JSON schema the request sends as
  ``response_format`` (objects with their properties, arrays, enums, bounded numbers and string
  lengths, ``anyOf``, ``$ref``), with a generator seeded by the sha256 of the request and
  ``mock.seed``: the same request always gets the same answer, whatever the order of calls.
  Numbers without bounds are drawn from [0, 100], strings are short words. An answer can be
  schema-valid and still break a market rule (a bid over budget): that is realistic.
- ``scripted``: an answer of ``mock.answers`` (a JSON object, sent as JSON, or a text, sent as is).
  ``answers`` takes two forms:

  - a list (one script for every phase): a request gets the answer at index ``h mod len(answers)``
    with ``h`` taken from the request's sha256 (not in turn: which answer a request gets depends
    on its content alone, so the same request always gets the same answer, there is no state to
    share across processes, and one answer is always that one). A multi-phase market's seat then
    gets answers written for another phase's schema in each phase: use the mapping.
  - a mapping of a decision phase of the market (``MarketKind.phases``, e.g. lemon's ``list``,
    ``buy``, ``review``) to a list, with ``default`` for the phases it does not name: the seat's
    ``k``-th request in phase ``p`` (counted from 0 over the episode, every request counting:
    first asks, re-asks after an invalid answer, the market's re-asks after a broken rule, a
    harness's extra calls such as ``skeptical``'s review) gets ``answers[p][k mod len]``. The
    seat counts (``agents.llm_agent.LLMAgent``), the client puts the phase, ``k`` and a digest
    of the script into the request (``script``: in the cache key, so a replay, a resumed
    episode and concurrent episodes get what a fresh run gets, and an edited script is asked
    afresh; ``llm/client.py``), and this mock reads them from the request body. A key that names
    no phase of the market is refused when the params are read (``config.parse_params``); a
    phase a seat plays with neither its key nor ``default`` stops the run at its first request,
    naming the model and the phase.

Usage is reported as the UTF-8 bytes of the request / 4 and of the answer / 4 (tokens), so budgets
and cost columns behave as with a priced endpoint.
"""

from __future__ import annotations

import hashlib
import json
import string
from typing import Any

import numpy as np

from marketarena.llm.errors import LLMConfigError
from marketarena.llm.response_cache import canonical_json
from marketarena.llm.spec import DEFAULT_SCRIPT, ModelSpec

WORDS = ("steady", "value", "fair", "quality", "deal", "market", "price", "offer", "good", "trust")


class MockOpenAI:
    """Stands where ``llm.http.ChatClient`` would: ``complete(body)`` answers a request body."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec

    async def complete(self, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        model, messages = body["model"], body["messages"]
        response_format = body.get("response_format")
        request = {"response_format": None, **body}  # hashed with sorted keys (canonical_json)
        digest = hashlib.sha256(canonical_json(request).encode("utf-8")).digest()
        mock = self.spec.mock
        rng = np.random.default_rng([int.from_bytes(digest[:8], "little"), mock.seed])
        if mock.policy == "scripted":
            answer = scripted(self.spec, body, digest)
        else:
            answer = random_instance(_schema_of(response_format), rng)
        content = answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)
        prompt_bytes = len(canonical_json(messages).encode("utf-8"))
        return {
            "id": "mock-" + digest.hex()[:12],
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {
                "prompt_tokens": -(-prompt_bytes // 4),
                "completion_tokens": -(-len(content.encode("utf-8")) // 4),
            },
        }

    async def close(self) -> None:
        return None


def scripted(spec: ModelSpec, body: dict[str, Any], digest: bytes) -> Any:
    """The scripted answer to the request ``body`` (hash ``digest``): see the module docstring."""
    mock = spec.mock
    if not mock.by_phase:
        return mock.answers[int.from_bytes(digest[8:16], "little") % len(mock.answers)]
    where = body.get("script") or {}
    script = mock.script_for(where.get("phase"))
    if script is None:  # the client refuses such a call before it is sent
        raise LLMConfigError(unscripted_phase(spec, where.get("phase")))
    return script[int(where.get("turn", 0)) % len(script)]


def phase_script(spec: ModelSpec, phase: str | None, where: str = "") -> dict[str, Any]:
    """What the requests of a call in ``phase`` to a mock scripted per phase carry (the client
    adds the turn): the phase and a digest of the script; an ``LLMConfigError`` naming the model
    and the phase (and ``where`` the call is) when the script has no answer for it."""
    if spec.mock.script_for(phase) is None:
        raise LLMConfigError(unscripted_phase(spec, phase) + where)
    digest = hashlib.sha256(canonical_json(spec.mock.answers).encode("utf-8")).hexdigest()
    return {"phase": phase, "answers": digest[:16]}


def unscripted_phase(spec: ModelSpec, phase: str | None) -> str:
    """Why a call in ``phase`` has no scripted answer (a per-phase script without it or default)."""
    keys = ", ".join(spec.mock.answers)
    return (
        f"model {spec.alias!r}: its scripted answers (models.{spec.alias}.mock.answers) have no "
        f"entry for phase {phase!r} and no {DEFAULT_SCRIPT!r} (its keys: {keys}); add the phase "
        f"or a {DEFAULT_SCRIPT!r} list"
    )


def _schema_of(response_format: dict | None) -> dict:
    if not response_format:
        return {"type": "object", "properties": {}}
    if "json_schema" in response_format:
        return response_format["json_schema"]["schema"]
    return response_format.get("schema") or {"type": "object", "properties": {}}


def random_instance(
    schema: dict, rng: np.random.Generator, defs: dict | None = None, depth: int = 0
) -> Any:
    """A random value valid for the JSON schema ``schema`` (the subset pydantic emits)."""
    defs = schema.get("$defs", defs or {}) if depth == 0 else (defs or {})
    if "$ref" in schema:
        target = defs[schema["$ref"].split("/")[-1]]
        return random_instance(
            {**target, **{k: v for k, v in schema.items() if k != "$ref"}}, rng, defs, depth + 1
        )
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][int(rng.integers(len(schema["enum"])))]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return random_instance(options[int(rng.integers(len(options)))], rng, defs, depth + 1)
    if "allOf" in schema:
        merged: dict = {}
        for part in schema["allOf"]:
            merged.update(part)
        return random_instance(merged, rng, defs, depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        out = {name: random_instance(sub, rng, defs, depth + 1) for name, sub in props.items()}
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not props and depth < 6:
            for i in range(int(rng.integers(1, 3))):
                out[f"k{i}"] = random_instance(extra, rng, defs, depth + 1)
        return out
    if kind == "array":
        lo, hi = (
            schema.get("minItems", 0),
            schema.get("maxItems", max(schema.get("minItems", 0), 3)),
        )
        n = int(rng.integers(lo, hi + 1))
        return [random_instance(schema.get("items", {}), rng, defs, depth + 1) for _ in range(n)]
    if kind == "string":
        lo, hi = (
            schema.get("minLength", 1),
            schema.get("maxLength", max(schema.get("minLength", 1), 24)),
        )
        text = " ".join(WORDS[int(i)] for i in rng.integers(len(WORDS), size=4))
        if len(text) < lo:
            text += "".join(
                string.ascii_lowercase[int(i)] for i in rng.integers(26, size=lo - len(text))
            )
        return text[:hi]
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", max(lo, 0) + 100))
        if "exclusiveMinimum" in schema:
            lo = lo + (1 if kind == "integer" else 1e-6)
        if "exclusiveMaximum" in schema:
            hi = hi - (1 if kind == "integer" else 1e-6)
        if kind == "integer":
            return int(rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1))
        return round(float(rng.uniform(lo, hi)), 4)
    if kind == "boolean":
        return bool(rng.integers(2))
    return None
