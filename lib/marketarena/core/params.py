"""What every market instance's params share: the strict base model, roster entries, runs and seed.

``params.yaml`` ``markets`` maps an *instance name* of the user's choosing to one market's params;
``market:`` names the kind (a folder of ``marketarena/markets``) and defaults to the instance name,
so ``markets: {bertrand: {...}}`` and ``markets: {bertrand_a10: {market: bertrand, alpha: 10}}``
both work. Every market's params model extends :class:`MarketParams` (``market``, ``runs``,
``seed``, ``roster``) and adds its own keys.

Strictness, for every model of the params file (pydantic's strict mode): unknown keys are errors (a
typo must not fall back to a default silently), NaN and infinities are refused wherever a number is
expected, integers are integers (``runs: true``, ``runs: "2"`` or ``runs: 2.5`` are errors, not 1, 2
and 2), booleans are booleans (``reputation_visible: ["yes"]`` or ``[1]`` are errors) and text is
text. An integer is accepted where a float is expected (``initial_cash: 500``), and a YAML list where
a fixed-length tuple is (``bimodal_low: [0, 20]``), its items still checked strictly.

Bounds: every numeric param says what the market can compute. Counts the work of an episode grows
with are :func:`size` fields (bounded above); amounts are at most :data:`MAX_AMOUNT`; rates and
shares are in their natural ranges. ``tests/contract`` pushes every numeric param of every market to
the extremes its model allows and requires a refusal naming the key, or an episode that plays without
overflowing.

An instance with a ``source`` is *imported*: its episodes are published games of others (BAZAAR's,
Agent Bazaar's), read by the market's importer instead of played (``simulate/importing.py``). Its roster may
be empty (the players come from the games), and is then only what its reference plays against
(double_auction: the pool behind a truthful CSα reference).

A roster entry is one *player*: a scripted baseline (``strategy`` + ``params``) or an LLM (``model``
alias, a ``harness``, its ``params``). A player may hold several seats of an episode (a deceptive
principal's identities); its seats share its ``name``, which is what leaderboards rank. Across
market instances, an LLM player is identified by its model alias (and harness), a baseline only by
an explicit ``player`` id (the same strategy name means different rules in different markets).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictInt, model_validator

#: upper bound of ``runs``: planning is linear in it; BAZAAR's scale is ~90,000
MAX_RUNS = 1_000_000
#: upper bound of a money amount or a quantity in params (a price, a cost, a budget, cash): sums of
#: millions of such amounts stay finite and exact to a cent in float64
MAX_AMOUNT = 1e12


def size(default: int, *, le: int, ge: int = 1, description: str = "") -> Any:
    """A count the work of an episode grows with (days, rounds, consumers, attempts, a window):
    strict, bounded above so that a typo cannot start a run that never ends or fills the memory.
    ``tests/contract`` checks that every such field declares its bound (and plays it at its lower
    end only); every other numeric field is played at the extremes its model allows."""
    return Field(default, ge=ge, le=le, description=description, json_schema_extra={"size": True})


def _is_tuple(annotation: Any) -> bool:
    if get_origin(annotation) is tuple:
        return True
    return get_origin(annotation) is Union and any(_is_tuple(a) for a in get_args(annotation))


class Strict(BaseModel):
    """Base of every params model: unknown keys, NaN, infinities and lax coercions are errors (see
    the module docstring)."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, allow_inf_nan=False, strict=True
    )

    #: keys (names and aliases) of the fields declared as tuples, per class
    _tuple_keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._tuple_keys = tuple(
            {
                key
                for name, f in cls.model_fields.items()
                if _is_tuple(f.annotation)
                for key in (name, f.alias or name)
            }
        )

    @model_validator(mode="before")
    @classmethod
    def _lists_as_tuples(cls, data: Any) -> Any:
        """A YAML list where a tuple is declared (strict mode alone refuses it)."""
        if cls._tuple_keys and isinstance(data, dict):
            data = {
                k: tuple(v) if k in cls._tuple_keys and isinstance(v, list) else v
                for k, v in data.items()
            }
        return data


class RosterEntry(Strict):
    """One player: a scripted baseline (``strategy`` + ``params``) or an LLM (``model`` alias)."""

    name: str = Field(
        min_length=1,
        pattern=r"^[A-Za-z0-9_.+\-]+$",
        description="unique in the roster; letters, digits and _ . + -",
    )
    kind: Literal["baseline", "llm"]
    strategy: str | None = Field(default=None, description="baseline: the market's strategy name")
    model: str | None = Field(default=None, description="llm: a model alias of params.models")
    harness: str | None = Field(
        default=None, description="llm: harness (null: the market's default)"
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="baseline: strategy params; llm: harness params"
    )
    player: str | None = Field(
        default=None,
        description="cross-market identity (overall board); default: an LLM's model identity "
        "(identity.py, params `identities`), none for a baseline",
    )

    @model_validator(mode="after")
    def _kind_fields(self):
        if self.kind == "baseline" and not self.strategy:
            raise ValueError(f"baseline agent {self.name!r} needs a 'strategy'")
        if self.kind == "baseline" and self.harness is not None:
            raise ValueError(f"baseline agent {self.name!r}: 'harness' is for LLM agents")
        if self.kind == "llm" and not self.model:
            raise ValueError(f"llm agent {self.name!r} needs a 'model' alias from 'models'")
        if self.kind == "llm" and self.strategy:
            raise ValueError(f"llm agent {self.name!r}: 'strategy' is for baselines")
        return self


def check_unique_names(roster: list[RosterEntry]) -> list[RosterEntry]:
    seen: set[str] = set()
    for entry in roster:
        if entry.name in seen:
            raise ValueError(f"agent name {entry.name!r} appears twice in the roster")
        seen.add(entry.name)
    return roster


def joint_roster(data: Any, baselines: list[dict], harness: str, key: str, folder: str) -> Any:
    """An imported instance's raw params (``data``) with its LLM entries on the publisher's
    harness (a joint instance, issue 53): ``baselines`` (the format's roster) put before a roster
    of LLM entries only, and on an LLM entry without a harness ``harness`` with ``params.<key>``
    = ``folder`` (where the publisher's prompts are read from). Anything else is left as it is,
    for the validators to name."""
    if not isinstance(data, dict) or not isinstance(data.get("source"), dict):
        return data
    roster = data.get("roster")
    if not isinstance(roster, list) or not roster or not all(isinstance(e, dict) for e in roster):
        return data
    llm = [e for e in roster if e.get("kind") == "llm"]
    if not llm:
        return data
    out = list(baselines) if len(llm) == len(roster) else []
    for e in roster:
        if e.get("kind") == "llm" and e.get("harness") is None:
            params = e.get("params") if isinstance(e.get("params"), dict) else {}
            e = {**e, "harness": harness, "params": {key: folder, **params}}
        out.append(e)
    return {**data, "roster": out}


class SourceSpec(Strict):
    """Where an imported instance's games come from (``simulate/importing.py``)."""

    format: str = Field(
        min_length=1,
        description="the importer: one of the market's "
        "``source_formats`` (double_auction: bazaar; crash, lemon: agent_bazaar)",
    )
    path: str = Field(
        min_length=1,
        description="the folder of published logs; relative paths are "
        "relative to the project root (the params file's folder)",
    )
    prompts: str | None = Field(
        default=None,
        min_length=1,
        description="where the publisher's prompts are, read at run time for the instance's "
        "LLM roster entries (a joint instance): BAZAAR's prompts/ folder of templates (null: "
        "the `prompts` folder beside the logs folder); Agent Bazaar's repository root, whose "
        "code builds them (null: the folder above the logs folder)",
    )
    rating: str | None = Field(
        default=None,
        min_length=1,
        description="a CSV of the study's own published rating (columns model, rating; higher is "
        "better) to set the board beside: the Spearman of its models' μ with it, models matched "
        "by identity (identity.py). Only where given: a study is never set beside another "
        "study's table",
    )


class StopRule(Strict):
    """``markets.<instance>.stop``: play each LLM player's games (double_auction's entrants,
    english_auction's challengers, the oligopolies' lineups and crash's and lemon's cells that
    seat it) in batches and stop once the question asked of its rank among the field is answered
    (one of ``rank_width``, ``top_k``, ``mu_width``; ``simulate/stopping.py``, ``simulate``). Off
    (null) by default: every planned game is played."""

    batch: int = size(10, le=MAX_RUNS, description="a player's games between two looks")
    rank_width: StrictInt | None = Field(
        default=None,
        ge=0,
        le=10_000,
        description="the question 'rank interval at most w wide': stop once rank_hi - rank_lo "
        "(the rank interval at level, among the field) is at most this; a width the games can "
        "reach (docs/cost.md: at BAZAAR's density the 99% interval after 300 games still spans "
        "about 25 of 55 ranks)",
    )
    top_k: StrictInt | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="the question 'in the top k or not': stop once the rank interval lies "
        "within 1..k (in) or beyond k (out)",
    )
    mu_width: float | None = Field(
        default=None,
        gt=0,
        le=1e6,
        description="the question 'μ interval at most this wide': stop once mu_hi - mu_lo is",
    )
    min_games: StrictInt = Field(
        default=30, ge=1, le=MAX_RUNS, description="no stop before this many games"
    )
    level: float = Field(
        default=0.99,
        gt=0.5,
        lt=1.0,
        description="the looks' interval level (0.99: the 0.5-99.5 percentiles of the "
        "resamples; at 0.95 the interval at the stop covered the true rank in 85-95% of draws, "
        "looking after every batch: docs/cost.md)",
    )
    boot: int = Field(
        default=100,
        ge=10,
        le=10_000,
        description="bootstrap resamples of the player's games a look",
    )
    passes: int = Field(
        default=10, ge=1, le=1_000, description="shuffled passes of the player's games behind its μ"
    )
    seed: StrictInt = Field(default=0, ge=0, description="the looks' random stream")

    @model_validator(mode="after")
    def _one_question(self):
        asked = [k for k in ("rank_width", "top_k", "mu_width") if getattr(self, k) is not None]
        if len(asked) != 1:
            raise ValueError(
                "ask one question: rank_width (rank interval at most w wide), top_k (in the top "
                f"k or not) or mu_width; got {' and '.join(asked) if asked else 'none'}"
            )
        return self


class MarketParams(Strict):
    """The keys every market instance has; markets extend it with their own."""

    market: str = Field(default="", description="the market kind (default: the instance name)")
    runs: StrictInt = Field(default=10, ge=1, le=MAX_RUNS, description="episodes to play")
    seed: StrictInt = Field(
        default=0, ge=0, description="base seed; episode r derives from (seed, r)"
    )
    roster: list[RosterEntry] = Field(
        default_factory=list, description="the players (at least one, but for an imported instance)"
    )
    source: SourceSpec | None = Field(
        default=None,
        description="published games to import instead "
        'of playing (README "Published games"); null: play',
    )
    shard_episodes: StrictInt | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="log layout: null writes a folder per episode; "
        "n writes sharded Parquet, n episodes per shard (written and resumed as a unit)",
    )
    stop: StopRule | None = Field(
        default=None,
        description="play each LLM player's games in batches and stop once the "
        "question asked of its rank (rank_width, top_k or mu_width) is answered; null: "
        "every planned game",
    )

    #: keys read only after the episodes are played (metrics, ratings, figures); they are left out
    #: of the episode fingerprint, so changing them never replays an episode
    post_keys: ClassVar[frozenset[str]] = frozenset()
    _instance: str = PrivateAttr(default="")
    _paper_applied: dict = PrivateAttr(default_factory=dict)

    @property
    def instance(self) -> str:
        """The instance name (the key under ``markets``); the kind when not set."""
        return self._instance or self.market

    def named(self, instance: str) -> "MarketParams":
        self._instance = instance
        return self

    @property
    def paper_applied(self) -> dict:
        """The ``paper:`` values that ``scale: paper`` put over the ones written (``config``);
        empty under ``scale: quick`` or for an instance with no ``paper:`` block."""
        return self._paper_applied

    def at_paper_scale(self, values: dict) -> "MarketParams":
        self._paper_applied = dict(values)
        return self

    @model_validator(mode="after")
    def _unique_roster(self):
        if not self.roster and self.source is None:
            raise ValueError("roster: List should have at least 1 item after validation, not 0")
        check_unique_names(self.roster)
        return self

    @property
    def imported(self) -> bool:
        """Its episodes are published games read by an importer, not played."""
        return self.source is not None

    def episode_params(self) -> dict[str, Any]:
        """The params an episode depends on, as JSON: all but ``runs``, ``roster`` (each episode
        is fingerprinted over the entries it seats), the log layout (a shard records the episodes it
        holds), the stopping rule (it decides which games are played, not how one plays) and the
        post-processing keys."""
        return self.model_dump(
            mode="json", exclude={"runs", "roster", "shard_episodes", "stop", *self.post_keys}
        )
