"""Wall time of supply_chain episodes with LLM retailers against an endpoint of known latency, and of
their replay from the response cache (issue 3).

What: the default supply_chain setting of ``params.yaml`` (20 retailers, 6 steps, 2 bidding rounds,
200 buyers per step), with the first ``--llm-seats`` roster entries replaced by LLM retailers on a
loopback OpenAI-compatible endpoint (``llm.fake.LoopbackEndpoint``, in a process of its own) that
answers every call after ``--delay`` seconds with a valid bid or price list. Times, once the embedding model is loaded:

1. the live episodes: every call goes over HTTP (fresh response cache); the ideal is
   (sequential decision points) x (delay), since all LLM seats of a decision point ask at once;
2. the replay: the same params with ``llm.cache_only``, every answer from the cache, no HTTP;
3. the endpoint alone: the HTTP layer by itself (``llm.http.AiohttpWire``) sends the live run's
   requests (recorded on the wire), one decision point's at a time, to the same endpoint process. The live
   time less this is ours, whatever this machine's speed at the hour (it drifts by a fifth).

Prints figures; asserts nothing (DESIGN.md section 9). Run:
``.venv/bin/python benchmarks/bench_llm_episode.py [--llm-seats 20] [--delay 0.5] [--runs 1]``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from _common import EndpointProcess  # noqa: E402

import marketarena  # noqa: E402, F401 - first: pins numpy's CPU path (its docstring)
from marketarena.config import parse_params  # noqa: E402
from marketarena.llm.fake import Reply  # noqa: E402
from marketarena.llm.http import AiohttpWire, ChatClient  # noqa: E402
from marketarena.markets.supply_chain.params import DEFAULT_ITEMS, ItemSpec  # noqa: E402
from marketarena.pipeline import Paths, run_embed, run_personas  # noqa: E402
from marketarena.simulate import simulate  # noqa: E402

#: item -> base price, from the params (set before the endpoint's process is forked)
BASE_PRICES: dict[str, int] = {}


def responder(body: dict) -> Reply:
    """A modest scripted 'LLM' that trades: bids 5 units at 5% above base on each item offered,
    cheapest first, while its funds cover them; prices every item it holds at 1.6 x base."""
    user = body["messages"][-1]["content"]
    if "sealed-bid auction" in body["messages"][0]["content"]:
        # offers are "item1,200,50" (id, qty, base price), or "item1,commodity,200,50" (extended)
        offers = re.findall(r"^(item\d+),(?:\w+,)?\d+,(\d+)$", user, re.MULTILINE)
        funds = float(re.search(r"^Funds: ([\d.]+)", user, re.MULTILINE).group(1))
        bids = {}
        for item, base in sorted(offers, key=lambda offer: int(offer[1])):
            price = round(int(base) * 1.05)
            if 5 * price <= funds:
                bids[item] = {"qty": 5, "price": price}
                funds -= 5 * price
        answer = {"bids": bids}
    else:  # "Current inventory:" then "item1: 5, item3: 2" (or "item1: 5 units, cost ..." lines)
        held = re.findall(
            r"(item\d+): (\d+)", user.split("Current inventory", 1)[1].split("\n\n")[0]
        )
        answer = {
            "prices": {x: round(BASE_PRICES[x] * 1.6) for x, units in held if int(units)},
            "slogan": "Fair prices, every day",
        }
    return Reply(answer, prompt_tokens=1500, completion_tokens=120)


def recording_factory(sent: list[bytes]):
    """``simulate``'s ``openai_factory``: the real client and wire, each request's bytes kept."""

    def factory(base_url, api_key):
        wire = AiohttpWire()

        async def recording(url, headers, data, timeout):
            sent.append(data)
            return await wire(url, headers, data, timeout)

        recording.close = wire.close
        return ChatClient(base_url, api_key, wire=recording)

    return factory


async def bare_client(url: str, bodies: list[bytes], per_point: int) -> float:
    """Seconds for the HTTP layer alone (``llm.http.AiohttpWire``, what the run's client sends
    through, without prompts, cache or budget) to send ``bodies``, ``per_point`` at once, one
    decision point after the other (connections opened by a first point that is not timed)."""
    wire = AiohttpWire()
    headers = {"content-type": "application/json"}

    async def point(chunk: list[bytes]) -> None:
        await asyncio.gather(*(wire(url, headers, body, 60.0) for body in chunk))

    try:
        await point(bodies[:per_point])
        t = time.perf_counter()
        for i in range(0, len(bodies), per_point):
            await point(bodies[i : i + per_point])
        return time.perf_counter() - t
    finally:
        await wire.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--llm-seats", type=int, default=20)
    ap.add_argument("--delay", type=float, default=0.5, help="endpoint latency in seconds")
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()

    raw = yaml.safe_load(Path(args.params).read_text())
    market = raw["markets"]["supply_chain"]
    roster = market["roster"]
    for i in range(min(args.llm_seats, len(roster))):
        roster[i] = {"name": f"llm_{i:02d}", "kind": "llm", "model": "loopback"}
    market["runs"] = args.runs
    raw["markets"] = {"supply_chain": market}

    items = (
        [ItemSpec.model_validate(it) for it in market["items"]]
        if "items" in market
        else DEFAULT_ITEMS
    )
    BASE_PRICES.update((it.id, it.base_price) for it in items)
    endpoint = EndpointProcess(responder, args.delay)
    base_url = endpoint.base_url
    with tempfile.TemporaryDirectory() as tmp:
        raw["models"] = {
            "loopback": {
                "model": "loopback",
                "base_url": base_url,
                "api_key_env": None,
                "max_concurrency": 64,
                "max_tokens": 300,
            }
        }
        raw["embedding"]["cache_dir"] = str(Path(tmp) / "emb")
        paths = Paths(tmp)
        paths.data.mkdir(parents=True)
        t = time.perf_counter()
        params = parse_params({**raw, "llm": {"cache_dir": str(Path(tmp) / "llm")}})
        run_personas(params, paths)
        run_embed(params, paths)
        # warm-up: loads the embedding model and fills the slogan cache with the responder's slogan
        simulate("supply_chain", params, paths.data, Path(tmp) / "warm", progress=False)
        setup = time.perf_counter() - t
        calls_warm = endpoint.calls

        fresh = parse_params({**raw, "llm": {"cache_dir": str(Path(tmp) / "llm2")}})
        sent: list[bytes] = []
        t = time.perf_counter()
        simulate(
            "supply_chain",
            fresh,
            paths.data,
            Path(tmp) / "live",
            progress=False,
            openai_factory=recording_factory(sent),
        )
        live = time.perf_counter() - t
        calls = endpoint.calls - calls_warm

        replay = parse_params(
            {**raw, "llm": {"cache_dir": str(Path(tmp) / "llm2"), "cache_only": True}}
        )
        t = time.perf_counter()
        simulate("supply_chain", replay, paths.data, Path(tmp) / "replay", progress=False)
        replayed = time.perf_counter() - t
        assert endpoint.calls - calls_warm == calls, "the replay made network calls"
        log = pd.concat(
            pd.read_parquet(p / "llm_calls.parquet") for p in (Path(tmp) / "live").glob("ep-*")
        )
        states = pd.concat(
            pd.read_parquet(p / "states.parquet") for p in (Path(tmp) / "live").glob("ep-*")
        )
    points = args.runs * market["steps"] * (market["rounds"] + 1)
    ideal = points * args.delay
    seats = min(args.llm_seats, len(roster))
    # one point's requests at a time: only when no answer was asked again (then each point has
    # exactly its seats' requests, in the order they left)
    alone = (
        asyncio.run(bare_client(f"{base_url}/chat/completions", sent, seats))
        if len(sent) == points * seats
        else None
    )
    endpoint.close()

    print(
        f"supply_chain, {len(roster)} retailers of which {seats} LLM, {market['steps']} steps x "
        f"({market['rounds']} bidding rounds + retail), {args.runs} episode(s); endpoint delay "
        f"{args.delay * 1000:.0f} ms (setup, model load, warm-up: {setup:.1f} s)"
    )
    print(
        f"live:   {live:7.2f} s for {calls} HTTP calls ({len(log)} logged, "
        f"{int(log['valid'].sum())} valid); ideal {points} decision points x {args.delay:.2f} s = "
        f"{ideal:.2f} s; one call after another would take {calls * args.delay:.1f} s"
    )
    print(
        f"        the LLM retailers won {int(states['units_won'].sum())} units and sold "
        f"{int(states['units_sold'].sum())}"
    )
    print(
        f"        our time on top of the ideal: {live - ideal:.2f} s "
        f"({(live - ideal) / points * 1000:.0f} ms per decision point)"
    )
    if alone is not None:
        print(
            f"alone:  {alone:7.2f} s for the endpoint alone (the HTTP layer by itself sending the "
            f"same requests, {seats} at a time): the live run's own time {live - alone:.2f} s "
            f"({(live - alone) / points * 1000:.0f} ms per decision point)"
        )
    print(
        f"replay: {replayed:7.2f} s from the cache, no HTTP ({replayed / args.runs:.2f} s per episode)"
    )


if __name__ == "__main__":
    main()
