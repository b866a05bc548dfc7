"""The rules of a market: what the generic pipeline needs to plan, build and play its episodes.

A market kind registers up to three parts (``core.registry.MarketKind``): its *rules* (this
module's :class:`MarketRules`, required), its *analysis* (``core.analysis.MarketAnalysis``:
reference, metrics, board, figures, summaries) and its *sources* (``core.sources.MarketSource``:
published games it imports). The rules are what playing needs and nothing else:

- **planning** (:meth:`MarketRules.plan`): the episodes of an instance, each an
  :class:`EpisodeSpec` (id, run index, seed and its :class:`Seat` s). By default episode ``r`` of
  ``runs`` is ``ep-<r:04d>`` with seed ``SeedSequence([seed, r])`` and the seats of
  :meth:`MarketRules.seats`; a market with a tournament schedule overrides ``plan``.
- **seats and players**: a seat is one agent id of an episode, held by a roster entry (a player)
  in a role. A player may hold several seats (a principal's identities); a seat's ``actor`` is the
  agent that decides for it (itself by default), so one agent may decide for several seats in one
  answer. The agents table (``agents.parquet``) lists every seat an episode may ever use, including
  ones that join later.
- **agents**: scripted seats come from the market's :class:`~marketarena.core.scripted.StrategyTable`
  (``strategies``), LLM seats from the LLM runtime passed to :meth:`MarketRules.build_episode`
  (``llm.agent(...)``: the generic LLM agent with the harness the entry names, one of the market's
  ``harnesses``; ``default_harness`` when unset).
- **seating** (``core/seating.py``): before any episode, every roster entry must be seated in the
  plan, in roles its strategy or harness can play (``roles_of``), on one side of the roles that
  exclude each other (``role_sides``); errors name the key that seats the role (``role_keys``) or
  would seat the entry (``seating_hint``).
- **the stopping rule's players** (:meth:`MarketRules.stop_players`): which planned episodes are
  an LLM player's, played in batches (``simulate/stopping.py``).
- **the cost seat** (``cost_seat``): the baseline an LLM entrant takes the place of in the lineup
  that prices rating a model (``rating_cost.py``).

*Required*: ``kind``, ``params_model``, ``strategies``, :meth:`MarketRules.build_market`, and
:meth:`MarketRules.seats` unless ``plan`` is overridden; :meth:`MarketRules.render_messages` for
LLM seats. Everything else has a default. docs/adding-a-market.md walks through one.

The core knows nothing of the layers above it (``agents``, ``ratings``): what it needs from them
is passed in. A harness's roles come as ``harness_roles`` (a function of the harness name) to
:meth:`MarketRules.roles_of`; a harness's params are checked by ``config`` (which knows the
harnesses); the LLM runtime is an argument of ``build_episode``.

Hooks receive their own instance's params (``mp``), never the whole params file; a market whose
episodes depend on global sections (personas, the embedding model) names them in its declaration's
``uses`` (``core.registry.MarketKind``) and gets them in ``load_resources``; they are part of its
episodes' fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import numpy as np
from pydantic import BaseModel

from marketarena.core.params import MarketParams, RosterEntry
from marketarena.core.scripted import StrategyTable
from marketarena.core.types import Market

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


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


def episode_seed(base_seed: int, run: int) -> int:
    return int(np.random.SeedSequence([base_seed, run]).generate_state(1)[0])


def publisher_files(
    mp: MarketParams, data_dir: Path, harness: str, param: str, names: tuple[str, ...]
) -> list[Path]:
    """The publisher's files (``names``, in each folder) the LLM entries on ``harness`` read at run
    time from the folder their ``params.<param>`` names (a joint instance, issue 53), relative to
    the project root: a market's :meth:`MarketRules.input_files`, so that their text is in the
    games' fingerprint (an edited file replays them)."""
    folders = sorted(
        {
            e.params[param]
            for e in mp.roster
            if e.kind == "llm" and e.harness == harness and param in e.params
        }
    )
    root = Path(data_dir).parent
    return [root / Path(f).expanduser() / name for f in folders for name in names]


class MarketRules:
    """Base class of a market's rules; subclasses set the class attributes and override the hooks
    marked *required*."""

    kind: ClassVar[str]
    params_model: ClassVar[type[MarketParams]]
    strategies: ClassVar[StrategyTable]
    #: LLM harnesses this market supports (``roster[].harness``), and the default one
    harnesses: ClassVar[tuple[str, ...]] = ("plain",)
    default_harness: ClassVar[str] = "plain"
    #: harnesses no other market offers, defined in the market's folder (name -> its class, a
    #: subclass of ``agents.harnesses.base.Harness``: english_auction's ``bdi``, or its
    #: ``"module:Class"``, imported only when a seat plays on it); the shared ones are found in
    #: ``agents/harnesses/``
    own_harnesses: ClassVar[dict[str, type | str]] = {}
    #: the params key that seats each role (for errors; default ``roster``)
    role_keys: ClassVar[dict[str, str]] = {}
    #: role -> side: one roster entry may hold roles of one side only (lemon: an entry cannot be
    #: both an honest seller and the deceptive principal); roles not listed exclude nothing
    role_sides: ClassVar[dict[str, str]] = {}
    #: the baseline strategy an LLM entrant takes the place of in the lineup that prices rating a
    #: model (``rating_cost.py``); None: the entrant joins the roster's lineup as one more seat
    cost_seat: ClassVar[str | None] = None

    # ------------------------------------------------------------------ params
    def check_params(self, mp: MarketParams) -> None:
        """Roster checks that need the market's tables: baseline strategies and their params,
        LLM harnesses among the market's (their params are checked by ``config``, which knows
        the harnesses), and the stopping rule's players. Raises ``ValueError`` naming
        ``roster.<i>.<key>`` (or ``stop``)."""
        for i, entry in enumerate(mp.roster):
            where = f"roster.{i}"
            if entry.kind == "baseline":
                self.strategies.validate(entry, where)
            elif self.harness_of(entry) not in self.harnesses:
                raise ValueError(
                    f"{where}.harness: {self.kind} offers the harnesses "
                    f"{', '.join(self.harnesses)} (got {entry.harness!r})"
                )
        if mp.stop is not None:
            self.stop_players(mp)  # raises, naming the key, where the rule cannot work

    def harness_of(self, entry: RosterEntry) -> str:
        return "" if entry.kind != "llm" else (entry.harness or self.default_harness)

    def roles_of(
        self, entry: RosterEntry, harness_roles: Callable[[str], frozenset[str] | None]
    ) -> frozenset[str] | None:
        """The roles an entry can play (None: any): its strategy's, or its harness's
        (``harness_roles(name)``, given by the layer that knows the harnesses)."""
        if entry.kind == "baseline":
            return self.strategies[entry.strategy].roles
        return harness_roles(self.harness_of(entry))

    def may_sit_out(self, mp: MarketParams) -> set[int]:
        """Roster indices that need not be seated in any planned episode (a joint instance's pool,
        which the published games stand for); every other entry must play (``core/seating.py``)."""
        return set()

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
        return EpisodeSpec(
            f"ep-{run:04d}", run, episode_seed(mp.seed, run), tuple(self.seats(mp, run))
        )

    def plan(self, mp: MarketParams) -> list[EpisodeSpec]:
        return [self.episode(mp, run) for run in range(mp.runs)]

    def agents_table(self, seats: tuple[Seat, ...] | list[Seat]) -> pd.DataFrame:
        import pandas as pd

        rows = [
            (
                s.agent_id,
                s.entry.name,
                s.entry.kind,
                s.entry.model or "",
                s.entry.strategy or self.harness_of(s.entry),
                self.harness_of(s.entry),
                s.role,
                s.actor_id,
            )
            for s in seats
        ]  # in AGENT_COLUMNS order
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
                    raise RuntimeError(
                        f"{mp.market}: {seat.entry.name!r} is an LLM agent, but this "
                        "episode was built without an LLM runtime"
                    )
                agents[seat.actor_id] = llm.agent(
                    seat.actor_id, seat.entry, episode.run, self, mp.market
                )
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

    def scripted_context(
        self, seat: Seat, mp: MarketParams, resources: Any, episode: EpisodeSpec
    ) -> Any:
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

    # ------------------------------------------------------------------ stopping rule
    def stop_players(self, mp: MarketParams) -> dict[str, list[str]]:
        """The LLM players a stopping rule (``mp.stop``, ``simulate/stopping.py``) plays in batches: name ->
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
            raise ValueError(
                f"stop: every planned episode of {self.kind} seats an LLM player "
                f"({', '.join(sorted(players))}), so none is left to rank it "
                "against; give the rule a field of episodes without one (or "
                "drop stop)"
            )
        return players
