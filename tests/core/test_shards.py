"""Sharded episode logs (issue 13): many episodes per Parquet file, each shard written atomically
and resumed as a unit; one reader gives the same rows from shards as from episode folders."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.core.run_logs import read_run_log, read_run_table
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import complete, simulate

from .test_workers import files, tiny

TABLES = ["agents", "decisions", "llm_calls", "events", "states", "trades", "seats", "game"]


def da(shard, runs=7, **execution):
    p = tiny("double_auction", **{"workers": 1, **execution})
    p["markets"]["double_auction"].update(runs=runs, shard_episodes=shard)
    return parse_params(p)


def play(root, params):
    paths = Paths(root)
    if not (paths.references("double_auction") / "summary.json").exists():
        run_reference("double_auction", params, paths)
    return simulate("double_auction", params, paths.data, progress=False), paths.episodes(
        "double_auction"
    )


def planned(ids):
    return [logs.PlannedEpisode(i, k, k, f"f{k}") for k, i in enumerate(ids)]


def test_units_are_consecutive_episodes_of_one_series_at_most_n_per_shard():
    ids = [
        "ep-0000",
        "ep-0001",
        "ep-0002",
        "ep-0003",
        "ep-0004",
        "x-a1-0000",
        "x-a1-0001",
        "x-b-0000",
    ]
    units = logs.plan_units(planned(ids), 2)
    assert [u.name for u in units] == [
        "ep-0000..ep-0001",
        "ep-0002..ep-0003",
        "ep-0004..ep-0004",
        "x-a1-0000..x-a1-0001",
        "x-b-0000..x-b-0000",
    ]
    assert all(u.shard for u in units) and sum(len(u.episodes) for u in units) == len(ids)
    assert [u.name for u in logs.plan_units(planned(ids), None)] == ids
    assert logs.series("x-gpt-4o-0012") == "x-gpt-4o-"


def test_readers_see_the_same_rows_from_episode_folders_and_shards(tmp_path):
    _, folders = play(tmp_path / "a", da(None))
    _, shards = play(tmp_path / "b", da(3))
    assert sorted(p.name for p in folders.iterdir()) == [f"ep-{k:04d}" for k in range(7)]
    assert sorted(p.name for p in shards.iterdir()) == [
        "ep-0000..ep-0002",
        "ep-0003..ep-0005",
        "ep-0006..ep-0006",
    ]
    a, b = EpisodeReader(folders), EpisodeReader(shards)
    assert len(a) == len(b) == 7 and a.episode_ids() == b.episode_ids()
    for name in TABLES:
        ta, tb = a.table(name), b.table(name)
        assert list(ta.columns)[0] == "episode_id" and len(ta) == len(tb)
        pd.testing.assert_frame_equal(ta, tb, check_dtype=len(ta) > 0)
    pd.testing.assert_frame_equal(
        a.table("states", columns=["quote"]), b.table("states", columns=["quote"])
    )
    per_a = dict(a.episodes("states", "trades"))
    per_b = dict(b.episodes("states", "trades"))
    assert per_a.keys() == per_b.keys()
    for episode_id in per_a:
        for name in ("states", "trades"):
            pd.testing.assert_frame_equal(
                per_a[episode_id][name],
                per_b[episode_id][name],
                check_dtype=len(per_a[episode_id][name]) > 0,
            )
        ma, mb = a.meta(episode_id), b.meta(episode_id)
        for key in ("episode_id", "run_index", "seed", "fingerprint", "lineup", "market"):
            assert ma[key] == mb[key], key
    # the run log (not hashed by DVC): one row per episode and the same llm_costs rows either way
    runs_a, runs_b = (read_run_log(Paths(tmp_path / r).run_logs("double_auction")) for r in "ab")
    assert runs_a["episode_id"].tolist() == runs_b["episode_id"].tolist() == a.episode_ids()
    assert runs_a["unit"].tolist() == a.episode_ids()
    assert runs_b["unit"].tolist() == ["ep-0000..ep-0002"] * 3 + ["ep-0003..ep-0005"] * 3 + [
        "ep-0006..ep-0006"
    ]
    assert runs_a["fingerprint"].tolist() == [a.meta(e)["fingerprint"] for e in a.episode_ids()]
    assert (runs_b["wall_time_s"] > 0).all() and (runs_b["cost_usd"] == 0).all()
    costs_a, costs_b = (
        read_run_table(Paths(tmp_path / r).run_logs("double_auction")) for r in "ab"
    )
    assert list(costs_a.columns)[0] == "episode_id"
    pd.testing.assert_frame_equal(costs_a, costs_b, check_dtype=False)


def test_an_interrupted_shard_replays_as_a_unit_and_finished_shards_stay(tmp_path, monkeypatch):
    from marketarena.simulate import schedule

    params = da(3)
    real = schedule._play_one
    seen = []

    async def stop_in_the_second_shard(run, spec, seed):
        seen.append(spec.episode_id)
        if spec.episode_id == "ep-0004":
            raise KeyboardInterrupt  # Ctrl-C halfway through shard ep-0003..ep-0005
        return await real(run, spec, seed)

    monkeypatch.setattr(schedule, "_play_one", stop_in_the_second_shard)
    with pytest.raises(KeyboardInterrupt):
        play(tmp_path / "run", params)
    out = Paths(tmp_path / "run").episodes("double_auction")
    assert sorted(p.name for p in out.iterdir()) == ["ep-0000..ep-0002"]  # nothing half-written
    first = {p.name: os.stat(p).st_mtime_ns for p in (out / "ep-0000..ep-0002").iterdir()}
    run_logs = Paths(tmp_path / "run").run_logs("double_auction")
    first_run = read_run_log(run_logs)
    assert first_run["unit"].unique().tolist() == ["ep-0000..ep-0002"]
    monkeypatch.setattr(schedule, "_play_one", real)
    summary, _ = play(tmp_path / "run", params)
    assert (summary["played"], summary["skipped"]) == (4, 3)  # the two unfinished shards
    assert {p.name: os.stat(p).st_mtime_ns for p in (out / "ep-0000..ep-0002").iterdir()} == first
    # one run log per unit on disk; the kept shard's is the first run's
    assert sorted(p.name for p in run_logs.iterdir() if p.name != complete.RECORD) == sorted(
        p.name for p in out.iterdir()
    )
    pd.testing.assert_frame_equal(read_run_log(run_logs).iloc[:3], first_run)
    _, clean = play(tmp_path / "clean", params)
    a, b = files(out), files(clean)
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []


def test_a_damaged_shard_replays_and_no_other(tmp_path):
    params = da(3)
    _, out = play(tmp_path, params)
    target = out / "ep-0003..ep-0005" / "states.parquet"
    target.write_bytes(target.read_bytes()[:-10])  # truncated
    kept = {
        p.name: os.stat(p / "meta.json").st_mtime_ns
        for p in out.iterdir()
        if p.name != "ep-0003..ep-0005"
    }
    summary, _ = play(tmp_path, params)
    assert (summary["played"], summary["skipped"]) == (3, 4)
    assert {
        p.name: os.stat(p / "meta.json").st_mtime_ns
        for p in out.iterdir()
        if p.name != "ep-0003..ep-0005"
    } == kept
    # switching the layout replays everything into the other one and leaves no stray shard
    summary, _ = play(tmp_path, da(None))
    assert summary["played"] == 7 and sorted(p.name for p in out.iterdir()) == [
        f"ep-{k:04d}" for k in range(7)
    ]


def test_two_workers_write_the_same_shards_as_one(tmp_path):
    one, two = da(2, workers=1), da(2, workers=2)
    s1, a = play(tmp_path / "a", one)
    s2, b = play(tmp_path / "b", two)
    assert s1["workers"] == 1 and s2["workers"] == 2 and s1["played"] == s2["played"] == 7
    fa, fb = files(a), files(b)
    assert len(fa) == 4 * 10 and fa.keys() == fb.keys() and [k for k in fa if fa[k] != fb[k]] == []
