"""The stopping rule judged by its error on BAZAAR's published games (issue 47).

BAZAAR (seed 002) logged 1,954 double-auction games with 26 LLMs among its 29 baselines, 145 to
414 games per LLM. The board of all of them (multipass TrueSkill on the seed's scale, each game
ranked by the seats' logged CSα, as an imported instance's board rates them) is the field. For each LLM and each of
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

Is the look the bottleneck? Beside TrueSkill's rank at each look, the benchmark places the LLM
with a second estimator (:func:`thurstone_mu`): its maximum-likelihood skill against the field
held fixed, from the pairwise outcomes of its games (TrueSkill's model of performance, no order
effects), and reports the fixed numbers of games for both.

Two yardsticks no rule can beat by much, from the same looks, say what the data allow:

- *hindsight per LLM*: each LLM plays the smallest n at which it is within one in 95% of its
  draws (a fixed schedule per LLM, chosen knowing the answer);
- *settled in hindsight*: each draw stops at the first look after which every later look of that
  draw is within one (it knows the draw's future). A causal rule that stops earlier is right
  only by luck.

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

import numpy as np
import pandas as pd

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena.ratings import (
    BAZAAR_SCALE,
    TrueSkillParams,
    multipass,
    player_games,
    prepare_games,
)
from marketarena.simulate.stopping import look, rank_of


def seats(logs: str, cache: str | None) -> pd.DataFrame:
    """One row per logged seat: episode_id, agent_id, name, kind, csa."""
    if cache and Path(cache).is_file():
        return pd.read_parquet(cache)
    from marketarena.markets.double_auction.sources import reader

    rows = [
        (g.game_id, s, g.name(s), "llm" if g.is_llm[s] else "baseline", g.final.seat_csa_map.get(s))
        for g in reader.read_games(logs)
        for s in g.seats
    ]
    frame = pd.DataFrame(rows, columns=["episode_id", "agent_id", "name", "kind", "csa"])
    if cache:
        frame.to_parquet(cache)
    return frame


def thurstone_pairs(
    games: list[dict[str, float]], player: str, field: dict[str, tuple[float, float]], beta: float
):
    """The player's pairwise outcomes in ``games`` against the field's ratings: per pair the
    game's index, the opponent's μ, the scale sqrt(2 β² + σ²) and the outcome (1 won, 0 lost,
    0.5 tied)."""
    rows = [
        (
            k,
            field[o][0],
            np.sqrt(2 * beta**2 + field[o][1] ** 2),
            1.0 if g[player] > score else 0.0 if g[player] < score else 0.5,
        )
        for k, g in enumerate(games)
        for o, score in g.items()
        if o != player
    ]
    return tuple(np.array(c) for c in zip(*rows))


def thurstone_mu(pairs, weights: np.ndarray, start: float = 5.0) -> np.ndarray:
    """The maximum-likelihood skill of the player for each row of ``weights`` (lanes x games:
    how often each game counts): Newton's method on the sum over pairs of
    y log Φ(z) + (1 - y) log Φ(-z), z = (s - μ_opponent) / scale."""
    from scipy.special import log_ndtr
    from scipy.stats import norm

    game, mu, scale, y = pairs
    w = weights[:, game]
    s = np.full(len(weights), start)
    for _ in range(50):
        z = (s[:, None] - mu) / scale
        pdf = np.log(norm.pdf(z) + 1e-300)
        a, b = np.exp(pdf - log_ndtr(z)), np.exp(pdf - log_ndtr(-z))
        grad = (w * (y * a - (1 - y) * b) / scale).sum(1)
        info = (w * (y * a * (z + a) + (1 - y) * b * (b - z)) / scale**2).sum(1)
        step = np.clip(grad / np.maximum(info, 1e-9), -5, 5)
        s += step
        if np.abs(step).max() < 1e-7:
            break
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--logs",
        default=os.environ.get("BAZAAR_LOGS"),
        help="BAZAAR's logs/ folder (default: $BAZAAR_LOGS)",
    )
    ap.add_argument("--cache", help="a Parquet file keeping the seats read from the logs")
    ap.add_argument("--draws", type=int, default=20, help="random orders of each LLM's games")
    ap.add_argument("--batch", type=int, default=10, help="games between two looks")
    ap.add_argument("--boot", type=int, default=100, help="bootstrap resamples a look")
    ap.add_argument("--passes", type=int, default=10, help="shuffled passes of a look's μ")
    ap.add_argument("--min-games", type=int, default=30, help="no stop before this many games")
    ap.add_argument(
        "--widths",
        type=int,
        nargs="*",
        default=[1, 2, 3, 4],
        help="rank widths of the rule to report",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="games by LLM for every width")
    ap.add_argument(
        "--level", type=float, default=0.95, help="the looks' interval level (StopRule.level)"
    )
    ap.add_argument(
        "--looks",
        help="a Parquet file keeping every look: written after the looks, "
        "and when it exists, read instead of looking again (the report only)",
    )
    args = ap.parse_args()
    if args.looks and Path(args.looks).is_file():
        report(pd.read_parquet(args.looks), args)
        return
    if not (args.cache and Path(args.cache).is_file()) and not (
        args.logs and Path(args.logs).is_dir()
    ):
        sys.exit(
            "BAZAAR's game logs are needed and not part of this project (no licence). Get "
            "them:\n    git clone --depth 1 https://github.com/lechmazur/bazaar /tmp/bazaar\n"
            "then pass --logs /tmp/bazaar/logs (or set BAZAAR_LOGS)."
        )
    t0 = time.perf_counter()
    agents = seats(args.logs, args.cache)
    agents = agents[agents.groupby("episode_id")["csa"].transform(lambda c: c.notna().all())]
    ts = TrueSkillParams(**BAZAAR_SCALE, tau=0.001)
    board = multipass(player_games(agents, "csa"), ts, passes=200, seed=0)
    field = {r.player: (r.mu, r.sigma) for r in board.itertuples()}
    games = dict(zip(sorted(agents["episode_id"].unique()), player_games(agents, "csa")))
    llms = sorted(agents.loc[agents["kind"] == "llm", "name"].unique())
    print(
        f"{len(games):,} games, {agents['name'].nunique()} players ({len(llms)} LLMs); board "
        f"in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    rng = np.random.default_rng(args.seed)
    rows = []  # one per (LLM, draw, look)
    for llm in llms:
        own = [g for g in games.values() if llm in g]
        mine = prepare_games(own)
        full = look(mine, llm, field, ts, boot=0, passes=args.passes, seed=args.seed)
        pairs = thurstone_pairs(own, llm, field, ts.beta)
        others = np.array([m for name, (m, _) in field.items() if name != llm])
        t_full = rank_of(thurstone_mu(pairs, np.ones((1, mine.n_games)))[0], others)
        for d in range(args.draws):
            order = rng.permutation(mine.n_games)
            looks = list(range(args.batch, mine.n_games, args.batch)) + [mine.n_games]
            weights = np.zeros((len(looks), mine.n_games))
            for i, n in enumerate(looks):
                weights[i, order[:n]] = 1
            t_mu = thurstone_mu(pairs, weights)
            for i, n in enumerate(looks):
                at = look(
                    mine,
                    llm,
                    field,
                    ts,
                    boot=args.boot,
                    passes=args.passes,
                    seed=args.seed + d,
                    use=order[:n],
                    level=args.level,
                )
                rows.append(
                    (
                        llm,
                        d,
                        n,
                        mine.n_games,
                        full.rank,
                        at.rank,
                        at.rank_lo,
                        at.rank_hi,
                        t_full,
                        rank_of(t_mu[i], others),
                    )
                )
        last = [r for r in rows if r[0] == llm]
        print(
            f"  {llm:30s} {mine.n_games:4d} games, rank {full.rank:2d} on all of them (board "
            f"{int(board.loc[board['name'] == llm, 'rank'].iloc[0]):2d}); {len(last):,} looks, "
            f"{time.perf_counter() - t0:.0f} s",
            flush=True,
        )
    looks = pd.DataFrame(
        rows,
        columns=[
            "llm",
            "draw",
            "n",
            "games",
            "full_rank",
            "rank",
            "rank_lo",
            "rank_hi",
            "thurstone_full_rank",
            "thurstone_rank",
        ],
    )
    looks["within_one"] = (looks["rank"] - looks["full_rank"]).abs() <= 1
    looks["thurstone_within_one"] = (
        looks["thurstone_rank"] - looks["thurstone_full_rank"]
    ).abs() <= 1
    if args.looks:
        looks.to_parquet(args.looks)
    report(looks, args)


def yardsticks(looks: pd.DataFrame) -> tuple[float, float]:
    """The mean games of the two hindsight yardsticks (module docstring) from the looks (columns
    llm, draw, n, within_one; every draw's last look is at all the LLM's games, within one):
    per LLM the smallest look n within one in at least 95% of its draws; per draw the first
    look after which every look of the draw is within one."""
    hindsight = []
    for _, g in looks.groupby("llm"):
        share = g.groupby("n")["within_one"].mean()
        hindsight.append(int(share.index[share >= 0.95].min()))
    settle = []
    for _, g in looks.groupby(["llm", "draw"]):
        wrong = g.loc[~g["within_one"], "n"]
        settle.append(int(g.loc[g["n"] > (wrong.max() if len(wrong) else 0), "n"].min()))
    return float(np.mean(hindsight)), float(np.mean(settle))


def report(looks: pd.DataFrame, args) -> None:
    draws = looks.groupby(["llm", "draw"], sort=False)
    n_draws = draws.ngroups
    # fixed numbers of games: each LLM at min(n, its games)
    grid = list(range(args.batch, int(looks["games"].max()) + args.batch, args.batch))
    fixed = []
    for n in grid:
        at = looks[(looks["n"] == np.minimum(n, looks["games"]))]
        fixed.append(
            (
                n,
                at["within_one"].mean(),
                np.minimum(n, at["games"]).mean(),
                at["thurstone_within_one"].mean(),
            )
        )
    n95 = next((n for n, share, _, _ in fixed if share >= 0.95), None)
    print(
        f"\nfixed numbers of games ({n_draws} draws: {looks['llm'].nunique()} LLMs x "
        f"{args.draws}): share of draws within one rank of the full-data rank (TrueSkill's "
        f"look; the maximum-likelihood estimate's, each against its own full-data rank)"
    )
    for n, share, mean, t_share in fixed:
        if n % 50 == 0 or n == n95:
            print(f"  n {n:4d} (mean games played {mean:6.1f}): {share:6.1%} ({t_share:6.1%})")
    print(f"  smallest fixed n reaching 95%: {n95}")
    for name, n in zip(
        ("hindsight per LLM (95% of its draws)", "settled in hindsight (each draw)"),
        yardsticks(looks),
    ):
        print(
            f"  yardstick, {name}: games mean {n:6.1f}"
            + (f"; / n95 = {n / n95:.2f}" if n95 else "")
        )
    print(
        f"\nstopping rule (batch {args.batch}, min_games {args.min_games}, boot {args.boot}, "
        f"{args.level:.0%} intervals):"
    )
    for width in args.widths:
        stops = []
        for _key, g in draws:
            stop = next(
                (
                    r
                    for r in g.itertuples()
                    if r.n >= args.min_games and r.rank_hi - r.rank_lo <= width
                ),
                g.iloc[-1],
            )
            stops.append((stop.within_one, stop.n, stop.n / stop.games))
        per_llm = (
            pd.DataFrame(
                [(llm, *st) for (llm, _), st in zip(draws.groups, stops)],
                columns=["llm", "ok", "n", "share"],
            )
            .groupby("llm")["n"]
            .mean()
        )
        stops = np.array(stops, dtype=float)
        verdict = ""
        if n95:
            verdict = f"; mean games / n95 = {stops[:, 1].mean() / n95:.2f} (target <= 0.50)"
        print(
            f"  rank_width {width}: within one in {stops[:, 0].mean():6.1%} of draws (target "
            f">= 95%), games mean {stops[:, 1].mean():6.1f} ({stops[:, 2].mean():.0%} of an "
            f"LLM's games){verdict}"
        )
        if width == args.widths[0] or args.verbose:
            print("    mean games by LLM: " + ", ".join(f"{k} {v:.0f}" for k, v in per_llm.items()))


if __name__ == "__main__":
    main()
