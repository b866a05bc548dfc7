"""Wall time of the default `dvc repro` from a clean data/ and reports/, split by stage (issue 2).

Runs each stage of dvc.yaml in pipeline order with `dvc repro --force --single-item <stage>` and
times it, so the split adds up to a full clean repro (plus DVC's own overhead per call, which is
reported separately as the time of a no-op `dvc repro`). Removes data/, reports/ and the embedding
and DVC caches first unless --keep-caches. Prints figures; asserts nothing.

Run from the project root: `.venv/bin/python benchmarks/bench_pipeline.py`
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

BIN = Path(sys.executable).parent


def stages(root: Path, params: dict) -> list[str]:
    spec = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    names = []
    for name, body in spec.items():
        if "foreach" in body:
            names += [f"{name}@{market}" for market in params["markets"]]
        else:
            names.append(name)
    return names


def dvc(*args: str) -> float:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    t0 = time.perf_counter()
    subprocess.run([str(BIN / "dvc"), *args], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep-caches", action="store_true")
    args = ap.parse_args()
    root = Path.cwd()
    params = yaml.safe_load((root / "params.yaml").read_text())
    if not args.keep_caches:
        for path in ("data", "reports", ".cache/embeddings", ".dvc/cache"):
            shutil.rmtree(root / path, ignore_errors=True)
    total = 0.0
    for stage in stages(root, params):
        seconds = dvc("repro", "--force", "--single-item", stage)
        total += seconds
        print(f"{stage:28s} {seconds:7.1f} s", flush=True)
    print(f"{'total':28s} {total:7.1f} s")
    print(f"{'no-op dvc repro':28s} {dvc('repro'):7.1f} s")


if __name__ == "__main__":
    main()
