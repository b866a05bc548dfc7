"""The default `dvc repro` of a fresh checkout (issue 57): what `make run` does after the install.

Makes a git worktree of ``--commit`` (default HEAD) in a temporary folder, runs `dvc repro` there
with that checkout's own code (``PYTHONPATH=<worktree>/lib``) and this project's virtualenv, and
prints the wall time and the CPU of the whole run (DVC and every stage). ``--times FILE``: each
stage's command runs under `/usr/bin/time` into FILE (wall, user, system, command), so that the
stages' own time and DVC's time between them can be told apart; ``--lock FILE`` keeps the
dvc.lock it wrote (a fresh checkout must write the committed one; with ``--times`` its ``cmd``
lines are written back without the timing prefix, as dvc.yaml has them: :func:`untimed`); ``--profile FILE``
keeps DVC's own cProfile dump (its time between the stages). The run starts without the
checkout's dvc.lock: DVC never drops the entry of a stage that is gone, so a lock written over
an older one carries them along (``--keep-lock``: from the checkout's, as a fresh clone does). The
worktree is removed at the end.

Run from the project root: `.venv/bin/python benchmarks/bench_fresh_pipeline.py [--commit X]`.
For the ratio against an earlier version, in one run, pair by pair, time two of these commands in
turn (one with ``--commit <earlier>``). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def untimed(lock: str) -> str:
    """A lock written under ``--times`` with each ``cmd`` as dvc.yaml has it (DVC folds the long
    timed command onto a second line): the lock a run without the prefix writes, whose outputs'
    hashes the prefix does not change."""
    return re.sub(
        r'cmd: /usr/bin/time -a -o \S+ -f "%e %U %S %C" python -m\n\s+(stages\.[^\n]+)',
        r"cmd: python -m \1",
        lock,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--times", help="write each stage's /usr/bin/time line here")
    ap.add_argument("--lock", help="copy the dvc.lock the run wrote here")
    ap.add_argument("--profile", help="DVC's own cProfile dump (`dvc repro --cprofile-dump`)")
    ap.add_argument(
        "--keep-lock",
        action="store_true",
        help="start from the checkout's dvc.lock, as a fresh clone does (default: from none)",
    )
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fresh-pipeline-"))
    tree = work / "tree"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), args.commit],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        if args.times:
            dvc_yaml = tree / "dvc.yaml"
            timed = (
                f'cmd: /usr/bin/time -a -o {Path(args.times).resolve()} -f "%e %U %S %C" python -m'
            )
            dvc_yaml.write_text(dvc_yaml.read_text().replace("cmd: python -m", timed))
        env = {
            **os.environ,
            "PYTHONPATH": str(tree / "lib"),
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "DVC_NO_ANALYTICS": "1",
            "HF_HUB_OFFLINE": "1",
            "MPLBACKEND": "Agg",
        }
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        # DVC keeps a lock entry for a stage it no longer has: start from none, as `--lock` needs
        if not args.keep_lock:
            (tree / "dvc.lock").unlink(missing_ok=True)
        command = [str(BIN / "dvc"), "repro"]
        if args.profile:
            command += ["--cprofile-dump", str(Path(args.profile).resolve())]
        proc = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            sys.exit(f"dvc repro failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        stages = proc.stdout.count("Running stage")
        print(f"{args.commit}: {stages} stages, {wall:.1f} s wall, {cpu:.1f} s CPU")
        if args.lock:
            Path(args.lock).write_text(untimed((tree / "dvc.lock").read_text()))
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True
        )
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
