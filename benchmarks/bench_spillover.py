"""The spillover study, measured: ``crash_spillover`` of the repository's ``params.yaml`` (issue 55;
``docs/eas.md`` quotes the table).

Plays the instance (``--scale paper``: 40 episodes, 8 seeds per cell; ``quick``: 20) and prints,
per cell (no stabilizer, then each stabilizer), the competitors' survival (share of days in the
market) and bankruptcy rate, means over the cell's seeds; then, because the design is paired
(replicate k of every cell has the same seed: the same consumers, and the same number of firms),
each stabilizer's paired difference from the no-stabilizer cell over the replicates, with a 95%
percentile bootstrap interval over replicates, and how many replicates it is above, equal or below.

    .venv/bin/python benchmarks/bench_spillover.py [--scale paper] [--root <folder to keep>]

About 20 s of simulation on one core at ``paper`` (``execution.workers: 1``).
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from marketarena.config import parse_params
from marketarena.pipeline import Paths, run_metrics, run_simulate

REPO = Path(__file__).resolve().parents[1]
INSTANCE = "crash_spillover"
COLUMNS = ["competitor_survival", "competitor_bankruptcy_rate"]


def play(root: Path, scale: str) -> None:
    data = yaml.safe_load((REPO / "params.yaml").read_text())
    data["markets"] = {INSTANCE: copy.deepcopy(data["markets"][INSTANCE])}
    data["scale"] = scale
    data["execution"] = {"workers": 1}
    params = parse_params(data)
    paths = Paths(root)
    t0 = time.perf_counter()
    run_simulate(INSTANCE, params, paths, progress=False)
    run_metrics(INSTANCE, params, paths)
    print(f"{INSTANCE} ({scale}): {time.perf_counter() - t0:.0f} s")


def paired_ci(diff: np.ndarray, n_boot: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean of ``diff`` (resampling replicates)."""
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, (n_boot, diff.size))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def report(root: Path) -> None:
    pd.set_option("display.width", 160)
    market = pd.read_parquet(root / "data" / "metrics" / INSTANCE / "market.parquet")
    market = market.assign(
        stabilizer=market["stabilizer"].replace("", "none"),
        replicate=market["episode_id"].str[3:].astype(int) // market["stabilizer"].nunique(),
    )
    order = list(dict.fromkeys(["none", *market["stabilizer"]]))
    print("\nper cell, means over seeds (firms per episode in brackets):")
    cells = market.groupby("stabilizer")[[*COLUMNS, "firms"]].mean().reindex(order)
    print(cells.round(3).to_string())
    base = market[market["stabilizer"] == "none"].set_index("replicate")
    print("\npaired difference from no stabilizer, over replicates [95% bootstrap]:")
    for name in order[1:]:
        cell = market[market["stabilizer"] == name].set_index("replicate")
        for col in COLUMNS:
            diff = (cell[col] - base[col]).dropna().to_numpy()
            lo, hi = paired_ci(diff)
            print(
                f"  {name:>16} {col:>27}: {diff.mean():+.3f} [{lo:+.3f}, {hi:+.3f}]; "
                f"above / equal / below in {(diff > 1e-12).sum()} / "
                f"{(np.abs(diff) <= 1e-12).sum()} / {(diff < -1e-12).sum()} of {diff.size}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("quick", "paper"), default="paper")
    parser.add_argument("--root", type=Path, default=None, help="folder to run in and keep")
    parser.add_argument("--report-only", action="store_true", help="print from an earlier --root")
    args = parser.parse_args()
    if args.root is None:
        with tempfile.TemporaryDirectory() as tmp:
            play(Path(tmp), args.scale)
            report(Path(tmp))
        return
    args.root.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        play(args.root, args.scale)
    report(args.root)


if __name__ == "__main__":
    main()
