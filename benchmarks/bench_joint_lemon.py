"""Wall time of a joint lemon run (issue 53) against an endpoint of known latency: a new model in
every buyer seat of one run of the authors' grid, on their buyer's prompts rendered by their code
(``markets/lemon/authors_buyer.py``), the calls answered by a loopback OpenAI-compatible endpoint
(``llm.fake.LoopbackEndpoint``, a process of its own) after ``--delay`` seconds.

The ideal is (sequential decision points) x (delay): every buyer seat of a decision point asks at
once, and a step has a bid point and, when somebody bought, a review point. What the run takes
beyond it is ours: the interpretation of their code (twice a call: to the prompt, then with the
answer), the market and the logs. The responder bids on the first listing shown every third
request and votes down, so reviews happen.

    .venv/bin/python benchmarks/bench_joint_lemon.py --logs AI-Bazaar/logs-data \\
        --code AI-Bazaar-exp2 [--steps 20] [--delay 0.5]

``--logs``: their logs-data (the runs are imported first, not timed); ``--code``: the root of a
copy of their code (``git -C AI-Bazaar archive ee6053964 ai_bazaar | tar -x -C AI-Bazaar-exp2``).
Prints figures; asserts nothing.
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
    ap.add_argument("--logs", type=Path, required=True)
    ap.add_argument("--code", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--delay", type=float, default=0.5)
    a = ap.parse_args()
    endpoint = EndpointProcess(responder, a.delay)
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
                "lemon_authors": {
                    "market": "lemon",
                    "source": {
                        "format": "agent_bazaar",
                        "path": str(a.logs.resolve()),
                        "prompts": str(a.code.resolve()),
                    },
                    "joint_grid": {
                        "sybil": [6],
                        "reputation_visible": [True],
                        "seeds": [8],
                        "steps": a.steps,
                    },
                    "roster": [{"name": "new_model", "kind": "llm", "model": "loopback"}],
                }
            },
        }
        params = parse_params(raw)
        paths = Paths(tmp)
        paths.data.mkdir(parents=True)
        t = time.perf_counter()
        out = run_simulate("lemon_authors", params, paths, progress=False)
        total = time.perf_counter() - t
        live = out["wall_time_s"]
        reader = EpisodeReader(paths.episodes("lemon_authors"))
        calls = reader.table("llm_calls")
        calls = calls[calls["episode_id"].str.startswith("new-")]
        points = calls.groupby(["step", "round"]).ngroups
        ideal = points * a.delay
        print(
            f"joint lemon run: {a.steps} steps, 12 buyer seats, {len(calls)} calls at "
            f"{points} sequential decision points (bids and reviews), endpoint delay {a.delay} s"
        )
        print(
            f"played in {live:.1f} s against the ideal {ideal:.1f} s: {live / ideal:.3f}x "
            f"(the import before it: {total - live:.0f} s, not counted)"
        )
        print(json.dumps({"calls": len(calls), "points": points, "live_s": round(live, 2)}))
    endpoint.close()


if __name__ == "__main__":
    main()
