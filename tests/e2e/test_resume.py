"""End to end, on a copy of the built project: a second repro does nothing; re-simulating
identical episodes changes no tracked hash; adding runs replays only the new episodes; a run
killed mid-simulate resumes without redoing finished ones. In this order: each test leaves the
copy as the next expects it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml

from tests.e2e.project import BIN, copy_of, dvc, env, episode_meta, lock_outs, ran, write_params

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def copy(project, tmp_path_factory):
    return copy_of(project, tmp_path_factory.mktemp("resume") / "project")


def test_second_repro_is_a_no_op(copy):
    """Not even in a copy at another path (DVC hashes the copied outputs again, and they are the
    same)."""
    before = episode_meta(copy)
    out = dvc(copy, "repro").stdout
    assert "didn't change" in out or "up to date" in out
    assert ran(out) == set(), out
    assert episode_meta(copy) == before


def test_resimulating_identical_episodes_changes_no_tracked_hash(copy):
    """Issue 28: the episodes (a folder per episode, and shards) and their run logs deleted, the
    simulate stages play everything again (new wall times, new finish times), and nothing
    downstream re-runs: every tracked hash is the one before."""
    before = lock_outs(copy)
    for instance in ("supply_chain", "double_auction"):
        shutil.rmtree(copy / "data" / "episodes" / instance)
        shutil.rmtree(copy / "data" / "run_logs" / instance)
    out = dvc(copy, "repro", "--no-run-cache").stdout
    assert ran(out) == {"simulate@supply_chain", "simulate@double_auction"}, out
    assert lock_outs(copy) == before
    assert (copy / "data" / "run_logs" / "supply_chain").is_dir()  # the new run's information


def test_more_runs_replays_only_the_new_episode(copy):
    before = episode_meta(copy)
    params = yaml.safe_load((copy / "params.yaml").read_text())
    params["markets"]["supply_chain"]["runs"] = 3
    write_params(copy, params)
    dvc(copy, "repro")
    after = episode_meta(copy)
    assert sorted(after) == ["ep-0000", "ep-0001", "ep-0002"]
    for ep in before:  # untouched: same fingerprint, not rewritten
        assert after[ep]["written"] == before[ep]["written"]
    agents = pd.read_parquet(copy / "data" / "metrics" / "supply_chain" / "agents.parquet")
    assert agents["episode_id"].nunique() == 3


def test_killed_run_resumes_without_redoing_finished_episodes(copy):
    old = {m["fingerprint"] for m in episode_meta(copy).values()}
    params = yaml.safe_load((copy / "params.yaml").read_text())
    params["markets"]["supply_chain"].update(runs=12, steps=4)  # changed: every episode replays
    write_params(copy, params)

    def new_episodes():
        return {k: v for k, v in episode_meta(copy).items() if v["fingerprint"] not in old}

    proc = subprocess.Popen(
        [str(BIN / "dvc"), "repro"],
        cwd=copy,
        env=env(copy),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    root = copy / "data" / "episodes" / "supply_chain"
    deadline = time.time() + 600
    try:
        while time.time() < deadline:
            if root.is_dir() and len(new_episodes()) >= 2:
                break
            if proc.poll() is not None:
                pytest.fail("dvc repro finished before it could be interrupted")
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # dvc and the stage process it started
    finally:
        proc.wait()
    kept = new_episodes()
    assert 2 <= len(kept) < 12
    dvc(copy, "repro")
    final = episode_meta(copy)
    assert len(final) == 12
    for ep, meta in kept.items():
        assert final[ep]["written"] == meta["written"], ep
