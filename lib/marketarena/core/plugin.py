"""The market plugin: everything a market folder tells the generic pipeline, with defaults.

Each market package (``marketarena/markets/<kind>/__init__.py``) defines ``PLUGIN``, an instance of
a :class:`MarketPlugin` subclass. The core does the wiring every market shares:

- **planning** (:meth:`MarketPlugin.plan`): the episodes of an instance, each an
  :class:`EpisodeSpec` (id, run index, seed and its :class:`Seat` s). By default episode ``r`` of
  ``runs`` is ``ep-<r:04d>`` with seed ``SeedSequence([seed, r])`` and the seats of
  :meth:`MarketPlugin.seats`; a market with a tournament schedule overrides ``plan``.
- **seats and players**: a seat is one agent id of an episode, held by a roster entry (a player)
  in a role. A player may hold several seats (a principal's identities); a seat's ``actor`` is the
  agent that decides for it (itself by default), so one agent may decide for several seats in one
  answer. The agents table (``agents.parquet``) lists every seat an episode may ever use, including
  ones that join later.
- **agents**: scripted seats come from the market's :class:`~marketarena.core.scripted.StrategyTable`
  (``strategies``), LLM seats from the LLM runtime passed to :meth:`MarketPlugin.build_episode`
  (``llm.agent(...)``: the generic LLM agent with the harness the entry names, one of the market's
  ``harnesses``; ``default_harness`` when unset).
- **seating** (``core/seating.py``): before any episode, every roster entry must be seated in the
  plan, in roles its strategy or harness can play (``roles_of``), on one side of the roles that
  exclude each other (``role_sides``); errors name the key that seats the role (``role_keys``) or
  would seat the entry (``seating_hint``).

The core knows nothing of the layers above it (``agents``, ``ratings``): what it needs from them
is passed in. A harness's roles come as ``harness_roles`` (a function of the harness name) to
:meth:`MarketPlugin.roles_of`; a harness's params are checked by ``config`` (which knows the
harnesses); the LLM runtime is an argument of ``build_episode``; the leaderboard is each market's
own hook (``markets/_shared/boards.py`` holds the usual TrueSkill board).

Hooks receive their own instance's params (``mp``), never the whole params file; a market whose
episodes depend on global sections (personas, the embedding model) names them in ``uses`` and gets
them in ``load_resources``; they are part of its episodes' fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.core.params import MarketParams, RosterEntry
from marketarena.core.scripted import StrategyTable
from marketarena.core.types import Market

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.core.reader import EpisodeReader
    from marketarena.core.runner import EpisodeResult

AGENT_COLUMNS = ["agent_id", "name", "kind", "model", "strategy", "harness", "role", "actor"]


@dataclass(frozen=True)
class Seat:
    """One agent id of an episode, held by a roster entry in a role; ``actor`` decides for it."""

    agent_id: str
    entry: RosterEntry
    role: str
    actor: str = ""

    @property
    def actor_id(self) -> str:
        return self.actor or self.agent_id


@dataclass(frozen=True)
class EpisodeSpec:
    """One planned episode: everything that tells it apart from its siblings."""

    episode_id: str
    run: int  # the run index: seeds and the LLM sample index derive from it
    seed: int
    seats: tuple[Seat, ...]
    setting: tuple[tuple[str, Any], ...] = ()  # per-episode settings the plan fixes

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.setting).get(key, default)


def read_metrics(metrics_dir: Path, names: tuple[str, ...] | list[str]) -> dict[str, pd.DataFrame]:
    """The metrics stage's tables ``<metrics_dir>/<name>.parquet`` a market's figures read."""
    return {n: pd.read_parquet(Path(metrics_dir) / f"{n}.parquet") for n in names}


def episode_seed(base_seed: int, run: int) -> int:
    return int(np.random.SeedSequence([base_seed, run]).generate_state(1)[0])


class MarketPlugin:
    """Base class of every market's plugin; subclasses set the class attributes and override the
    hooks marked *required*."""

    kind: ClassVar[str]
    params_model: ClassVar[type[MarketParams]]
    strategies: ClassVar[StrategyTable]
    #: LLM harnesses this market supports (``roster[].harness``), and the default one
    harnesses: ClassVar[tuple[str, ...]] = ("plain",)
    default_harness: ClassVar[str] = "plain"
    #: dotted keys of global params sections its episodes depend on (fingerprinted)
    uses: ClassVar[tuple[str, ...]] = ()
    #: per-agent metric that ranks players within an episode, and every metric column
    rank_by: ClassVar[str]
    metric_columns: ClassVar[tuple[str, ...]]
    #: how a player's seats combine into its score in one episode ("sum" or "mean")
    seat_score: ClassVar[str] = "sum"
    #: the params key that seats each role (for errors; default ``roster``)
    role_keys: ClassVar[dict[str, str]] = {}
    #: role -> side: one roster entry may hold roles of one side only (lemon: an entry cannot be
    #: both an honest seller and the deceptive principal); roles not listed exclude nothing
    role_sides: ClassVar[dict[str, str]] = {}
    #: formats of published games the market imports (``source.format`` of an imported instance)
    source_formats: ClassVar[tuple[str, ...]] = ()
    #: per format, the instance params that describe the market those games were played in: the
    #: defaults of an imported instance of that format (``config.parse_market``; a key the
    #: instance writes wins), and what ``importing.import_folder`` imports with
    source_params: ClassVar[dict[str, dict[str, Any]]] = {}

    # ------------------------------------------------------------------ params
    def check_params(self, mp: MarketParams) -> None:
        """Roster checks that need the market's tables: baseline strategies and their params,
        LLM harnesses among the market's (their params are checked by ``config``, which knows
        the harnesses), and an imported instance's ``source.format``. Raises ``ValueError``
        naming ``roster.<i>.<key>`` (or ``source.format``)."""
        if mp.source is not None and mp.source.format not in self.source_formats:
            offered = ", ".join(self.source_formats) or "none"
            raise ValueError(f"source.format: {self.kind} imports the formats {offered} "
                             f"(got {mp.source.format!r})")
        for i, entry in enumerate(mp.roster):
            where = f"roster.{i}"
            if entry.kind == "baseline":
                self.strategies.validate(entry, where)
            elif self.harness_of(entry) not in self.harnesses:
                raise ValueError(f"{where}.harness: {self.kind} offers the harnesses "
                                 f"{', '.join(self.harnesses)} (got {entry.harness!r})")
        if mp.stop is not None:
            self.stop_players(mp)  # raises, naming the key, where the rule cannot work

    def harness_of(self, entry: RosterEntry) -> str:
        return "" if entry.kind != "llm" else (entry.harness or self.default_harness)

    def roles_of(self, entry: RosterEntry,
                 harness_roles: Callable[[str], frozenset[str] | None]) -> frozenset[str] | None:
        """The roles an entry can play (None: any): its strategy's, or its harness's
        (``harness_roles(name)``, given by the layer that knows the harnesses)."""
        if entry.kind == "baseline":
            return self.strategies[entry.strategy].roles
        return harness_roles(self.harness_of(entry))

    def seating_hint(self, mp: MarketParams, entry: RosterEntry) -> str:
        """What would seat ``entry`` when no planned episode does (``core/seating.py``)."""
        return f"raise markets.{mp.instance}.runs (now {mp.runs})"

    def seat_matrix(self, mp: MarketParams) -> tuple[np.ndarray, list[str]] | None:
        """The whole plan's seating as (episodes x seats array of roster indices, the role of each
        seat position), when the market computes it faster than its plan (equal to it: tested);
        None: the seating comes from the plan."""
        return None

    def seating_period(self, mp: MarketParams) -> int | None:
        """P when episode ``r`` is seated as episode ``r mod P`` (a grid's cells, a round robin's
        lineups), so checking the seating needs P episodes, not the whole plan; None: no period."""
        return None

    def plan_notes(self, mp: MarketParams) -> list[str]:
        """Remarks on the plan ``marketarena validate`` prints (an unbalanced schedule, ...)."""
        return []

    # ------------------------------------------------------------------ planning
    def seats(self, mp: MarketParams, run: int) -> list[Seat]:
        """*Required* unless ``plan`` is overridden: the seats of episode ``run``."""
        raise NotImplementedError

    def episode(self, mp: MarketParams, run: int) -> EpisodeSpec:
        """Episode ``run`` of the default plan: ``ep-<run:04d>``, seed from (seed, run), its seats."""
        return EpisodeSpec(f"ep-{run:04d}", run, episode_seed(mp.seed, run), tuple(self.seats(mp, run)))

    def plan(self, mp: MarketParams) -> list[EpisodeSpec]:
        return [self.episode(mp, run) for run in range(mp.runs)]

    def agents_table(self, seats: tuple[Seat, ...] | list[Seat]) -> pd.DataFrame:
        rows = [(s.agent_id, s.entry.name, s.entry.kind, s.entry.model or "",
                 s.entry.strategy or self.harness_of(s.entry), self.harness_of(s.entry), s.role,
                 s.actor_id) for s in seats]  # in AGENT_COLUMNS order
        return pd.DataFrame(rows, columns=AGENT_COLUMNS)

    def build_episode(self, mp: MarketParams, resources: Any, episode: EpisodeSpec, llm=None):
        """The market, its agents (one per actor, in seat order) and the agents table of one
        episode. Not a hook: every market is wired the same way. ``llm``: the run's LLM runtime
        (``agents.llm_agent.LLMRuntime``), whose ``agent(agent_id, entry, run, plugin, market)``
        makes an LLM seat's agent; needed only when the episode seats one."""
        agents: dict[str, Any] = {}
        for seat in episode.seats:
            if seat.actor_id in agents:
                continue
            if seat.entry.kind == "llm":
                if llm is None:
                    raise RuntimeError(f"{mp.market}: {seat.entry.name!r} is an LLM agent, but this "
                                       "episode was built without an LLM runtime")
                agents[seat.actor_id] = llm.agent(seat.actor_id, seat.entry, episode.run, self,
                                                  mp.market)
            else:
                context = self.scripted_context(seat, mp, resources, episode)
                agents[seat.actor_id] = self.strategies.make(seat.actor_id, seat.entry, context)
        return self.build_market(mp, resources, episode), agents, self.agents_table(episode.seats)

    # ------------------------------------------------------------------ inputs
    def input_files(self, mp: MarketParams, data_dir: Path) -> list[Path]:
        """Files the simulation reads (fingerprinted; checked before any episode is touched)."""
        return []

    def load_resources(self, mp: MarketParams, data_dir: Path, shared: dict[str, BaseModel]) -> Any:
        """Loaded once per run (embeddings, a reference solution...); ``shared`` holds the global
        sections named in ``uses``."""
        return None

    # ------------------------------------------------------------------ one episode
    def build_market(self, mp: MarketParams, resources: Any, episode: EpisodeSpec) -> Market:
        """*Required*: the market object for one episode."""
        raise NotImplementedError

    def scripted_context(self, seat: Seat, mp: MarketParams, resources: Any,
                         episode: EpisodeSpec) -> Any:
        """What a scripted seat's strategy gets at build time (its cost row, the references...)."""
        return None

    def render_messages(self, observation: Any, **extras: Any) -> list[dict[str, str]]:
        """*Required for LLM seats*: chat messages from the market's templates. ``extras`` are
        blocks a harness adds (notes, reflections, a review), passed to the templates."""
        raise NotImplementedError

    def harness_signals(self, observation: Any) -> dict[str, float]:
        """Numbers a reflecting harness scores past steps by (e.g. profit, market health),
        read from the observation of the step after."""
        return {}

    # ------------------------------------------------------------------ published games
    def import_source(self, mp: MarketParams, source: Path, out: Path) -> dict:
        """*Required with* ``source_formats``: read the published games under ``source`` (format
        ``mp.source.format``) and write them into ``out`` (an empty folder) as units of our log
        schema (``core.logs.write_shard`` / ``write_episode``). Every problem with the input raises
        ``core.sources.SourceError`` naming the file (and line); the caller swaps ``out`` in whole
        only when this returns. Returns the import report (JSON): what was imported, and what was
        missing or left out and why (``importing.py`` writes it beside the episodes)."""
        raise NotImplementedError(f"{self.kind} imports no published games")

    # ------------------------------------------------------------------ stopping rule
    def stop_players(self, mp: MarketParams) -> dict[str, list[str]]:
        """The LLM players a stopping rule (``mp.stop``, ``stopping.py``) plays in batches: name ->
        the ids of its planned episodes in the order they are played (the cap); every other
        episode is its *field*. By default each LLM roster entry's planned episodes, those that
        seat it (cournot's and bertrand's lineups with it, crash's and lemon's cells it sits in),
        the field being the episodes that seat no LLM entry; a ValueError naming ``stop`` when
        there are none (every episode seats an LLM player: nothing to rank it against)."""
        llms = {e.name for e in mp.roster if e.kind == "llm"}
        players: dict[str, list[str]] = {}
        field = 0
        for episode in self.plan(mp) if llms else ():
            seated = llms.intersection(s.entry.name for s in episode.seats)
            for name in sorted(seated):
                players.setdefault(name, []).append(episode.episode_id)
            field += not seated
        if players and not field:
            raise ValueError(f"stop: every planned episode of {self.kind} seats an LLM player "
                             f"({', '.join(sorted(players))}), so none is left to rank it "
                             "against; give the rule a field of episodes without one (or "
                             "drop stop)")
        return players

    def stop_rows(self, agents: pd.DataFrame, mp: MarketParams,
                  player: str) -> tuple[pd.DataFrame, str, str]:
        """What the stopping rule's look rates for ``player`` (``stopping.py``), as the market's
        board ranks it: the seats among ``agents`` (the metrics' seats) that compete with it, the
        score column, and how a player's seats combine into its score in an episode ("sum" or
        "mean"). By default every seat, ``rank_by`` and ``seat_score``."""
        return agents, self.rank_by, self.seat_score

    def stop_rating(self, mp: MarketParams) -> dict[str, float]:
        """The TrueSkill environment of the stopping rule's looks (``ratings.TrueSkillParams``'
        fields): the market's board's, as far as the instance's own params give it (the TrueSkill
        defaults of DESIGN section 8 elsewhere: the simulate stage reads no ``ratings``)."""
        return {}

    # ------------------------------------------------------------------ after the episodes
    def compute_reference(self, mp: MarketParams, out_dir: Path, workers: int = 1) -> dict | None:
        """Reference data for metrics (equilibria, a truthful-play table); None: none. A reference
        that plays games may spread them over ``workers`` processes (``execution.workers``); its
        result must not depend on how many."""
        return None

    def compute_metrics(self, reader: "EpisodeReader", mp: MarketParams,
                        data_dir: Path) -> dict[str, pd.DataFrame]:
        """*Required*: metric frames from the logs alone; must include ``agents`` (one row per
        seat and episode with ``episode_id``, ``agent_id``, ``name`` and the metric columns)."""
        raise NotImplementedError

    def leaderboard(self, agents: pd.DataFrame, mp: MarketParams, ratings, stats) -> pd.DataFrame:
        """*Required*: the instance's leaderboard from the metrics' ``agents`` table and the
        ``ratings`` and ``stats`` params sections (``markets/_shared/boards.py``: TrueSkill by
        player, the usual one)."""
        raise NotImplementedError

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: MarketParams, instance: str) -> list[Path]:
        return []

    def summarize(self, table: pd.DataFrame, result: "EpisodeResult") -> pd.DataFrame:
        """*Required*: per-seat totals of one played episode (``marketarena play``)."""
        raise NotImplementedError
