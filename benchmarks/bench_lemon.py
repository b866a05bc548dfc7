"""Speed of the lemon market with scripted agents (issue 11).

Prints steps per second of one 50-step episode (12 sellers with K = 9 Sybil identities, 12 buyers:
three decision points a step) and the wall time of the default sweep
(markets/lemon/default_params.yaml: 64 episodes), reference + simulate + metrics.

    .venv/bin/python benchmarks/bench_lemon.py
"""

from __future__ import annotations

from _common import best_episode, default_block, default_sweep


def main() -> None:
    block = default_block("lemon")
    block["lemon"].update(sybil=[9], buyer_groups=[["naive"]], runs=1)
    best, _ = best_episode("lemon", block)
    steps = block["lemon"].get("steps", 50)
    print(
        f"one episode (K = 9, naive buyers): {steps} steps in {best * 1000:.0f} ms = "
        f"{steps / best:,.0f} steps/s"
    )
    s = default_sweep("lemon")
    print(
        f"default sweep: reference {s['reference']:.1f} s, {s['episodes']} episodes simulate "
        f"{s['simulate']:.1f} s, metrics {s['metrics']:.1f} s"
    )


if __name__ == "__main__":
    main()
