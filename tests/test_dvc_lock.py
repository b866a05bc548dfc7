"""The committed dvc.lock (issue 57) holds one entry per stage of dvc.yaml over the default
params.yaml, and none for a stage that is gone.

DVC never drops the entry of a stage it no longer has: a lock written over an older one carries
them along (the lock of 2da527d held 20 such entries, 2,600 of its 5,375 lines), and DVC reads
and rewrites the whole lock after every stage it runs, so a stale lock slows every `dvc repro`.
``benchmarks/bench_fresh_pipeline.py --lock`` writes a lock from none.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def expected_stages() -> set[str]:
    """dvc.yaml's stage names, each ``foreach: ${markets}`` expanded over params.yaml's markets."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    markets = yaml.safe_load((ROOT / "params.yaml").read_text())["markets"]
    names = set()
    for name, stage in stages.items():
        if "foreach" in stage:
            assert stage["foreach"] == "${markets}", name
            names |= {f"{name}@{key}" for key in markets}
        else:
            names.add(name)
    return names


def test_the_committed_lock_has_exactly_the_pipelines_stages():
    locked = set(yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"])
    expected = expected_stages()
    assert locked - expected == set(), "stale entries: write the lock from none"
    assert expected - locked == set(), "stages missing from the lock: run the pipeline"
    assert {"personas", "instances", "simulate@crash", "figures@lemon", "report"} <= expected


def test_every_param_a_stage_tracks_is_in_params_yaml():
    """DVC refuses a stage whose tracked param key is missing from params.yaml (a key added to
    dvc.yaml and not to params.yaml once failed every `dvc repro`, seen only by the e2e build)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    missing = []
    for name, stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        for key in (stage.get("do", stage)).get("params", []):
            node = params
            for part in str(key).split("."):
                if not isinstance(node, dict) or part not in node:
                    missing.append(f"{name}: {key}")
                    break
                node = node[part]
    assert not missing, f"dvc.yaml tracks params missing from params.yaml: {missing}"


def test_every_locked_command_is_dvc_yamls():
    """A lock written by a timed benchmark run (``bench_fresh_pipeline.py --times``) once carried
    its `/usr/bin/time` prefix in every ``cmd``: a fresh clone then saw every stage changed."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    markets = yaml.safe_load((ROOT / "params.yaml").read_text())["markets"]
    expected = {}
    for name, stage in stages.items():
        if "foreach" in stage:
            for key in markets:
                expected[f"{name}@{key}"] = stage["do"]["cmd"].replace("${key}", key)
        else:
            expected[name] = stage["cmd"]
    locked = yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"]
    wrong = {k: v["cmd"] for k, v in locked.items() if v["cmd"] != expected.get(k)}
    assert wrong == {}, f"dvc.lock commands that are not dvc.yaml's: {wrong}"
