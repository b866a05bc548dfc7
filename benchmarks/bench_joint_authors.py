"""Wall time of a joint run on Agent Bazaar's board (issue 53) against an endpoint of known
latency: a new model in every seat their model held in one run of the authors' grid (lemon: every
buyer seat, on their buyer's prompts, ``markets/lemon/authors_buyer.py``; crash: every firm seat,
on their firm's prompts and bookkeeping, ``markets/crash/authors_firm.py``), rendered by their
code, the calls answered by a loopback OpenAI-compatible endpoint (``llm.fake.LoopbackEndpoint``,
a process of its own) after ``--delay`` seconds.

The ideal is (sequential decision points) x (delay): every seat of a decision point asks at once
(lemon: a step has a bid point and, when somebody bought, a review point; crash: a day is one
point). What the run takes beyond it is ours: the interpretation of their code, the market and
the logs. Lemon's responder bids on the first listing shown every third request and votes down,
so reviews happen; crash's prices at 1.3 unit costs and buys 20 units, so firms trade and live.

    .venv/bin/python benchmarks/bench_joint_authors.py --market lemon --logs AI-Bazaar/logs-data \\
        --code AI-Bazaar-exp2 [--steps 20] [--delay 0.5]
    .venv/bin/python benchmarks/bench_joint_authors.py --market crash --logs AI-Bazaar/logs-data \\
        --code AI-Bazaar [--steps 20] [--delay 0.5]

``--logs``: their logs-data (the runs are imported first, not timed); ``--code``: the root of a
copy of their code (lemon's runs' version: ``git -C AI-Bazaar archive ee6053964 ai_bazaar | tar
-x -C AI-Bazaar-exp2``). ``--steps``: steps (lemon) or days (crash). Prints figures; asserts
nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import EndpointProcess  # noqa: E402

import marketarena  # noqa: E402, F401 - first: pins numpy's CPU path (its docstring)
from marketarena.config import parse_params  # noqa: E402
from marketarena.core.reader import EpisodeReader  # noqa: E402
from marketarena.llm.fake import Reply  # noqa: E402
from marketarena.pipeline import Paths, run_simulate  # noqa: E402

LISTING = re.compile(r'"listing_id":\s*"(seller_\d+_listing_\d+)"')


def crash_responder(body: dict) -> Reply:
    """A firm at 1.3 unit costs buying 20 units a day."""
    return Reply(
        {"thought": "steady", "supply_quantity_food": 20, "produce_food": 100, "price_food": 1.3}
    )


def responder(body: dict) -> Reply:
    """Bids on the first listing of the observation every third request, else passes; votes
    down a car it bought."""
    user = body["messages"][-1]["content"]
    if "listed the car with this description" in user:
        return Reply({"thought": "checked", "vote": "downvote"})
    ids = LISTING.findall(user)
    if ids and len(user) % 3 == 0:
        return Reply({"thought": "fair", "decision": "bid", "listing_id": ids[-3]})
    return Reply({"thought": "no", "decision": "pass", "listing_id": None})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--market", choices=("lemon", "crash"), default="lemon")
    ap.add_argument("--logs", type=Path, required=True)
    ap.add_argument("--code", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--delay", type=float, default=0.5)
    a = ap.parse_args()
    crash = a.market == "crash"
    endpoint = EndpointProcess(crash_responder if crash else responder, a.delay)
    grid = (
        {"stabilizing": [1], "discovery_limits": [3], "seeds": [8], "days": a.steps}
        if crash
        else {"sybil": [6], "reputation_visible": [True], "seeds": [8], "steps": a.steps}
    )
    instance = f"{a.market}_authors"
    with tempfile.TemporaryDirectory() as tmp:
        raw = {
            "models": {
                "loopback": {
                    "model": "loopback",
                    "base_url": endpoint.base_url,
                    "api_key_env": None,
                    "max_concurrency": 64,
                    "structured_output": "json_object",
                }
            },
            "llm": {"cache_dir": str(Path(tmp) / "llm")},
            "markets": {
                instance: {
                    "market": a.market,
                    "source": {
                        "format": "agent_bazaar",
                        "path": str(a.logs.resolve()),
                        "prompts": str(a.code.resolve()),
                    },
                    "joint_grid": grid,
                    "roster": [{"name": "new_model", "kind": "llm", "model": "loopback"}],
                }
            },
        }
        params = parse_params(raw)
        paths = Paths(tmp)
        paths.data.mkdir(parents=True)
        t = time.perf_counter()
        out = run_simulate(instance, params, paths, progress=False)
        total = time.perf_counter() - t
        live = out["wall_time_s"]
        reader = EpisodeReader(paths.episodes(instance))
        calls = reader.table("llm_calls")
        calls = calls[calls["episode_id"].str.startswith("new-")]
        points = calls.groupby(["step", "round"]).ngroups
        ideal = points * a.delay
        seats = "5 firm seats" if crash else "12 buyer seats"
        print(
            f"joint {a.market} run: {a.steps} steps, {seats}, {len(calls)} calls at "
            f"{points} sequential decision points, endpoint delay {a.delay} s"
        )
        print(
            f"played in {live:.1f} s against the ideal {ideal:.1f} s: {live / ideal:.3f}x "
            f"(the import before it: {total - live:.0f} s, not counted)"
        )
        print(json.dumps({"calls": len(calls), "points": points, "live_s": round(live, 2)}))
    endpoint.close()


if __name__ == "__main__":
    main()
