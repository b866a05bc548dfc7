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

The stopping rule (``simulate/stopping.py``, ``known_truth.new_player_looks``): a new player
with a known skill (``--levels``: the midpoints between the field's true skills at those
quantiles) joins the field (A and B in turn), whose board (``stopping.field_ratings``, as
``simulate`` rates the field) is held fixed. Its games (``--cap``, each a random composition of
the field with one seat taken by it) are looked at after every ``--batch`` (``stopping.looks``:
boot 100, passes 10, at each of ``--ci-levels``). Per question (``--widths``: ``rank_width``;
``--top-k``: ``top_k``) ``known_truth.stop_rows`` stops each draw at its first answering look
from ``--min-games`` (``stopping.settled``, as ``stopping.Batches`` does) and records: answered,
does the rank interval cover the true rank (its rank among the field's true skills), for top-k
whether the answer was right or wrong, the width and the games. ``known_truth.fixed_schedule``
gives the smallest fixed n whose look answers as often (one n for every skill: a fixed schedule
does not know it), and the report the games the rule saves against it.

Run (the logs are not part of the project, no licence; import them once, about 2 minutes):

    PYTHONPATH=lib .venv/bin/python -m marketarena.cli import-bazaar /tmp/bazaar/logs --out /tmp/truth-bz
    PYTHONPATH=lib .venv/bin/python benchmarks/bench_known_truth.py --bazaar /tmp/truth-bz
    (--only boards|stopping, --fields A B; docs/cost.md has the runs behind its figures)

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
from marketarena.ratings import BAZAAR_SCALE, TrueSkillParams, player_games

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


def levels(field: kt.TrueField, quantiles) -> dict[str, float]:
    """New players' true skills: midpoints between neighbouring true skills of the field at
    ``quantiles`` (level name: the quantile, e.g. "q90" near the top)."""
    s = np.sort(field.skills)
    out = {}
    for q in quantiles:
        k = int(q * (len(s) - 1))
        out[f"q{round(q * 100):02d}"] = (s[k] + s[k + 1]) / 2
    return out


def report_stopping(field: kt.TrueField, looks: pd.DataFrame, args) -> None:
    """Per interval level and question (``--widths``, ``--top-k``): the rule's stops and the
    fixed schedule that answers as often (module docstring)."""
    print(
        f"\nstopping rule on {field.name}: a new player at {looks['entrant'].nunique()} skills "
        f"(true ranks {sorted(int(r) for r in looks['true_rank'].unique())}), {args.draws} draws "
        f"each, cap {args.cap}, batch {args.batch}, min_games {args.min_games}, boot "
        f"{args.boot}, passes {args.passes}"
    )
    for level, at_level in looks.groupby("level"):
        fixed = at_level.assign(
            cover=(at_level["rank_lo"] <= at_level["true_rank"])
            & (at_level["true_rank"] <= at_level["rank_hi"]),
            width=at_level["rank_hi"] - at_level["rank_lo"],
        )
        by_n = fixed.groupby("n").agg(cover=("cover", "mean"), width=("width", "mean"))
        print(
            f" {level:.0%} intervals; a fixed n, every skill: "
            + ", ".join(
                f"{n}: covers {r.cover:.0%}, width {r.width:.1f}"
                for n, r in by_n.iterrows()
                if n in (args.min_games, 50, 100, 200, args.cap)
            )
        )
        print(
            "  question        answered  covers  right  wrong  width  games | fixed n answering"
            " as often: n covers | games saved"
        )
        questions = [("rank_width", w) for w in args.widths] + [("top_k", k) for k in args.top_k]
        for key, value in questions:
            stops = kt.stop_rows(at_level, **{key: value}, min_games=args.min_games)
            share = stops["answered"].mean()
            n = kt.fixed_schedule(at_level, share, **{key: value})
            right, wrong = "     -", "     -"
            if "right" in stops:
                right = f"{stops['right'].mean():6.1%}"
                wrong = f"{(stops['answered'] & ~stops['right']).mean():6.1%}"
            if n is None:
                at, saved = "none to the cap", f">= {1 - stops['n'].mean() / args.cap:.0%}"
                if share == 0:
                    at, saved = "never answered", "-"
            else:
                cov = fixed.loc[fixed["n"] == n, "cover"].mean()
                at, saved = f"{n:4d} {cov:6.1%}", f"{1 - stops['n'].mean() / n:.0%}"
            print(
                f"  {key} {value:<5d} {share:8.1%} {stops['cover'].mean():7.1%} {right} {wrong} "
                f"{stops['width'].mean():6.1f} {stops['n'].mean():6.1f} | {at:>15s} | {saved}"
            )
            if args.verbose:
                per = stops.groupby("entrant", sort=False)[["answered", "cover", "n"]].mean()
                print("    " + per.round(2).T.to_string().replace("\n", "\n    "))


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
    ap.add_argument("--min-games", type=int, default=30)
    ap.add_argument(
        "--levels",
        type=float,
        nargs="*",
        default=[0.1, 0.3, 0.5, 0.7, 0.9],
        help="stopping: new players' skills at these quantiles of the field's",
    )
    ap.add_argument(
        "--ci-levels",
        type=float,
        nargs="*",
        default=[0.95, 0.99],
        help="stopping: the looks' interval levels (StopRule.level)",
    )
    ap.add_argument("--widths", type=int, nargs="*", default=[10, 20, 25], help="rank_width")
    ap.add_argument("--top-k", type=int, nargs="*", default=[5, 10, 20], help="top_k")
    ap.add_argument("--only", choices=["boards", "stopping"], help="run one part")
    ap.add_argument(
        "--fields", nargs="*", default=["A", "B"], help="BAZAAR: the fields to run (A, B)"
    )
    ap.add_argument("--verbose", action="store_true", help="stops by level")
    ap.add_argument("--boot", type=int, default=100, help="stopping: a look's resamples")
    ap.add_argument("--passes", type=int, default=10, help="stopping: a look's passes")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.synthetic:
        fields = [kt.synthetic_field(args.synthetic, args.games, args.seats, seed=args.seed)]
    elif args.bazaar and Path(args.bazaar, "reports/leaderboards/double_auction.csv").is_file():
        fields = [
            f for f in bazaar_fields(Path(args.bazaar), args.seed) if f.name[0] in args.fields
        ]
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
    for field in fields if args.only != "stopping" else []:
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
    for field in fields if args.only != "boards" else []:
        t0 = time.perf_counter()
        looks = kt.new_player_looks(
            field,
            levels(field, args.levels),
            ts,
            args.draws,
            args.cap,
            args.batch,
            args.boot,
            args.passes,
            args.seed,
            tuple(args.ci_levels),
        )
        report_stopping(field, looks, args)
        print(f"  ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
