"""What a request may cost and what a call is charged: the numbers the budget guard (``budget.py``)
reserves and settles.

- **The bound** (:class:`Bound`). Prompt tokens at most the UTF-8 bytes of the request's messages
  and response format plus ``MESSAGE_OVERHEAD_TOKENS`` per message (every token of a byte-level
  tokenizer covers at least one byte; the overhead covers the chat template's special tokens);
  completion tokens at most the cap the request sends (``max_tokens``, or
  ``max_completion_tokens`` for OpenAI, which also bounds reasoning tokens); priced at the model's
  prices, every prompt token at the input price (none is assumed to come from the provider's
  prompt cache).
- **How a request is charged** (:func:`charge_for`, :class:`Charge`). An answer is charged the cost
  of the ``usage`` the endpoint reports. Usage that is missing, negative or not an integer is
  charged the bound. Usage that would cost more than the bound is never charged beyond it: the call
  is charged the bound, recorded as an *overrun* (in the ledger's ``overruns``, with what the
  endpoint claimed) and the guard *trips*: with a limit set, every later request of the run is
  refused and the run stops. So an endpoint that over-reports cannot carry the ledger past the
  limit; what it bills beyond the bound (if its tokenizer really exceeds the bound, or its prices
  are not the configured ones) is outside the ledger, and the overrun record says how much it
  claimed. A request that failed with an HTTP error status (429, 5xx, 4xx) was refused by the
  endpoint and is not charged; one that may have been served but whose answer never came back (a
  timeout, a connection lost after sending, a malformed answer, a call cancelled while in flight)
  is charged its bound (the transport decides which: ``transport.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from marketarena.llm.prompt_cache import cached_tokens
from marketarena.llm.schema import SharedFormat, compact_json_size
from marketarena.llm.spec import ModelSpec

MESSAGE_OVERHEAD_TOKENS = 8  # role and separator tokens a chat template adds per message
REQUEST_OVERHEAD_TOKENS = 16  # the assistant prefix and the like, once per request


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))  # ASCII: no copy


def prompt_token_bound(messages: list[dict[str, Any]], response_format: Any = None) -> int:
    """An upper bound of the prompt tokens of a request (see the module docstring)."""
    text_bytes = sum(
        _utf8_len(str(m.get("content") or "")) + len(str(m.get("role", ""))) for m in messages
    )
    return (
        text_bytes
        + _schema_bytes(response_format)
        + MESSAGE_OVERHEAD_TOKENS * len(messages)
        + REQUEST_OVERHEAD_TOKENS
    )


def _schema_bytes(response_format: Any) -> int:
    """The compact JSON size of ``response_format``, kept with the client's shared ones
    (``schema.SharedFormat``: encoding one took 20 us a request)."""
    if response_format is None:
        return 0
    if isinstance(response_format, SharedFormat):
        return response_format.size
    return compact_json_size(response_format)


@dataclass(frozen=True)
class Bound:
    """The most a request may cost: token bounds and their price."""

    prompt_tokens: int
    completion_tokens: int
    usd: float

    @classmethod
    def of(cls, spec: ModelSpec, messages: list[dict[str, Any]], response_format: Any) -> "Bound":
        prompt, completion = prompt_token_bound(messages, response_format), spec.max_tokens
        return cls(prompt, completion, spec.cost_usd(prompt, completion))


@dataclass(frozen=True)
class Charge:
    """What a settled call is charged: tokens and dollars, whether the endpoint's usage was used as
    reported (``trusted``), and whether it claimed more tokens than the bound (``over_bound``: the
    call is charged the bound, ``claimed_usd`` is what the claim would have cost, and the guard
    trips)."""

    prompt_tokens: int
    completion_tokens: int
    usd: float
    trusted: bool
    over_bound: bool = False
    claimed_usd: float = 0.0
    cached_tokens: int = 0  # of the prompt tokens, served from the provider's prompt cache

    @classmethod
    def bound(cls, bound: Bound) -> "Charge":
        return cls(bound.prompt_tokens, bound.completion_tokens, bound.usd, trusted=False)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def charge_for(spec: ModelSpec, usage: Any, bound: Bound) -> Charge:
    """The charge of a call whose endpoint reported ``usage`` (the response's ``usage`` field): its
    cost as reported, at most the bound's (a claim above it is ``over_bound``); the bound when the
    usage is missing or malformed. The tokens are the reported ones (the bound's when unusable);
    the prompt tokens it says the provider served from its prompt cache (``llm/prompt_cache.py``)
    are priced at the model's cached-input price (the bound prices every prompt token in full)."""
    usage = usage if isinstance(usage, dict) else {}
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    if prompt is None or completion is None:
        return Charge.bound(bound)
    cached = cached_tokens(usage, prompt)
    claimed = spec.cost_usd(prompt, completion, cached)
    if claimed > bound.usd:
        return Charge(
            prompt,
            completion,
            bound.usd,
            trusted=False,
            over_bound=True,
            claimed_usd=claimed,
            cached_tokens=cached,
        )
    return Charge(prompt, completion, claimed, trusted=True, cached_tokens=cached)
