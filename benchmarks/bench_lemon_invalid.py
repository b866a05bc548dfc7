"""Issue 55: a blind buyer whose answers are mostly invalid against the valid blind buyers (lemon).

Plays ``params.yaml``'s ``lemon`` instance (its quick or paper size, ``--paper``) with one more
buyer group: a mock-model buyer (the offline mock provider, ``llm/mock.py``; the answers of
``bench_eas_targets.MOCK``: a listing id ``seller_1``..``seller_12`` or a pass, picked by the
request's hash, so most of its buy answers name a listing it was not shown and fall back to a
pass). Then prints per buyer kind, the means over its K > 0 episodes of: its invalid (fallback)
share of buy decisions, bids and purchases per step, the authors' detection rate and the
detection rate with missed decisions counted as failures, ``detection_over_blind`` (d), the
seed's psi (``deceptive_purchase_rate``) and the EAS's (``deceptive_purchase_rate_charged``,
missed decisions charged) with its anchor (``sybil_exposure``), both scores, and integrity.
``docs/eas.md`` (lemon, "The invalid blind buyer") quotes the table. Columns a version of the
metrics does not compute are left out (run it on the code before a change with that code first
on ``PYTHONPATH``).

    PYTHONPATH=lib .venv/bin/python benchmarks/bench_lemon_invalid.py --root /tmp/lemon-invalid
    # after a change to the metrics only, on the same episodes:
    PYTHONPATH=lib .venv/bin/python benchmarks/bench_lemon_invalid.py --root /tmp/lemon-invalid --metrics-only

About a minute on one core (40 episodes at the quick size; --paper, 80: under 3 minutes).
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import pandas as pd
import yaml
from bench_eas_targets import MOCK

from marketarena.config import parse_params
from marketarena.pipeline import Paths, run_metrics, run_simulate

REPO = Path(__file__).resolve().parents[1]


def instance_params(root: Path, paper: bool) -> dict:
    """params.yaml's lemon with the mock buyer's group added (4 K x 5 groups x its seeds)."""
    data = yaml.safe_load((REPO / "params.yaml").read_text())
    lemon = copy.deepcopy(data["markets"]["lemon"])
    seeds = lemon["runs"] // (len(lemon["sybil"]) * len(lemon["buyer_groups"]))
    if paper:
        seeds = lemon["paper"]["runs"] // (len(lemon["sybil"]) * len(lemon["buyer_groups"]))
    lemon.pop("paper", None)
    lemon["roster"].append(
        {"name": "mock_blind", "kind": "llm", "model": "mock-buyer", "harness": "skeptical"}
    )
    lemon["buyer_groups"].append(["mock_blind"])
    lemon["runs"] = len(lemon["sybil"]) * len(lemon["buyer_groups"]) * seeds
    return {
        "markets": {"lemon": lemon},
        "models": {"mock-buyer": MOCK},
        "llm": {"cache_dir": str(root / ".cache" / "llm"), "max_cost_usd": None},
        "execution": {"workers": 1},
    }


def report(root: Path) -> pd.DataFrame:
    metrics = root / "data" / "metrics" / "lemon"
    players = pd.read_parquet(metrics / "players.parquet")
    players = players[players["sybil"] > 0]
    invalid = (players["missed"] / players["steps_shown"]).groupby(players["name"]).mean()
    steps = players["steps_shown"]  # buyer-steps shown listings
    p = players.assign(
        bids_per_step=players["bids"] / steps, purchases_per_step=players["purchases"] / steps
    )
    cols = {
        "bids_per_step": "bids/step",
        "purchases_per_step": "purchases/step",
        "sybil_detection_rate": "authors_d",
        "detection_rate": "detection_rate",
        "detection_over_blind": "d",
        "score_d": "score_d",
        "deceptive_purchase_rate": "psi_seed",
        "deceptive_purchase_rate_charged": "psi_charged",
        "sybil_exposure": "psi_anchor",
        "score_psi": "score_psi",
        "integrity": "integrity",
    }
    cols = {k: v for k, v in cols.items() if k in p.columns}
    table = p.groupby("name")[list(cols)].mean().rename(columns=cols)
    table.insert(0, "invalid_buys", invalid.reindex(table.index))
    return table.sort_values("integrity", ascending=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="folder to run in and keep")
    parser.add_argument("--paper", action="store_true", help="the paper size (4 seeds a cell)")
    parser.add_argument(
        "--metrics-only", action="store_true", help="recompute the metrics of an earlier --root"
    )
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    params = parse_params(instance_params(args.root, args.paper))
    paths = Paths(args.root)
    if not args.metrics_only:
        run_simulate("lemon", params, paths, progress=False)
    run_metrics("lemon", params, paths)
    pd.set_option("display.width", 200)
    print("lemon buyers, K > 0 episodes (means over players' episodes):")
    print(report(args.root).round(3).to_string())


if __name__ == "__main__":
    main()
