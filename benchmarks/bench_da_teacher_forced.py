"""Teacher-forced check of double_auction's baselines against BAZAAR's published games (issue 22).

Every baseline seat of BAZAAR's 1,954 logged games is handed, round by round, to our strategy of
the same name (the default pool's roster entry), which sees exactly the history the logged seat
saw, its own logged quotes included (``markets/double_auction/sources/bazaar.py:
teacher_forced``). Per baseline it prints the seats, the mean |our quote - their quote|, the share of quotes equal, and
the fill rate of their quotes and of ours (each quote put in the logged round in place of the
seat's and cleared by our rules), then the median over baselines of the mean |Δquote| and the
largest one among the rules that are deterministic in the logs. Targets (issue 22): median at
most 2, deterministic rules at most 1.

The logs are not part of this project (they carry no licence). Get them with
    git clone --depth 1 https://github.com/lechmazur/bazaar /tmp/bazaar
and run
    .venv/bin/python benchmarks/bench_da_teacher_forced.py --logs /tmp/bazaar/logs [--seats N]
(or set BAZAAR_LOGS). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd
from _common import default_block

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena.core.params import RosterEntry
from marketarena.markets.double_auction.baselines import STRATEGIES
from marketarena.markets.double_auction.sources import bazaar, reader

#: rules the logs show to be deterministic (issue 22's list): target mean |Δquote| at most 1
DETERMINISTIC = (
    "truthful",
    "shade_5",
    "shade_10",
    "linear_eq",
    "collusive",
    "mean_reversion",
    "regression",
    "gd",
    "fictitious_play",
    "tit_for_tat",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--logs",
        default=os.environ.get("BAZAAR_LOGS"),
        help="BAZAAR's logs/ folder (default: $BAZAAR_LOGS)",
    )
    ap.add_argument("--seats", type=int, default=None, help="at most this many seats per baseline")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not args.logs or not Path(args.logs).is_dir():
        sys.exit(
            "BAZAAR's game logs are needed and not part of this project (no licence). Get "
            "them:\n    git clone --depth 1 https://github.com/lechmazur/bazaar /tmp/bazaar\n"
            "then pass --logs /tmp/bazaar/logs (or set BAZAAR_LOGS)."
        )
    roster = {e["name"]: e for e in default_block("double_auction")["double_auction"]["roster"]}
    t0 = time.perf_counter()
    games = reader.read_games(args.logs)
    per = []
    counts: dict[str, int] = {}
    for g in games:
        for seat in g.seats:
            if g.is_llm[seat]:
                continue
            name = g.name(seat)
            if args.seats is not None and counts.get(name, 0) >= args.seats:
                continue
            counts[name] = counts.get(name, 0) + 1
            agent = STRATEGIES.make(seat, RosterEntry(**roster[name]))
            tf = bazaar.teacher_forced(g, seat, agent, seed=args.seed)
            tf["name"] = name
            per.append(tf)
    rows = pd.concat(per, ignore_index=True)
    rows["diff"] = (rows["ours"] - rows["theirs"]).abs()
    table = (
        rows.groupby("name")
        .agg(
            quotes=("diff", "size"),
            mean_abs_dquote=("diff", "mean"),
            exact=("diff", lambda d: (d == 0).mean()),
            fill_theirs=("theirs_fills", "mean"),
            fill_ours=("ours_fills", "mean"),
        )
        .sort_values("mean_abs_dquote")
    )
    table.insert(0, "seats", table.index.map(counts))
    pd.set_option("display.width", 160)
    print(table.round(3).to_string())
    det = table.loc[[n for n in DETERMINISTIC if n in table.index], "mean_abs_dquote"]
    print(
        f"\n{len(games)} games, {int(table['seats'].sum())} baseline seats, "
        f"{time.perf_counter() - t0:.1f} s"
    )
    print(
        f"median over baselines of mean |Δquote|: {table['mean_abs_dquote'].median():.2f} "
        "(target <= 2)"
    )
    print(
        f"deterministic rules: largest mean |Δquote| {det.max():.2f} ({det.idxmax()}) (target <= 1)"
    )
    print(f"baselines within 2: {(table['mean_abs_dquote'] <= 2).sum()} of {len(table)}")


if __name__ == "__main__":
    main()
