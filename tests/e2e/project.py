"""What the end-to-end tests share: a scratch copy of the project (code, dvc.yaml, a tiny
params.yaml, its own git and DVC repository) built once by `dvc repro` and shared by every test
module and every pytest-xdist worker of a run.

The tests of ``tests/e2e`` are split by what they need, so that the two workers run them side by
side instead of one module's chain of stage processes:

- ``test_outputs.py`` reads the built project (every output, the import lists, a second repro);
- ``test_site.py`` opens its results site in a real browser and rebuilds it (bytes unchanged);
- ``test_twin.py`` builds a second fresh copy with other thread counts and one worker (the same
  dvc.lock: issue 28), while the first is being built on the other worker;
- ``test_resume.py``, ``test_sweep.py`` and ``test_dependencies.py`` each change a copy of the
  built project of their own (:func:`copy_of`): re-simulating, more runs, a killed run; a
  ``dvc exp`` sweep; which stages a change of the personas or of one market's code re-runs.

A build is made by the first worker that asks for it, under a file lock in the run's shared
temporary folder (:func:`built`); the others wait for it and use it. Nothing is asserted here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def tiny_params() -> dict:
    """The repository's params.yaml (DVC needs every tracked key present), scaled down."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for name in LEFT_OUT:
        params["markets"].pop(name, None)
    params["personas"]["per_tribe"] = 6
    params["markets"]["supply_chain"].update(TINY_MARKET)
    if "double_auction" in params["markets"]:
        da = params["markets"]["double_auction"]
        da.update(games_per_distribution=2, rating_passes=10)
        da["reference"].update(games_per_distribution=50)
        da["roster"] = da["roster"][:10]
    for market in ("cournot", "bertrand"):  # one round robin of three firms: every pair once
        if market in params["markets"]:
            block = params["markets"][market]
            block["roster"] = block["roster"][:3]
            block["runs"] = 3
    if "bertrand" in params["markets"]:  # a second instance of the same kind
        params["markets"]["bertrand"].update(rounds=30, collusion_window=10)
        params["markets"]["bertrand_a10"] = {
            **params["markets"]["bertrand"],
            "market": "bertrand",
            "alpha": 10.0,
        }
    for name, block in params["markets"].items():  # the contract tests' tiny instances
        kind = block.get("market", name)
        if kind in ("crash", "lemon", "english_auction"):
            tiny = ROOT / "lib" / "marketarena" / "markets" / kind / "tiny_params.yaml"
            params["markets"][name] = {**yaml.safe_load(tiny.read_text()), "market": kind}
    params["stats"].update(n_boot=200, n_perm=200)
    params["ratings"]["n_boot"] = 20
    return params


#: instances of params.yaml the tiny project leaves out: a second and third instance of a kind it
#: already builds (bertrand_a10 stays for that), each 5 stage processes more per build; their
#: markets' stages run in process in tests/contract and tests/markets/<kind>
LEFT_OUT = ("english_auction_ablation", "english_auction_objectives", "crash_spillover")

#: the instances the twin builds (``build_twin``): those whose numbers could move with thread
#: counts or the number of simulate workers (the personas' embeddings, TrueSkill over many games,
#: the optimisers behind the Nash solutions, shards played by several workers)
TWIN_INSTANCES = ("supply_chain", "double_auction", "bertrand", "english_auction")


TINY_MARKET = {
    "runs": 2,
    "seed": 3,
    "steps": 2,
    "rounds": 2,
    "beta": 10,
    "roster": [
        {
            "name": "cost_plus_m50",
            "kind": "baseline",
            "strategy": "cost_plus",
            "params": {"markup": 0.5},
        },
        {"name": "volume", "kind": "baseline", "strategy": "volume"},
        {
            "name": "target_hype",
            "kind": "baseline",
            "strategy": "targeter",
            "params": {"tribe": "hype"},
        },
        {"name": "random", "kind": "baseline", "strategy": "random"},
    ],
}

#: thread counts of the first scratch copy and of its twin (issue 28: the same dvc.lock)
THREADS = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}
TWIN_THREADS = {k: "2" for k in THREADS}


def env(project: Path) -> dict[str, str]:
    """The scratch project runs its own copy of the code (not the editable install), so that its
    episodes' code fingerprint cannot move while the tests run. Thread counts: ``THREADS``, or a
    twin's own (its ``threads.json``)."""
    e = dict(os.environ)
    threads = project / "threads.json"
    e.update(json.loads(threads.read_text()) if threads.is_file() else THREADS)
    e["PYTHONPATH"] = str(project / "lib")
    e["PATH"] = f"{BIN}{os.pathsep}{e['PATH']}"
    e.update(
        GIT_AUTHOR_NAME="e2e",
        GIT_AUTHOR_EMAIL="e2e@example.invalid",  # dvc exp commits
        GIT_COMMITTER_NAME="e2e",
        GIT_COMMITTER_EMAIL="e2e@example.invalid",
    )
    e.update(
        DVC_NO_ANALYTICS="1",
        HF_HUB_OFFLINE="1",
        MPLBACKEND="Agg",
        MARKETARENA_RECORD_IMPORTS=str(project / "imports.jsonl"),
    )
    return e


def dvc(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(BIN / "dvc"), *args],
        cwd=project,
        env=env(project),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"dvc {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def write_params(project: Path, params: dict) -> None:
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def scratch_copy(dest: Path, params: dict, threads: dict[str, str] | None = None) -> Path:
    """A scratch copy of the project (code, dvc.yaml) with its own git + DVC repo."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("dvc.yaml", ".dvcignore", "stages", "lib"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(
            src,
            dest / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if src.is_dir() else {}),
        )
    if threads is not None:
        (dest / "threads.json").write_text(json.dumps(threads))
    write_params(dest, params)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    dvc(dest, "init", "-q")
    dvc(dest, "config", "core.analytics", "false")
    return dest


def built(shared: Path, name: str, make: Callable[[Path], None]) -> Path:
    """``shared/<name>``: a project ``make(folder)`` builds, made once per test run whichever
    worker asks first (the others wait on the lock); a failed build is made again by the next
    caller, so its error shows in every test that needs it."""
    folder, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.is_file():
            if folder.exists():
                shutil.rmtree(folder)
            make(folder)
            done.write_text("ok")
    return folder


def build_main(folder: Path) -> None:
    scratch_copy(folder, tiny_params())
    (folder / "repro.log").write_text(dvc(folder, "repro").stdout)


def build_twin(folder: Path) -> None:
    """The project's ``TWIN_INSTANCES`` in a fresh copy, run with 2 threads everywhere (OpenMP,
    MKL, OpenBLAS, numba) instead of 1 and one simulate worker instead of one per core
    (``execution`` is no tracked param)."""
    params = tiny_params()
    params["markets"] = {k: v for k, v in params["markets"].items() if k in TWIN_INSTANCES}
    params["execution"] = {"workers": 1}
    scratch_copy(folder, params, threads=TWIN_THREADS)
    dvc(folder, "repro")


def copy_of(project: Path, dest: Path) -> Path:
    """A copy of a built project (its git and DVC repositories, data and cache included), for a
    test that changes it."""
    shutil.copytree(project, dest, symlinks=True)
    (dest / "imports.jsonl").unlink(missing_ok=True)
    return dest


def lock_stages(project: Path) -> dict[str, dict]:
    """dvc.lock's stages: name -> its cmd, deps, params and outs with their hashes."""
    return yaml.safe_load((project / "dvc.lock").read_text())["stages"]


def lock_outs(project: Path) -> dict[str, str]:
    """Every tracked output of dvc.lock with its hash."""
    stages = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    return {o["path"]: o["md5"] for st in stages.values() for o in st.get("outs", [])}


def ran(out: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", out))


def episode_meta(project: Path, instance: str = "supply_chain") -> dict[str, dict]:
    """Each episode's meta.json of an instance, with ``written``: when it was written (ns)."""
    root = project / "data" / "episodes" / instance
    out = {}
    for p in sorted(root.glob("ep-*")):
        try:  # a running simulate may sweep a stale folder while we look
            meta = p / "meta.json"
            out[p.name] = {**json.loads(meta.read_text()), "written": meta.stat().st_mtime_ns}
        except FileNotFoundError:
            pass
    return out
