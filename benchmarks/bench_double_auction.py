"""Speed of the double_auction market with baseline traders (issue 4).

Measures, on a params file's ``markets.double_auction`` block (default: the proposed block in
``lib/marketarena/markets/double_auction/default_params.yaml``):
  - baseline-only games per second: play only (runner + market + traders), and play + writing the
    episode logs (what the simulate stage does);
  - the reference stage (a truthful seat against the pool, on ``execution.workers``);
  - the metrics of the played games;
  - multi-pass TrueSkill (``rating_passes`` passes) on the played games, and the ``trueskill``
    package on pass 0's first ``--sample`` games, extrapolated to all passes (the ratio).
Prints figures; asserts nothing. Run: `.venv/bin/python benchmarks/bench_double_auction.py [--games N]`.
For BAZAAR's scale of rating (about 90,000 games, 200 passes) see benchmarks/bench_trueskill.py.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import yaml

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.runner import run_episode
from marketarena.markets.double_auction import KIND
from marketarena.markets.double_auction.analysis.board import rating_env
from marketarena.pipeline import Paths, run_metrics, run_reference
from marketarena.ratings import multipass, pass_orders, player_games, rate_sequential
from marketarena.simulate import build

DEFAULT = (
    Path(__file__).resolve().parents[1]
    / "lib/marketarena/markets/double_auction/default_params.yaml"
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", default=str(DEFAULT), help="yaml holding a double_auction block")
    ap.add_argument("--games", type=int, default=None, help="games to play (default: runs)")
    ap.add_argument("--sample", type=int, default=100, help="games rated by the package")
    args = ap.parse_args()
    data = yaml.safe_load(Path(args.params).read_text())
    block = data.get("markets", data)
    params = parse_params({"markets": {"double_auction": block["double_auction"]}})
    mp = params.markets["double_auction"]
    n = args.games or mp.runs
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(tmp)
        t0 = time.perf_counter()
        run_reference("double_auction", params, paths)
        ref = time.perf_counter() - t0
        play = write = 0.0
        for run in range(n):
            market, agents, table, spec = build("double_auction", params, run)
            t0 = time.perf_counter()
            result = asyncio.run(run_episode(market, agents, spec.seed))
            t1 = time.perf_counter()
            plan = logs.PlannedEpisode(f"ep-{run:04d}", run, 0, "bench")
            logs.write_episode(
                paths.episodes("double_auction"),
                plan,
                {"agents": table, **result.log_tables()},
                {},
                {},
            )
            play += t1 - t0
            write += time.perf_counter() - t1
        t0 = time.perf_counter()
        frames = run_metrics("double_auction", params, paths)
        met = time.perf_counter() - t0
    games = player_games(frames["agents"], KIND.analysis.rank_by, KIND.analysis.seat_score)
    ts = rating_env(mp, params.ratings)  # the board's environment
    t0 = time.perf_counter()
    multipass(games, ts, passes=mp.rating_passes, seed=0)
    mpt = time.perf_counter() - t0
    k = min(args.sample, len(games))
    order = pass_orders(len(games), 1, 0)[0][:k]
    t0 = time.perf_counter()
    rate_sequential(games, ts, order)
    pkg = (time.perf_counter() - t0) / k * len(games) * mp.rating_passes
    print(f"traders in the pool            {len(mp.roster)}")
    print(
        f"reference ({mp.reference.games_per_distribution} games x {len(mp.distributions)} distributions, "
        f"{params.execution.resolve()} workers) {ref:7.2f} s"
    )
    print(f"play {n} games (baselines)     {play:7.2f} s  ({n / play:.1f} games/s)")
    print(
        f"play + write logs              {play + write:7.2f} s  ({n / (play + write):.1f} games/s)"
    )
    print(f"metrics of {n} games           {met:7.2f} s")
    print(f"multipass TrueSkill, {mp.rating_passes} passes  {mpt:7.2f} s")
    print(
        f"trueskill package, same work   {pkg:7.1f} s (extrapolated from {k} games): "
        f"{pkg / mpt:.0f}x slower"
    )


if __name__ == "__main__":
    main()
