"""CPU of a stage with nothing to do (issue 57): the simulate stage of an instance whose episodes
are all on disk, and importing ``marketarena.config`` (what every stage does first).

A DVC stage whose instance did not change is never run, but one whose code file changed is (an
edit to a market's figures re-runs its simulate stage, which then plays nothing), and every stage
pays Python's start-up and the params layer. Each figure is the median CPU time (user + system
of the child process) over ``--n`` runs.

With ``--other DIR`` (a checkout of an earlier version with its own built project, e.g. a git
worktree where `dvc repro simulate@cournot` ran), the same commands run there too, alternating
pair by pair, and the ratio is printed: the comparison in one run that a noisy machine needs.

Run from a built project (`dvc repro simulate@cournot` done):
`.venv/bin/python benchmarks/bench_stage_start.py [--instance cournot] [--other ../old]`.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path


def cpu_of(cmd: list[str], project: Path) -> float:
    """CPU seconds (user + system) of ``cmd`` run in ``project`` with that project's code."""
    env = {**os.environ, "PYTHONPATH": str(project / "lib"), "HF_HUB_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=project, env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instance", default="cournot")
    ap.add_argument("--n", type=int, default=7)
    ap.add_argument("--other", type=Path, default=None, help="an earlier checkout, built")
    args = ap.parse_args()
    commands = {
        "import marketarena.config": [sys.executable, "-c", "import marketarena.config"],
        f"simulate {args.instance}, nothing to play": [
            sys.executable,
            "-m",
            "stages.simulate",
            args.instance,
        ],
    }
    projects = [Path.cwd()] + ([args.other.resolve()] if args.other else [])
    for what, cmd in commands.items():
        runs: dict[Path, list[float]] = {p: [] for p in projects}
        for _ in range(args.n):
            for project in projects:  # alternating: both see the same machine load
                runs[project].append(cpu_of(cmd, project))
        now = statistics.median(runs[projects[0]])
        line = f"{what:40s} {now:5.2f} s CPU"
        if args.other:
            then = statistics.median(runs[projects[1]])
            line += f"   earlier {then:5.2f} s   ratio {now / then:4.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
