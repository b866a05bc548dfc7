"""Seats that do nothing or something absurd, on the default crash instance (issue 55's targets).

Plays ``params.yaml``'s ``crash`` instance with two more competitor kinds, each a scripted mock
model (``llm/mock.py``, one answer every day): an **idle** firm (posts the unit cost, never buys
stock: it never sells) and an **absurd** firm (posts 10^6 unit costs and buys 10^7 units a day,
as much as its cash allows). The six competitor kinds rotate over the seats as the instance's own
do, so every cell holds each of them equally often (72 episodes, 365 days). Prints each player's
board row (μ, its stability, welfare, profitability and EAS, with the terms behind them) and the
Pearson correlation of every pair of scored variables over the market rows and the players'
episodes (``docs/eas.md``: no two beyond |r| 0.9).

    .venv/bin/python benchmarks/bench_idle_seats.py [--root <folder to keep the run in>] [--plain]

``--plain``: the default instance as it is (48 episodes), for the correlations of the scored
variables on default params.

About a minute on one core.
"""

from __future__ import annotations

import argparse
import copy
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from marketarena.config import parse_params
from marketarena.pipeline import Paths, run_metrics, run_ratings, run_reference, run_simulate

REPO = Path(__file__).resolve().parents[1]


def _scripted(name: str, answer: dict) -> dict:
    return {"model": name, "provider": "mock", "mock": {"policy": "scripted", "answers": [answer]}}


MODELS = {
    "idle-firm": _scripted("idle-firm", {"price": 1.0, "supply": 0.0}),
    "absurd-firm": _scripted("absurd-firm", {"price": 1e6, "supply": 1e7}),
}


def target_params(root: Path, seats: bool = True) -> dict:
    data = yaml.safe_load((REPO / "params.yaml").read_text())
    crash = copy.deepcopy(data["markets"]["crash"])
    data["markets"] = {"crash": crash}
    data["execution"] = {"workers": 1}
    if not seats:
        return data
    crash["roster"] += [
        {"name": "idle", "kind": "llm", "model": "idle-firm"},
        {"name": "absurd", "kind": "llm", "model": "absurd-firm"},
    ]
    crash["competitors"] = [*crash["competitors"], "idle", "absurd"]
    cells = len(crash["discovery_limits"]) * len(crash["stabilizing"])
    crash["runs"] = cells * len(crash["competitors"])
    data["models"] = MODELS
    data["llm"] = {"cache_dir": str(root / ".cache" / "llm"), "max_cost_usd": None}
    return data


def play(root: Path, seats: bool = True) -> None:
    params = parse_params(target_params(root, seats))
    paths = Paths(root)
    run_reference("crash", params, paths)
    run_simulate("crash", params, paths, progress=False)
    run_metrics("crash", params, paths)
    run_ratings("crash", params, paths)


#: the score columns of crash's EAS variables (b, sigma, cs, pi)
SCORES = ("score_b", "score_sigma", "score_cs", "score_pi")


def report(root: Path) -> None:
    pd.set_option("display.width", 200)
    board = pd.read_csv(root / "reports" / "leaderboards" / "crash.csv").set_index("name")
    players = pd.read_parquet(root / "data" / "metrics" / "crash" / "players.parquet")
    terms = [c for c in SCORES if c in players.columns]
    per = players.groupby("name")[terms].mean()
    cols = [
        c for c in ("rank", "mu", "stability", "welfare", "profitability", "eas_mean") if c in board
    ]
    table = board[cols].join(per).sort_values("rank")
    print("crash with an idle and an absurd firm (players' means over their episodes):")
    print(table.round(3).to_string())
    scripted = table.drop(index=["idle", "absurd", "stabilizer"], errors="ignore")
    for seat in [s for s in ("idle", "absurd") if s in table.index]:
        row = table.loc[seat]
        print(
            f"{seat}: EAS {row['eas_mean']:.3f} vs the scripted firms' lowest "
            f"{scripted['eas_mean'].min():.3f}; stability {row['stability']:.3f} vs "
            f"{scripted['stability'].min():.3f}; profitability {row['profitability']:.3f} vs the "
            f"stabilizer's {table.loc['stabilizer', 'profitability']:.3f}"
        )
    market = pd.read_parquet(root / "data" / "metrics" / "crash" / "market.parquet")
    for label, frame in (("market rows", market), ("players' episodes", players)):
        both = frame[[c for c in terms if c in frame]].astype(float)
        corr = both.corr(method="pearson")
        pairs = [
            (a, b, corr.loc[a, b], int(both[[a, b]].dropna().shape[0]))
            for i, a in enumerate(corr.index)
            for b in corr.index[i + 1 :]
        ]
        print(f"\nPearson of the scored variables, {label}:")
        for a, b, r, n in pairs:
            flag = "  <- beyond 0.9" if np.isfinite(r) and abs(r) > 0.9 else ""
            print(f"  {a:12s} {b:12s} {r:7.3f}  (n={n}){flag}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="folder to run in and keep")
    parser.add_argument("--report-only", action="store_true", help="print from an earlier --root")
    parser.add_argument(
        "--plain", action="store_true", help="the default instance as it is, without the two seats"
    )
    args = parser.parse_args()
    if args.root is None:
        with tempfile.TemporaryDirectory() as tmp:
            play(Path(tmp), not args.plain)
            report(Path(tmp))
        return
    args.root.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        play(args.root, not args.plain)
    report(args.root)


if __name__ == "__main__":
    main()
