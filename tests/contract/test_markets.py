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
- **invalid answers**: an invalid answer is never rewarded: a seat whose answers are invalid at
  some decisions (the market's fallback plays there) never scores better than the same seat
  answering, validly, the fallback's own action at those decisions; the board's validity columns
  (``metrics/validity.py``) show the fallbacks;
- **seed**: the same seed gives byte-identical logs, even when the global ``random`` and
  ``numpy.random`` states are disturbed between the runs;
- **inputs**: each file the market reads (``input_files``), cut short, is refused with an
  ``InputError`` naming it before any episode is played.
"""

from __future__ import annotations

import asyncio
import random
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.core.registry import market_kind, market_names
from marketarena.core.runner import run_episode
from marketarena.core.types import InputError
from marketarena.pipeline import Paths, run_embed, run_personas, run_reference
from marketarena.simulate import build, load_inputs



class get_plugin:  # TRANSITION: the rules and the analysis of a market looked up as one
    def __init__(self, kind):
        self._k = market_kind(kind)

    def __getattr__(self, name):
        for part in (self._k.rules, self._k.analysis):
            if hasattr(part, name):
                return getattr(part, name)
        raise AttributeError(name)


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


def play(kind, params, res, run=0, replace=None, wrap=None):
    """Play episode ``run``: ``replace`` maps an actor to an agent class built from its id;
    ``wrap`` maps an actor to a function of (its agent, the market) returning the agent to use."""
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


def reads_inputs(kind: str) -> bool:
    """The kind's tiny instance reads input files (a reference, the persona vectors)."""
    mp = parse_params({"markets": {kind: tiny(kind)}}).markets[kind]
    return bool(get_plugin(kind).input_files(mp, Path("data")))


@pytest.mark.parametrize("kind", [k for k in KINDS if reads_inputs(k)])
def test_a_truncated_input_file_is_refused_before_any_episode(kind, persona_world, tmp_path):
    """Each input file cut short (a copy interrupted, a disk full) makes ``load_inputs`` raise an
    ``InputError`` naming the instance and the file, before any episode is touched."""
    params, paths, _ = world(kind, persona_world, tmp_path)
    inputs = get_plugin(kind).input_files(params.markets[kind], paths.data)
    assert inputs
    for path in inputs:
        whole = path.read_bytes()
        path.write_bytes(whole[:len(whole) // 2])
        with pytest.raises(InputError, match=f"{kind}: cannot load.*{re.escape(path.name)}"):
            load_inputs(kind, params, paths.data)
        path.write_bytes(whole)
    load_inputs(kind, params, paths.data)  # whole again: loads


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


def zero_answer(model):
    """An answer of ``model`` with every required field at its zero (0, "", {}, [], None, False,
    a nested model's zero answer): what a market whose fallback is "nothing" (no production, no
    bids) accepts as the same action."""
    import types
    from typing import Annotated, Literal, Union, get_args, get_origin

    from pydantic import BaseModel

    def zero(ann):
        origin, args = get_origin(ann), get_args(ann)
        if origin is Annotated:
            return zero(args[0])
        if origin in (Union, types.UnionType):
            return None if type(None) in args else zero(args[0])
        if origin is Literal:
            return args[0]
        if origin is dict:
            return {}
        if origin in (list, tuple, set):
            return []
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            return zero_answer(ann).model_dump(by_alias=True)
        return {bool: False, int: 0, float: 0.0, str: ""}.get(ann)

    return model.model_validate({f.alias or name: zero(f.annotation)
                                 for name, f in model.model_fields.items() if f.is_required()})


def fallback_answer(market, agent_id, decision):
    """A valid answer that plays as the market's fallback plays (its rules accept it and apply
    the fallback's own action), or None when there is none: the fallback itself when it is an
    answer of the decision's schema, else the schema's zero answer."""
    from marketarena.core.runner import _dump

    fallback = market.fallback(agent_id, decision)
    schema = decision.schema_for(agent_id)
    candidates = [fallback] if isinstance(fallback, schema) else []
    try:
        candidates.append(zero_answer(schema))
    except Exception:  # noqa: BLE001 - a schema without a zero answer: no candidate
        pass
    for answer in candidates:
        checked = market.check(agent_id, answer, decision)
        applied = checked.action if checked.action is not None else answer
        if checked.error is None and _dump(applied) == _dump(fallback):
            return answer
    return None


class FallbackOrGarbage:
    """A seat's own agent, except at the decisions of odd steps where a valid answer plays as the
    market's fallback plays (:func:`fallback_answer`): there it answers garbage (``mode``
    "invalid": the fallback then plays) or that valid answer (``mode`` "valid"). Both arms play
    the same actions."""

    def __init__(self, inner, market, mode: str):
        self.inner, self.market, self.mode = inner, market, mode
        self.agent_id = inner.agent_id
        self.substituted = 0

    def reset(self, rng):
        self.inner.reset(rng)

    async def act(self, observation, decision, retry=None):
        if decision.step % 2 == 1 and retry is None:
            answer = fallback_answer(self.market, self.agent_id, decision)
            if answer is not None:
                self.substituted += 1
                return {"no such field": [1, 2, 3]} if self.mode == "invalid" else answer
        if retry is None:
            return await self.inner.act(observation, decision)
        return await self.inner.act(observation, decision, retry)


#: a player's scores on the board, every one "higher is better" (the EAS and its components
#: where the market reports them)
EAS_SCORES = ("eas", "stability", "integrity", "welfare", "profitability")


def player_scores(plugin, mp, params, paths, reader, name: str) -> dict[str, float]:
    """The player's score of the episode (``rank_by``, its seats combined as the board combines
    them), its EAS columns where the market has them, its board mu, and its fallback share."""
    from marketarena.metrics.validity import player_validity, with_validity

    frames = plugin.compute_metrics(reader, mp, paths.data)
    agents = frames["agents"]
    rows = agents[agents["name"] == name]
    out = {plugin.rank_by: float(rows[plugin.rank_by].agg(plugin.seat_score))}
    for col in EAS_SCORES:
        if col in rows.columns:
            out[col] = float(rows[col].mean())
    board = with_validity(plugin.leaderboard(agents, mp, params.ratings, params.stats),
                          player_validity(reader))
    row = board[board["name"] == name].iloc[0]
    out["mu"] = float(row["mu"])
    out["fallback"] = float(row["fallback"])
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_an_invalid_answer_never_scores_better_than_the_fallbacks_action_answered_validly(
        kind, persona_world, tmp_path):
    """The rule of issue 45: where a seat's answer is invalid the fallback plays; scored, that
    seat is never better off than the same seat answering the fallback's action validly (both
    arms play the same actions, so a score that does not read validity ties; one that treats a
    fallback as a free good decision would not). The seat is the last actor with a decision whose
    fallback its market accepts as an answer; the board shows its fallbacks."""
    params, paths, res = world(kind, persona_world, tmp_path)
    plugin, mp = get_plugin(kind), params.markets[kind]
    _, table, _, _, _ = play(kind, params, res)
    for actor in reversed(list(dict.fromkeys(table["actor"]))):
        arms, readers, seats = {}, {}, {}
        for mode in ("invalid", "valid"):
            def make(agent, market, mode=mode):
                seats[mode] = FallbackOrGarbage(agent, market, mode)
                return seats[mode]

            result, table, spec, _, _ = play(kind, params, res, wrap={actor: make})
            arms[mode], readers[mode] = result, write(paths.root / mode, spec, table, result)
        if seats["invalid"].substituted:
            break
    else:
        pytest.fail(f"{kind}: no seat has a decision whose fallback a valid answer plays")
    name = table.loc[table["actor"] == actor, "name"].iloc[0]
    mine = {m: arms[m].decisions[arms[m].decisions["agent_id"] == actor] for m in arms}
    assert (~mine["invalid"]["valid"]).sum() >= seats["invalid"].substituted, "garbage logged valid"
    assert seats["valid"].substituted == seats["invalid"].substituted
    assert arms["valid"].tables.keys() == arms["invalid"].tables.keys()
    for t in arms["valid"].tables:  # like for like: the market saw the same actions
        pd.testing.assert_frame_equal(arms["valid"].tables[t], arms["invalid"].tables[t],
                                      obj=f"{kind} {t}")
    score = {m: player_scores(plugin, mp, params, paths, readers[m], name) for m in arms}
    assert score["invalid"]["fallback"] > score["valid"]["fallback"], (
        f"{kind}: the board does not show {name}'s fallbacks")
    better = [f"{k}: invalid {score['invalid'][k]:.6g} > valid {v:.6g}"
              for k, v in score["valid"].items() if k != "fallback"
              and (score["invalid"][k] > v + 1e-9
                   or (np.isnan(v) and np.isfinite(score["invalid"][k])))]
    assert not better, f"{kind}, {name} ({actor}): " + "; ".join(better)


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
def test_tables_written_byte_for_byte_as_pandas_writes_them(kind, persona_world, tmp_path,
                                                            monkeypatch):
    """Every log table of two episodes is written (``logs.write_table``; ``Rows`` built into
    Arrow with a schema kept per shape of table, without their frame) with exactly the bytes of
    pandas' ``to_parquet``: the first episode's tables make the schemas, the second's reuse them."""
    from marketarena.core.types import Rows, as_frame

    params, _, res = world(kind, persona_world, tmp_path)
    monkeypatch.setattr(logs, "_ROWS_SCHEMAS", {})
    built, frame = [], Rows.frame
    for run in (0, 1):
        result, table, _, _, _ = play(kind, params, res, run=run)
        tables = {"agents": table, **result.raw}
        expected = {name: as_frame(t).reset_index(drop=True) for name, t in tables.items()}
        monkeypatch.setattr(Rows, "frame", lambda self: (built.append(1), frame(self))[1])
        built.clear()
        for name, t in tables.items():
            ours, theirs = tmp_path / f"{run}-{name}.parquet", tmp_path / f"{run}-{name}.pd.parquet"
            logs.write_table(t, ours)
            expected[name].to_parquet(theirs, index=False, engine="pyarrow", compression="zstd")
            assert ours.read_bytes() == theirs.read_bytes(), f"{kind}, episode {run}: {name}"
        monkeypatch.setattr(Rows, "frame", frame)
    rows = sum(isinstance(t, Rows) for t in tables.values())
    assert rows and len(built) < rows / 2, "the second episode's rows mostly went through pandas"


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
    drawn = [pd.read_csv(paths.figure_data(kind) / f"{Path(png).stem}.csv") for png in pngs]
    for png, data in zip(pngs, drawn):  # each with the data it draws (plots.drawn), for the site
        assert set(data["kind"]) <= {"line", "points", "bar", "segment", "band", "cell", "cut"}, png
    assert sum(len(d) for d in drawn) > 0  # (a panel saying "no data" draws none)
    # the results site captions every figure and table (report/captions.py)
    from marketarena.report.captions import missing

    tables = [Path(p).stem for p in out if str(p).endswith(".md")]
    problems = missing(kind, kind, [Path(p).stem for p in pngs], tables)
    assert not problems, "\n".join(problems)
    assert isinstance(pd.read_csv(paths.reports / "leaderboards" / f"{kind}.csv"), pd.DataFrame)


# ------------------------------------------------------------------ params at their extremes
# Every numeric param of a market's model, pushed to the extremes the model allows (its declared
# bound, or a huge value where it declares none): either validation refuses it naming the key, or
# one episode plays (its reference computed first where the simulation reads one) without an
# exception, without a numpy overflow on the way and without an infinity in any log table (inf - inf
# then makes NaN). So a value cannot pass `validate` and then crash or write inf / NaN, and every
# numeric field must carry a bound that says what the market can compute. Fields marked as sizes
# (``core.params.size``: the work of an episode scales with them) must declare an upper bound; they
# are played at their lower bound only. Post-processing keys do not reach the episodes.

HUGE_INT, HUGE_FLOAT = 10**30, 1e308


def _bounds(metadata) -> tuple:
    lo = hi = None
    for m in metadata:
        for name, side, strict in (("ge", "lo", False), ("gt", "lo", True), ("le", "hi", False),
                                   ("lt", "hi", True)):
            value = getattr(m, name, None)
            if value is not None:
                if side == "lo":
                    lo = (value, strict)
                else:
                    hi = (value, strict)
    return lo, hi


def _numeric(annotation) -> tuple[type | None, list]:
    """(int or float, constraint metadata) when ``annotation`` is a number (or a list / tuple /
    optional of numbers, whose items are tested), else (None, [])."""
    import types
    from typing import Annotated, Union, get_args, get_origin

    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        kind, meta = _numeric(args[0])
        return kind, meta + list(args[1:]) + [m for a in args[1:] for m in getattr(a, "metadata", [])]
    if origin in (Union, types.UnionType, list, tuple):
        for arg in args:
            kind, meta = _numeric(arg)
            if kind is not None:
                return kind, meta
        return None, []
    if annotation is int or annotation is float:
        return annotation, []
    return None, []


def numeric_leaves(model, value: dict, path=()):
    """(path, kind, lo, hi, size) of every numeric param reachable in ``value`` (a dump of
    ``model``); for lists the first item stands for all."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        if not path and key in getattr(model, "post_keys", ()) | {"runs", "shard_episodes", "roster"}:
            continue
        current = value.get(key)
        ann = field.annotation
        sub = _submodel(ann)
        if sub is not None:
            if isinstance(current, dict) and current and all(isinstance(v, dict) for v in current.values()) \
                    and not set(current) & set(sub.model_fields):
                first = next(iter(current))  # a mapping of name -> model (tiers, tribes)
                yield from numeric_leaves(sub, current[first], (*path, key, first))
            elif isinstance(current, dict):
                yield from numeric_leaves(sub, current, (*path, key))
            elif isinstance(current, list) and current:
                yield from numeric_leaves(sub, current[0], (*path, key, 0))
            continue
        kind, meta = _numeric(ann)
        if kind is None:
            continue
        lo, hi = _bounds(list(field.metadata) + meta)
        leaf = (*path, key)
        while isinstance(current, list):  # a list (of lists) of numbers: its first item
            leaf, current = (*leaf, 0), current[0] if current else None
        size = bool((field.json_schema_extra or {}).get("size")) if isinstance(
            field.json_schema_extra, dict) else False
        yield leaf, kind, lo, hi, size


def _submodel(annotation):
    from typing import get_args

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def extremes(kind, lo, hi):
    """The two ends a model allows: a declared bound (just inside a strict one), else huge."""
    def inside(bound, up):
        value, strict = bound
        if not strict:
            return value
        if kind is int:
            return value - 1 if up else value + 1
        return float(np.nextafter(value, -np.inf if up else np.inf))

    top = inside(hi, True) if hi is not None else (HUGE_INT if kind is int else HUGE_FLOAT)
    bottom = inside(lo, False) if lo is not None else (-HUGE_INT if kind is int else -HUGE_FLOAT)
    return [("upper", top), ("lower", bottom)]


def set_leaf(block: dict, leaf: tuple, value) -> dict:
    import copy

    out = copy.deepcopy(block)
    node = out
    for k in leaf[:-1]:
        node = node[k]
    node[leaf[-1]] = value
    return out


def infinities(result, table) -> list[str]:
    """Log columns holding an infinity (an overflow; NaN is how the logs say "missing", e.g. the
    price of an order no firm could fill)."""
    problems = []
    for name, frame in {"agents": table, **result.log_tables()}.items():
        for col in frame.columns:
            values = frame[col]
            if values.dtype == object:
                values = pd.to_numeric(values, errors="coerce")
            if pd.api.types.is_float_dtype(values) and np.isinf(values.to_numpy()).any():
                problems.append(f"{name}.{col}: inf")
    return problems


@pytest.mark.parametrize("kind", KINDS)
def test_every_numeric_param_at_its_extremes_is_refused_or_plays_finite(kind, persona_world, tmp_path):
    from marketarena.config import ParamsError

    plugin = get_plugin(kind)
    params, paths, res = world(kind, persona_world, tmp_path)
    dumped = params.markets[kind].model_dump(mode="json", by_alias=True)
    failures = []
    for leaf, number, lo, hi, size in numeric_leaves(plugin.params_model, dumped):
        key = ".".join(map(str, leaf))
        for end, value in extremes(number, lo, hi):
            raw = set_leaf(dumped, leaf, value)
            try:
                case = parse_params({"personas": {"per_tribe": 4},
                                     "embedding": {"cache_dir": str(persona_world / "emb")},
                                     "markets": {kind: raw}})
            except ParamsError as exc:
                if not any(str(part) in str(exc) for part in leaf if isinstance(part, str)):
                    failures.append(f"{key}={value!r}: refused without naming the key: {exc}")
                continue
            if size and end == "upper":
                if hi is None:
                    failures.append(f"{key}: a size without an upper bound")
                continue
            try:
                sub = tmp_path / f"case-{key}-{end}"
                sub.mkdir()
                p2 = Paths(sub)
                p2.data.mkdir()
                for name in ("personas.parquet", "persona_embeddings.parquet"):
                    (p2.data / name).write_bytes((paths.data / name).read_bytes())
                if plugin.input_files(case.markets[kind], p2.data):
                    run_reference(kind, case, p2)
                _, r2 = load_inputs(kind, case, p2.data)
                with np.errstate(over="raise"):  # an overflow on the way counts, even if clipped
                    out, tab, _, _, _ = play(kind, case, r2)
            except ParamsError as exc:  # refused where it can be told: a reference not computable
                if not any(str(part) in str(exc) for part in leaf if isinstance(part, str)):
                    failures.append(f"{key}={value!r}: refused without naming the key: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - accepted by validate, then crashed
                failures.append(f"{key}={value!r}: accepted, then {type(exc).__name__}: "
                                f"{str(exc)[:200]}")
                continue
            bad = infinities(out, tab)
            if bad:
                failures.append(f"{key}={value!r}: accepted, then {', '.join(bad[:4])}")
    assert not failures, f"{kind}:\n" + "\n".join(failures)
