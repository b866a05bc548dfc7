"""A market's tiny instance, as the contract (``contract.py``) plays it: its *world* (the params,
the folders and the loaded inputs of the instance ``<folder>/tiny_params.yaml`` describes, in the
market's folder, built in a folder the caller gives), its episodes played as the simulate stage plays
them with some seats replaced or wrapped, and their logs written.

The personas and their embeddings (what supply_chain's episodes read: ``MarketKind.uses``) are
the expensive part: :func:`persona_world` builds them once in a folder, and every world given
that folder copies them in.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from marketarena.config import Params, parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.core.registry import market_kind
from marketarena.core.runner import run_episode
from marketarena.pipeline import Paths, run_embed, run_personas, run_reference
from marketarena.simulate import build, load_inputs

#: personas per tribe of every world (the smallest population the persona markets play)
PER_TRIBE = 4
PERSONA_FILES = ("personas.parquet", "persona_embeddings.parquet")


def expect(condition: Any, message: str) -> None:
    """``assert`` that survives ``python -O``: an AssertionError saying ``message``."""
    if not condition:
        raise AssertionError(message)


def tiny(kind: str) -> dict:
    """The block of the market's tiny instance (``<folder>/tiny_params.yaml``, its folder's)."""
    path = market_kind(kind).folder / "tiny_params.yaml"
    expect(
        path.is_file(),
        f"{kind}: its folder has no tiny_params.yaml ({path}): the contract plays that instance",
    )
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def params_of(kind: str, block: dict, persona_folder: Path | None = None) -> Params:
    """Params holding instance ``kind`` (its block ``block``) alone, the personas small, the
    embeddings cached in ``persona_folder`` (when given)."""
    raw: dict[str, Any] = {"personas": {"per_tribe": PER_TRIBE}, "markets": {kind: block}}
    if persona_folder is not None:
        raw["embedding"] = {"cache_dir": str(Path(persona_folder) / "emb")}
    return parse_params(raw)


def reads_inputs(kind: str) -> bool:
    """The kind's tiny instance reads input files (a reference, the persona vectors)."""
    mp = params_of(kind, tiny(kind)).markets[kind]
    return bool(market_kind(kind).rules.input_files(mp, Path("data")))


def persona_world(folder: Path) -> Path:
    """The personas and their embeddings in ``folder`` (``data/`` and the embedding cache
    ``emb/``), built unless they are there already; returns ``folder``."""
    folder = Path(folder)
    paths = Paths(folder)
    if not all((paths.data / name).is_file() for name in PERSONA_FILES):
        params = params_of("cournot", tiny("cournot"), folder)  # any instance: personas alone
        paths.data.mkdir(parents=True, exist_ok=True)
        run_personas(params, paths)
        run_embed(params, paths)
    return folder


@dataclass
class World:
    """The kind's tiny instance (instance name = the kind) in a folder: ``params`` (that instance
    alone), ``paths`` (``Paths`` of the folder; its reference computed, its inputs read),
    ``resources`` (what ``load_inputs`` loaded), ``persona_folder`` (where the personas come
    from, None when the market reads none)."""

    kind: str
    params: Params
    paths: Paths
    resources: Any
    persona_folder: Path | None = None

    @property
    def mp(self):
        return self.params.markets[self.kind]

    def with_block(self, block: dict) -> Params:
        """These params with the instance's block replaced (raises ``ParamsError``)."""
        return params_of(self.kind, block, self.persona_folder)

    def copy_personas(self, data: Path) -> None:
        """The personas and their embeddings into another data folder ``data``."""
        if self.persona_folder is None:
            return
        data.mkdir(parents=True, exist_ok=True)
        for name in PERSONA_FILES:
            (data / name).write_bytes((Paths(self.persona_folder).data / name).read_bytes())


def world(kind: str, folder: Path, persona_folder: Path | None = None) -> World:
    """The :class:`World` of the kind's tiny instance built in ``folder`` (its ``data/`` and
    ``reports/``): the personas copied from ``persona_folder`` (:func:`persona_world`; built in
    ``folder/personas`` when not given and the market reads them), the reference computed, the
    inputs loaded."""
    folder = Path(folder)
    if persona_folder is None and market_kind(kind).uses:
        persona_folder = persona_world(folder / "personas")
    params = params_of(kind, tiny(kind), persona_folder)
    paths = Paths(folder)
    paths.data.mkdir(parents=True, exist_ok=True)
    out = World(kind, params, paths, None, Path(persona_folder) if persona_folder else None)
    out.copy_personas(paths.data)
    run_reference(kind, params, paths)
    _, out.resources = load_inputs(kind, params, paths.data)
    return out


class Silent:
    """A seat that never answers."""

    def __init__(self, agent_id):
        self.agent_id = agent_id

    def reset(self, rng):
        pass

    async def act(self, observation, decision, retry=None):
        return None


class Garbage(Silent):
    """A seat that always answers something no schema accepts."""

    async def act(self, observation, decision, retry=None):
        return dict(GARBAGE)


#: an answer no market's schema accepts
GARBAGE = {"no such field": [1, 2, 3]}


def play(kind: str, params: Params, res: Any, run: int = 0, replace=None, wrap=None):
    """Episode ``run`` of instance ``kind`` played as simulate plays it: ``replace`` maps an actor
    to an agent class built from its id; ``wrap`` maps an actor to a function of (its agent, the
    market) returning the agent to use. Returns (result, agents table, spec, every decision the
    market handed out, market)."""
    market, agents, table, spec = build(kind, params, run, resources=res)
    seen = []
    for actor, cls in (replace or {}).items():
        agents[actor] = cls(actor)
    for actor, make in (wrap or {}).items():
        agents[actor] = make(agents[actor], market)

    class Watch:  # records every decision point the market hands out
        def __getattr__(self, name):
            return getattr(market, name)

        def reset(self, seed):
            d = market.reset(seed)
            seen.append(d)
            return d

        def step(self, actions):
            d = market.step(actions)
            if d is not None:
                seen.append(d)
            return d

    result = asyncio.run(run_episode(Watch(), agents, spec.seed))
    return result, table, spec, seen, market


def write(folder: Path, spec, table, result) -> EpisodeReader:
    """One played episode's logs written under ``folder/episodes``, as simulate writes them."""
    root = Path(folder) / "episodes"
    plan = logs.PlannedEpisode(spec.episode_id, spec.run, spec.seed, "contract")
    logs.write_episode(root, plan, {"agents": table, **result.log_tables()}, {"market": "x"}, {})
    return EpisodeReader(root)
