"""How close ``marketarena estimate`` comes to real runs, market by market (issue 47).

For every market, a small instance with one LLM seat (its ``tiny_params.yaml``, longer where an
episode's length depends on the play) is estimated (every planned episode played in the dry runs,
so the figures are the method's error, not a sample's), then played for real on the fake endpoint
(``llm/fake.py``, in process) by two models:

- ``sensible``: answers written from the prompt as a modest player would (double_auction shades
  its value by 5; cournot makes 20 and 10; a crash firm prices at 1.2 times its unit cost and
  restocks to 10 units; an english_auction bidder opens at the starting price and raises by the
  minimum increase up to 80% of its estimate, and updates its status correctly; a lemon buyer
  takes the listing of the best reputation at 0.4 or more, and votes by its surplus), random
  valid answers elsewhere (bertrand's, supply_chain's: their episodes last as long whatever is
  answered);
- ``random``: a random valid answer to everything (``fake.schema_answer``).

The endpoint reports prompt caching as a provider with automatic prefix caching would
(``fake.prompt_caching``: OpenAI's rule). Prices: $1 per million prompt tokens, $0.10 cached,
$4 completion. The model never breaks the schema, so the estimate is given ``--reask-rate 0``
(what a first run's log would tell it); ``--prior`` estimates at the prior's 5% instead.

Per market and model it prints the estimate (the mean of its two plays) against the run for
calls, requests, prompt, cached prompt and completion tokens and dollars, with the error in
percent, and whether the estimate's dollar range covers the run; then the largest error per
quantity over the markets. Target (issue 47): calls, prompt tokens and dollars within 25%.

    .venv/bin/python benchmarks/bench_estimate.py [--markets crash english_auction] [--prior]
        [--pilot N]

``--pilot N``: each model's estimate is made with its own pilot of N episodes (``pilot.py``; the
re-ask rate is the pilot's), in a response cache of its own, so the real run pays in full.

``--cases``: issue 56's cases instead (:data:`CASES`), each instance with ten or more LLM episodes
and a pilot of a tenth of them (``--pilot N``: N), the estimate before any run at the prior re-ask
rate (no run log yet) with its printed ranges of calls and dollars: a double_auction entrant whose
first answer is free text 28% of the time (``flaky``; re-asked, then valid), and random answers;
an english_auction bidder raising by the minimum up to its full estimate (``eager``), and random
answers; a lemon buyer that always bids on the cheapest listing (``cheapest``); a supply_chain
retailer answering at random; a crash firm selling at half its unit cost (``underpricer``: it goes
bankrupt early), and the sensible firm; and in double_auction and english_auction the two models
above.

    .venv/bin/python benchmarks/bench_estimate.py --cases [--markets lemon crash]

Prints figures; asserts nothing.
"""

from __future__ import annotations

# isort: off
import marketarena  # noqa: F401 - first, before pandas: pins numpy's CPU path (its docstring)

# isort: on
import argparse
import hashlib
import json
import re
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from marketarena.config import parse_params
from marketarena.core.reader import EpisodeReader
from marketarena.estimate import estimate
from marketarena.llm.fake import FakeEndpoint, prompt_caching, schema_answer, with_usage
from marketarena.pipeline import Paths, run_embed, run_personas, run_reference
from marketarena.simulate import load_inputs, simulate

ROOT = Path(__file__).resolve().parents[1]
MARKETS = (
    "double_auction",
    "cournot",
    "bertrand",
    "supply_chain",
    "crash",
    "lemon",
    "english_auction",
)
MODEL = {
    "model": "fake-model",
    "base_url": "http://fake.invalid/v1",
    "api_key_env": None,
    "max_tokens": 400,
    "max_concurrency": 4,
    "price_in_per_mtok": 1.0,
    "price_cached_in_per_mtok": 0.1,
    "price_out_per_mtok": 4.0,
    # both models answer with bare JSON (completion_priors.py: in crash and lemon the prior is
    # Agent Bazaar's bare answers, elsewhere the mock's)
    "answers_like": "bare_json",
}
MONEY = r"\$(-?[\d,]+(?:\.\d+)?)"


def amount(text: str) -> float:
    return float(text.replace(",", ""))


def block_for(kind: str) -> dict:
    """The market's tiny instance with one LLM seat named ``gpt`` (or taking a seat's name)."""
    block = yaml.safe_load(
        (ROOT / "lib/marketarena/markets" / kind / "tiny_params.yaml").read_text()
    )
    llm = {"name": "gpt", "kind": "llm", "model": "fake"}
    if kind == "double_auction":
        block.update(pool=[e["name"] for e in block["roster"]], entrant_games=12, rounds=12)
        block["roster"].append(llm)
        return block
    seat = {
        "cournot": "myopic",
        "bertrand": "qlearning",
        "supply_chain": "volume",
        "crash": "myopic",
        "lemon": "naive",
        "english_auction": "increment",
    }[kind]
    block["roster"] = [{**llm, "name": seat} if e["name"] == seat else e for e in block["roster"]]
    if kind in ("cournot", "bertrand"):
        block["runs"] = 6
    if kind == "crash":
        block.update(days=60, runs=8)
    if kind == "english_auction":
        block["runs"] = 8
    return block


def sensible(body: dict):
    """The ``sensible`` model (module docstring), from the request's schema and prompt."""
    props = body["response_format"]["json_schema"]["schema"].get("properties", {})
    messages = body["messages"]
    text = messages[-1]["content"]
    everything = "\n".join(m["content"] or "" for m in messages)
    if "chosen_quantities" in props:
        return with_usage(
            body,
            {
                "observations_and_thoughts": "steady",
                "new_content": {"PLANS.txt": "hold", "INSIGHTS.txt": "A dearer"},
                "chosen_quantities": {"Product_A": 20, "Product_B": 10},
            },
        )
    if "quote" in props:
        value = int(re.search(r"Your private (?:value|cost): (\d+)", text).group(1))
        return with_usage(
            body, {"quote": max(0, value - 5) if "(buyer)" in text else min(100, value + 5)}
        )
    if "supply" in props and "price" in props:  # crash
        cost = amount(re.search(r"Unit cost: " + MONEY, text).group(1))
        stock = amount(re.search(r"Your stock: (-?[\d,.]+) units", text).group(1))
        return with_usage(body, {"price": round(1.2 * cost, 2), "supply": max(0.0, 10 - stock)})
    if "decision" in props:  # lemon: buy or pass
        listings = re.findall(
            r"- listing (\S+): price " + MONEY + r"(?:, seller reputation ([\d.]+))?", text
        )
        scored = [(float(rep or 0.5), -amount(price), name) for name, price, rep in listings]
        best = max(scored, default=None)
        if best is None or best[0] < 0.4:
            return with_usage(body, {"decision": "pass", "listing": None})
        return with_usage(body, {"decision": "bid", "listing": best[2]})
    if "vote" in props:
        surplus = amount(re.search(r"your surplus: " + MONEY, text).group(1))
        return with_usage(body, {"vote": "up" if surplus >= 0 else "down"})
    if "bid" in props:  # english_auction
        return with_usage(body, {"reasoning": "within my estimate", "bid": bid(everything, text)})
    if "remaining_budget" in props:
        return with_usage(body, belief(text))
    return schema_answer(body)


def bid(everything: str, text: str, share: float = 0.8) -> float | None:
    """The sensible bid: the starting price, then the minimum raise up to ``share`` of the
    bidder's estimate of the item (None: it drops out)."""
    estimates = {}
    for name, _, value in re.findall(
        r"\d+\. ([^,\n]+), starting price is "
        + MONEY
        + r"\. Your estimated value for this item is "
        + MONEY,
        everything,
    ):
        estimates[name.strip()] = amount(value)
    opening = re.search(
        r"please bid on (.+?)\. The starting price for bidding for .+? is " + MONEY, text
    )
    if opening:
        return amount(opening.group(2))
    now = re.search(
        r"Now we have " + MONEY + r" from (.+?) for (.+?)\. The minimum increase over "
        r"this highest bid is " + MONEY,
        text,
    )
    if not now or now.group(2).startswith("You ("):
        return None
    item_started = re.findall(r"please bid on (.+?)\. The starting", everything)
    item = item_started[-1] if item_started else now.group(3)
    offer = amount(now.group(1)) + amount(now.group(4))
    return offer if offer <= share * estimates.get(item.strip(), 0.0) else None


def belief(text: str) -> dict:
    """The status after this item, computed from the previous status and the outcome."""
    me = re.search(r"As (.+?), you have to update", text).group(1)
    status = text[text.index("Here's your previous status") :]
    remaining = amount(re.search(r"Remaining Budget: " + MONEY, status).group(1))
    profits_part = status[status.index("Total Profits") : status.index("Winning Bids")]
    profits = {b.strip(): amount(v) for b, v in re.findall(r"\* (.+?): " + MONEY, profits_part)}
    bids_part = status[status.index("Winning Bids") :]
    winning: dict[str, dict[str, float]] = {}
    bidder = None
    for line in bids_part.splitlines()[1:]:
        top = re.match(r"  \* (.+?):\s*$", line)
        item = re.match(r"    \* (.+?): " + MONEY, line)
        if top:
            bidder = top.group(1)
            winning[bidder] = {}
        elif item and bidder is not None:
            winning[bidder][item.group(1)] = amount(item.group(2))
    sold = re.search(
        r"Sold! (.+?) to (.+?) at " + MONEY + r"! The true value for .+? is " + MONEY, text
    )
    if sold:
        item, winner, price, value = (
            sold.group(1),
            sold.group(2),
            amount(sold.group(3)),
            amount(sold.group(4)),
        )
        profits[winner] = profits.get(winner, 0.0) + value - price
        winning.setdefault(winner, {})[item] = price
        if winner == me:
            remaining -= price
    return {
        "summary": "noted",
        "remaining_budget": remaining,
        "total_profits": profits,
        "winning_bids": winning,
    }


def eager(body):
    """An english_auction bidder that raises by the minimum up to its full estimate (more
    rounds than any baseline of the roster), sensible elsewhere."""
    if "bid" not in body["response_format"]["json_schema"]["schema"].get("properties", {}):
        return sensible(body)
    messages = body["messages"]
    everything = "\n".join(m["content"] or "" for m in messages)
    offer = bid(everything, messages[-1]["content"], share=1.0)
    return with_usage(body, {"reasoning": "up to my estimate", "bid": offer})


def flaky(body, share: float = 0.28):
    """double_auction's sensible quotes, in free text on ``share`` of first asks (a hash of the
    request decides; the re-ask is answered validly)."""
    messages = body["messages"]
    if any(m["role"] == "assistant" for m in messages):
        return with_usage(body, sensible({**body, "messages": messages[:2]}).content)
    if int(hashlib.sha256(json.dumps(body).encode()).hexdigest(), 16) % 10_000 < share * 10_000:
        return with_usage(body, "I quote 50")
    return sensible(body)


def cheapest(body):
    """A lemon buyer that always bids on the cheapest listing (whatever the reputation), and
    votes by its surplus; sensible elsewhere."""
    props = body["response_format"]["json_schema"]["schema"].get("properties", {})
    if "decision" not in props:
        return sensible(body)
    text = body["messages"][-1]["content"]
    listings = re.findall(r"- listing (\S+): price " + MONEY, text)
    if not listings:
        return with_usage(body, {"decision": "pass", "listing": None})
    name = min(listings, key=lambda x: amount(x[1]))[0]
    return with_usage(body, {"decision": "bid", "listing": name})


def underpricer(body):
    """A crash firm that sells at half its unit cost and restocks to 30 units: it loses money on
    every sale and goes bankrupt early; sensible elsewhere."""
    props = body["response_format"]["json_schema"]["schema"].get("properties", {})
    if not ("supply" in props and "price" in props):
        return sensible(body)
    text = body["messages"][-1]["content"]
    cost = amount(re.search(r"Unit cost: " + MONEY, text).group(1))
    stock = amount(re.search(r"Your stock: (-?[\d,.]+) units", text).group(1))
    return with_usage(body, {"price": round(0.5 * cost, 2), "supply": max(0.0, 30 - stock)})


def run_totals(eps: Path, runs: Path) -> dict[str, float]:
    calls = EpisodeReader(eps).table("llm_calls")
    costs = pd.concat(pd.read_parquet(p) for p in runs.rglob("llm_costs.parquet"))
    return {
        "calls": len(calls),
        "requests": int(calls["attempts"].sum()),
        "prompt": int(calls["prompt_tokens"].sum()),
        "cached": int(calls["cached_prompt_tokens"].sum()),
        "completion": int(calls["completion_tokens"].sum()),
        "usd": float(costs["cost_usd"].sum()),
    }


def figures(m) -> dict[str, float]:
    """The estimate's figures for one model (``estimate.ModelEstimate``)."""
    return {
        "calls": m.calls,
        "requests": m.requests,
        "prompt": m.prompt_tokens,
        "cached": m.cached_prompt_tokens,
        "completion": m.completion_tokens,
        "usd": m.cost_usd,
    }


def bench(
    kind: str,
    tmp: Path,
    reask_rate: float | None,
    pilot: int = 0,
    models: tuple = (("sensible", sensible), ("random", schema_answer)),
    block: dict | None = None,
) -> list[dict]:
    """Per model of ``models`` ((name, responder) pairs): the estimate before any run (its
    ranges), with its own pilot of ``pilot`` episodes, and the run. ``block``: the instance's
    keys over ``block_for(kind)``'s."""
    params = parse_params(
        {
            "models": {"fake": MODEL},
            "llm": {"cache_dir": str(tmp / "llm")},
            "embedding": {"cache_dir": str(tmp / "emb")},
            "markets": {kind: {**block_for(kind), **(block or {})}},
        }
    )
    paths = Paths(tmp)
    if kind == "supply_chain" and not paths.personas.exists():
        run_personas(params, paths)
        run_embed(params, paths)
    run_reference(kind, params, paths)
    _, resources = load_inputs(kind, params, paths.data)
    t0 = time.perf_counter()
    found = estimate(kind, params, resources, sample=None, reask_rate=reask_rate)
    took = time.perf_counter() - t0
    (dry,) = found.models
    if pilot < 0:  # a tenth of the run's LLM episodes (at least one)
        pilot = max(1, found.episodes // 10)
    rows = []
    for name, responder in models:
        m = dry
        if pilot:  # this model's own pilot, in a response cache of its own (the run pays in full)
            piloted = params.model_copy(
                update={
                    "llm": params.llm.model_copy(
                        update={"cache_dir": tmp / f"llm-{kind}-{name}-pilot"}
                    )
                }
            )
            (m,) = estimate(
                kind,
                piloted,
                resources,
                sample=None,
                pilot=pilot,
                openai_factory=FakeEndpoint(responder=prompt_caching(responder)).factory,
            ).models
        est = figures(m)
        fake = FakeEndpoint(responder=prompt_caching(responder))
        out = tmp / f"{kind}-{name}"
        own = params.model_copy(
            update={
                "llm": params.llm.model_copy(  # its own response cache
                    update={"cache_dir": tmp / f"llm-{kind}-{name}"}
                )
            }
        )
        simulate(
            kind,
            own,
            paths.data,
            out,
            progress=False,
            openai_factory=fake.factory,
            run_dir=tmp / f"{kind}-{name}.runs",
        )
        real = run_totals(out, tmp / f"{kind}-{name}.runs")
        rows.append(
            {
                "market": kind,
                "model": name,
                "pilot": pilot,
                "estimate_s": round(took, 1),
                "plays": {p: round(t.calls) for p, t in m.plays.items()},
                "episodes": found.episodes,
                "covered": m.cost_lo <= real["usd"] <= m.cost_hi,
                # before any run: the dry run's printed ranges (calls, dollars)
                "covered_before": dry.calls_lo <= real["calls"] <= dry.calls_hi
                and dry.cost_lo <= real["usd"] <= dry.cost_hi,
                "calls_lo_before": dry.calls_lo,
                "calls_hi_before": dry.calls_hi,
                "usd_lo_before": dry.cost_lo,
                "usd_hi_before": dry.cost_hi,
                "usd_lo": m.cost_lo,
                "usd_hi": m.cost_hi,
                "prefix_share": round(m.prefix_share, 3),
                **{f"{k}_est": v for k, v in est.items()},
                **{f"{k}_run": v for k, v in real.items()},
                **{
                    f"{k}_err": (est[k] - real[k]) / real[k] if real[k] else float("nan")
                    for k in est
                },
                **{  # the dry run's point, beside the pilot's
                    f"{k}_dry_err": (v - real[k]) / real[k] if real[k] else float("nan")
                    for k, v in figures(dry).items()
                },
            }
        )
    return rows


#: issue 56's cases (market -> its models, the instance's keys over ``block_for``'s): ten or more
#: LLM episodes each, so that a pilot of one is at most a tenth of the run
CASES = {
    "double_auction": (
        (("flaky", flaky), ("sensible", sensible), ("random", schema_answer)),
        {},
    ),
    "english_auction": (
        (("eager", eager), ("sensible", sensible), ("random", schema_answer)),
        {"runs": 10},
    ),
    "lemon": ((("cheapest", cheapest),), {"runs": 20}),  # the buyer sits in half the runs
    "supply_chain": ((("random", schema_answer),), {"runs": 10}),
    "crash": ((("underpricer", underpricer), ("sensible", sensible)), {"runs": 11}),
}


def show(r: dict, piloted: bool) -> str:
    """One row as the benchmark prints it."""
    return (
        f"{r['market']:16s} {r['model']:11s} plays {r['plays']}  "
        + "  ".join(
            f"{k} {r[k + '_est']:,.4g}/{r[k + '_run']:,.4g} ({r[k + '_err']:+.0%})"
            for k in ("calls", "requests", "prompt", "cached", "completion", "usd")
        )
        + f"  range covers the run: {r['covered']}"
        + (
            f"  pilot {r['pilot']} of {r['episodes']}; before it: "
            + "  ".join(
                f"{k} {r[k + '_dry_err']:+.0%}" for k in ("calls", "prompt", "completion", "usd")
            )
            + f", calls {r['calls_lo_before']:,.0f} to {r['calls_hi_before']:,.0f}, "
            f"${r['usd_lo_before']:.4f} to ${r['usd_hi_before']:.4f}: "
            f"{'holds' if r['covered_before'] else 'MISSES'} the run"
            if piloted
            else ""
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markets", nargs="*", default=list(MARKETS))
    ap.add_argument("--prior", action="store_true", help="estimate at the prior re-ask rate")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument(
        "--pilot",
        type=int,
        default=0,
        help="the point from this many episodes played with each model first (estimate --pilot)",
    )
    ap.add_argument(
        "--cases",
        action="store_true",
        help="issue 56's cases (CASES), estimated at the prior re-ask rate before any run and "
        "after a pilot of a tenth of the LLM episodes (or --pilot)",
    )
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-estimate-") as tmp:
        for kind in args.markets:
            if args.cases:
                if kind not in CASES:
                    continue
                models, block = CASES[kind]
                got = bench(kind, Path(tmp), None, args.pilot or -1, models, block)
            else:
                got = bench(kind, Path(tmp), None if args.prior else 0.0, args.pilot)
            rows += got
            for r in got:
                print(show(r, bool(args.pilot or args.cases)), flush=True)
    frame = pd.DataFrame(rows)
    print("\nlargest |error| over the markets (estimate / run - 1):")
    for model, g in frame.groupby("model"):
        print(
            f"  {model:8s} "
            + "  ".join(
                f"{k} {g[k + '_err'].abs().max():.0%}"
                for k in ("calls", "requests", "prompt", "cached", "completion", "usd")
            )
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
