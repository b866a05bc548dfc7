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
from urllib.parse import quote, quote_plus

from marketarena.core.types import RunAborted

_KEYISH = re.compile(r"\b(sk|sk_proj|sk-proj|gsk|xai|hf|pplx|or)[-_][A-Za-z0-9_\-\*\.]{6,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\"\\]+")


def _forms(secret: str) -> set[str]:
    """The ways a secret can appear in a message: as is, escaped as Python prints it (``repr``,
    bytes), URL-encoded, and each line of it when it holds a line break."""
    forms = {secret, repr(secret)[1:-1], quote(secret, safe=""), quote_plus(secret)}
    forms.add(repr(secret.encode("utf-8", "backslashreplace"))[2:-1])
    forms.update(part for part in re.split(r"[\r\n]+", secret) if len(part) >= 8)
    return {f for f in forms if len(f) >= 4}


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every given secret (in any of its printed forms), any ``Bearer`` token, and
    anything shaped like an API key, replaced by ``***``."""
    for secret in secrets:
        if secret:
            for form in sorted(_forms(secret), key=len, reverse=True):
                text = text.replace(form, "***")
    text = _BEARER.sub(r"\1***", text)
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


class InvalidAPIKey(LLMConfigError):
    """The environment variable holds something that cannot be an API key (non-ASCII, whitespace or
    control characters inside); the message names the variable, never the value."""


class LLMLayerError(LLMError):
    """A fault of the LLM machinery, not of the model's answer: an unwritable cache, a bug in a
    template, a transport error nobody classified. It ends the run (only the model's own answer
    may ever become an invalid decision)."""


class CacheError(LLMError):
    """The response cache cannot be written (an unwritable ``llm.cache_dir``); names the path."""


class LLMEndpointError(LLMError):
    """The endpoint kept failing (after retries) or refused the request outright.

    ``alias``, ``base_url`` and ``status`` (an HTTP status code, ``"timeout"`` or ``"connection"``) are
    attributes; ``record`` is the partial ``CallRecord`` of the call, when one was under way.
    """

    def __init__(
        self,
        message: str,
        *,
        alias: str,
        base_url: str,
        status: int | str | None,
        record: Any = None,
    ) -> None:
        super().__init__(message)
        self.alias = alias
        self.base_url = base_url
        self.status = status
        self.record = record


class BudgetExceeded(LLMError):
    """A new, uncached call would take spending past ``max_cost_usd``; the run should stop cleanly."""

    def __init__(
        self, message: str, *, spent_usd: float, limit_usd: float, record: Any = None
    ) -> None:
        super().__init__(message)
        self.spent_usd = spent_usd
        self.limit_usd = limit_usd
        self.record = record


class LedgerError(LLMError):
    """The spend ledger (``data/llm_spend/<instance>.jsonl``) cannot be read."""


class CacheMiss(LLMError):
    """Replay-only mode (``LLMSettings.cache_only``) met a request that is not in the cache."""
