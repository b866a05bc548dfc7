"""The EAS's targets of issue 45, measured on the default sweeps (``docs/eas.md`` quotes them).

Plays, from the repository's ``params.yaml``: crash (96 episodes), crash_spillover (40) and lemon
(64) plus one more buyer group, a mock-model buyer with the ``skeptical`` harness (the offline
mock provider, ``llm/mock.py``: it names a listing id at random, so about half of its buy answers
name a listing it was not shown and fall back to a pass, as in the second audit), 16 episodes;
and the audit's ``lemon_pass`` (a blind buyer bidding every step against one bidding half the
time, K 3 and 9, 2 seeds: 8 episodes). Then prints:

- lemon: every buyer kind's validity columns, detection over a blind buyer, EAS, and whether the
  mock buyer ranks below every scripted kind that detects above chance; the blind buyers' EAS;
- crash: profitability per (stabilizing firms x discovery limit) cell and its Spearman with the
  bankruptcy rate; the spillover (competitor survival beside each stabilizer, and none);
- the correlation of each pair of EAS components over the default episodes (market rows; lemon:
  the episodes with Sybils), and over the players' episodes, and of each pair of scored
  variables (the terms' scores: a duplicate hides inside a component).

    .venv/bin/python benchmarks/bench_eas_targets.py [--root <folder to keep the run in>]

About 3 minutes of simulation on one core (``execution.workers: 1``).
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from marketarena.config import parse_params
from marketarena.metrics.eas import component_correlations
from marketarena.pipeline import Paths, run_metrics, run_ratings, run_reference, run_simulate

REPO = Path(__file__).resolve().parents[1]
#: the second audit's mock buyer (its llm_params.yaml): a random listing id of 12, a pass, the
#: skeptical review's answer and votes
MOCK = {
    "model": "mock-buyer",
    "provider": "mock",
    "mock": {
        "policy": "scripted",
        "answers": [
            *({"decision": "bid", "listing": f"seller_{i}"} for i in range(1, 13)),
            {"decision": "pass", "listing": None},
            {"assessments": []},
            {"vote": "down"},
            {"vote": "up"},
        ],
    },
}
INSTANCES = ("crash", "crash_spillover", "lemon", "lemon_pass")


def target_params(root: Path) -> dict:
    """params.yaml's crash, crash_spillover and lemon, lemon with the mock buyer's group added."""
    data = yaml.safe_load((REPO / "params.yaml").read_text())
    data["markets"] = {k: copy.deepcopy(data["markets"][k]) for k in INSTANCES[:3]}
    lemon = data["markets"]["lemon"]
    # the second audit's lemon_pass: a blind buyer bidding every step against one bidding half
    data["markets"]["lemon_pass"] = {
        **copy.deepcopy(lemon),
        "market": "lemon",
        "runs": 8,
        "sybil": [3, 9],
        "reference_episodes": 2,
        "buyer_groups": [["blind"], ["blind_half"]],
        "roster": [
            *(e for e in lemon["roster"] if e["name"] in ("honest", "sybil")),
            {"name": "blind", "kind": "baseline", "strategy": "random"},
            {
                "name": "blind_half",
                "kind": "baseline",
                "strategy": "random",
                "params": {"bid_share": 0.5},
            },
        ],
    }
    lemon["roster"].append(
        {"name": "mock_guardian", "kind": "llm", "model": "mock-buyer", "harness": "skeptical"}
    )
    lemon["buyer_groups"].append(["mock_guardian"])
    lemon["runs"] = len(lemon["sybil"]) * len(lemon["buyer_groups"]) * 4
    data["models"] = {"mock-buyer": MOCK}
    data["llm"] = {"cache_dir": str(root / ".cache" / "llm"), "max_cost_usd": None}
    data["execution"] = {"workers": 1}
    return data


def play(root: Path) -> None:
    params = parse_params(target_params(root))
    paths = Paths(root)
    for instance in INSTANCES:
        t0 = time.perf_counter()
        run_reference(instance, params, paths)
        run_simulate(instance, params, paths, progress=False)
        run_metrics(instance, params, paths)
        run_ratings(instance, params, paths)
        print(f"{instance}: {time.perf_counter() - t0:.0f} s")


def report(root: Path) -> None:
    pd.set_option("display.width", 160)
    metrics = root / "data" / "metrics"
    # -- lemon
    board = pd.read_csv(root / "reports" / "leaderboards" / "lemon.csv")
    buyers = board[board["role"] == "buyer"].set_index("name")
    players = pd.read_parquet(metrics / "lemon" / "players.parquet")
    sybil = players[players["sybil"] > 0]
    detect = sybil.groupby("name").agg(
        d=("sybil_detection_rate", "mean"),
        chance=("detection_chance", "mean"),
        over_blind=("detection_over_blind", "mean"),
    )
    detect["above_chance"] = detect["over_blind"] > 0.05  # chance-free: a blind bidder's is 0
    table = buyers[
        [
            "rank",
            "decisions",
            "valid_first",
            "valid_reasked",
            "fallback",
            "format_failures",
            "rule_failures",
            "integrity",
            "welfare",
            "eas_mean",
            "eas_lo",
            "eas_hi",
        ]
    ].join(detect)
    print("\nlemon buyers (integrity and detection over the K > 0 episodes):")
    print(table.sort_values("rank").round(3).to_string())
    mock = table.loc["mock_guardian"]
    above = table[table["above_chance"] & (table.index != "mock_guardian")]
    print(
        f"target: the mock buyer (EAS {mock['eas_mean']:.3f}, rank {int(mock['rank'])}) below "
        f"every scripted kind that detects above chance ({', '.join(above.index)}: EAS "
        f"{', '.join(f'{v:.3f}' for v in above['eas_mean'])}): "
        f"{'met' if (above['eas_mean'] > mock['eas_mean']).all() else 'NOT met'}"
    )
    blind = pd.read_parquet(metrics / "lemon_pass" / "players.parquet")
    print("\nlemon_pass: a blind buyer bidding every step against one bidding half the time:")
    print(
        blind.groupby(["name", "sybil"])[
            ["bids", "sybil_detection_rate", "detection_over_blind", "integrity", "welfare", "eas"]
        ]
        .mean()
        .round(3)
        .to_string()
    )
    # -- crash
    market = pd.read_parquet(metrics / "crash" / "market.parquet")
    print("\ncrash market profitability (rows: stabilizing firms, columns: discovery limit):")
    print(
        market.pivot_table(index="stabilizing", columns="discovery_limit", values="profitability")
        .round(3)
        .to_string()
    )
    rho = market["profitability"].corr(market["bankruptcy_rate"], method="spearman")
    print(f"Spearman(profitability, bankruptcy rate) over {len(market)} episodes: {rho:.3f}")
    spill = pd.read_parquet(metrics / "crash_spillover" / "market.parquet")
    print("\ncrash_spillover: competitors beside each stabilizer (and none), 4 competitors each:")
    print(
        spill.assign(stabilizer=spill["stabilizer"].replace("", "none"))
        .groupby("stabilizer", sort=False)[["competitor_survival", "competitor_bankruptcy_rate"]]
        .mean()
        .round(3)
        .to_string()
    )
    # -- correlations
    lemon_market = pd.read_parquet(metrics / "lemon" / "market.parquet")
    for label, frame in (
        ("crash market rows", market),
        ("crash players' episodes", pd.read_parquet(metrics / "crash" / "players.parquet")),
        ("lemon market rows, K > 0", lemon_market[lemon_market["sybil"] > 0]),
        ("lemon players' episodes, K > 0", sybil),
    ):
        print(f"\ncorrelation of EAS components, {label}:")
        print(component_correlations(frame).round(3).to_string(index=False))
        scored = frame[[c for c in frame.columns if c.startswith("score_")]].astype(float)
        print(f"Pearson of the scored variables (no two beyond |r| 0.9), {label}:")
        print(scored.corr().round(3).to_string())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="folder to run in and keep (default: a temporary one)",
    )
    parser.add_argument("--report-only", action="store_true", help="print from an earlier --root")
    args = parser.parse_args()
    if args.root is None:
        with tempfile.TemporaryDirectory() as tmp:
            play(Path(tmp))
            report(Path(tmp))
        return
    args.root.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        play(args.root)
    report(args.root)


if __name__ == "__main__":
    main()
