"""BAZAAR's scale end to end on this machine (issue 13): simulate + metrics + ratings of a
double_auction tournament of ``--games`` baseline games (default 90,000, BAZAAR's size), through
the pipeline's own stage functions, into a temporary folder.

    .venv/bin/python benchmarks/bench_da_scale.py                 # 90,000 games, 200 passes
    .venv/bin/python benchmarks/bench_da_scale.py --games 6000    # a quicker look
    PYTHONPATH=<older checkout>/lib .venv/bin/python benchmarks/bench_da_scale.py --games 6000 --folders

Prints the wall time of each stage, games/s overall and per core, and the files the logs take.
The params are the proposed block (``markets/double_auction/default_params.yaml``: BAZAAR's 29
baselines, shards of 600 games) with ``games_per_distribution`` = games / 4, ``rating_passes``
(default 200) and the bootstrap of the board (``--boot`` resamples x ``--boot-passes`` passes;
default 20 x 5, see the README) set from the command line; the CSα reference is computed first
and timed apart (``--reference`` games per distribution, default the block's 2,000).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import yaml

from marketarena.config import parse_params
from marketarena.pipeline import Paths, run_metrics, run_ratings, run_reference, run_simulate

DEFAULT = (
    Path(__file__).resolve().parents[1]
    / "lib/marketarena/markets/double_auction/default_params.yaml"
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=90_000)
    ap.add_argument("--passes", type=int, default=200, help="rating_passes")
    ap.add_argument("--boot", type=int, default=20, help="rating_boot (0: no intervals)")
    ap.add_argument("--boot-passes", type=int, default=5, help="rating_boot_passes")
    ap.add_argument("--reference", type=int, default=None, help="reference games per distribution")
    ap.add_argument("--workers", default="auto")
    ap.add_argument(
        "--folders",
        action="store_true",
        help="a folder per game instead of shards (the layout before shards)",
    )
    ap.add_argument(
        "--keep", default=None, help="folder to keep the run in (default: a temporary one)"
    )
    args = ap.parse_args()
    block = yaml.safe_load(DEFAULT.read_text())["double_auction"]
    block["games_per_distribution"] = max(1, args.games // len(block["distributions"]))
    block.update(
        rating_passes=args.passes, rating_boot=args.boot, rating_boot_passes=args.boot_passes
    )
    if args.folders:
        block["shard_episodes"] = None
    if args.reference:
        block["reference"]["games_per_distribution"] = args.reference
    workers = args.workers if args.workers == "auto" else int(args.workers)
    params = parse_params({"markets": {"double_auction": block}, "execution": {"workers": workers}})
    mp = params.markets["double_auction"]
    cores = params.execution.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(args.keep or tmp)
        t0 = time.perf_counter()
        run_reference("double_auction", params, paths)
        reference = time.perf_counter() - t0
        times = {}
        for stage, run in (
            ("simulate", lambda: run_simulate("double_auction", params, paths, progress=False)),
            ("metrics", lambda: run_metrics("double_auction", params, paths)),
            ("ratings", lambda: run_ratings("double_auction", params, paths)),
        ):
            t0 = time.perf_counter()
            run()
            times[stage] = time.perf_counter() - t0
        root = paths.episodes("double_auction")
        n_files = sum(len(files) for _, _, files in os.walk(root))
        size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    total = sum(times.values())
    print(
        f"games {mp.runs:,} ({len(mp.roster)} baselines, shards of {mp.shard_episodes}), "
        f"{cores} worker(s) on {os.cpu_count()} cores"
    )
    print(
        f"reference ({mp.reference.games_per_distribution:,} x {len(mp.distributions)} games)  "
        f"{reference:8.1f} s"
    )
    for stage, t in times.items():
        extra = (
            f"  ({mp.runs / t:,.0f} games/s, {mp.runs / t / cores:,.0f} per core)"
            if stage == "simulate"
            else ""
        )
        print(f"{stage:9s} {t:8.1f} s{extra}")
    print(
        f"simulate + metrics + ratings {total:8.1f} s = {total / 60:.1f} min "
        f"({mp.runs / total:,.0f} games/s end to end)"
    )
    print(
        f"ratings: {mp.rating_passes} passes + {mp.rating_boot} x {mp.rating_boot_passes} "
        f"bootstrap passes; logs: {n_files:,} files, {size / 1e6:,.0f} MB"
    )


if __name__ == "__main__":
    main()
