"""The stopping rule judged by its error on BAZAAR's published games (issue 47).

BAZAAR (seed 002) logged 1,954 double-auction games with 26 LLMs among its 29 baselines, 145 to
414 games per LLM. The board of all of them (multipass TrueSkill on the seed's scale, each game
ranked by the seats' logged CSα: ``bazaar.bazaar_board``) is the field. For each LLM and each of
``--draws`` random orders of its games, the benchmark looks at it every ``--batch`` games
(``stopping.look``: its games so far rated against the field's ratings held fixed, μ with a
bootstrap interval, rank among the other 54 players) and records, at each look, its rank and rank
interval. From those looks it reports:

- for the stopping rule (``markets.<instance>.stop``) at each ``rank_width`` (stop once
  ``rank_hi - rank_lo`` is at most it, after ``min_games``, else at all the LLM's games): how
  often the stopped rank lies within one of the rank on all its games (the same look on every
  game), and the games it took (mean, and as a share of the LLM's games);
- for fixed numbers of games (every LLM playing n of its games, or all it has when fewer): how
  often the rank lies within one of the full-data rank, and the smallest n that reaches 95%.

Targets (issue 47): the rule within one of the full-data rank in at least 95% of draws, with on
average at most half the games that the smallest fixed n reaching 95% needs.

The logs are not part of this project (they carry no licence). Get them with
    git clone --depth 1 https://github.com/lechmazur/bazaar /tmp/bazaar
and run
    .venv/bin/python benchmarks/bench_stopping.py --logs /tmp/bazaar/logs [--draws 20]
(or set BAZAAR_LOGS). ``--cache seats.parquet`` keeps the seats read from the logs (a minute).
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
import numpy as np
import pandas as pd

from marketarena.ratings import BAZAAR_SCALE, TrueSkillParams, player_games, prepare_games
from marketarena.stopping import look, settled


def seats(logs: str, cache: str | None) -> pd.DataFrame:
    """One row per logged seat: episode_id, agent_id, name, kind, csa."""
    if cache and Path(cache).is_file():
        return pd.read_parquet(cache)
    from marketarena.markets.double_auction import bazaar

    rows = [(g.game_id, s, g.name(s), "llm" if g.is_llm[s] else "baseline",
             g.final.seat_csa_map.get(s)) for g in bazaar.read_games(logs) for s in g.seats]
    frame = pd.DataFrame(rows, columns=["episode_id", "agent_id", "name", "kind", "csa"])
    if cache:
        frame.to_parquet(cache)
    return frame


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logs", default=os.environ.get("BAZAAR_LOGS"),
                    help="BAZAAR's logs/ folder (default: $BAZAAR_LOGS)")
    ap.add_argument("--cache", help="a Parquet file keeping the seats read from the logs")
    ap.add_argument("--draws", type=int, default=20, help="random orders of each LLM's games")
    ap.add_argument("--batch", type=int, default=10, help="games between two looks")
    ap.add_argument("--boot", type=int, default=100, help="bootstrap resamples a look")
    ap.add_argument("--passes", type=int, default=10, help="shuffled passes of a look's μ")
    ap.add_argument("--min-games", type=int, default=30, help="no stop before this many games")
    ap.add_argument("--widths", type=int, nargs="*", default=[1, 2, 3, 4],
                    help="rank widths of the rule to report")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="games by LLM for every width")
    ap.add_argument("--cap-aware", action="store_true", help="the look knows the cap (the LLM's "
                    "games): its interval shrinks by sqrt(1 - n / cap), as simulate's does")
    args = ap.parse_args()
    if not (args.cache and Path(args.cache).is_file()) and not (args.logs and Path(args.logs).is_dir()):
        sys.exit("BAZAAR's game logs are needed and not part of this project (no licence). Get "
                 "them:\n    git clone --depth 1 https://github.com/lechmazur/bazaar /tmp/bazaar\n"
                 "then pass --logs /tmp/bazaar/logs (or set BAZAAR_LOGS).")
    from marketarena.markets.double_auction.bazaar import bazaar_board

    t0 = time.perf_counter()
    agents = seats(args.logs, args.cache)
    agents = agents[agents.groupby("episode_id")["csa"].transform(lambda c: c.notna().all())]
    board = bazaar_board(agents)
    field = {r.name: (r.mu, r.sigma) for r in board.itertuples()}
    ts = TrueSkillParams(**BAZAAR_SCALE, tau=0.001)
    games = dict(zip(sorted(agents["episode_id"].unique()), player_games(agents, "csa")))
    llms = sorted(agents.loc[agents["kind"] == "llm", "name"].unique())
    print(f"{len(games):,} games, {agents['name'].nunique()} players ({len(llms)} LLMs); board "
          f"in {time.perf_counter() - t0:.0f} s", flush=True)
    rng = np.random.default_rng(args.seed)
    rows = []  # one per (LLM, draw, look)
    for llm in llms:
        mine = prepare_games([g for g in games.values() if llm in g])
        full = look(mine, llm, field, ts, boot=0, passes=args.passes, seed=args.seed)
        for d in range(args.draws):
            order = rng.permutation(mine.n_games)
            looks = list(range(args.batch, mine.n_games, args.batch)) + [mine.n_games]
            for n in looks:
                at = look(mine, llm, field, ts, boot=args.boot, passes=args.passes,
                          seed=args.seed + d, use=order[:n],
                          cap=mine.n_games if args.cap_aware else None)
                rows.append((llm, d, n, mine.n_games, full.rank, at.rank, at.rank_lo,
                             at.rank_hi))
        last = [r for r in rows if r[0] == llm]
        print(f"  {llm:30s} {mine.n_games:4d} games, rank {full.rank:2d} on all of them (board "
              f"{int(board.loc[board['name'] == llm, 'rank'].iloc[0]):2d}); {len(last):,} looks, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    looks = pd.DataFrame(rows, columns=["llm", "draw", "n", "games", "full_rank", "rank",
                                        "rank_lo", "rank_hi"])
    looks["within_one"] = (looks["rank"] - looks["full_rank"]).abs() <= 1
    report(looks, args)


def report(looks: pd.DataFrame, args) -> None:
    draws = looks.groupby(["llm", "draw"], sort=False)
    n_draws = draws.ngroups
    # fixed numbers of games: each LLM at min(n, its games)
    grid = list(range(args.batch, int(looks["games"].max()) + args.batch, args.batch))
    fixed = []
    for n in grid:
        at = looks[(looks["n"] == np.minimum(n, looks["games"]))]
        fixed.append((n, at["within_one"].mean(), np.minimum(n, at["games"]).mean()))
    n95 = next((n for n, share, _ in fixed if share >= 0.95), None)
    print(f"\nfixed numbers of games ({n_draws} draws: {looks['llm'].nunique()} LLMs x "
          f"{args.draws}): share of draws within one rank of the full-data rank")
    for n, share, mean in fixed:
        if n % 50 == 0 or n == n95:
            print(f"  n {n:4d} (mean games played {mean:6.1f}): {share:6.1%}")
    print(f"  smallest fixed n reaching 95%: {n95}")
    print(f"\nstopping rule (batch {args.batch}, min_games {args.min_games}, boot {args.boot}, "
          f"{'cap-aware' if args.cap_aware else 'not cap-aware'}):")
    for width in args.widths:
        stops = []
        for (llm, d), g in draws:
            stop = next((r for r in g.itertuples() if r.n >= args.min_games
                         and r.rank_hi - r.rank_lo <= width), g.iloc[-1])
            stops.append((stop.within_one, stop.n, stop.n / stop.games))
        per_llm = pd.DataFrame([(llm, *st) for (llm, _), st in zip(draws.groups, stops)],
                               columns=["llm", "ok", "n", "share"]).groupby("llm")["n"].mean()
        stops = np.array(stops, dtype=float)
        verdict = ""
        if n95:
            verdict = (f"; mean games / n95 = {stops[:, 1].mean() / n95:.2f} "
                       f"(target <= 0.50)")
        print(f"  rank_width {width}: within one in {stops[:, 0].mean():6.1%} of draws (target "
              f">= 95%), games mean {stops[:, 1].mean():6.1f} ({stops[:, 2].mean():.0%} of an "
              f"LLM's games){verdict}")
        if width == args.widths[0] or args.verbose:
            print("    mean games by LLM: " + ", ".join(f"{k} {v:.0f}" for k, v in per_llm.items()))


if __name__ == "__main__":
    main()
