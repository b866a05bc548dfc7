"""Atomic episode folders, resume, and the fingerprint that decides what is reused."""

from __future__ import annotations

import json

import pandas as pd

from marketarena.core import logs


def plan(n, fp="f"):
    return [logs.PlannedEpisode(f"ep-{i:04d}", i, 100 + i, f"{fp}{i}") for i in range(n)]


def write(root, ep):
    logs.write_episode(root, ep, {"states": pd.DataFrame({"x": [ep.run]})}, {"market": "m"},
                       {"wall_time_s": 0.1})


def test_write_is_atomic_and_complete(tmp_path):
    ep = plan(1)[0]
    write(tmp_path, ep)
    folder = tmp_path / ep.episode_id
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["fingerprint"] == ep.fingerprint
    assert meta["seed"] == 100 and "wall_time_s" in meta["run"]
    assert not any(p.name.startswith(logs.TMP_PREFIX) for p in tmp_path.iterdir())
    assert logs.read_tables(tmp_path, "states")["episode_id"].tolist() == [ep.episode_id]


def test_prepare_keeps_finished_and_sweeps_partial_stale_and_unplanned(tmp_path):
    eps = plan(4)
    for ep in eps[:3]:
        write(tmp_path, ep)
    (tmp_path / f"{logs.TMP_PREFIX}ep-0003-999").mkdir()  # a run killed mid-write
    (tmp_path / "ep-0009").mkdir()  # no longer planned
    (tmp_path / "ep-0002" / "meta.json").write_text("{truncated")  # damaged
    stale = [eps[0], logs.PlannedEpisode("ep-0001", 1, 101, "other"), eps[2], eps[3]]
    todo = logs.prepare(tmp_path, stale)
    assert [e.episode_id for e in todo] == ["ep-0001", "ep-0002", "ep-0003"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ep-0000"]


def test_hash_files_tracks_content_not_mtime(tmp_path):
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    h1 = logs.hash_files([tmp_path])
    f.touch()
    assert logs.hash_files([tmp_path]) == h1
    f.write_text("x = 2\n")
    assert logs.hash_files([tmp_path]) != h1
