"""Speed of marketarena.ratings.multipass against the trueskill package doing the same work.

Generates ``--games`` eight-seat free-for-alls among ``--players`` players (default 90,000 among
30, the size of the BAZAAR tournament), scored like CSα (skill + noise, clipped to [-5, 5], so a
few games have ties at the clip), then

- times ``multipass`` at ``--passes`` passes (default 200): passes x games game updates;
- times the package (``rate_sequential``) on the first ``--sample`` games of pass 0's order and
  extrapolates its time to passes x games updates; the same sample rated by the fast
  implementation gives the largest |difference| from the package;
- prints the ratio.

Usage::

    PYTHONPATH=lib python benchmarks/bench_trueskill.py                # full scale
    PYTHONPATH=lib python benchmarks/bench_trueskill.py --games 9000   # a tenth

Figures only, no asserts.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from marketarena.ratings import multipass, pass_orders, rate_orders, rate_sequential

FULL_GAMES = 90_000


def make_games(n_games: int, n_players: int, seats: int, seed: int) -> list[dict[str, float]]:
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 2.0, n_players)
    games = []
    for _ in range(n_games):
        who = rng.choice(n_players, seats, replace=False)
        scores = np.clip(skill[who] + rng.normal(0.0, 2.0, seats), -5.0, 5.0)
        games.append({f"agent{i:02d}": float(s) for i, s in zip(who, scores)})
    return games


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=FULL_GAMES)
    ap.add_argument("--players", type=int, default=30)
    ap.add_argument("--seats", type=int, default=8)
    ap.add_argument("--passes", type=int, default=200)
    ap.add_argument("--sample", type=int, default=300, help="games rated by the package")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    games = make_games(args.games, args.players, args.seats, args.seed)
    tied = sum(len(set(g.values())) < len(g) for g in games) / len(games)
    updates = args.games * args.passes
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(f"{args.games} games x {args.seats} seats, {args.players} players, "
          f"{tied:.1%} of games with a tie; {args.passes} passes = {updates:,} game updates")

    # the package on a sample, and the fast implementation on the same sample
    sample = pass_orders(args.games, 1, args.seed)[:, : min(args.sample, args.games)]
    rate_orders(games, sample[:, :5])  # warm-up (imports, kernels)
    t0 = time.perf_counter()
    ref = rate_sequential(games, order=sample[0])
    t_pkg = (time.perf_counter() - t0) / sample.shape[1]
    players, mu, sigma = rate_orders(games, sample)
    dev = max(max(abs(mu[0, j] - ref[p][0]), abs(sigma[0, j] - ref[p][1]))
              for j, p in enumerate(players) if p in ref)
    print(f"package: {t_pkg * 1e3:.2f} ms per game ({sample.shape[1]} games); "
          f"fast vs package on them: max |diff| = {dev:.1e}")

    t0 = time.perf_counter()
    frame = multipass(games, passes=args.passes, seed=args.seed)
    t_fast = time.perf_counter() - t0
    pkg_total = t_pkg * updates
    print(f"multipass: {t_fast:.1f} s = {t_fast / args.games * 1e3:.2f} ms per step of "
          f"{args.passes} lanes = {t_fast / updates * 1e6:.1f} us per game update")
    print(f"package, extrapolated: {pkg_total:,.0f} s = {pkg_total / 3600:.1f} h")
    print(f"ratio: {pkg_total / t_fast:.0f}x")
    if args.games != FULL_GAMES:
        scale = FULL_GAMES / args.games
        print(f"projected to {FULL_GAMES:,} games: multipass ~{t_fast * scale / 60:.1f} min, "
              f"package ~{pkg_total * scale / 3600:.1f} h")
    print(frame.head(5).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
