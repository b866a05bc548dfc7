"""Exceptions of the LLM layer, and the one place where secrets are scrubbed from messages.

What: a small hierarchy so the runner can tell a configuration mistake (stop before the run starts), an
endpoint that keeps failing (stop cleanly, keep finished episodes), an exhausted budget (stop cleanly) and
a replay-only cache miss apart, each with a message a user can act on.

Why a redaction helper: error bodies from endpoints sometimes echo the key (OpenAI's 401 quotes a masked
prefix and suffix). Every message built from an endpoint's text goes through ``redact`` with the key
value, and authentication failures never quote the server's text at all.
"""

from __future__ import annotations

import re
from typing import Any

from marketarena.core.types import RunAborted

_KEYISH = re.compile(r"\b(sk|sk_proj|sk-proj|gsk|xai|hf|pplx|or)[-_][A-Za-z0-9_\-\*\.]{6,}")


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every given secret, and anything shaped like an API key, replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEYISH.sub("***", text)


class LLMError(RunAborted):
    """Base class of the LLM layer's errors; each ends the run (see ``core.types.RunAborted``)."""


class LLMConfigError(LLMError, ValueError):
    """Bad model entries or settings; raised before any call is made."""


class UnknownModelAlias(LLMConfigError):
    """A roster entry names a model alias that ``params.models`` does not declare."""


class MissingAPIKey(LLMConfigError):
    """The environment variable that a model entry names is unset or empty (the message names the
    variable, never a value)."""


class LLMEndpointError(LLMError):
    """The endpoint kept failing (after retries) or refused the request outright.

    ``alias``, ``base_url`` and ``status`` (an HTTP status code, ``"timeout"`` or ``"connection"``) are
    attributes; ``record`` is the partial ``CallRecord`` of the call, when one was under way.
    """

    def __init__(
        self, message: str, *, alias: str, base_url: str, status: int | str | None, record: Any = None
    ) -> None:
        super().__init__(message)
        self.alias = alias
        self.base_url = base_url
        self.status = status
        self.record = record


class BudgetExceeded(LLMError):
    """A new, uncached call would take spending past ``max_cost_usd``; the run should stop cleanly."""

    def __init__(self, message: str, *, spent_usd: float, limit_usd: float, record: Any = None) -> None:
        super().__init__(message)
        self.spent_usd = spent_usd
        self.limit_usd = limit_usd
        self.record = record


class CacheMiss(LLMError):
    """Replay-only mode (``LLMSettings.cache_only``) met a request that is not in the cache."""
