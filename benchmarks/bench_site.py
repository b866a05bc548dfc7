"""The results site (issue 26): how long the `report` stage takes to build reports/site/ for the
run in this folder (target: under 10 s for the default run).

    .venv/bin/python benchmarks/bench_site.py            # after `dvc repro` of the default params
    .venv/bin/python benchmarks/bench_site.py --root <project>

Prints the build in process (best of ``--repeat``, the site rebuilt from scratch each time), the
stage as DVC runs it (``python -m stages.report``: Python and imports included), and the site's
pages, files and size. The outputs it reads must exist (run the pipeline first).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from marketarena.config import load_params
from marketarena.pipeline import Paths, run_report

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(ROOT))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = Path(args.root)
    params = load_params(str(root / "params.yaml"))
    paths = Paths(root)
    if not (paths.reports / "overall").is_dir():
        sys.exit(f"error: {paths.reports} has no pipeline outputs; run `dvc repro` first")
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        written = run_report(params, paths)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "stages.report",
            "--root",
            str(root),
            "--params",
            str(root / "params.yaml"),
        ],
        cwd=ROOT,
        check=True,
    )
    stage = time.perf_counter() - t0
    site = paths.reports / "site"
    size = sum(p.stat().st_size for p in written)
    episodes = sum(1 for _ in paths.data.glob("episodes/*/*/meta.json"))
    print(f"{len(params.markets)} instances, {episodes:,} episode folders and shards")
    print(
        f"build in process   best {min(times):6.2f} s  (of {args.repeat}: "
        + ", ".join(f"{t:.2f}" for t in times)
        + ")"
    )
    print(f"stage command      {stage:6.2f} s  (python -m stages.report)")
    print(
        f"site: {len(list(site.glob('*.html')))} pages, {len(written)} files, {size / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    main()
