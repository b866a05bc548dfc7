"""Wall time of a joint run on a publisher's board (issue 53) against an endpoint of known
latency: a new model in every seat their model held in one run of Agent Bazaar's grid (lemon:
every buyer seat, on their buyer's prompts, ``markets/lemon/authors_buyer.py``; crash: every firm
seat, on their firm's prompts and bookkeeping, ``markets/crash/authors_firm.py``), rendered by
their code, or BAZAAR's entrant games on BAZAAR's templates (``--market bazaar``:
``markets/double_auction/bazaar_prompts.py``), the calls answered by a loopback OpenAI-compatible
endpoint (``llm.fake.LoopbackEndpoint``, a process of its own) after ``--delay`` seconds.

The ideal is max(the longest chain of sequential decision points of one run or game, calls /
``max_concurrency``) x delay: every seat of a decision point asks at once (lemon: a step has a bid
point and, when somebody bought, a review point; crash: a day is one point; BAZAAR: a round, every
entrant game at once). What the run takes beyond it is ours: the interpretation of their code or
the filling of their templates, the market and the logs. Lemon's responder bids on the first
listing shown every third request and votes down, so reviews happen; crash's prices at 1.3 unit
costs and buys 20 units, so firms trade and live; BAZAAR's quotes 50.

    .venv/bin/python benchmarks/bench_joint_authors.py --market lemon --logs AI-Bazaar/logs-data \\
        --code AI-Bazaar-exp2 [--steps 20] [--delay 0.5]
    .venv/bin/python benchmarks/bench_joint_authors.py --market crash --logs AI-Bazaar/logs-data \\
        --code AI-Bazaar [--steps 20] [--delay 0.5]
    .venv/bin/python benchmarks/bench_joint_authors.py --market bazaar --logs bazaar/logs \\
        --code bazaar/prompts [--steps 40] [--delay 0.5]

``--logs``: their logs (the runs or games are imported first, not timed; BAZAAR's CSα reference
too); ``--code``: the root of a copy of their code (lemon's runs' version: ``git -C AI-Bazaar
archive ee6053964 ai_bazaar | tar -x -C AI-Bazaar-exp2``) or BAZAAR's prompts folder.
``--steps``: steps (lemon), days (crash) or the entrant's games (BAZAAR). Prints figures; asserts
nothing.
"""

from __future__ import annotations

import argparse
import json
import math
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
from marketarena.pipeline import Paths, run_reference, run_simulate  # noqa: E402

LISTING = re.compile(r'"listing_id":\s*"(seller_\d+_listing_\d+)"')


def crash_responder(body: dict) -> Reply:
    """A firm at 1.3 unit costs buying 20 units a day."""
    return Reply(
        {"thought": "steady", "supply_quantity_food": 20, "produce_food": 100, "price_food": 1.3}
    )


def bazaar_responder(body: dict) -> Reply:
    """A quote of 50, in BAZAAR's answer format."""
    return Reply("<price>50</price>", prompt_tokens=1100, completion_tokens=5)


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
    ap.add_argument("--market", choices=("lemon", "crash", "bazaar"), default="lemon")
    ap.add_argument("--logs", type=Path, required=True)
    ap.add_argument("--code", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--delay", type=float, default=0.5)
    a = ap.parse_args()
    crash, bazaar = a.market == "crash", a.market == "bazaar"
    answers = crash_responder if crash else bazaar_responder if bazaar else responder
    endpoint = EndpointProcess(answers, a.delay)
    concurrency = 64
    if bazaar:
        block = {
            "market": "double_auction",
            "source": {
                "format": "bazaar",
                "path": str(a.logs.resolve()),
                "prompts": str(a.code.resolve()),
            },
            "entrant_games": a.steps,
            "reference": {"games_per_distribution": 250},
        }
    else:
        block = {
            "market": a.market,
            "source": {
                "format": "agent_bazaar",
                "path": str(a.logs.resolve()),
                "prompts": str(a.code.resolve()),
            },
            "joint_grid": (
                {"stabilizing": [1], "discovery_limits": [3], "seeds": [8], "days": a.steps}
                if crash
                else {"sybil": [6], "reputation_visible": [True], "seeds": [8], "steps": a.steps}
            ),
        }
    block["roster"] = [{"name": "new_model", "kind": "llm", "model": "loopback"}]
    instance = "bazaar_joint" if bazaar else f"{a.market}_authors"
    with tempfile.TemporaryDirectory() as tmp:
        raw = {
            "models": {
                "loopback": {
                    "model": "loopback",
                    "base_url": endpoint.base_url,
                    "api_key_env": None,
                    "max_concurrency": concurrency,
                    **({} if bazaar else {"structured_output": "json_object"}),
                }
            },
            "llm": {"cache_dir": str(Path(tmp) / "llm")},
            "markets": {instance: block},
        }
        params = parse_params(raw)
        paths = Paths(tmp)
        paths.data.mkdir(parents=True)
        if bazaar:
            run_reference(instance, params, paths)
        t = time.perf_counter()
        out = run_simulate(instance, params, paths, progress=False)
        total = time.perf_counter() - t
        live = out["wall_time_s"]
        reader = EpisodeReader(paths.episodes(instance))
        calls = reader.table("llm_calls")
        calls = calls[calls["episode_id"].str.startswith("x-" if bazaar else "new-")]
        chain = int(
            calls.groupby("episode_id")[["step", "round"]]
            .apply(lambda g: len(g.drop_duplicates()))
            .max()
        )
        points = max(chain, math.ceil(len(calls) / concurrency))
        ideal = points * a.delay
        seats = (
            f"{calls['episode_id'].nunique()} entrant games"
            if bazaar
            else "5 firm seats"
            if crash
            else "12 buyer seats"
        )
        print(
            f"joint {a.market} run: {a.steps} {'games' if bazaar else 'steps'}, {seats}, "
            f"{len(calls)} calls, {chain} sequential decision points, endpoint delay {a.delay} s"
        )
        print(
            f"played in {live:.1f} s against the ideal {ideal:.1f} s: {live / ideal:.3f}x "
            f"(the import before it: {total - live:.0f} s, not counted)"
        )
        print(json.dumps({"calls": len(calls), "points": points, "live_s": round(live, 2)}))
    endpoint.close()


if __name__ == "__main__":
    main()
