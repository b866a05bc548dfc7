"""How much time does the LLM layer add to a call, and do concurrent calls overlap?

What: starts a tiny OpenAI-compatible endpoint on 127.0.0.1 (``llm.fake.LoopbackEndpoint``, a free
port) that answers every chat completion after a fixed delay with a valid JSON action, then times:

1. sequential calls, alternating the bare HTTP client (``llm.http.ChatClient``: aiohttp) and
   ``LLMClient`` (plus request building, cache lookup + atomic write, usage/cost, JSON parsing and
   pydantic validation; fresh cache), first with an endpoint delay of 0 (pure overhead), then with
   the fixed delay;
2. N ``LLMClient`` calls gathered at once with ``max_concurrency`` = N, and with a limit of 4: wall
   time against the ideal ``ceil(N / limit) x delay``;
3. cache replay: the same N calls again, all answered from the cache (no HTTP at all);
4. with ``--http`` instead: the CPU our process spends per request, ``--http-requests`` requests
   32 at a time against an endpoint in a process of its own, for ``ChatClient`` and for the
   ``openai`` package's client (``pip install openai``; it is not a dependency) side by side: why
   the transport speaks HTTP itself (``llm/http.py``).

Why: an episode's wall time should be close to (sequential decision points) x (endpoint latency), not
(calls) x (latency); this shows how far from that the client itself keeps us. Figures are printed, not
asserted (DESIGN.md section 9).

Run: ``python benchmarks/bench_llm_overhead.py [--delay 0.2] [--calls 20]``, or
``python benchmarks/bench_llm_overhead.py --http [--http-requests 3000] [--pairs 2]``. Nothing leaves the
machine: the endpoint listens on loopback only and stops when the script ends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from marketarena.llm import LLMClient, LLMSettings, ModelSpec  # noqa: E402
from marketarena.llm.fake import LoopbackEndpoint, Reply  # noqa: E402
from marketarena.llm.http import ChatClient  # noqa: E402


class Bid(BaseModel):
    item: str
    qty: int = Field(ge=0)
    price: int = Field(ge=0)


class Action(BaseModel):
    bids: list[Bid]
    slogan: str


ANSWER = json.dumps(
    {
        "bids": [{"item": f"item{i}", "qty": 10 + i, "price": 50 + 7 * i} for i in range(1, 9)],
        "slogan": "Fresh deals daily",
    }
)


def messages(i: int) -> list[dict[str, str]]:
    prompt = "You are retailer r%d. Funds 22500. Items item1..item8 with base prices ... " % i
    return [
        {"role": "system", "content": prompt * 20},
        {"role": "user", "content": f"Step {i}: bid now as JSON."},
    ]


async def interleaved(base_url: str, client: LLMClient, spec: ModelSpec, n: int, offset: int):
    """n bare HTTP calls and n LLMClient calls (fresh cache), alternating so drift hits both alike."""
    raw_client = ChatClient(base_url, "x")
    raw, ours = [], []
    for i in range(n):
        msgs = messages(offset + i)
        t = time.perf_counter()
        await raw_client.complete(
            {
                "model": spec.model,
                "messages": msgs,
                "max_tokens": spec.max_tokens,
                "temperature": 0,
            },
            60.0,
        )
        raw.append(time.perf_counter() - t)
        t = time.perf_counter()
        result = await client.complete(spec, msgs, Action, context={"step": i})
        ours.append(time.perf_counter() - t)
        assert result.record.valid, result.error
    await raw_client.close()
    return raw, ours


async def replay(client: LLMClient, spec: ModelSpec, n: int, offset: int) -> list[float]:
    times = []
    for i in range(n):
        t = time.perf_counter()
        result = await client.complete(spec, messages(offset + i), Action, context={"step": i})
        times.append(time.perf_counter() - t)
        assert result.record.cached
    return times


async def ours_concurrent(client: LLMClient, spec: ModelSpec, n: int, offset: int) -> float:
    t = time.perf_counter()
    results = await asyncio.gather(
        *(client.complete(spec, messages(offset + i), Action) for i in range(n))
    )
    assert all(r.record.valid for r in results)
    return time.perf_counter() - t


BODY = {
    "model": "m",
    "temperature": 0.0,
    "max_tokens": 200,
    "messages": [
        {"role": "system", "content": "s" * 1500},
        {"role": "user", "content": "u" * 2500},
    ],
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "a",
            "schema": {"type": "object", "properties": {"quote": {"type": "integer"}}},
        },
    },
}


async def _http_run(send, requests: int, limit: int = 32) -> None:
    slots = asyncio.Semaphore(limit)

    async def one() -> None:
        async with slots:
            await send()

    await asyncio.gather(*(one() for _ in range(requests)))


async def _with_chat_client(base_url: str, requests: int) -> None:
    client = ChatClient(base_url, "k")
    await _http_run(lambda: client.complete(BODY, 60.0), requests)
    await client.close()


async def _with_openai(base_url: str, requests: int) -> None:
    import openai
    from openai.types.chat import ChatCompletion

    client = openai.AsyncOpenAI(api_key="k", base_url=base_url, max_retries=0)

    async def send():  # as the transport sent it before: the body as is, through post()
        answer = await client.post(
            "/chat/completions", cast_to=ChatCompletion, body=BODY, options={"timeout": 60.0}
        )
        return answer.model_dump(mode="json", exclude_unset=True)

    await _http_run(send, requests)
    await client.close()


def http_cpu(requests: int, delay: float, pairs: int) -> None:
    """CPU of this process per request, ChatClient and openai's client alternately."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import EndpointProcess

    try:
        import openai  # noqa: F401

        clients = {"ChatClient (aiohttp)": _with_chat_client, "openai.AsyncOpenAI": _with_openai}
    except ImportError:
        print("openai is not installed (pip install openai): timing ChatClient alone")
        clients = {"ChatClient (aiohttp)": _with_chat_client}
    endpoint = EndpointProcess(lambda body: Reply({"quote": 40}, 800, 10), delay)
    cpu: dict[str, list[float]] = {name: [] for name in clients}
    try:
        for _ in range(pairs):
            for name, run in clients.items():
                t, c = time.perf_counter(), time.process_time()
                asyncio.run(run(endpoint.base_url, requests))
                wall, c = time.perf_counter() - t, time.process_time() - c
                cpu[name].append(c / requests)
                print(
                    f"{name:24s} {requests} requests, 32 at a time, endpoint {delay * 1000:.0f} ms: "
                    f"wall {wall:.2f} s, CPU {c:.2f} s = {c / requests * 1000:.2f} ms a request"
                )
    finally:
        endpoint.close()
    if len(cpu) == 2:
        ours, theirs = (statistics.median(v) for v in cpu.values())
        print(
            f"median CPU per request: ChatClient {ours * 1000:.2f} ms, openai {theirs * 1000:.2f} ms "
            f"(ratio {ours / theirs:.2f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.2, help="endpoint latency in seconds")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--http", action="store_true", help="CPU per request: ChatClient vs openai")
    parser.add_argument("--http-requests", type=int, default=3000)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    if args.http:
        http_cpu(args.http_requests, args.delay, args.pairs)
        return
    delay, n = args.delay, args.calls

    endpoint = LoopbackEndpoint(
        lambda body: Reply(ANSWER, prompt_tokens=900, completion_tokens=120), delay
    )
    base_url = endpoint.base_url
    spec = ModelSpec(
        alias="bench",
        model="slow-echo",
        base_url=base_url,
        api_key_env=None,
        max_concurrency=n,
        max_tokens=300,
        price_in_per_mtok=2.5,
        price_out_per_mtok=10.0,
    )
    spec4 = spec.model_copy(
        update={"max_concurrency": 4, "base_url": base_url + "/"}
    )  # own semaphore

    with tempfile.TemporaryDirectory() as tmp:

        async def run_all() -> dict[str, object]:
            out: dict[str, object] = {}
            client = LLMClient(LLMSettings(cache_dir=Path(tmp) / "cache"))
            endpoint.delay_s = 0.0
            await interleaved(
                base_url, client, spec, 3, offset=-100
            )  # warm-up: imports, connections
            out["raw0"], out["ours0"] = await interleaved(base_url, client, spec, n, offset=0)
            endpoint.delay_s = delay
            out["raw"], out["ours"] = await interleaved(base_url, client, spec, n, offset=100)
            out["conc"] = await ours_concurrent(client, spec, n, offset=1000)
            c4 = LLMClient(LLMSettings(cache_dir=Path(tmp) / "cache4"))
            out["conc4"] = await ours_concurrent(c4, spec4, n, offset=2000)
            t = time.perf_counter()
            out["replay"] = await replay(client, spec, n, offset=100)
            out["replay_total"] = time.perf_counter() - t
            out["usage"] = client.usage()
            out["cache"] = client.cache.stats
            await client.aclose()
            await c4.aclose()
            return out

        res = asyncio.run(run_all())
    endpoint.close()

    def ms(x: float) -> str:
        return f"{x * 1000:8.1f} ms"

    def p90(xs: list[float]) -> float:
        return sorted(xs)[int(0.9 * (len(xs) - 1))]

    med = statistics.median
    print(
        f"{n} calls per row, loopback HTTP, action schema with 8 bids + slogan, ~1.7k-char prompt"
    )
    print(f"{'':40s}{'median':>11s}{'p90':>11s}")
    rows = (
        ("endpoint delay 0: bare HTTP", res["raw0"]),
        ("endpoint delay 0: LLMClient", res["ours0"]),
        (f"endpoint delay {delay * 1000:.0f} ms: bare HTTP", res["raw"]),
        (f"endpoint delay {delay * 1000:.0f} ms: LLMClient", res["ours"]),
        ("cache replay: LLMClient (no HTTP)", res["replay"]),
    )
    for name, xs in rows:
        print(f"{name:40s}{ms(med(xs))}{ms(p90(xs))}")
    print(
        f"{'-> our layer on top of HTTP (delay 0)':40s}{ms(med(res['ours0']) - med(res['raw0']))}"
    )
    print(f"{'-> LLMClient minus endpoint delay':40s}{ms(med(res['ours']) - delay)}")
    print(f"{'-> cache replay, all calls':40s}{ms(res['replay_total'])}")
    for label, wall, limit in (
        ("concurrent, limit = calls", res["conc"], n),
        ("concurrent, limit = 4", res["conc4"], 4),
    ):
        ideal = math.ceil(n / limit) * delay
        print(
            f"{label:40s}{ms(wall)} wall; ideal {ideal * 1000:.0f} ms;"
            f" sequential would be {n * delay * 1000:.0f} ms"
        )
    usage = res["usage"]
    if usage.retries:
        print(f"WARNING: {usage.retries} retries happened; the figures include back-off")
    print(f"usage: {usage}")
    print(f"cache: {res['cache']}")


if __name__ == "__main__":
    main()
