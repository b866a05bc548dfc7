"""Speed of the cournot and bertrand simulations with scripted firms (issue 5).

For each market, on the proposed default block (``markets/<name>/default_params.yaml``, or a params
file with ``--params``): the reference computation, then every planned episode played in memory
(reference loaded once), reported as rounds per second (one round = one decision point of all
firms) per lineup and overall, plus the metrics stage (bootstrap tests included for cournot).
Prints figures; asserts nothing. Run: `.venv/bin/python benchmarks/bench_cournot_bertrand.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

import yaml

from marketarena.config import load_params, parse_params
from marketarena.core.runner import run_episode
from marketarena.pipeline import Paths, run_metrics, run_reference
from marketarena.simulate import build, load_inputs, simulate

ROOT = Path(__file__).resolve().parents[1]


def params_for(market: str, path: str | None, preset: str | None):
    if path:
        return load_params(path)
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets" / market / "default_params.yaml").read_text()
    )
    if preset:
        block[market]["preset"] = preset
    return parse_params({"markets": block, "execution": {"workers": 1}})  # comparable to before


def bench(market: str, params, profile: bool) -> None:
    mp = params.markets[market]
    label = f"{market}" + (f" ({mp.preset})" if hasattr(mp, "preset") else "")
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(tmp)
        t0 = time.perf_counter()
        run_reference(market, params, paths)
        t_ref = time.perf_counter() - t0
        _, resources = load_inputs(market, params, paths.data)
        prof = cProfile.Profile() if profile else None
        total_rounds, total_time, per_lineup = 0, 0.0, []
        for run in range(mp.runs):
            market_obj, agents, table, spec = build(market, params, run, resources=resources)
            t0 = time.perf_counter()
            if prof:
                prof.enable()
            asyncio.run(run_episode(market_obj, agents, spec.seed))
            if prof:
                prof.disable()
            dt = time.perf_counter() - t0
            total_rounds += mp.rounds
            total_time += dt
            per_lineup.append((" vs ".join(table["name"]), mp.rounds / dt))
        t0 = time.perf_counter()
        simulate(market, params, paths.data, paths.episodes(market), progress=False)
        t_sim = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_metrics(market, params, paths)
        t_metrics = time.perf_counter() - t0
    print(
        f"\n== {label}: {mp.runs} episodes x {mp.rounds} rounds, {mp.seats if hasattr(mp, 'seats') else len(mp.costs)} firms"
    )
    print(f"reference stage          {t_ref:8.3f} s")
    print(
        f"episodes in memory       {total_time:8.3f} s   {total_rounds / total_time:8.1f} rounds/s overall"
    )
    for name, rate in per_lineup:
        print(f"   {name:<28s} {rate:8.1f} rounds/s")
    print(f"simulate stage (+ logs)  {t_sim:8.3f} s")
    print(f"metrics stage            {t_metrics:8.3f} s")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(15)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--params", default=None, help="params file (default: the proposed default blocks)"
    )
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    bench("cournot", params_for("cournot", args.params, None), args.profile)
    bench("bertrand", params_for("bertrand", args.params, None), args.profile)
    if not args.params:
        bench("bertrand", params_for("bertrand", None, "startup"), args.profile)


if __name__ == "__main__":
    main()
