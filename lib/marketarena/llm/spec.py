"""Model entries and LLM-run settings: what a model alias means, validated at the edge.

What: ``ModelSpec`` is one entry of ``params.models`` (an alias for a model behind an OpenAI-compatible
endpoint, its sampling parameters, limits and prices); ``LLMSettings`` is ``params.llm`` (where the
response cache lives, the dollar budget, retry back-off). ``parse_models`` and
``parse_settings`` turn the raw params dicts into these, raising ``LLMConfigError`` whose message names
the offending key (``models.gpt-4o.temperature: ...``); ``resolve`` looks an alias up and lists the known
ones when it is not there.

Why pydantic, frozen and ``extra="forbid"``: a typo (``temprature``) must stop the run with the key's
name, not silently fall back to a default; a frozen spec can be shared across concurrent calls.

Choices:
- ``api_key_env`` holds the *name* of an environment variable, never the key. ``None`` means the
  endpoint needs no key (llama.cpp server, Ollama, vLLM without auth): the client then sends a dummy
  key, so that ``OPENAI_API_KEY`` from the environment is never sent to a third-party or local server.
- ``hide_input_in_errors``: a user who pastes the key itself into ``api_key_env`` (or ``base_url``) must
  not see it echoed in a validation error or a CI log. Errors name the field and the rule, not the value.
- ``base_url`` may not carry credentials (``https://user:pass@host``, ``?api_key=...``, ``?token=...``):
  params values are written to ``dvc.lock`` and fingerprints, so a key there would leak; the key goes
  in the environment variable ``api_key_env`` names.
- ``provider: mock`` (no endpoint, no key) answers from ``llm/mock.py``: a random schema-valid answer
  seeded by the request, or scripted answers (``mock``: ``policy``, ``seed``, ``answers``: one list,
  or a mapping of decision phase, and ``default``, to a list; ``MockSpec`` checks a mapping's
  shape, ``config.parse_params`` that its keys name phases of the markets the model is seated
  in); the whole client path (cache, re-asks, usage, cost, records) still runs, so ``dvc repro``
  can play LLM seats offline and deterministically.
- ``base_url=None`` is the OpenAI default (``OPENAI_BASE_URL`` when set, as the openai package reads it).
- Prices are US dollars per million tokens; 0 (the default) is right for local models. Prompt
  tokens the endpoint served from its prompt cache (``llm/prompt_cache.py``) cost
  ``price_cached_in_per_mtok``, by default the input price (no discount assumed).
- ``structured_output``: ``json_schema`` is OpenAI's ``response_format`` (OpenAI, vLLM, Ollama, the C++
  llama-server); ``json_object_schema`` is llama-cpp-python's dialect (``{"type": "json_object",
  "schema": ...}``; its server rejects ``json_schema``); ``json_object`` asks for any JSON object;
  ``none`` sends no ``response_format`` (endpoints that support neither). Validation happens always.
- Numbers and switches are strict (``Field(strict=True)``): ``max_tokens: "200"``, ``cache_only:
  "yes"`` or ``max_concurrency: true`` are errors, not 200, True and 1.
- Every number is finite (``allow_inf_nan=False``) and bounded above as well as below, so a typo
  (``max_tokens: 1e18``, ``max_concurrency: 1000000000``, ``timeout_s: 1e9``) stops the run naming
  the key instead of reserving an absurd budget, opening a million connections or hanging for
  ever. Each field's description gives its bound and why.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from marketarena.llm.errors import LLMConfigError, UnknownModelAlias

StructuredOutput = Literal["json_schema", "json_object_schema", "json_object", "none"]
_CREDENTIAL_QUERY = re.compile(
    r"(?i)(^|[?&;])(api[-_]?key|key|token|access[-_]?token|secret|password|"
    r"passwd|auth|sig|signature)="
)


#: the key of a per-phase script that answers the phases it does not name (``MockSpec.answers``)
DEFAULT_SCRIPT = "default"


class MockSpec(BaseModel):
    """How a ``provider: mock`` model answers (``llm/mock.py``, which says how a scripted answer
    is picked). ``answers`` is a list (one script for every phase, picked by the request's hash)
    or a mapping of a market's decision phase (or ``default``) to a list (given in turn)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    policy: Literal["random_valid", "scripted"] = Field(
        default="random_valid", description="random schema-valid answers, or the scripted answers"
    )
    seed: int = Field(
        default=0, ge=0, strict=True, description="mixed into each request's own random stream"
    )
    answers: tuple[Any, ...] | dict[str, tuple[Any, ...]] = Field(
        default=(),
        description="scripted: a list of answers (JSON objects or text), each request getting the "
        "one its hash picks; or a mapping phase -> list (and 'default' -> list for the phases not "
        "named), a seat's k-th request in a phase getting the phase's answer k mod its length",
    )

    @field_validator("answers", mode="before")
    @classmethod
    def _answer_lists(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        for key, script in value.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"a key must be a phase name or 'default' (got {key!r})")
            if not isinstance(script, (list, tuple)):
                raise ValueError(
                    f"key {key!r}: must be a list of answers (got {type(script).__name__}; "
                    "write one answer as [answer])"
                )
            if not script:
                raise ValueError(f"key {key!r}: needs at least one answer")
        return value

    @model_validator(mode="after")
    def _scripted_needs_answers(self):
        if self.policy == "scripted" and not self.answers:
            raise ValueError("policy scripted needs at least one entry in answers")
        return self

    @property
    def by_phase(self) -> bool:
        """Scripted per phase (``answers`` is a mapping): answers in turn, keyed by the phase."""
        return self.policy == "scripted" and isinstance(self.answers, dict)

    def script_for(self, phase: str | None) -> tuple[Any, ...] | None:
        """A per-phase script's answers for ``phase`` (its own, else ``default``'s; None: neither)."""
        assert isinstance(self.answers, dict)
        own = self.answers.get(phase) if phase is not None else None
        return own if own is not None else self.answers.get(DEFAULT_SCRIPT)

    def unknown_phases(self, phases: Sequence[str]) -> list[str]:
        """The keys of a per-phase script that name none of ``phases`` (nor ``default``)."""
        if not isinstance(self.answers, dict):
            return []
        return [k for k in self.answers if k != DEFAULT_SCRIPT and k not in phases]


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEY_PREFIXES = ("sk-", "sk_", "gsk_", "xai-", "hf_", "AIza", "pplx-", "or-")


#: upper bounds of a model entry's numbers (see the fields' descriptions)
MAX_TOKENS = 1_000_000
MAX_PRICE = 10_000.0


def _looks_like_a_key(value: str) -> bool:
    if value.startswith(_KEY_PREFIXES):
        return True
    return len(value) >= 32 and any(c.islower() for c in value) and any(c.isdigit() for c in value)


def at_most_input(cached: float | None, full: float, cached_key: str, key: str) -> None:
    """A cached-input price is a discount: ``ValueError`` naming both keys when it is above the
    input price."""
    if cached is not None and cached > full:
        raise ValueError(
            f"{cached_key} must not exceed {key} (a cached prompt token is billed at a discount)"
        )


class ModelSpec(BaseModel):
    """One model alias: which model at which endpoint, with which sampling, limits and prices."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, hide_input_in_errors=True, allow_inf_nan=False
    )

    alias: str = Field(min_length=1, description="the name roster entries use for this model")
    model: str = Field(min_length=1, description="the model name the endpoint knows")
    provider: Literal["openai", "mock"] = Field(
        default="openai",
        description="openai: any OpenAI-compatible endpoint; mock: offline answers",
    )
    mock: MockSpec | None = Field(default=None, description="provider mock: how it answers")
    base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1; None = OpenAI",
    )
    api_key_env: str | None = Field(
        default=None,
        description="NAME of the environment variable that holds the key; None = no key needed "
        "(when base_url is also unset, i.e. OpenAI itself, an omitted api_key_env means OPENAI_API_KEY)",
    )
    temperature: float = Field(strict=True, default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(
        strict=True,
        default=1024,
        ge=1,
        le=MAX_TOKENS,
        description="cap on an answer's tokens, also what each call is charged against the budget "
        "before it is sent; at most 1,000,000, several times any model's output limit today",
    )
    timeout_s: float = Field(
        strict=True,
        default=60.0,
        gt=0,
        le=3600.0,
        description="seconds a request may take; at most 3,600: a request unanswered after an hour "
        "is hung, not slow",
    )
    max_concurrency: int = Field(
        strict=True,
        default=8,
        ge=1,
        le=1000,
        description="concurrent requests per endpoint; at most 1,000: each holds a connection (an "
        "open file; 1,024 per process is a common limit), and 30,000 requests a minute at 2 s each "
        "is only 1,000 in flight",
    )
    max_retries: int = Field(
        strict=True,
        default=5,
        ge=0,
        le=100,
        description="retries on 429 / 5xx / timeout / connection; at most 100 (with the longest "
        "back-off, about an hour of retrying one request)",
    )
    max_reasks: int = Field(
        strict=True,
        default=2,
        ge=0,
        le=20,
        description="re-asks after an answer that fails validation; at most 20 (each re-ask is one "
        "more request, resending the conversation so far)",
    )
    price_in_per_mtok: float = Field(
        strict=True,
        default=0.0,
        ge=0.0,
        le=MAX_PRICE,
        description="USD per million prompt tokens; at most 10,000, far above any list price "
        "today (a few hundred at most)",
    )
    price_out_per_mtok: float = Field(
        strict=True,
        default=0.0,
        ge=0.0,
        le=MAX_PRICE,
        description="USD per million completion tokens; at most 10,000 (see price_in_per_mtok)",
    )
    price_cached_in_per_mtok: float | None = Field(
        strict=True,
        default=None,
        ge=0.0,
        le=MAX_PRICE,
        description="USD per million prompt tokens the endpoint served from its prompt cache "
        "(llm/prompt_cache.py); null (the default): the input price, so no discount is assumed; at "
        "most price_in_per_mtok (the budget bounds every prompt token at the input price)",
    )
    answers_like: Literal["bare_json", "chain_of_thought", "thinking"] | None = Field(
        default=None,
        description="how the model answers, for marketarena estimate and the rating-cost table "
        "(completion_priors.py): bare_json, the answer alone; chain_of_thought, its reasons "
        "first; thinking, a reasoning model billing its hidden reasoning; null: not declared, "
        "the estimate's range covers every kind",
    )
    structured_output: StructuredOutput = "json_schema"

    @model_validator(mode="before")
    @classmethod
    def _default_openai_key_env(cls, data: Any) -> Any:
        # OpenAI itself always needs a key: an entry without base_url and without api_key_env means
        # OPENAI_API_KEY. A local endpoint without api_key_env gets a dummy key, never the user's key.
        if (
            isinstance(data, Mapping)
            and data.get("base_url") is None
            and "api_key_env" not in data
            and data.get("provider", "openai") == "openai"
        ):
            data = {**data, "api_key_env": "OPENAI_API_KEY"}
        return data

    @model_validator(mode="after")
    def _mock_settings(self):
        if self.provider == "mock":
            if self.base_url is not None or self.api_key_env is not None:
                raise ValueError("provider mock takes no base_url and no api_key_env")
            if self.structured_output in ("json_object", "none") and (
                self.mock is None or self.mock.policy == "random_valid"
            ):
                raise ValueError(
                    "provider mock with policy random_valid needs the answer's schema: "
                    "structured_output json_schema or json_object_schema"
                )
            if self.mock is None:
                object.__setattr__(self, "mock", MockSpec())
        elif self.mock is not None:
            raise ValueError("mock settings need provider: mock")
        return self

    @model_validator(mode="after")
    def _cached_price(self):
        at_most_input(
            self.price_cached_in_per_mtok,
            self.price_in_per_mtok,
            "price_cached_in_per_mtok",
            "price_in_per_mtok",
        )
        return self

    @property
    def cached_in_price(self) -> float:
        """USD per million cached prompt tokens (the input price when none is given)."""
        return (
            self.price_in_per_mtok
            if self.price_cached_in_per_mtok is None
            else self.price_cached_in_per_mtok
        )

    @property
    def completion_cap_field(self) -> str:
        """The request field that caps the answer: OpenAI's newer models take only
        ``max_completion_tokens`` (it bounds reasoning tokens too); llama.cpp, vLLM, Ollama take
        ``max_tokens``."""
        return (
            "max_completion_tokens"
            if self.base_url is None and self.provider == "openai"
            else "max_tokens"
        )

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https:// (e.g. http://127.0.0.1:8080/v1)")
        parts = urlsplit(value)
        if parts.username or parts.password or "@" in parts.netloc:
            raise ValueError(
                "must not carry credentials before the host (user info and @); put the "
                "key in the environment variable that api_key_env names"
            )
        if _CREDENTIAL_QUERY.search(parts.query) or _CREDENTIAL_QUERY.search(parts.fragment):
            raise ValueError(
                "must not carry a key or token in its query; put the key in the "
                "environment variable that api_key_env names"
            )
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _check_api_key_env(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if _looks_like_a_key(value):
            raise ValueError(
                "looks like an API key itself; give the NAME of the environment variable that holds "
                "the key (e.g. OPENAI_API_KEY), never the key"
            )
        if not _ENV_NAME.match(value):
            raise ValueError("must be an environment variable name (letters, digits, underscore)")
        return value

    def cost_usd(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
        """Dollars for a call with these token counts at this model's prices, ``cached_tokens`` of
        the prompt tokens at the cached-input price."""
        return (
            (prompt_tokens - cached_tokens) * self.price_in_per_mtok
            + cached_tokens * self.cached_in_price
            + completion_tokens * self.price_out_per_mtok
        ) / 1e6


class ReferencePrice(BaseModel):
    """A reference model's list prices (``params.reference_prices``): US dollars per million
    input, cached input and output tokens. Read by the results site's "cost to rate a model"
    table only; no run is priced with them."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, populate_by_name=True
    )

    input: float = Field(
        alias="in",
        strict=True,
        ge=0.0,
        le=MAX_PRICE,
        description="USD per million prompt tokens; at most 10,000",
    )
    cached_input: float | None = Field(
        default=None,
        alias="cached_in",
        strict=True,
        ge=0.0,
        le=MAX_PRICE,
        description="USD per million prompt tokens served from the provider's prompt cache "
        "(null: the input price); at most the input price",
    )
    output: float = Field(
        alias="out",
        strict=True,
        ge=0.0,
        le=MAX_PRICE,
        description="USD per million completion tokens; at most 10,000",
    )

    @model_validator(mode="after")
    def _cached_at_most_input(self):
        at_most_input(self.cached_input, self.input, "cached_in", "in")
        return self

    def cost_usd(self, prompt: float, completion: float, cached: float = 0.0) -> float:
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (
            (prompt - cached) * self.input + cached * cached_price + completion * self.output
        ) / 1e6


class LLMSettings(BaseModel):
    """Run-wide LLM settings (``params.llm``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    cache_dir: Path = Field(
        default=Path(".cache/llm"), description="response cache, outside DVC outputs"
    )
    max_cost_usd: float | None = Field(
        strict=True,
        default=None,
        ge=0.0,
        description="stop before spending more, summed over every run of a "
        "market instance (data/llm_spend/<instance>.json)",
    )
    stop_on_estimate: bool = Field(
        strict=True,
        default=True,
        description="stop a run before its first call when the estimate of what it has left "
        "to play passes what max_cost_usd leaves (simulate/preflight.py); false: start anyway "
        "and play what the cap buys (the budget's guard stops it before passing the cap)",
    )
    cache_only: bool = Field(
        strict=True,
        default=False,
        description="replay only: a cache miss is an error instead of a network call",
    )
    backoff_base_s: float = Field(
        strict=True,
        default=1.0,
        ge=0.0,
        le=600.0,
        description="first retry waits ~this long; at most 600 s",
    )
    backoff_max_s: float = Field(
        strict=True,
        default=30.0,
        ge=0.0,
        le=3600.0,
        description="longest wait between retries; at most 3,600 s (an "
        "endpoint down for an hour ends the run, it is not waited on)",
    )


def _format_validation_error(prefix: str, err: ValidationError) -> str:
    lines = []
    for item in err.errors(include_url=False, include_input=False):
        loc = ".".join(str(part) for part in item["loc"])
        where = f"{prefix}.{loc}" if loc else prefix
        lines.append(f"{where}: {item['msg']}")
    return "; ".join(lines)


def parse_models(raw: Any, *, where: str = "models") -> dict[str, ModelSpec]:
    """``params.models`` (alias -> dict) to ``{alias: ModelSpec}``; the alias defaults to the key.

    Raises ``LLMConfigError`` naming the bad key, e.g. ``models.gpt-4o.temperature: Input should be
    less than or equal to 2``.
    """
    if not isinstance(raw, Mapping):
        raise LLMConfigError(
            f"{where}: must be a mapping of model alias to its settings (got {type(raw).__name__})"
        )
    specs: dict[str, ModelSpec] = {}
    problems: list[str] = []
    for alias, entry in raw.items():
        if isinstance(entry, ModelSpec):
            data: dict[str, Any] = entry.model_dump()
        elif isinstance(entry, Mapping):
            data = dict(entry)
        else:
            problems.append(f"{where}.{alias}: must be a mapping of model settings")
            continue
        data.setdefault("alias", alias)
        if data["alias"] != alias:
            problems.append(
                f"{where}.{alias}.alias: is {data['alias']!r}, must equal its key {alias!r}"
            )
            continue
        try:
            specs[alias] = ModelSpec.model_validate(data)
        except ValidationError as err:
            problems.append(_format_validation_error(f"{where}.{alias}", err))
    if problems:
        raise LLMConfigError("; ".join(problems))
    return specs


def parse_settings(raw: Mapping[str, Any] | None, *, where: str = "llm") -> LLMSettings:
    """``params.llm`` to ``LLMSettings``; errors name the key (``llm.max_cost_usd: ...``)."""
    if raw is not None and not isinstance(raw, Mapping):
        raise LLMConfigError(f"{where}: must be a mapping (got {type(raw).__name__})")
    try:
        return LLMSettings.model_validate(dict(raw or {}))
    except ValidationError as err:
        raise LLMConfigError(_format_validation_error(where, err)) from None


def resolve(models: Mapping[str, ModelSpec], alias: str) -> ModelSpec:
    """The spec for ``alias``; an unknown alias raises ``UnknownModelAlias`` listing the known ones."""
    try:
        return models[alias]
    except KeyError:
        known = ", ".join(sorted(models)) or "none declared"
        raise UnknownModelAlias(f"unknown model alias {alias!r} (known aliases: {known})") from None
