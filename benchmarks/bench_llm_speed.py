"""LLM runs at the endpoint's speed (issue 25): wall time of an instance's LLM episodes against a
loopback endpoint of known latency, beside the ideal the endpoint allows.

Scenarios (``--scenario``):

- ``double_auction``: the default block, one LLM entrant (``entrant_games``, default 100 games of
  30 rounds); the pool's scripted games are played first, untimed, so the timed run plays the
  entrant's games only;
- ``crash``: the default grid (96 episodes) at ``--days`` (30) days, the ``myopic`` competitor
  played by an LLM firm.

The endpoint (``llm.fake.LoopbackEndpoint``, in a process of its own so that its threads do not
compete with the simulation for the GIL) answers every request after ``--delay`` seconds with a
modest valid answer (a trader shading its value by 5, a firm pricing at 2.5 and buying 15 units,
else a random schema-valid answer), ``max_concurrency`` ``--concurrency``. The ideal is
max(longest chain of sequential requests x delay, requests x delay / max_concurrency), the chain
counted from the logs (``dry_run.episode_depth``); beside it the scheduling bound
(:func:`scheduling_bound`: the same requests with none of our time, which tells the workload's
share of the gap from ours). Prints figures; asserts nothing. Run:
``.venv/bin/python benchmarks/bench_llm_speed.py --scenario double_auction [--games 100]
[--delay 0.2] [--concurrency 32] [--workers auto] [--in-flight auto]``; compare with another
checkout by running that checkout's copy of this script (it puts its own ``lib`` first on the path).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd  # noqa: E402
from _common import EndpointProcess, default_block  # noqa: E402

import marketarena  # noqa: E402, F401 - first: pins numpy's CPU path (its docstring)
from marketarena.config import parse_params  # noqa: E402
from marketarena.llm.fake import Reply  # noqa: E402

try:
    from marketarena.llm.fake import schema_answer  # noqa: E402
except ImportError:  # a checkout before issue 25

    def schema_answer(body: dict) -> Reply:
        return Reply({})


from marketarena.simulate import simulate  # noqa: E402


def responder(body: dict) -> Reply:
    props = (
        body.get("response_format", {})
        .get("json_schema", {})
        .get("schema", {})
        .get("properties", {})
    )
    text = body["messages"][-1]["content"]
    if {"price", "supply"} <= set(props):
        return Reply({"price": 2.5, "supply": 15}, prompt_tokens=800, completion_tokens=20)
    if "quote" in props:
        value = int(re.search(r"Your private (?:value|cost): (\d+)", text).group(1))
        quote = max(0, value - 5) if "(buyer)" in text else min(100, value + 5)
        return Reply({"quote": quote}, prompt_tokens=800, completion_tokens=10)
    return schema_answer(body)


def waves(calls: pd.DataFrame) -> list[int]:
    """An episode's requests as waves that follow one another: per call group (decision point,
    attempt, purpose), one wave per attempt, of the calls that made that many attempts. Their
    number is the episode's sequential requests (``dry_run.episode_depth``, repeated here so that
    the script runs on checkouts without it)."""
    keys = ["step", "round", "phase", "attempt", "purpose"]
    out = []
    for _, group in calls.groupby(keys, sort=False):
        out += [int((group["attempts"] > k).sum()) for k in range(int(group["attempts"].max()))]
    return out


def scheduling_bound(episodes: list[list[int]], slots: int, delay: float) -> float:
    """The run's wall time if our side took no time at all: every episode started at once, each
    request answered after exactly ``delay``, and a free slot going to a waiting request of the
    least advanced episode (the run's rule). ``episodes``: each one's :func:`waves`, from its
    logged calls (a call answered by an identical request already in flight counts as one more). Nothing in the run knows in advance which episodes
    will be long (crash's: how long a firm survives), so this is what the run's scheduling allows;
    the gap between it and the ideal is the scheduling's, the rest of the wall time ours."""
    import heapq

    waiting: list[tuple[int, int, int]] = []  # (waves done, episode, sequence)
    answers: list[tuple[float, int, int]] = []  # (time, episode, sequence)
    done = [0] * len(episodes)  # waves finished per episode
    left = [0] * len(episodes)  # requests of the current wave still unanswered
    seq, now, free = 0, 0.0, slots

    def start_wave(e: int) -> None:
        nonlocal seq
        left[e] = episodes[e][done[e]]
        for _ in range(left[e]):
            heapq.heappush(waiting, (done[e], e, seq))
            seq += 1

    for e, w in enumerate(episodes):
        if w:
            start_wave(e)
    while waiting or answers:
        while free and waiting:
            _, e, _ = heapq.heappop(waiting)
            free -= 1
            heapq.heappush(answers, (now + delay, e, seq))
            seq += 1
        now, e, _ = heapq.heappop(answers)
        free += 1
        left[e] -= 1
        if left[e] == 0:
            done[e] += 1
            if done[e] < len(episodes[e]):
                start_wave(e)
    return now


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=["double_auction", "crash"], default="double_auction")
    ap.add_argument("--games", type=int, default=100, help="double_auction: the entrant's games")
    ap.add_argument("--days", type=int, default=30, help="crash: days per episode")
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--workers", default="auto")
    ap.add_argument("--in-flight", default="auto", help="execution.episodes_in_flight")
    args = ap.parse_args()

    kind = args.scenario
    block = default_block(kind)[kind]
    llm = {"name": "llm", "kind": "llm", "model": "loopback"}
    if kind == "double_auction":
        block["pool"] = block.get("pool") or [e["name"] for e in block["roster"]]
        block["entrant_games"] = args.games
        block["games_per_distribution"] = 150  # one shard of pool games, played untimed first
    else:
        block["days"] = args.days
        block["roster"] = [
            {**llm, "name": "myopic"} if e["name"] == "myopic" else e for e in block["roster"]
        ]

    endpoint = EndpointProcess(responder, args.delay)
    base_url = endpoint.base_url
    workers = args.workers if args.workers == "auto" else int(args.workers)
    with tempfile.TemporaryDirectory() as tmp:
        models = {
            "loopback": {
                "model": "loopback",
                "base_url": base_url,
                "api_key_env": None,
                "max_concurrency": args.concurrency,
                "max_tokens": 200,
            }
        }
        raw = {
            "models": models,
            "llm": {"cache_dir": str(Path(tmp) / "llm")},
            "execution": {
                "workers": workers,
                "episodes_in_flight": args.in_flight
                if args.in_flight == "auto"
                else int(args.in_flight),
            },
            "markets": {kind: block},
        }
        out = Path(tmp) / "eps"
        if kind == "double_auction":  # the pool first, untimed
            simulate(kind, parse_params(raw), Path(tmp), out, progress=False)
            block["roster"].append(llm)
        params = parse_params(raw)
        before = endpoint.calls
        t, cpu = time.perf_counter(), time.process_time()
        summary = simulate(kind, params, Path(tmp), out, progress=False)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        requests = endpoint.calls - before
        frames = []
        for path in out.rglob("llm_calls.parquet"):
            table = pd.read_parquet(path)
            if "episode_id" not in table:
                table = table.assign(episode_id=path.parent.name)
            frames.append(table)
        calls = pd.concat(frames, ignore_index=True)
    peak = endpoint.close()
    episodes = [waves(g) for _, g in calls.groupby("episode_id", sort=False)]
    chain = max(len(w) for w in episodes)
    ideal = max(chain * args.delay, requests * args.delay / args.concurrency)
    bound = scheduling_bound(episodes, args.concurrency, args.delay)
    print(
        f"{kind}: {summary['played']} episodes with an LLM seat, {summary.get('workers')} "
        f"worker(s); endpoint {args.delay * 1000:.0f} ms, max_concurrency {args.concurrency}"
    )
    print(
        f"  {wall:.2f} s for {requests} requests ({len(calls)} calls); ideal {ideal:.2f} s "
        f"(chain {chain} x {args.delay:g} s = {chain * args.delay:.2f} s; {requests} x "
        f"{args.delay:g} / {args.concurrency} = {requests * args.delay / args.concurrency:.2f} s)"
    )
    print(
        f"  with no time of ours at all, the run's scheduling would take {bound:.2f} s "
        f"({bound / ideal:.2f}x the ideal): episodes' lengths are not known in advance"
    )
    print(
        f"  ratio to the ideal: {wall / ideal:.2f}x; most requests in flight at once: {peak}; "
        f"CPU of the main process {cpu:.2f} s (with one worker: all of the simulation's)"
    )


if __name__ == "__main__":
    main()
