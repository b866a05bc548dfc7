"""Speed of the english_auction market with scripted bidders (issue 12).

Prints auctions per second of one auction of the seed's standard competition (10 items, budget
10,000, random order, the default's two fixed bidders and its first challenger: plan, bids, beliefs
and replans all answered, errors included) with its decision points, and the wall time of the
default sweep (markets/english_auction/default_params.yaml: 6 challengers x 90 auctions = 540),
simulate + metrics.

    .venv/bin/python benchmarks/bench_english_auction.py
"""

from __future__ import annotations

from _common import best_episode, default_block, default_sweep


def main() -> None:
    block = default_block("english_auction")
    block["english_auction"].update(runs=1)
    best, result = best_episode("english_auction", block, repeat=5)
    points = result.decisions[["step", "round", "phase"]].drop_duplicates().shape[0]
    print(
        f"one auction (10 items, 3 scripted bidders): {best * 1000:.0f} ms = {1 / best:,.1f} "
        f"auctions/s ({points} decision points, {len(result.decisions)} answers)"
    )
    s = default_sweep("english_auction")
    print(
        f"default sweep: {s['episodes']} auctions simulate {s['simulate']:.1f} s, "
        f"metrics {s['metrics']:.1f} s"
    )


if __name__ == "__main__":
    main()
