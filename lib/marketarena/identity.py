"""One identity per model across studies (issue 54): the names the studies write, read as one model.

The studies name the same model differently: Agent Bazaar logs ``anthropic/claude-sonnet-4-6`` in
one run folder and ``claude-sonnet-4.6`` in another; BAZAAR writes
``claude-opus-4-20250514-16K`` and ``-0K`` for one model at two reasoning budgets; a user's
``models:`` alias points at whatever id their endpoint takes. :func:`identify` reads a name by a
fixed rule, in this order:

1. **The user's table** (params ``identities``): ``name: other-name`` reads ``other-name`` by the
   rule instead (``gemma3: gemma-3-27b-it``: BAZAAR does not log which Gemma 3 it ran); ``name:
   {model, provider, variant}`` gives the identity outright. Either is marked ``placed: table``.
2. **Spelling**: lower case, ``_`` as ``-``, a host prefix dropped (``anthropic/``, ``openai_``,
   ``meta-llama_``...: :data:`HOSTS`), then the studies' own short names (:data:`ALIASES`:
   ``haiku35`` is ``claude-3.5-haiku``).
3. **A variant** taken off the end: a reasoning budget (``-16K``, ``-0K``), an effort after a
   versioned name (``gpt-5.1-high``; not ``mistral-medium``, whose ``medium`` names the model), or a
   mode (``-reasoning``, ``-non-reasoning``, ``-adaptive``). A variant is the same model run
   another way: it keeps its own row on a board (its play may differ) under the same model.
   ``-thinking`` and ``-think`` stay in the name: those are releases of their own.
4. **A date** taken off the end (``-20250514``, kept as ``date``); shorter stamps (``-0709``,
   ``-0324``) stay: they tell snapshots apart.
5. **Version digits** joined: ``claude-sonnet-4-6`` is ``claude-sonnet-4.6`` (one digit, a dash,
   one digit that ends a part); ``llama4`` and ``gemma3`` gain their dash.
6. **The family** by the name's start (:data:`FAMILIES`): the product line and its provider. A
   name no family starts is ``placed: unplaced``: it is still its own model, under the name as
   spelled, and listed so the user can place it with the table.

The key a board uses is :attr:`ModelIdentity.key`: the model, and its variant in brackets
(``claude-opus-4 [16K]``). Nothing here reads a file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from marketarena.core.params import Strict

#: host prefixes a study puts before a model's own name (OpenRouter's ``provider/``, Agent
#: Bazaar's run folders ``provider_``); dropped
HOSTS = (
    "openai",
    "anthropic",
    "google",
    "meta-llama",
    "mistralai",
    "qwen",
    "deepseek",
    "microsoft",
    "nvidia",
    "nousresearch",
    "allenai",
    "x-ai",
    "moonshotai",
    "z-ai",
    "cohere",
    "amazon",
)
_HOST = re.compile(rf"^(?:{'|'.join(map(re.escape, HOSTS))})([/_-])(?=.)")

#: the studies' own short names for a model, read as the model's name (after the spelling step)
ALIASES = {
    "haiku35": "claude-3.5-haiku",
    "haiku45": "claude-haiku-4.5",
    "r1-0528": "deepseek-r1-0528",
    "deepseek-fireworks-v3-0324": "deepseek-v3-0324",  # served by Fireworks: a host, not a model
}

#: a variant at the end of a name: a reasoning budget, or a mode
_BUDGET = re.compile(r"-(\d+k)$")
_MODE = re.compile(r"-(non-reasoning|reasoning|adaptive)$")
#: an effort at the end of a name, a variant only after a part with a digit (``gpt-5-mini-high``)
_EFFORT = re.compile(r"-(none|minimal|low|medium|high|xhigh)$")
_DATE = re.compile(r"-(20\d\d)-?(\d\d)-?(\d\d)$")
_JOIN = re.compile(r"(?<![\d.])(\d)-(\d)(?=-|$)")
_DASH = re.compile(r"^(llama|gemma)(\d)")

#: product lines by the start of a name (searched in order), with their provider
FAMILIES: tuple[tuple[str, str, str], ...] = (
    (r".*nemotron", "nemotron", "nvidia"),
    (r"hermes", "hermes", "nousresearch"),
    (r"claude", "claude", "anthropic"),
    (r"chatgpt|gpt", "gpt", "openai"),
    (r"o\d(?:-|$)", "o", "openai"),
    (r"gemini", "gemini", "google"),
    (r"gemma", "gemma", "google"),
    (r"llama", "llama", "meta"),
    (r"qwen", "qwen", "alibaba"),
    (r"deepseek", "deepseek", "deepseek"),
    (r"mistral|magistral|ministral", "mistral", "mistral"),
    (r"phi", "phi", "microsoft"),
    (r"grok", "grok", "xai"),
    (r"kimi", "kimi", "moonshot"),
    (r"glm", "glm", "zhipu"),
    (r"ernie", "ernie", "baidu"),
    (r"nova", "nova", "amazon"),
    (r"minimax", "minimax", "minimax"),
    (r"olmo", "olmo", "ai2"),
    (r"command", "command", "cohere"),
    (r"mimo", "mimo", "xiaomi"),
    (r"seed", "seed", "bytedance"),
    (r"trinity", "trinity", "arcee"),
    (r"hy\d", "hunyuan", "tencent"),
)
_FAMILIES = tuple((re.compile(p), f, prov) for p, f, prov in FAMILIES)


class IdentityOverride(Strict):
    """An identity given outright in params ``identities`` (what the rule does not know)."""

    model: str = Field(min_length=1, description="the model's name, as it should read")
    provider: str = Field(default="", description="who makes it")
    family: str = Field(default="", description="its product line")
    variant: str = Field(default="", description="how it was run (a budget, an effort)")


#: params ``identities``: a name as a study writes it -> another name to read, or the identity
IdentityTable = Mapping[str, "str | IdentityOverride"]


class ModelIdentity(BaseModel):
    """A model as :func:`identify` read it from ``name``."""

    model_config = ConfigDict(frozen=True)

    name: str
    model: str
    variant: str = ""
    provider: str = ""
    family: str = ""
    date: str = ""
    placed: Literal["rule", "table", "unplaced"] = "rule"

    @property
    def key(self) -> str:
        """The model and its variant, as boards key it: ``claude-opus-4 [16K]``."""
        return f"{self.model} [{self.variant}]" if self.variant else self.model


def _family(model: str) -> tuple[str, str]:
    for pattern, family, provider in _FAMILIES:
        if pattern.match(model):
            return family, provider
    return "", ""


def _unhosted(name: str) -> str:
    """``name`` without a host prefix: after ``/`` or ``_`` always, after ``-`` only where a
    family's name follows (``openai-gpt-5.4``; not ``qwen-2.5-72b``)."""
    m = _HOST.match(name)
    if m is None:
        return name
    rest = name[m.end() :]
    return rest if m.group(1) != "-" or _family(rest)[0] else name


def _variant(name: str) -> tuple[str, str]:
    for pattern in (_BUDGET, _MODE):
        if m := pattern.search(name):
            return name[: m.start()], m.group(1).upper() if pattern is _BUDGET else m.group(1)
    if (m := _EFFORT.search(name)) and any(ch.isdigit() for ch in name[: m.start()]):
        return name[: m.start()], m.group(1)
    return name, ""


def identify(name: str, table: IdentityTable | None = None) -> ModelIdentity:
    """The identity of a model ``name`` as a study wrote it (the module docstring's rule)."""
    given = (table or {}).get(name)
    if isinstance(given, IdentityOverride):
        return ModelIdentity(
            name=name,
            model=given.model,
            variant=given.variant,
            provider=given.provider,
            family=given.family,
            placed="table",
        )
    spelled = _unhosted((given or name).strip().lower()).replace("_", "-")
    spelled = ALIASES.get(spelled, spelled)
    model, variant = _variant(spelled)
    date = ""
    if m := _DATE.search(model):
        model, date = model[: m.start()], "-".join(m.groups())
    model = _DASH.sub(r"\1-\2", _JOIN.sub(r"\1.\2", model))
    family, provider = _family(model)
    placed = "table" if given is not None else ("rule" if family else "unplaced")
    return ModelIdentity(
        name=name,
        model=model,
        variant=variant,
        provider=provider,
        family=family,
        date=date,
        placed=placed,
    )
