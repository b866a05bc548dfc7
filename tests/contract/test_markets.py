"""The contract every market meets, tested over every registered market kind (PettingZoo's
``api_test`` / ``seed_test`` idea): a new market folder gets these tests for free.

Each market ships ``tiny_params.yaml`` (one small instance). For each kind:

- **api**: the plan (unique episode ids, declared seats, roles); one episode played as simulate
  plays it; every decision's observations belong to declared actors; answers and fallbacks pass the
  market's schema and rules; ``step`` / ``round`` are 0-based integers; retired seats never act
  again; the log tables are written and the metrics, the leaderboard and the figures are computed
  from the logs alone, and every figure and table has its caption (``markets/<kind>/figures.yaml``);
- **hostile seats**: one seat that never answers and one that always answers garbage: the episode
  completes, every one of their decisions is logged invalid with a reason, and metrics still come
  out (supply_chain's metrics once crashed on exactly this);
- **seed**: the same seed gives byte-identical logs, even when the global ``random`` and
  ``numpy.random`` states are disturbed between the runs.
"""

from __future__ import annotations

import asyncio
import random
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.core.registry import get_plugin, market_names
from marketarena.core.runner import run_episode
from marketarena.pipeline import Paths, run_embed, run_personas, run_reference
from marketarena.simulate import build, load_inputs

KINDS = market_names()


def tiny(kind: str) -> dict:
    text = resources.files(f"marketarena.markets.{kind}").joinpath("tiny_params.yaml").read_text()
    return yaml.safe_load(text)


@pytest.fixture(scope="module")
def persona_world(tmp_path_factory) -> Path:
    """personas + embeddings once per module (supply_chain reads them)."""
    root = tmp_path_factory.mktemp("world")
    params = parse_params({"personas": {"per_tribe": 4},
                           "embedding": {"cache_dir": str(root / "emb")},
                           "markets": {"cournot": tiny("cournot")}})
    paths = Paths(root)
    paths.data.mkdir()
    run_personas(params, paths)
    run_embed(params, paths)
    return root


def world(kind: str, persona_world: Path, tmp_path: Path):
    """(params, paths, resources) of the kind's tiny instance in ``tmp_path``."""
    params = parse_params({"personas": {"per_tribe": 4},
                           "embedding": {"cache_dir": str(persona_world / "emb")},
                           "markets": {kind: tiny(kind)}})
    paths = Paths(tmp_path)
    paths.data.mkdir(parents=True, exist_ok=True)
    for name in ("personas.parquet", "persona_embeddings.parquet"):
        (paths.data / name).write_bytes((persona_world / "data" / name).read_bytes())
    run_reference(kind, params, paths)
    _, res = load_inputs(kind, params, paths.data)
    return params, paths, res


class Silent:
    """Never answers."""

    def __init__(self, agent_id):
        self.agent_id = agent_id

    def reset(self, rng):
        pass

    async def act(self, observation, decision, retry=None):
        return None


class Garbage(Silent):
    """Always answers something no schema accepts."""

    async def act(self, observation, decision, retry=None):
        return {"no such field": [1, 2, 3]}


def play(kind, params, res, run=0, replace=None):
    market, agents, table, spec = build(kind, params, run, resources=res)
    seen = []
    for actor, cls in (replace or {}).items():
        agents[actor] = cls(actor)

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

    box = []

    async def go():
        box.append(await run_episode(Watch(), agents, spec.seed))

    asyncio.run(go())
    return box[0], table, spec, seen, market


def write(tmp_path: Path, spec, table, result) -> EpisodeReader:
    root = tmp_path / "episodes"
    plan = logs.PlannedEpisode(spec.episode_id, spec.run, spec.seed, "contract")
    logs.write_episode(root, plan, {"agents": table, **result.log_tables()}, {"market": "x"}, {})
    return EpisodeReader(root)


@pytest.mark.parametrize("kind", KINDS)
def test_plan_declares_seats_and_unique_episodes(kind, persona_world, tmp_path):
    params, _, _ = world(kind, persona_world, tmp_path)
    plugin, mp = get_plugin(kind), params.markets[kind]
    plan = plugin.plan(mp)
    assert len(plan) == mp.runs >= 2
    assert len({e.episode_id for e in plan}) == len(plan)
    for e in plan:
        ids = [s.agent_id for s in e.seats]
        assert len(ids) == len(set(ids)) and all(s.role for s in e.seats)
        assert {s.actor_id for s in e.seats} <= set(ids)
        assert plugin.episode(mp, e.run) == e


@pytest.mark.parametrize("kind", KINDS)
def test_api(kind, persona_world, tmp_path):
    params, paths, res = world(kind, persona_world, tmp_path)
    plugin, mp = get_plugin(kind), params.markets[kind]
    result, table, spec, seen, market = play(kind, params, res)
    actors = set(table["actor"])
    assert set(table.columns) >= {"agent_id", "name", "kind", "model", "strategy", "harness", "role",
                                  "actor"}
    retired_at = {}
    for d in seen:
        assert isinstance(d.step, int) and isinstance(d.round, int) and d.step >= 0 and d.round >= 0
        assert set(d.observations) <= actors, f"{kind}: undeclared actors act"
        for agent_id in d.observations:
            assert agent_id not in retired_at, f"{kind}: retired {agent_id} acts again"
            d.schema_for(agent_id)  # every acting agent has an answer shape
    for e in result.events.itertuples():
        if e.event == "retired":
            retired_at[e.agent_id] = e.step
    dec = result.decisions
    assert len(dec) and (dec.loc[~dec["valid"], "error"] != "").all()  # invalid says why
    assert (dec[["step", "round", "attempt"]] >= 0).all().all()
    assert set(dec["agent_id"]) <= actors
    assert set(result.events["agent_id"]) <= set(table["agent_id"])
    reader = write(tmp_path, spec, table, result)
    frames = plugin.compute_metrics(reader, mp, paths.data)
    agents = frames["agents"]
    need = {"episode_id", "agent_id", "name", *plugin.metric_columns, plugin.rank_by}
    assert need <= set(agents.columns), need - set(agents.columns)
    assert set(agents["agent_id"]) <= set(table["agent_id"])
    board = plugin.leaderboard(agents, mp, params.ratings, params.stats)
    assert {"rank", "name", "mu", "sigma"} <= set(board.columns)
    assert set(board["name"]) <= set(table["name"])


@pytest.mark.parametrize("kind", KINDS)
def test_seats_that_never_answer_or_answer_garbage(kind, persona_world, tmp_path):
    params, paths, res = world(kind, persona_world, tmp_path)
    plugin, mp = get_plugin(kind), params.markets[kind]
    _, table, _, _, _ = play(kind, params, res)
    actors = list(dict.fromkeys(table["actor"]))
    silent, garbage = actors[0], actors[-1]
    result, table, spec, _, _ = play(kind, params, res, replace={silent: Silent, garbage: Garbage})
    dec = result.decisions
    for actor in (silent, garbage):
        rows = dec[dec["agent_id"] == actor]
        assert len(rows) and not rows["valid"].any() and (rows["error"] != "").all()
    frames = plugin.compute_metrics(write(tmp_path, spec, table, result), mp, paths.data)
    assert len(frames["agents"])
    plugin.leaderboard(frames["agents"], mp, params.ratings, params.stats)


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_identical_logs_whatever_the_global_rng(kind, persona_world, tmp_path):
    params, _, res = world(kind, persona_world, tmp_path)
    runs = []
    for k in range(2):
        random.seed(1000 + k)
        np.random.seed(2000 + k)
        result, table, spec, _, _ = play(kind, params, res, run=1)
        runs.append(write(tmp_path / f"run{k}", spec, table, result))
    folders = [r.root / r.episode_ids()[0] for r in runs]
    names = sorted(p.name for p in folders[0].glob("*.parquet"))
    assert names == sorted(p.name for p in folders[1].glob("*.parquet"))
    for name in names:
        if name == "llm_costs.parquet":
            continue
        assert (folders[0] / name).read_bytes() == (folders[1] / name).read_bytes(), f"{kind}: {name}"


@pytest.mark.parametrize("kind", KINDS)
def test_figures_from_the_metrics(kind, persona_world, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    params, paths, res = world(kind, persona_world, tmp_path)
    plugin, mp = get_plugin(kind), params.markets[kind]
    from marketarena.simulate import simulate
    from marketarena.pipeline import run_figures, run_metrics, run_ratings, run_stats

    simulate(kind, params, paths.data, progress=False)
    run_metrics(kind, params, paths)
    run_stats(kind, params, paths)
    run_ratings(kind, params, paths)
    out = run_figures(kind, params, paths)
    assert out and all(Path(p).is_file() and Path(p).stat().st_size > 0 for p in out)
    pngs = [p for p in out if str(p).endswith(".png")]
    assert pngs, f"{kind} draws no figure"
    # the results site captions every figure and table (report/captions.py)
    from marketarena.report.captions import missing

    tables = [Path(p).stem for p in out if str(p).endswith(".md")]
    problems = missing(kind, kind, [Path(p).stem for p in pngs], tables)
    assert not problems, "\n".join(problems)
    assert isinstance(pd.read_csv(paths.reports / "leaderboards" / f"{kind}.csv"), pd.DataFrame)
