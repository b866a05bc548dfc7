"""Calibration of double_auction's baseline pool against BAZAAR (seed 002), issues 15 and 22.

Plays the default pool (``markets/double_auction/default_params.yaml``: BAZAAR's 29 baselines) at a
chosen size, rates it as the pipeline does (multi-pass TrueSkill by CSα), and prints Spearman's ρ of
our μ and mean CSα with the seed's, with 95% bootstrap intervals over the matched baselines
(``markets/double_auction/analysis/calibration.py``), Truthful's mean CSα (the seed: -0.036), the
per-baseline table, the behaviour of every baseline against its namesake in BAZAAR's published
games (shade by round bucket, fill; within bounds: every bucket within 2, fill within 0.05), the
efficiency per distribution against BAZAAR's, and the time of every stage. Targets (issue 22):
at least 25 of 29 within bounds, efficiency at least 0.80 everywhere, Spearman of μ at least 0.5
at 1,200 games and 0.6 at 6,000.

Run: `.venv/bin/python benchmarks/bench_da_calibration.py [--games-per-distribution 300]
[--reference-games 2000] [--workers auto]`. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import pandas as pd
from _common import default_block

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena.config import parse_params
from marketarena.markets.double_auction import KIND
from marketarena.markets.double_auction.analysis import calibration as cal
from marketarena.markets.double_auction.analysis.calibration import calibration
from marketarena.pipeline import Paths, run_metrics, run_reference, run_simulate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games-per-distribution", type=int, default=300)
    ap.add_argument("--reference-games", type=int, default=2000, help="per distribution")
    ap.add_argument("--workers", default="auto")
    ap.add_argument("--passes", type=int, default=200)
    args = ap.parse_args()
    block = default_block("double_auction")
    da = block["double_auction"]
    da.pop("games_per_distribution", None)
    da["runs"] = args.games_per_distribution * len(da["distributions"])
    da["reference"]["games_per_distribution"] = args.reference_games
    da["rating_passes"] = args.passes
    workers = args.workers if args.workers == "auto" else int(args.workers)
    params = parse_params({"markets": block, "execution": {"workers": workers}})
    mp = params.markets["double_auction"]
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(tmp)
        for stage, fn in (
            ("reference", lambda: run_reference("double_auction", params, paths)),
            ("simulate", lambda: run_simulate("double_auction", params, paths, progress=False)),
            ("metrics", lambda: run_metrics("double_auction", params, paths)),
        ):
            t0 = time.perf_counter()
            out = fn()
            times[stage] = time.perf_counter() - t0
        agents = out["agents"]
        t0 = time.perf_counter()
        board = KIND.analysis.leaderboard(agents, mp, params.ratings, params.stats)
        times["ratings"] = time.perf_counter() - t0
    summary, side = calibration(board)
    behaviour = cal.behaviour(out["agents"], out["agent_rounds"])
    eff = cal.efficiency(out["market"])
    pd.set_option("display.width", 200)
    print(
        f"pool games {mp.runs}, reference games {args.reference_games * len(mp.distributions)}, "
        f"workers {params.execution.workers}"
    )
    for stage, t in times.items():
        print(f"  {stage:10s} {t:7.1f} s")
    truthful = board.set_index("name").loc["truthful"]
    print(
        f"Truthful mean CSα {truthful['csa_mean']:+.3f} [{truthful['csa_lo']:+.3f}, "
        f"{truthful['csa_hi']:+.3f}] (seed: -0.036)"
    )
    print(summary.round(3).to_string(index=False))
    print(side.round(3).to_string(index=False))
    cols = [
        "name",
        "seats",
        "max_shade_diff",
        "fq",
        "fq_target",
        "bz_fq",
        "fq_intra",
        "bz_fq_intra",
        "within",
        "within_raw",
    ]
    print(behaviour[cols].round(3).to_string(index=False))
    print(
        f"within bounds: {int(behaviour['within'].sum())} of {len(behaviour)} "
        f"(against BAZAAR's fill unadjusted for the intra-marginal share: "
        f"{int(behaviour['within_raw'].sum())})"
    )
    print(eff.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
