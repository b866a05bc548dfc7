"""Speed of the crash market with scripted firms (issue 10).

Prints days per second of one 365-day, 5-firm, 50-consumer episode (the default roster's all-
competitor cell and its all-stabilizer cell), the split of a day between the runner (answers,
validation, logs) and the market (sales, vectorised over consumers), and the wall time of the
default sweep (markets/crash/default_params.yaml: 18 episodes), simulate + metrics.

    .venv/bin/python benchmarks/bench_crash.py
"""

from __future__ import annotations

import cProfile
import pstats
import tempfile
import time
from importlib import resources
from pathlib import Path

import yaml

from marketarena.config import parse_params
from marketarena.core.runner import play_episode
from marketarena.pipeline import Paths, run_metrics, run_reference, run_simulate
from marketarena.simulate import build


def default_block() -> dict:
    text = resources.files("marketarena.markets.crash").joinpath("default_params.yaml").read_text()
    return yaml.safe_load(text)


def one_episode(stabilizing: int, repeat: int = 3) -> tuple[float, int]:
    block = default_block()
    block["crash"].update(discovery_limits=[3], stabilizing=[stabilizing], runs=1)
    params = parse_params({"markets": block})
    best, days = float("inf"), 0
    for _ in range(repeat):
        market, agents, table, spec = build("crash", params, 0)
        t0 = time.perf_counter()
        result = play_episode(market, agents, spec.seed)
        best = min(best, time.perf_counter() - t0)
        days = int(result.tables["days"]["step"].max()) + 1
    return best, days


def main() -> None:
    for stab in (0, 4):
        secs, days = one_episode(stab)
        print(f"one episode, {stab} stabilizing: {days} days in {secs * 1000:.0f} ms "
              f"= {days / secs:,.0f} days/s ({secs / days * 1000:.2f} ms per day)")
    block = default_block()
    block["crash"].update(discovery_limits=[3], stabilizing=[4], runs=1)
    params = parse_params({"markets": block})
    market, agents, table, spec = build("crash", params, 0)
    prof = cProfile.Profile()
    prof.enable()
    play_episode(market, agents, spec.seed)
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt
    market_s = sum(v[3] for k, v in stats.stats.items() if "markets/crash/market.py" in k[0] and k[2] == "step")
    print(f"profile of one episode: {total:.2f} s under the profiler, market.step {market_s / total:.0%}")

    params = parse_params({"markets": default_block()})
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(Path(tmp))
        t0 = time.perf_counter()
        run_reference("crash", params, paths)
        summary = run_simulate("crash", params, paths, progress=False)
        t1 = time.perf_counter()
        run_metrics("crash", params, paths)
        t2 = time.perf_counter()
    print(f"default sweep: {summary['played']} episodes of {params.markets['crash'].days} days: "
          f"simulate {t1 - t0:.1f} s, metrics {t2 - t1:.1f} s")


if __name__ == "__main__":
    main()
