"""End to end, on a copy of the built project: README "Sweeps with dvc exp"."""

from __future__ import annotations

import subprocess

import pytest

from tests.e2e.project import copy_of, dvc, ran

pytestmark = pytest.mark.slow

STAGES = ("simulate", "metrics", "stats", "ratings", "figures")


def test_a_dvc_exp_sweep_reruns_only_the_changed_instance(project, tmp_path):
    """`dvc exp run -S` (in the workspace, or queued with `--queue` and run with `--run-all`)
    re-runs the stages of the instance whose params changed (and `overall` and `report`), and
    the `instances` stage whose params are every instance's (its files then say nothing new:
    nothing else follows), and `dvc exp show` lists the experiments."""
    copy = copy_of(project, tmp_path / "project")
    git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]
    subprocess.run([*git, "add", "-A"], cwd=copy, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "baseline"], cwd=copy, check=True, capture_output=True)
    allowed = {f"{s}@bertrand" for s in STAGES} | {"instances", "overall", "report"}
    out = dvc(copy, "exp", "run", "-n", "bertrand-seed5", "-S", "markets.bertrand.seed=5").stdout
    stages_ran = ran(out)
    assert {"simulate@bertrand", "metrics@bertrand", "ratings@bertrand"} <= stages_ran, out
    assert stages_ran <= allowed, stages_ran
    assert "bertrand-seed5" in dvc(copy, "exp", "show", "--json").stdout
    # DVC's own queue: a variant queued, run by `--run-all` in DVC's temporary workspace,
    # re-running only the bertrand instance's stages
    dvc(copy, "exp", "run", "--queue", "-n", "bertrand-seed6", "-S", "markets.bertrand.seed=6")
    dvc(copy, "exp", "run", "--run-all", "--jobs", "1")
    assert "bertrand-seed6" in dvc(copy, "exp", "show", "--json").stdout
    log = dvc(copy, "queue", "logs", "bertrand-seed6").stdout
    queued = ran(log)
    assert "simulate@bertrand" in queued and queued <= allowed, log
