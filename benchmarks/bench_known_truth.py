"""The boards' 95% intervals and the stopping rule judged against a known truth (issue 56).

What: fields whose true skills are known, games played from TrueSkill's own generative model
(``marketarena.known_truth``: each seat's performance ~ N(true μ, β²), β the board's, seats ranked
by performance, no ties), rated as double_auction's board rates them (multipass μ,
``ratings.bootstrap_intervals``; its environment: ``ratings.BAZAAR_SCALE`` with τ =
``rating_tau``, and its default passes and resamples, read from ``DoubleAuctionParams``).

Fields:

- A, "BAZAAR density": the compositions of BAZAAR's 1,954 published games (who sits in which
  game) with each player's μ on the imported board as its true skill;
- B, sparser: the same players in a seeded quarter of those games;
- or ``--synthetic N``: N players, skills evenly spread over [2, 8], ``--games`` free-for-alls of
  ``--seats`` (no logs needed).

For ``--reps`` replications per field it reports, per interval method (``known_truth``: the
board's, its μ interval's rank against the others' point μ, ``ratings.rank_intervals``; the
boards' before, the percentiles of each resample's ranks; a zero-width point; a parametric
bootstrap), the coverage of the true rank by the 95% rank interval, its mean width
(rank_hi - rank_lo), the coverage of the centred true μ by the centred μ interval, the slope of
fitted on true μ, and the rank coverage of players with few / many games (at most / above the
field's median).

The stopping rule (``simulate/stopping.py``): a new player with a known skill (top, middle and
bottom of field A: midpoints between the true skills at the 90%, 50%, 10% quantiles) joins one
simulated field A, whose board (``stopping.field_ratings``, as ``simulate`` rates the field) is
held fixed. Its games (``--cap``, each a random composition of field A with one seat taken by
it) come in batches of ``--batch``; after each, ``stopping.look`` (the default ``StopRule``:
boot 100, passes 10) and ``stopping.settled`` (``rank_width`` 1, ``min_games`` 30) decide, as
``stopping.Batches`` does, cap-aware (its interval shrunk by sqrt(1 - n / cap), as ``simulate``
passes the cap). Recorded at the stop: does the rank interval cover the true rank (its rank
among the field's true skills), width, games. The same draws looked at once after a fixed n
(``look`` without a cap) give the fixed schedules; the report pairs the rule with the smallest
fixed n whose mean width is at most the rule's and whose coverage is at least the rule's. The
rule without the cap correction is reported too.

Run (the logs are not part of the project, no licence; import them once, about 2 minutes):

    PYTHONPATH=lib .venv/bin/python -m marketarena.cli import-bazaar /tmp/bazaar/logs --out /tmp/truth-bz
    PYTHONPATH=lib .venv/bin/python benchmarks/bench_known_truth.py --bazaar /tmp/truth-bz

(``git clone --depth 1 https://github.com/lechmazur/bazaar /tmp/bazaar`` for the logs), or
``benchmarks/bench_known_truth.py --synthetic 20`` without them. The defaults (``--reps 4
--draws 4``) keep a run within about 10 minutes on 2 shared cores: a replication of field A is
some 1,400 lanes of 1,954 games (the board's 200 passes and 100 x 10 resamples, the parametric
bootstrap's 40 x 5); more ``--reps`` narrow the coverage figures. Prints figures; asserts
nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena import known_truth as kt
from marketarena.markets.double_auction.params import DoubleAuctionParams
from marketarena.ratings import BAZAAR_SCALE, TrueSkillParams, player_games, prepare_games
from marketarena.simulate.stopping import Interval, field_ratings, look, rank_of, settled

BOARD = DoubleAuctionParams.model_fields  # the board's defaults


def board_env() -> TrueSkillParams:
    """double_auction's board environment at its defaults (``analysis/board.rating_env``)."""
    return TrueSkillParams(**BAZAAR_SCALE, tau=BOARD["rating_tau"].default)


def bazaar_fields(root: Path, seed: int) -> list[kt.TrueField]:
    """Fields A and B from an imported BAZAAR project (its metrics' seats and its board)."""
    agents = pd.read_parquet(root / "data/metrics/double_auction/agents.parquet")
    board = pd.read_csv(root / "reports/leaderboards/double_auction.csv")
    games = player_games(agents, "csa")
    a = kt.field_from_games("A: BAZAAR density", games, dict(zip(board["name"], board["mu"])))
    return [a, kt.subsample(a, 0.25, seed=seed, name="B: a quarter of A's games")]


def capped(at, cap: int, field: np.ndarray):
    """``at`` (a look without a cap) as ``look(..., cap=cap)`` gives it from the same lanes: the
    half-widths shrunk by sqrt(1 - n / cap), ranks among ``field``."""
    s = np.sqrt(max(0.0, 1 - at.games / cap))
    lo, hi = at.mu - (at.mu - at.mu_lo) * s, at.mu + (at.mu_hi - at.mu) * s
    return rank_of(hi, field), rank_of(lo, field)


def stopping_draws(field: kt.TrueField, args, ts: TrueSkillParams) -> pd.DataFrame:
    """One row per (skill level, draw, look): n, true rank, the look's rank interval without and
    with the cap correction."""
    rng = np.random.default_rng([args.seed, 56])
    played = kt.play(field, field.skills, ts.beta, rng)
    others = field_ratings(kt.as_games(played), ts, seed=args.seed)
    est = np.array([others[p][0] for p in field.players])
    s = np.sort(field.skills)
    levels = {}
    for name, q in (("top", 0.9), ("middle", 0.5), ("bottom", 0.1)):
        k = int(q * (len(s) - 1))
        levels[name] = (s[k] + s[k + 1]) / 2
    P = len(field.players)
    rows = []
    for level, skill in levels.items():
        true_rank = 1 + int((field.skills > skill).sum())
        for d in range(args.draws):
            pick = rng.integers(0, field.n_games, args.cap)
            seats = field.seats[pick].copy()
            sizes = (seats < P).sum(axis=1)
            seats[seats >= P] = P + 1  # the pad of P + 1 players
            seats[np.arange(args.cap), rng.integers(0, sizes)] = P  # its seat
            truth = np.append(field.skills, skill)
            new = kt.TrueField("new", [*field.players, "new"], truth, seats)
            games = prepare_games(kt.as_games(kt.play(new, truth, ts.beta, rng)))
            for n in [*range(args.batch, args.cap, args.batch), args.cap]:
                at = look(
                    games, "new", others, ts, args.boot, args.passes, args.seed + d, use=range(n)
                )
                lo, hi = capped(at, args.cap, est)
                rows.append((level, d, n, true_rank, at.rank_lo, at.rank_hi, lo, hi, at.games))
    return pd.DataFrame(
        rows,
        columns=["level", "draw", "n", "true_rank", "lo", "hi", "cap_lo", "cap_hi", "games"],
    )


def report_stopping(looks: pd.DataFrame, args) -> None:
    looks = looks.assign(
        cover=(looks["lo"] <= looks["true_rank"]) & (looks["true_rank"] <= looks["hi"]),
        width=looks["hi"] - looks["lo"],
        cap_cover=(looks["cap_lo"] <= looks["true_rank"]) & (looks["true_rank"] <= looks["cap_hi"]),
        cap_width=looks["cap_hi"] - looks["cap_lo"],
    )
    print(
        f"\nstopping rule: a new player, cap {args.cap}, batch {args.batch}, rank_width "
        f"{args.rank_width}, min_games 30, boot {args.boot}, passes {args.passes}; {args.draws} "
        "draws per level"
    )
    print(
        "  level   true  rule (cap-aware): cover width games | rule, no cap: cover width games"
        " | fixed n matching the cap-aware rule: n cover width"
    )
    for level, g in looks.groupby("level", sort=False):
        out = []
        for lo, hi, cover, width in (
            ("cap_lo", "cap_hi", "cap_cover", "cap_width"),
            ("lo", "hi", "cover", "width"),
        ):
            stops = []
            for _, d in g.groupby("draw"):
                hit = next(
                    (
                        r
                        for r in d.itertuples()
                        if settled(
                            Interval(r.n, 0, 0, 0, 0, getattr(r, lo), getattr(r, hi)),
                            args.rank_width,
                            None,
                            30,
                        )
                    ),
                    d.iloc[-1],
                )
                stops.append((getattr(hit, cover), getattr(hit, width), hit.n))
            out.append(np.array(stops, dtype=float).mean(axis=0))
        fixed = g.groupby("n").agg(cover=("cover", "mean"), width=("width", "mean"))
        rule = out[0]
        match = fixed[(fixed["width"] <= rule[1]) & (fixed["cover"] >= rule[0])]
        m = (
            f"{match.index[0]:4d} {match['cover'].iloc[0]:6.1%} {match['width'].iloc[0]:5.1f}"
            if len(match)
            else "none up to the cap"
        )
        print(
            f"  {level:7s} {int(g['true_rank'].iloc[0]):3d}   {rule[0]:6.1%} {rule[1]:5.1f} "
            f"{rule[2]:6.1f} | {out[1][0]:6.1%} {out[1][1]:5.1f} {out[1][2]:6.1f} | {m}"
        )
    fixed = looks.groupby("n").agg(cover=("cover", "mean"), width=("width", "mean"))
    print(
        "  fixed n (all levels): "
        + ", ".join(
            f"{n}: {r.cover:.0%} w{r.width:.1f}"
            for n, r in fixed.iterrows()
            if n % 50 == 0 or n == 30
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bazaar", help="an imported BAZAAR project (marketarena import-bazaar --out)")
    ap.add_argument("--synthetic", type=int, help="instead: a synthetic field of N players")
    ap.add_argument("--games", type=int, default=400, help="synthetic: games")
    ap.add_argument("--seats", type=int, default=8, help="synthetic: seats per game")
    ap.add_argument("--reps", type=int, default=4, help="replications per field")
    ap.add_argument("--n-sim", type=int, default=40, help="parametric bootstrap: fields played")
    ap.add_argument("--sim-passes", type=int, default=5, help="parametric bootstrap: passes each")
    ap.add_argument("--draws", type=int, default=4, help="stopping: draws per skill level")
    ap.add_argument("--cap", type=int, default=300, help="stopping: the new player's games at most")
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--rank-width", type=int, default=1)
    ap.add_argument("--boot", type=int, default=100, help="stopping: a look's resamples")
    ap.add_argument("--passes", type=int, default=10, help="stopping: a look's passes")
    ap.add_argument("--no-stopping", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.synthetic:
        fields = [kt.synthetic_field(args.synthetic, args.games, args.seats, seed=args.seed)]
    elif args.bazaar and Path(args.bazaar, "reports/leaderboards/double_auction.csv").is_file():
        fields = bazaar_fields(Path(args.bazaar), args.seed)
    else:
        sys.exit(
            "give --synthetic N, or --bazaar <folder> of an imported BAZAAR project: "
            "marketarena import-bazaar <BAZAAR's logs> --out <folder> (the logs: git clone "
            "--depth 1 https://github.com/lechmazur/bazaar)"
        )
    ts = board_env()
    passes, n_boot, bp = (
        BOARD[k].default for k in ("rating_passes", "rating_boot", "rating_boot_passes")
    )
    print(f"board: {ts}; multipass {passes}, bootstrap {n_boot} x {bp} passes; {args.reps} reps")
    pd.set_option("display.width", 200)
    for field in fields:
        t0 = time.perf_counter()
        split = int(np.median(field.counts))
        rows = kt.replicate(
            field, ts, args.reps, passes, n_boot, bp, args.n_sim, args.sim_passes, args.seed
        )
        print(
            f"\n{field.name}: {len(field.players)} players, {field.n_games} games, "
            f"{field.counts.min()}-{field.counts.max()} a player (few: <= {split}); true μ "
            f"{field.skills.min():.2f}-{field.skills.max():.2f}; {time.perf_counter() - t0:.0f} s"
        )
        print(kt.summarise(rows, split).round(3).to_string())
    if not args.no_stopping:
        t0 = time.perf_counter()
        looks = stopping_draws(fields[0], args, ts)
        report_stopping(looks, args)
        print(f"  ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
