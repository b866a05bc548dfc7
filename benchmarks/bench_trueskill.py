"""Speed of marketarena.ratings.multipass against the trueskill package doing the same work.

Generates ``--games`` eight-seat free-for-alls among ``--players`` players (default 90,000 among
30, the size of the BAZAAR tournament), scored like CSα (skill + noise, clipped to [-5, 5], so a
few games have ties at the clip), then

- times ``multipass`` at ``--passes`` passes (default 200): passes x games game updates;
- times the package (``rate_sequential``) on ``--sample`` games twice, once from the prior (the
  first games of pass 0's order) and once from the ratings the passes end with (steady state),
  and extrapolates the mean to passes x games updates; the first sample, rated by the fast
  implementation too, gives the largest |difference| from the package;
- prints the ratio, for wall-clock and for CPU time (the CPU ratio is the steadier one on a
  shared machine). The compiled kernel runs lanes in parallel threads (``NUMBA_NUM_THREADS``,
  default one per CPU); CPU time counts all of them.

Usage::

    PYTHONPATH=lib python benchmarks/bench_trueskill.py                # full scale
    PYTHONPATH=lib python benchmarks/bench_trueskill.py --games 9000   # a tenth

Figures only, no asserts.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numba
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


def _cpu() -> float:
    """CPU seconds of this process, all threads."""
    t = os.times()
    return t.user + t.system


def timed(fn):
    """((wall s, cpu s), fn())."""
    w, c = time.perf_counter(), _cpu()
    out = fn()
    return (time.perf_counter() - w, _cpu() - c), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=FULL_GAMES)
    ap.add_argument("--players", type=int, default=30)
    ap.add_argument("--seats", type=int, default=8)
    ap.add_argument("--passes", type=int, default=200)
    ap.add_argument("--sample", type=int, default=300, help="games rated by the package")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    threads = numba.get_num_threads()

    games = make_games(args.games, args.players, args.seats, args.seed)
    tied = sum(len(set(g.values())) < len(g) for g in games) / len(games)
    updates = args.games * args.passes
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(
        f"{args.games} games x {args.seats} seats, {args.players} players, "
        f"{tied:.1%} of games with a tie; {args.passes} passes = {updates:,} game updates"
    )

    # the package on a sample of games, from the prior (start of a pass); the fast
    # implementation on the same sample
    sample = pass_orders(args.games, 1, args.seed)[:, : min(args.sample, args.games)]
    rate_orders(games, sample[:, :5])  # warm-up (imports, kernels)
    pkg_start, ref = timed(lambda: rate_sequential(games, order=sample[0]))
    players, mu, sigma = rate_orders(games, sample)
    dev = max(
        max(abs(mu[0, j] - ref[p][0]), abs(sigma[0, j] - ref[p][1]))
        for j, p in enumerate(players)
        if p in ref
    )

    (fast_wall, fast_cpu), frame = timed(
        lambda: multipass(games, passes=args.passes, seed=args.seed)
    )

    # the package again on the same number of games, from the ratings the passes end with (the
    # steady state most of a pass is in)
    end = {row.player: (row.mu, row.sigma) for row in frame.itertuples()}
    later = pass_orders(args.games, 1, args.seed + 1)[0, : sample.shape[1]]
    pkg_later, _ = timed(lambda: rate_sequential(games, order=later, initial=end))
    n = sample.shape[1]
    per_game = [(w / n, c / n) for w, c in (pkg_start, pkg_later)]
    print(
        f"package, ms per game (wall / cpu): from the prior {per_game[0][0] * 1e3:.2f} / "
        f"{per_game[0][1] * 1e3:.2f}, from converged ratings {per_game[1][0] * 1e3:.2f} / "
        f"{per_game[1][1] * 1e3:.2f} ({n} games each)"
    )
    print(f"fast vs package on the first {n} games of pass 0: max |diff| = {dev:.1e}")
    pkg_wall = np.mean([w for w, _ in per_game]) * updates
    pkg_cpu = np.mean([c for _, c in per_game]) * updates
    print(
        f"multipass ({threads} thread{'s' if threads > 1 else ''}): {fast_wall:.1f} s wall, {fast_cpu:.1f} s cpu = "
        f"{fast_wall / args.games * 1e3:.2f} ms per step of {args.passes} lanes = "
        f"{fast_wall / updates * 1e6:.1f} us per game update"
    )
    print(
        f"package for the same {updates:,} updates, extrapolated: {pkg_wall:,.0f} s wall "
        f"({pkg_wall / 3600:.1f} h), {pkg_cpu:,.0f} s cpu"
    )
    print(f"ratio: {pkg_wall / fast_wall:.0f}x wall, {pkg_cpu / fast_cpu:.0f}x cpu")
    if args.games != FULL_GAMES:
        scale = FULL_GAMES / args.games
        print(
            f"projected to {FULL_GAMES:,} games: multipass ~{fast_wall * scale / 60:.1f} min "
            f"wall, package ~{pkg_wall * scale / 3600:.1f} h wall"
        )
    print(frame.head(5).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
