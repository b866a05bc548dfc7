"""The contract every market meets (PettingZoo's ``api_test`` / ``seed_test`` idea), as plain
functions a test of any market calls: ours (``tests/contract/test_markets.py`` runs them over
every market kind) or one written elsewhere and registered (``core.registry.register``)::

    from marketarena.testing import contract

    contract.check_all("mymarket", tmp_path)   # every check, each in a fresh subfolder

Each check is a function of (kind, :class:`~marketarena.testing.tiny.World`): the world of the
kind's tiny instance (``<folder>/tiny_params.yaml``), built by :func:`world` in a folder the
caller gives. A check that fails raises an ``AssertionError`` naming the market and the rule it
broke (a market that crashes during a check fails it so too, the exception chained). The checks
(:data:`CHECKS`):

- **plan**: unique episode ids, declared seats with roles, each episode as ``episode`` gives it;
- **inputs**: each file the market reads (``input_files``), cut short, is refused with an
  ``InputError`` naming it before any episode is played;
- **api**: one episode played as simulate plays it; every decision's observations belong to
  declared actors and its phase is one the ``MarketKind`` declares (``phases``); answers and fallbacks pass the market's schema and rules; ``step`` / ``round``
  are 0-based integers; retired seats never act again; the metrics and the leaderboard are
  computed from the logs alone;
- **hostile seats**: one seat that never answers and one that always answers garbage: the
  episode completes, every one of their decisions is logged invalid with a reason, and metrics
  still come out (supply_chain's metrics once crashed on exactly this);
- **invalid answers**: an invalid answer is never rewarded: a seat whose answers are invalid at
  some decisions (the market's fallback plays there) never scores better than the same seat
  answering, validly, the fallback's own action at those decisions; the board's validity columns
  (``metrics/validity.py``) show the fallbacks, as format failures (garbage does not parse);
- **idle, absurd and silent seats** (``contract_seats.py``): a seat doing nothing validly, one
  taking the market's valid extreme action (``market.absurd``, where declared: crash, lemon) and
  one answering garbage: silent never beats idle; where the market has an EAS, idle and absurd
  sit at the bottom of every component and below every player on the EAS;
- **seed**: the same seed gives byte-identical logs, even when the global ``random`` and
  ``numpy.random`` states are disturbed between the runs;
- **tables**: every log table is written with exactly the bytes of pandas' ``to_parquet``;
- **figures**: the figures and tables drawn from the metrics, each with the data it draws and its
  caption (``<folder>/figures.yaml``, the market's folder's);
- **params at their extremes** (``contract_params.py``): every numeric param at the ends its
  model allows is refused naming the key, or plays finite.
"""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from marketarena.core import logs
from marketarena.core.registry import market_kind
from marketarena.core.types import InputError, Rows, as_frame
from marketarena.simulate import load_inputs
from marketarena.testing.contract_params import every_numeric_param_at_its_extremes
from marketarena.testing.contract_seats import (
    VALIDITY_SHARES,
    FallbackOrGarbage,
    idle_absurd_and_silent_seats,
    player_scores,
)
from marketarena.testing.tiny import (
    Garbage,
    Silent,
    World,
    expect,
    persona_world,
    play,
    reads_inputs,
    tiny,
    world,
    write,
)

__all__ = [
    "CHECKS",
    "RULES",
    "World",
    "check_all",
    "persona_world",
    "reads_inputs",
    "tiny",
    "world",
]

Check = Callable[[str, World], None]
#: check name -> check, every one of the contract (test ids of ``tests/contract``)
CHECKS: dict[str, Check] = {}
#: check name -> the rule it checks, in words (the message of its AssertionError starts so)
RULES: dict[str, str] = {}


def contract_check(name: str, rule: str) -> Callable[[Callable], Check]:
    """Registers a check as ``name`` in :data:`CHECKS`: a failure inside it (an assertion, or the
    market raising) becomes an ``AssertionError`` naming the market and ``rule``."""

    def register(fn: Callable) -> Check:
        @functools.wraps(fn)
        def check(kind: str, w: World) -> None:
            try:
                fn(kind, w)
            except AssertionError as exc:
                raise AssertionError(f"{kind} breaks the contract: {rule}: {exc}") from exc
            except Exception as exc:  # noqa: BLE001 - the market crashed: the check failed
                raise AssertionError(
                    f"{kind} breaks the contract: {rule}: it raised {type(exc).__name__}: {exc}"
                ) from exc

        RULES[name] = rule
        CHECKS[name] = check
        return check

    return register


def _parts(kind: str, w: World):
    k = market_kind(kind)
    return k.rules, k.analysis_of(w.mp), w.mp


# ------------------------------------------------------------------ the plan, the inputs
@contract_check(
    "plan_declares_seats_and_unique_episodes",
    "the plan has runs (>= 2) episodes with unique ids, each of declared seats with "
    "roles, as `episode` gives it",
)
def plan_declares_seats_and_unique_episodes(kind: str, w: World) -> None:
    rules, _, mp = _parts(kind, w)
    plan = rules.plan(mp)
    expect(len(plan) == mp.runs >= 2, f"{len(plan)} planned episodes for runs={mp.runs}")
    expect(len({e.episode_id for e in plan}) == len(plan), "episode ids repeat")
    for e in plan:
        ids = [s.agent_id for s in e.seats]
        expect(len(ids) == len(set(ids)), f"{e.episode_id}: seat ids repeat: {ids}")
        expect(all(s.role for s in e.seats), f"{e.episode_id}: a seat without a role")
        expect(
            {s.actor_id for s in e.seats} <= set(ids),
            f"{e.episode_id}: actors {sorted({s.actor_id for s in e.seats} - set(ids))} "
            "are no seat",
        )
        expect(rules.episode(mp, e.run) == e, f"{e.episode_id}: episode(mp, {e.run}) differs")


@contract_check(
    "a_truncated_input_file_is_refused_before_any_episode",
    "each input file cut short is refused (an InputError naming the instance and the "
    "file) before any episode",
)
def a_truncated_input_file_is_refused_before_any_episode(kind: str, w: World) -> None:
    """Each input file cut short (a copy interrupted, a disk full) makes ``load_inputs`` raise an
    ``InputError`` naming the instance and the file, before any episode is touched. A market
    that reads no file passes."""
    rules, _, mp = _parts(kind, w)
    inputs = rules.input_files(mp, w.paths.data)
    expect(
        inputs or not reads_inputs(kind),
        "input_files names files of a data folder, none of the world's",
    )
    for path in inputs:
        whole = path.read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
        pattern = f"{kind}: cannot load.*{re.escape(path.name)}"
        try:
            load_inputs(kind, w.params, w.paths.data)
        except InputError as exc:
            expect(
                re.search(pattern, str(exc)),
                f"{path.name} cut short: the InputError does not match {pattern!r}: {exc}",
            )
        else:
            raise AssertionError(f"{path.name} cut short was loaded")
        finally:
            path.write_bytes(whole)
    load_inputs(kind, w.params, w.paths.data)  # whole again: loads


# ------------------------------------------------------------------ one episode
@contract_check(
    "api",
    "one episode plays by the API (declared actors and phases, answer schemas, 0-based "
    "steps, retired seats silent) and its logs give metrics and a board",
)
def api(kind: str, w: World) -> None:
    _, analysis, mp = _parts(kind, w)
    result, table, spec, seen, _ = play(kind, w.params, w.resources)
    actors = set(table["actor"])
    columns = {"agent_id", "name", "kind", "model", "strategy", "harness", "role", "actor"}
    expect(
        set(table.columns) >= columns,
        f"the agents table lacks {sorted(columns - set(table.columns))}",
    )
    retired_at = {}
    phases = market_kind(kind).phases
    expect(phases, "its MarketKind declares no phases (core.registry: phases=(...))")
    for d in seen:
        expect(
            d.phase in phases,
            f"a decision's phase {d.phase!r} is not one its MarketKind declares ({phases})",
        )
        expect(
            isinstance(d.step, int) and isinstance(d.round, int) and d.step >= 0 and d.round >= 0,
            f"a decision's step / round is {d.step!r} / {d.round!r}",
        )
        expect(
            set(d.observations) <= actors,
            f"undeclared actors act: {sorted(set(d.observations) - actors)}",
        )
        for agent_id in d.observations:
            expect(agent_id not in retired_at, f"retired {agent_id} acts again")
            d.schema_for(agent_id)  # every acting agent has an answer shape
    for e in result.events.itertuples():
        if e.event == "retired":
            retired_at[e.agent_id] = e.step
    dec = result.decisions
    expect(len(dec), "no decision logged")
    expect(
        (dec.loc[~dec["valid"], "error"] != "").all(),
        "an invalid decision logged without its reason",
    )
    expect(
        dec.loc[~dec["valid"], "failure"].isin(["format", "rule"]).all()
        and (dec.loc[dec["valid"], "failure"] == "").all(),
        "a decision's failure kind is not format or rule (invalid) or empty (valid)",
    )
    expect(
        (dec[["step", "round", "attempt"]] >= 0).all().all(),
        "a negative step, round or attempt logged",
    )
    expect(
        set(dec["agent_id"]) <= actors,
        f"decisions of undeclared actors: {sorted(set(dec['agent_id']) - actors)}",
    )
    expect(set(result.events["agent_id"]) <= set(table["agent_id"]), "events of undeclared seats")
    reader = write(w.paths.root, spec, table, result)
    frames = analysis.compute_metrics(reader, mp, w.paths.data)
    agents = frames["agents"]
    need = {"episode_id", "agent_id", "name", *analysis.metric_columns, analysis.rank_by}
    expect(
        need <= set(agents.columns),
        f"the metrics' agents lack {sorted(need - set(agents.columns))}",
    )
    expect(set(agents["agent_id"]) <= set(table["agent_id"]), "metrics of undeclared seats")
    board = analysis.leaderboard(agents, mp, w.params.ratings, w.params.stats)
    expect(
        {"rank", "name", "mu", "sigma"} <= set(board.columns),
        f"the board lacks {sorted({'rank', 'name', 'mu', 'sigma'} - set(board.columns))}",
    )
    expect(set(board["name"]) <= set(table["name"]), "the board names undeclared players")


@contract_check(
    "seats_that_never_answer_or_answer_garbage",
    "a seat that never answers and one that answers garbage: the episode completes, "
    "their decisions are logged invalid with a reason, metrics come out",
)
def seats_that_never_answer_or_answer_garbage(kind: str, w: World) -> None:
    _, analysis, mp = _parts(kind, w)
    _, table, _, _, _ = play(kind, w.params, w.resources)
    actors = list(dict.fromkeys(table["actor"]))
    silent, garbage = actors[0], actors[-1]
    result, table, spec, _, _ = play(
        kind, w.params, w.resources, replace={silent: Silent, garbage: Garbage}
    )
    dec = result.decisions
    for actor, how in ((silent, "never answering"), (garbage, "answering garbage")):
        rows = dec[dec["agent_id"] == actor]
        expect(len(rows), f"{actor} ({how}) has no decision logged")
        expect(not rows["valid"].any(), f"{actor} ({how}) has a decision logged valid")
        expect(
            (rows["error"] != "").all(),
            f"{actor} ({how}) has an invalid decision logged without its reason",
        )
        expect(
            (rows["failure"] == "format").all(),
            f"{actor} ({how}) has a decision not logged as a format failure",
        )
    frames = analysis.compute_metrics(write(w.paths.root, spec, table, result), mp, w.paths.data)
    expect(len(frames["agents"]), "the metrics' agents table is empty")
    analysis.leaderboard(frames["agents"], mp, w.params.ratings, w.params.stats)


# ------------------------------------------------------------------ invalid answers
@contract_check(
    "an_invalid_answer_never_scores_better_than_the_fallbacks_action_answered_validly",
    "an invalid answer never scores better than the fallback's action answered "
    "validly, and the board shows the fallbacks",
)
def an_invalid_answer_never_scores_better_than_the_fallbacks_action_answered_validly(
    kind: str, w: World
) -> None:
    """The rule of issue 45: where a seat's answer is invalid the fallback plays; scored, that
    seat is never better off than the same seat answering the fallback's action validly (both
    arms play the same actions, so a score that does not read validity ties; one that treats a
    fallback as a free good decision would not). The seat is the last actor with a decision whose
    fallback its market accepts as an answer; the board shows its fallbacks."""
    _, analysis, _ = _parts(kind, w)
    _, table, _, _, _ = play(kind, w.params, w.resources)
    for actor in reversed(list(dict.fromkeys(table["actor"]))):
        arms, readers, seats = {}, {}, {}
        for mode in ("invalid", "valid"):

            def make(agent, market, mode=mode, seats=seats):
                seats[mode] = FallbackOrGarbage(agent, market, mode)
                return seats[mode]

            result, table, spec, _, _ = play(kind, w.params, w.resources, wrap={actor: make})
            arms[mode], readers[mode] = result, write(w.paths.root / mode, spec, table, result)
        if seats["invalid"].substituted:
            break
    else:
        raise AssertionError("no seat has a decision whose fallback a valid answer plays")
    name = table.loc[table["actor"] == actor, "name"].iloc[0]
    mine = {m: arms[m].decisions[arms[m].decisions["agent_id"] == actor] for m in arms}
    expect(
        (~mine["invalid"]["valid"]).sum() >= seats["invalid"].substituted,
        f"{actor}'s garbage logged valid",
    )
    expect(
        seats["valid"].substituted == seats["invalid"].substituted,
        f"{actor}: the two arms met different decisions ({seats['valid'].substituted} "
        f"substituted valid, {seats['invalid'].substituted} invalid)",
    )
    expect(
        arms["valid"].tables.keys() == arms["invalid"].tables.keys(),
        "the two arms log different tables",
    )
    for t in arms["valid"].tables:  # like for like: the market saw the same actions
        try:
            pd.testing.assert_frame_equal(
                arms["valid"].tables[t], arms["invalid"].tables[t], obj=f"{kind} {t}"
            )
        except AssertionError as exc:
            raise AssertionError(
                f"the fallback did not play the fallback's action: {t} differs "
                f"between the arms: {exc}"
            ) from None
    score = {m: player_scores(analysis, w, readers[m], name) for m in arms}
    expect(
        score["invalid"]["fallback"] > score["valid"]["fallback"],
        f"the board does not show {name}'s fallbacks",
    )
    for m, s in score.items():
        expect(
            abs(s["format_failures"] + s["rule_failures"] - s["fallback"]) < 1e-9,
            f"{name}'s format and rule failures do not sum to its fallback share ({m} arm)",
        )
    expect(
        score["invalid"]["format_failures"] > score["valid"]["format_failures"],
        f"the board does not show {name}'s garbage as format failures",
    )
    better = [
        f"{k}: invalid {score['invalid'][k]:.6g} > valid {v:.6g}"
        for k, v in score["valid"].items()
        if k not in VALIDITY_SHARES
        and (score["invalid"][k] > v + 1e-9 or (np.isnan(v) and np.isfinite(score["invalid"][k])))
    ]
    expect(not better, f"{name} ({actor}) scores better answering invalidly: " + "; ".join(better))


@contract_check(
    "idle_absurd_and_silent_seats_never_score_well",
    "a seat doing nothing (idle), something absurd or answering garbage (silent) never scores "
    "well: silent never beats idle, and where the market has an EAS the idle and the absurd "
    "seat are at the bottom of every component and below every player on the EAS",
)
def idle_absurd_and_silent_seats_never_score_well(kind: str, w: World) -> None:
    """``contract_seats.py`` says how each seat plays and what is compared."""
    idle_absurd_and_silent_seats(kind, w, _parts(kind, w)[1])


# ------------------------------------------------------------------ the logs
@contract_check(
    "same_seed_identical_logs_whatever_the_global_rng",
    "the same seed gives byte-identical logs, whatever the global random and numpy.random states",
)
def same_seed_identical_logs_whatever_the_global_rng(kind: str, w: World) -> None:
    runs = []
    for k in range(2):
        random.seed(1000 + k)
        np.random.seed(2000 + k)
        result, table, spec, _, _ = play(kind, w.params, w.resources, run=1)
        runs.append(write(w.paths.root / f"run{k}", spec, table, result))
    folders = [r.root / r.episode_ids()[0] for r in runs]
    names = sorted(p.name for p in folders[0].glob("*.parquet"))
    expect(
        names == sorted(p.name for p in folders[1].glob("*.parquet")),
        "the two runs log different tables",
    )
    for name in names:
        if name == "llm_costs.parquet":
            continue
        expect(
            (folders[0] / name).read_bytes() == (folders[1] / name).read_bytes(), f"{name} differs"
        )


@contract_check(
    "tables_written_byte_for_byte_as_pandas_writes_them",
    "every log table is written with exactly the bytes of pandas' to_parquet, the "
    "second episode's rows mostly without a frame",
)
def tables_written_byte_for_byte_as_pandas_writes_them(kind: str, w: World) -> None:
    """Every log table of two episodes is written (``logs.write_table``; ``Rows`` built into
    Arrow with a schema kept per shape of table, without their frame) with exactly the bytes of
    pandas' ``to_parquet``: the first episode's tables make the schemas, the second's reuse them.
    (The schemas kept and ``Rows.frame`` are swapped for the check and put back after.)"""
    schemas, frame = logs._ROWS_SCHEMAS, Rows.frame
    built: list[int] = []

    def counted(self):
        built.append(1)
        return frame(self)

    logs._ROWS_SCHEMAS = {}
    try:
        for run in (0, 1):
            result, table, _, _, _ = play(kind, w.params, w.resources, run=run)
            tables = {"agents": table, **result.raw}
            expected = {name: as_frame(t).reset_index(drop=True) for name, t in tables.items()}
            Rows.frame = counted
            built.clear()
            try:
                for name, t in tables.items():
                    ours = w.paths.root / f"{run}-{name}.parquet"
                    theirs = w.paths.root / f"{run}-{name}.pd.parquet"
                    logs.write_table(t, ours)
                    expected[name].to_parquet(
                        theirs, index=False, engine="pyarrow", compression="zstd"
                    )
                    expect(ours.read_bytes() == theirs.read_bytes(), f"episode {run}: {name}")
            finally:
                Rows.frame = frame
    finally:
        logs._ROWS_SCHEMAS, Rows.frame = schemas, frame
    rows = sum(isinstance(t, Rows) for t in tables.values())
    expect(rows and len(built) < rows / 2, "the second episode's rows mostly went through pandas")


# ------------------------------------------------------------------ figures
@contract_check(
    "figures_from_the_metrics",
    "the figures and tables are drawn from the metrics, each figure with the data it "
    "draws, every one captioned in figures.yaml",
)
def figures_from_the_metrics(kind: str, w: World) -> None:
    import matplotlib

    from marketarena.pipeline import run_figures, run_metrics, run_ratings, run_stats
    from marketarena.report.captions import missing
    from marketarena.simulate import simulate

    matplotlib.use("Agg")
    params, paths = w.params, w.paths
    simulate(kind, params, paths.data, progress=False)
    run_metrics(kind, params, paths)
    run_stats(kind, params, paths)
    run_ratings(kind, params, paths)
    out = run_figures(kind, params, paths)
    expect(out, "draws nothing")
    for p in out:
        expect(Path(p).is_file() and Path(p).stat().st_size > 0, f"{p}: missing or empty")
    pngs = [p for p in out if str(p).endswith(".png")]
    expect(pngs, "draws no figure")
    drawn = [pd.read_csv(paths.figure_data(kind) / f"{Path(png).stem}.csv") for png in pngs]
    marks = {"line", "points", "bar", "segment", "band", "cell", "cut"}
    for png, data in zip(pngs, drawn):  # each with the data it draws (plots.drawn), for the site
        expect(
            set(data["kind"]) <= marks, f"{png}: draws marks {sorted(set(data['kind']) - marks)}"
        )
    expect(sum(len(d) for d in drawn) > 0, "no figure draws any data")  # ("no data" draws none)
    # the results site captions every figure and table (report/captions.py)
    tables = [Path(p).stem for p in out if str(p).endswith(".md")]
    problems = missing(kind, kind, [Path(p).stem for p in pngs], tables)
    expect(not problems, "\n".join(problems))
    board = paths.reports / "leaderboards" / f"{kind}.csv"
    expect(isinstance(pd.read_csv(board), pd.DataFrame), f"{board}: no board")


# ------------------------------------------------------------------ params (contract_params.py)
contract_check(
    "every_numeric_param_at_its_extremes_is_refused_or_plays_finite",
    "every numeric param at the extremes its model allows is refused naming the key, "
    "or plays finite",
)(every_numeric_param_at_its_extremes)


def check_all(
    kind: str,
    folder: Path,
    persona_folder: Path | None = None,
    checks: tuple[str, ...] | None = None,
) -> None:
    """Every check of :data:`CHECKS` (or those named in ``checks``) on market ``kind``, each on
    a fresh world in ``folder/<check>``; the personas built once (``folder/personas``) where the
    market reads them, unless ``persona_folder`` holds them. Raises the first failure's
    AssertionError, naming the market and the rule broken."""
    folder = Path(folder)
    if persona_folder is None and market_kind(kind).uses:
        persona_folder = persona_world(folder / "personas")
    for name in checks or CHECKS:
        if name not in CHECKS:
            raise KeyError(f"no contract check {name!r} (there are: {', '.join(CHECKS)})")
        CHECKS[name](kind, world(kind, folder / name, persona_folder))
