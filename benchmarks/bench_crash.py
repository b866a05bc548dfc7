"""Speed of the crash market with scripted firms (issue 10).

Prints days per second of one 365-day, 5-firm, 50-consumer episode (the default roster's all-
competitor cell and its all-stabilizer cell), the split of a day between the runner (answers,
validation, logs) and the market (sales, vectorised over consumers), and the wall time of the
default sweep (markets/crash/default_params.yaml: 96 episodes), simulate + metrics.

    .venv/bin/python benchmarks/bench_crash.py
"""

from __future__ import annotations

import cProfile
import pstats

from _common import best_episode, default_block, default_sweep

from marketarena.config import parse_params
from marketarena.core.runner import play_episode
from marketarena.simulate import build


def one_block(stabilizing: int) -> dict:
    block = default_block("crash")
    block["crash"].update(discovery_limits=[3], stabilizing=[stabilizing], runs=1)
    return block


def main() -> None:
    for stab in (0, 5):
        secs, result = best_episode("crash", one_block(stab))
        days = int(result.tables["days"]["step"].max()) + 1
        print(
            f"one episode, {stab} stabilizing: {days} days in {secs * 1000:.0f} ms "
            f"= {days / secs:,.0f} days/s ({secs / days * 1000:.2f} ms per day)"
        )
    params = parse_params({"markets": one_block(5)})
    market, agents, table, spec = build("crash", params, 0)
    prof = cProfile.Profile()
    prof.enable()
    play_episode(market, agents, spec.seed)
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt
    market_s = sum(
        v[3] for k, v in stats.stats.items() if "markets/crash/market.py" in k[0] and k[2] == "step"
    )
    print(
        f"profile of one episode: {total:.2f} s under the profiler, market.step {market_s / total:.0%}"
    )

    s = default_sweep("crash")
    print(
        f"default sweep: {s['episodes']} episodes of {s['params'].markets['crash'].days} days: "
        f"simulate {s['reference'] + s['simulate']:.1f} s, metrics {s['metrics']:.1f} s"
    )


if __name__ == "__main__":
    main()
