"""Speed of the lemon market with scripted agents (issue 11).

Prints steps per second of one 50-step episode (12 sellers with K = 9 Sybil identities, 12 buyers:
three decision points a step) and the wall time of the default sweep
(markets/lemon/default_params.yaml: 32 episodes), reference + simulate + metrics.

    .venv/bin/python benchmarks/bench_lemon.py
"""

from __future__ import annotations

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
    text = resources.files("marketarena.markets.lemon").joinpath("default_params.yaml").read_text()
    return yaml.safe_load(text)


def main() -> None:
    block = default_block()
    block["lemon"].update(sybil=[9], buyer_groups=[["naive"]], runs=1)
    params = parse_params({"markets": block})
    best = float("inf")
    for _ in range(3):
        market, agents, table, spec = build("lemon", params, 0)
        t0 = time.perf_counter()
        play_episode(market, agents, spec.seed)
        best = min(best, time.perf_counter() - t0)
    steps = params.markets["lemon"].steps
    print(f"one episode (K = 9, naive buyers): {steps} steps in {best * 1000:.0f} ms = "
          f"{steps / best:,.0f} steps/s")
    params = parse_params({"markets": default_block()})
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths(Path(tmp))
        t0 = time.perf_counter()
        run_reference("lemon", params, paths)
        t1 = time.perf_counter()
        summary = run_simulate("lemon", params, paths, progress=False)
        t2 = time.perf_counter()
        run_metrics("lemon", params, paths)
        t3 = time.perf_counter()
    print(f"default sweep: reference {t1 - t0:.1f} s, {summary['played']} episodes simulate "
          f"{t2 - t1:.1f} s, metrics {t3 - t2:.1f} s")


if __name__ == "__main__":
    main()
