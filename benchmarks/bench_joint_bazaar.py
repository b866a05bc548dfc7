"""A new model on BAZAAR's board (issue 53): BAZAAR's published games imported alone, and again
as a joint instance with one entrant playing in BAZAAR's setting on BAZAAR's prompts; both rated
on our CSα. Prints:

- how far our CSα is from BAZAAR's logged one on the same seats (the joint board rates every game
  on ours: its new games logged none): the correlation and mean |ours - logged| over BAZAAR's
  seats;
- the Spearman of the published LLMs' μ on the joint board with their μ on the import alone
  (target at least 0.98: a new model must not reorder the published rows);
- where the entrant landed among the published LLMs, and the run's calls and wall time.

The entrant is the mock provider by default (scripted answers, offline); ``--base-url URL
--model NAME`` plays a real OpenAI-compatible endpoint instead (``serve-local``'s Gemma 3 270M:
``--base-url http://127.0.0.1:8080/v1 --model gemma-3-270m-q4_k_m --concurrency 1``).

BAZAAR's repository is not part of this project (no licence). Get it with
    git clone --depth 1 https://github.com/lechmazur/bazaar /tmp/bazaar
and run
    .venv/bin/python benchmarks/bench_joint_bazaar.py --bazaar /tmp/bazaar [--games 40]
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena.config import parse_params
from marketarena.metrics.indices import average_ranks
from marketarena.pipeline import Paths, run_metrics, run_ratings, run_reference, run_simulate

MOCK_ANSWERS = ["<price>48</price>", "<price>52</price>", "<price>60</price>", "<price>40</price>"]


def block(bazaar: Path, args, entrant: bool) -> dict:
    out = {
        "market": "double_auction",
        "source": {"format": "bazaar", "path": str(bazaar / "logs")},
        "csa_basis": "ours",
        "rating_boot": 0,
        "entrant_games": args.games,
        "reference": {"games_per_distribution": args.reference_games},
    }
    if entrant:
        out["roster"] = [{"name": "entrant", "kind": "llm", "model": "entrant"}]
    return out


def model(args) -> dict:
    if args.base_url:
        spec = {
            "model": args.model,
            "base_url": args.base_url,
            "api_key_env": None,
            "max_tokens": 40,
            "timeout_s": 600,
            "max_concurrency": args.concurrency,
        }
    else:
        spec = {"model": "mock", "provider": "mock"}
        spec["mock"] = {"policy": "scripted", "answers": MOCK_ANSWERS}
    return {"entrant": spec}


def board(root: Path, bazaar: Path, args, entrant: bool) -> tuple[pd.DataFrame, dict, float]:
    params = parse_params(
        {
            "llm": {"cache_dir": str(root / "llm-cache")},
            "models": model(args),
            "markets": {"bazaar": block(bazaar, args, entrant)},
        }
    )
    paths = Paths(root)
    started = time.perf_counter()
    run_reference("bazaar", params, paths)
    summary = run_simulate("bazaar", params, paths, progress=entrant)
    played = time.perf_counter() - started
    agents = run_metrics("bazaar", params, paths)["agents"]
    return run_ratings("bazaar", params, paths), {"summary": summary, "agents": agents}, played


def spearman(a: pd.Series, b: pd.Series) -> float:
    ra, rb = average_ranks(a.to_numpy(float)), average_ranks(b.to_numpy(float))
    return float(np.corrcoef(ra, rb)[0, 1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bazaar", type=Path, required=True, help="your copy of lechmazur/bazaar")
    ap.add_argument("--games", type=int, default=40, help="the entrant's games")
    ap.add_argument("--reference-games", type=int, default=2000, help="per distribution")
    ap.add_argument("--base-url")
    ap.add_argument("--model", default="gemma-3-270m-q4_k_m")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="build the two projects here (kept)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="joint-bazaar-"))
    alone, _, _ = board(work / "alone", args.bazaar, args, entrant=False)
    joint, found, wall = board(work / "joint", args.bazaar, args, entrant=True)
    seats = found["agents"]
    published = seats[seats["origin"] == "published"]
    both = published[["own_csa", "logged_csa"]].dropna()
    diff = (both["own_csa"] - both["logged_csa"]).abs()
    print(
        f"our CSα against BAZAAR's logged one, {len(both):,} seats of the published games: "
        f"correlation {both.corr().iloc[0, 1]:.3f}, mean |ours - logged| {diff.mean():.3f} "
        f"(median {diff.median():.3f}); every game of both boards rated on ours"
    )
    llms = joint[(joint["origin"] == "published") & joint["prompts"].ne("")].set_index("name")
    shared = llms.index.intersection(alone.set_index("name").index)
    rho = spearman(llms.loc[shared, "mu"], alone.set_index("name").loc[shared, "mu"])
    print(
        f"published LLMs' μ, joint board against the import alone: Spearman {rho:.4f} "
        f"over {len(shared)} LLMs (target at least 0.98)"
    )
    row = joint.set_index("name").loc["entrant"]
    among = int((llms["mu"] > row["mu"]).sum()) + 1
    print(
        f"the entrant: μ {row['mu']:.2f}, rank {int(row['rank'])} of {len(joint)} on the board, "
        f"{among} of {len(llms) + 1} among the LLMs; its games: "
        f"{json.dumps({k: v for k, v in found['summary'].items() if k != 'llm'})}"
    )
    print(f"wall time of the joint instance's reference, import and games: {wall:.1f} s")
    print(yaml.safe_dump({"work": str(work)}).strip())


if __name__ == "__main__":
    main()
