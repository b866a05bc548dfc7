"""Provider prompt caching: the prompt tokens an endpoint served from its own prompt cache.

Most providers keep the prefixes of recent prompts and bill a prompt's tokens that repeat one of
them (its *cached* tokens) at a fraction of the input price: a tenth at OpenAI for its recent
models, Anthropic, Gemini, DeepSeek, xAI and Mistral, half for OpenAI's older ones. A market's
prompts repeat much of the previous one (the rules, the seat's description, the history so far),
so this is often most of a run's prompt tokens. Not the same thing as our *response* cache
(``llm/response_cache.py``), which answers a request we asked before without asking anyone.

What is recorded: :func:`cached_tokens` reads the count from a response's ``usage`` in the
fields providers use:

- ``prompt_tokens_details.cached_tokens``: OpenAI, and the OpenAI-compatible endpoints of xAI,
  Gemini, Anthropic, OpenRouter, vLLM and llama.cpp's server;
- ``prompt_cache_hit_tokens``: DeepSeek;
- ``cached_tokens`` at the top of ``usage``: Moonshot (Kimi);
- ``cache_read_input_tokens``: Anthropic's own name, which some proxies pass through.

A count that is missing, not an integer or negative reads as 0 (the prompt is priced in full); one
above the prompt tokens is cut to them. The client records it per call (``CallRecord``,
``cached_prompt_tokens`` in ``llm_calls``) and prices those tokens at the model's
``price_cached_in_per_mtok`` (``llm/spec.py``; by default the input price, so nothing is assumed).

What is predicted (``marketarena estimate``, and what the fake endpoint reports:
``llm.fake.prompt_caching``): :class:`PrefixCache` is a provider whose cache serves the longest
prefix a prompt shares with one of the prompts sent before it, as OpenAI documents its automatic
caching: nothing for a prompt under ``min_tokens`` (1,024), and then whole blocks of
``block_tokens`` (128). :func:`prompt_text` is the text compared: each message's role and
content in order, as a chat template lays them out; tokens are UTF-8 bytes / 4, the mock
provider's count (``llm/mock.py``). :func:`repeat_share` is the share of prompt tokens that repeat
the previous request's prefix for the seat (no minimum, no blocks): how well a market's prompts
put what does not change first.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

#: OpenAI's automatic prompt caching: prompts of at least this many tokens ...
MIN_CACHED_PROMPT_TOKENS = 1024
#: ... are served from the cache in whole blocks of this many tokens
CACHE_BLOCK_TOKENS = 128
BYTES_PER_TOKEN = 4  # the mock provider's count


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def cached_tokens(usage: Any, prompt_tokens: int | None = None) -> int:
    """The prompt tokens a response's ``usage`` says were served from the provider's prompt cache
    (see the module docstring), at most ``prompt_tokens`` when given; 0 when it says nothing."""
    if not isinstance(usage, Mapping):
        return 0
    details = usage.get("prompt_tokens_details")
    found = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    for key in ("prompt_cache_hit_tokens", "cached_tokens", "cache_read_input_tokens"):
        if found is None:
            found = _count(usage.get(key))
    found = found or 0
    return min(found, prompt_tokens) if prompt_tokens is not None else found


def prompt_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """The prompt as prefixes are compared: each message's role and content, in order."""
    return "".join(f"<|{m.get('role', '')}|>\n{m.get('content') or ''}\n" for m in messages)


def common_prefix_bytes(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (a bisection of slice comparisons:
    memcmp in C, not a Python loop over 50 kB prompts)."""
    n = min(len(a), len(b))
    x, y = memoryview(a), memoryview(b)
    if x[:n] == y[:n]:
        return n
    lo, hi = 0, n  # x[:lo] == y[:lo], x[:hi] != y[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if x[:mid] == y[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def tokens(n_bytes: int) -> int:
    return -(-n_bytes // BYTES_PER_TOKEN)


@dataclass
class PrefixCache:
    """A provider's automatic prefix cache: :meth:`serve` returns the tokens of a prompt it would
    serve from the cache (the longest prefix it shares with one of the ``remembered`` prompts
    before it, in whole blocks, none under ``min_tokens``) and remembers the prompt. The prompts
    are kept sorted, so the longest shared prefix is with one of the two neighbours of the new
    prompt's place: two comparisons a prompt, not one per prompt remembered."""

    min_tokens: int = MIN_CACHED_PROMPT_TOKENS
    block_tokens: int = CACHE_BLOCK_TOKENS
    remembered: int = 1024
    _sorted: list[bytes] = field(default_factory=list)
    _order: deque = field(default_factory=deque)

    def serve(self, text: str) -> int:
        data = text.encode("utf-8")
        at = bisect.bisect_left(self._sorted, data)
        shared = max(
            (
                common_prefix_bytes(data, self._sorted[i])
                for i in (at - 1, at)
                if 0 <= i < len(self._sorted)
            ),
            default=0,
        )
        self._sorted.insert(at, data)
        self._order.append(data)
        if len(self._order) > self.remembered:
            old = self._order.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, old)]
        if tokens(len(data)) < self.min_tokens:
            return 0
        return shared // BYTES_PER_TOKEN // self.block_tokens * self.block_tokens


def repeat_share(prompts: Sequence[tuple[Any, str]]) -> tuple[int, int]:
    """(Tokens that repeat the previous prompt's prefix of the same seat, all prompt tokens) over
    ``prompts``, (seat, prompt text) in the order they were sent."""
    last: dict[Any, bytes] = {}
    repeated = total = 0
    for key, text in prompts:
        data = text.encode("utf-8")
        if key in last:
            repeated += common_prefix_bytes(last[key], data)
        total += len(data)
        last[key] = data
    return tokens(repeated), tokens(total)
