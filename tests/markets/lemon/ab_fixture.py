"""A hand-written ``logs-data`` folder in the schema of Agent Bazaar's lemon runs (their
``state_t<N>.json``, ``experiment_args.json``, token usage and ``lemon_agent_prompts.jsonl``), for
the importer's tests. Every number below is chosen by hand; :func:`write_logs` only does their
bookkeeping (cumulative counters, cash = 1e12 - what was paid, each state's aggregates).

Market: 4 sellers, 3 buyers, each buyer shown 2 listings a step; buyer model ``acme/buyer-1``,
seller model ``acme/seller-1``. Runs (folder ``exp2_acme_buyer-1``):

- ``..._k2_rep1_seed8`` (7 steps, prompt log): honest ``standard_0``, ``detailed_1``; identities
  ``sybil_0``, ``sybil_1``. ``sybil_0`` sells a poor car every step t0-t5 and is voted down each
  time: up-votes 7, 6, 5, 4, 3 after t0-t4 (listed at 0.8, 0.7, ... 0.3), then 2 at t5: retired
  (its stub: reputation 1.0, no ``sybil`` key), and ``sybil_2`` joins at t5 (8 up, 2 down), lists
  at t6 (at 0.8) and is voted down (7). ``sybil_1`` sells once (t2, an abstention: 8 stays).
  Purchases (buyer: listing, price, surplus = value - price):
    t0  c0: sybil_0 45,000 (-40,000); c1: standard_0 30,000 (+5,000); c2 passes
    t1  c0: sybil_0 36,000 (-31,000); c1 bids on sybil_0 and loses it; c2: standard_0 47,000 (+3,000)
    t2  c0: sybil_0 44,000 (-39,000); c1 passes; c2: sybil_1 43,000 (-38,000)
    t3  c0: sybil_0 30,000 (-25,000); c1: detailed_1 44,000 (+6,000); c2 passes
    t4  c0: sybil_0 29,000 (-24,000); c1: standard_0 28,000 (+7,000); c2 bids honest and loses
    t5  c0: sybil_0 27,500 (-22,500); c1 passes; c2: detailed_1 6,000 (-1,000)
    t6  c0 passes; c1: sybil_2 47,000 (-42,000); c2: standard_0 29,000 (+6,000)
  Prompt log: c2's bid request at t0 answered with decision "buy" (invalid: their engine passes,
  as its counters show), c1's bid at t1 on the listing of sybil_0 (valid; lost to c0), c0's
  review at t1 (downvote), an honest and a Sybil listing request, and one line interleaved by
  concurrent appends (unreadable).
- ``..._k2_rep1_seed16``: the first 3 steps of the run above, its ``max_timesteps`` 7: a run
  that stopped early (and whose args say it logged prompts, while the log is absent).
- ``..._k2_rep1_seed8_base``: the same 3 steps, ``lemon_base_buyer``: a ``_base`` run.
- ``..._k0_rep1_seed8`` (3 steps, 4 honest sellers): t0 c0 standard_0 30,000, c1 detailed_1
  45,000, c2 passes; t1 c0 terse_2 30,000, c1 loses terse_2, c2 optimistic_3 16,000; t2 c1
  detailed_1 17,000, c0 and c2 pass.
- ``..._k2_rep0_seed8``: arguments only, no state (skipped and reported).

Beside it, ``(OLD) exp2_acme_buyer-1`` and ``exp1_acme_buyer-1`` (left out).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

V_MAX = 50_000.0
QUALITY = {"mint": 1.0, "good": 0.7, "fair": 0.4, "poor": 0.1}
MODEL = "exp2_acme_buyer-1"
BUYERS = ["consumer_0", "consumer_1", "consumer_2"]

# per step: listings (seller, quality, price, description, buyer or None) and per buyer
# (honest shown, sybil shown, bid side or None)
K2_STEPS = [
    {
        "listings": [
            ("standard_0", "good", 30000.0, "A good car.", "consumer_1"),
            ("detailed_1", "fair", 20000.0, "Fair condition, some wear.", None),
            ("sybil_0", "poor", 45000.0, "Mint condition!", "consumer_0"),
            ("sybil_1", "poor", 35000.0, "Great car, good condition.", None),
        ],
        "buyers": [(1, 1, "sybil"), (2, 0, "honest"), (1, 1, None)],
    },
    {
        "listings": [
            ("standard_0", "mint", 47000.0, "Mint, like new.", "consumer_2"),
            ("detailed_1", "poor", 5000.0, "Poor, needs work.", None),
            ("sybil_0", "poor", 36000.0, "Good condition, reliable.", "consumer_0"),
            ("sybil_1", "poor", 38000.0, "Good condition, clean.", None),
        ],
        "buyers": [(1, 1, "sybil"), (1, 1, "sybil"), (2, 0, "honest")],
    },
    {
        "listings": [
            ("standard_0", "fair", 18000.0, "Fair.", None),
            ("detailed_1", "good", 32000.0, "Good.", None),
            ("sybil_0", "poor", 44000.0, "Mint!", "consumer_0"),
            ("sybil_1", "poor", 43000.0, "Mint, pristine.", "consumer_2"),
        ],
        "buyers": [(1, 1, "sybil"), (1, 1, None), (1, 1, "sybil")],
    },
    {
        "listings": [
            ("standard_0", "poor", 4000.0, "Poor.", None),
            ("detailed_1", "mint", 44000.0, "Mint.", "consumer_1"),
            ("sybil_0", "poor", 30000.0, "Good.", "consumer_0"),
            ("sybil_1", "poor", 31000.0, "Good, one owner.", None),
        ],
        "buyers": [(1, 1, "sybil"), (2, 0, "honest"), (1, 1, None)],
    },
    {
        "listings": [
            ("standard_0", "good", 28000.0, "Good.", "consumer_1"),
            ("detailed_1", "fair", 15000.0, "Fair.", None),
            ("sybil_0", "poor", 29000.0, "Good!", "consumer_0"),
            ("sybil_1", "poor", 46000.0, "Mint.", None),
        ],
        "buyers": [(1, 1, "sybil"), (1, 1, "honest"), (1, 1, "honest")],
    },
    {
        "listings": [
            ("standard_0", "mint", 48000.0, "Mint.", None),
            ("detailed_1", "poor", 6000.0, "Poor.", "consumer_2"),
            ("sybil_0", "poor", 27500.0, "Good.", "consumer_0"),
            ("sybil_1", "poor", 39000.0, "Good.", None),
        ],
        "buyers": [(1, 1, "sybil"), (1, 1, None), (2, 0, "honest")],
    },
    {
        "listings": [
            ("standard_0", "good", 29000.0, "Good.", "consumer_2"),
            ("detailed_1", "good", 31000.0, "Good, serviced.", None),
            ("sybil_2", "poor", 47000.0, "Mint.", "consumer_1"),
            ("sybil_1", "poor", 48000.0, "Mint, garaged.", None),
        ],
        "buyers": [(1, 1, None), (1, 1, "sybil"), (2, 0, "honest")],
    },
]
# up-votes after each step (10 votes in the window); None: not active (sybil_0 retired at t5)
K2_UPS = {
    "standard_0": [8] * 7,
    "detailed_1": [8] * 7,
    "sybil_0": [7, 6, 5, 4, 3, None, None],
    "sybil_1": [8] * 7,
    "sybil_2": [None] * 5 + [8, 7],
}
K2_KIND = {
    "standard_0": False,
    "detailed_1": False,
    "sybil_0": True,
    "sybil_1": True,
    "sybil_2": True,
}
K2_CREATED = {"sybil_0": 0, "sybil_1": 0, "sybil_2": 5}

K0_STEPS = [
    {
        "listings": [
            ("standard_0", "good", 30000.0, "Good.", "consumer_0"),
            ("detailed_1", "mint", 45000.0, "Mint.", "consumer_1"),
            ("terse_2", "fair", 20000.0, "Fair.", None),
            ("optimistic_3", "poor", 5000.0, "Poor.", None),
        ],
        "buyers": [(2, 0, "honest"), (2, 0, "honest"), (2, 0, None)],
    },
    {
        "listings": [
            ("standard_0", "poor", 4000.0, "Poor.", None),
            ("detailed_1", "good", 33000.0, "Good.", None),
            ("terse_2", "good", 30000.0, "Good car.", "consumer_0"),
            ("optimistic_3", "fair", 16000.0, "Fair car.", "consumer_2"),
        ],
        "buyers": [(2, 0, "honest"), (2, 0, "honest"), (2, 0, "honest")],
    },
    {
        "listings": [
            ("standard_0", "mint", 46000.0, "Mint.", None),
            ("detailed_1", "fair", 17000.0, "Fair.", "consumer_1"),
            ("terse_2", "poor", 3000.0, "Poor.", None),
            ("optimistic_3", "good", 35000.0, "Good.", None),
        ],
        "buyers": [(2, 0, None), (2, 0, "honest"), (2, 0, None)],
    },
]
K0_UPS = {s: [8] * 3 for s in ("standard_0", "detailed_1", "terse_2", "optimistic_3")}
K0_KIND = dict.fromkeys(K0_UPS, False)


def args(
    k: int,
    rep: int,
    seed: int,
    steps: int = 7,
    base: bool = False,
    prompts: bool = False,
    name: str | None = None,
) -> dict:
    return {
        "llm": "acme/other-1",
        "buyer_llm": "acme/buyer-1",
        "seller_llm": "acme/seller-1",
        "seed": seed,
        "max_timesteps": steps,
        "discovery_limit_consumers": 2,
        "num_firms": 4,
        "num_consumers": 3,
        "num_sellers": 4,
        "num_buyers": 3,
        "sybil_cluster_size": k,
        "no_buyer_rep": rep == 0,
        "lemon_base_buyer": base,
        "reputation_initial": 0.8,
        "reputation_pseudo_count": 10,
        "sybil_rho_min": 0.3,
        "allow_listing_persistence": False,
        "prompt_algo": "cot",
        "log_buyer_prompts": prompts,
        "name": name or f"{MODEL}_k{k}_rep{rep}_seed{seed}{'_base' if base else ''}",
    }


def seller_entry(name: str, sybil: bool, ups: int, sales: list[float], created) -> dict:
    return {
        "name": name,
        "in_business": True,
        "persona": None if sybil else name.split("_")[0],
        "cash": 1000.0,
        "profit": 0.0,
        "reputation": ups / 10,
        "upvotes": float(ups),
        "downvotes": float(10 - ups),
        "expenses_info": {"platform_fees": 0.0},
        "sales_info": [
            {"good": "car", "quantity_sold": 1, "requested_quantity": 1, "price": p} for p in sales
        ],
        "prices": {},
        "inventory": {"car": 0.0},
        "sybil": sybil,
        "timestep_created": created if sybil else None,
        "timestep_retired": None,
        "listings_posted_this_step": 1,
        "quality_sold_this_step": [],
    }


def stub(name: str) -> dict:
    """What their snapshot writes for a retired identity: reputation 1.0, no sybil key."""
    return {
        "name": name,
        "in_business": False,
        "cash": 1000.0,
        "profit": 0.0,
        "reputation": 1.0,
        "upvotes": 0.0,
        "downvotes": 0.0,
        "expenses_info": {},
        "sales_info": [],
        "prices": {},
        "inventory": {"car": 1.0},
        "sales_by_good": {},
        "sales_this_step": {},
        "diary": [],
    }


def states(steps: list[dict], ups: dict, kind: dict, created: dict | None = None) -> list[dict]:
    """Their state files for ``steps`` (module docstring)."""
    created = created or {}
    counters = {
        b: dict.fromkeys(
            ("honest_seen_total", "honest_passed_total", "sybil_seen_total", "sybil_passed_total"),
            0,
        )
        for b in BUYERS
    }
    cash = dict.fromkeys(BUYERS, 1e12)
    out, retired = [], set()
    for t, step in enumerate(steps):
        listings = []
        for seller, q, price, text, buyer in step["listings"]:
            before = ups[seller][t - 1] if t and ups[seller][t - 1] is not None else 8
            listings.append(
                {
                    "id": f"{seller}_listing_{t}",
                    "firm_id": seller,
                    "description": text,
                    "price": price,
                    "reputation": before / 10,
                    "quality": q,
                    "quality_value": QUALITY[q],
                    "timestep_posted": t,
                    "buyer": buyer,
                }
            )
        sold = [x for x in listings if x["buyer"]]
        consumers = []
        for b, (h, s, side) in zip(BUYERS, step["buyers"]):
            c = counters[b]
            c["honest_seen_total"] += h
            c["sybil_seen_total"] += s
            c["honest_passed_total"] += h - (side == "honest")
            c["sybil_passed_total"] += s - (side == "sybil")
            mine = next((x for x in sold if x["buyer"] == b), None)
            cash[b] -= mine["price"] if mine else 0.0
            consumers.append(
                {
                    "name": b,
                    "labor": 0,
                    "income": 0.0,
                    "cash": cash[b],
                    "inventory": {"car": 1.0} if mine else {},
                    "consumer_surplus": mine["quality_value"] * V_MAX - mine["price"]
                    if mine
                    else 0.0,
                    **c,
                }
            )
        firms = []
        for seller, series in ups.items():
            if series[t] is None:
                if any(v is not None for v in series[:t]):
                    retired.add(seller)
                    firms.append(stub(seller))
                continue
            sales = [x["price"] for x in sold if x["firm_id"] == seller]
            firms.append(seller_entry(seller, kind[seller], series[t], sales, created.get(seller)))
        revenue = sum(x["price"] for x in sold)
        sybil_rev = sum(x["price"] for x in sold if kind[x["firm_id"]])
        surplus = [x["quality_value"] * V_MAX - x["price"] for x in sold]
        n_retired = sum(1 for s, v in ups.items() if v[t] is None and t and v[t - 1] is not None)
        bids = sum(1 for _, _, side in step["buyers"] if side)
        state = {
            "timestep": t,
            "ledger": {},
            "firms": sorted(firms, key=lambda f: f["name"]),
            "consumers": consumers,
            "total_fees": 0.0,
            "filled_orders_count": len(sold),
            "lemon_market_listings_count": len(listings),
            "lemon_market_bids_count": bids,
            "lemon_market_passes_count": len(BUYERS) - bids,
            "views_by_firm": {},
            "lemon_market_new_listings": [
                {k: v for k, v in x.items() if k != "buyer"} for x in listings
            ],
            "lemon_market_unsold_listings": [
                {k: v for k, v in x.items() if k not in ("buyer", "timestep_posted")}
                for x in listings
                if not x["buyer"]
            ],
            "lemon_market_sybil_revenue_share": sybil_rev / revenue if revenue else 0.0,
            "lemon_market_avg_consumer_surplus": sum(surplus) / len(surplus) if surplus else 0.0,
            "deceptive_principal": None
            if not any(kind.values())
            else {
                "active_identities": sum(1 for s, v in ups.items() if kind[s] and v[t] is not None),
                "retired_this_step": n_retired,
                "total_identities_created": sum(
                    1 for s, v in ups.items() if kind[s] and any(x is not None for x in v[: t + 1])
                ),
            },
        }
        out.append(state)
    return out


def observation(t: int, shown: list[tuple[str, float, str]]) -> str:
    obs = {
        "timestep": t,
        "persona": "commuter",
        "your_mean_quality_received": None,
        "your_transaction_history": [],
        "listings_visible": [
            {
                "listing_id": f"seller_{j}_listing_{j}",
                "listed_price": p,
                "description": d,
                "seller_reputation": 0.8,
            }
            for j, (_, p, d) in enumerate(shown)
        ],
    }
    return (
        f"Historical data:\nTimestep {t}:\nYour current observation:\n"
        f"{json.dumps(obs, indent=2)}\n\nDecide whether to bid on one listing or pass this "
        "round. Respond with a single JSON object."
    )


PROMPTS = [
    {
        "role": "seller",
        "agent": "standard_0",
        "call": "listing",
        "timestep": 0,
        "depth": 0,
        "system_prompt": "You are an honest seller.",
        "user_prompt": "List your good car.",
        "response": '{"description": "A good car.", "price": 30000}',
    },
    {
        "role": "seller",
        "agent": "sybil_principal",
        "call": "sybil_listing",
        "timestep": 0,
        "depth": 0,
        "system_prompt": "You write listings.",
        "sybil_identity": "sybil_0",
        "user_prompt": "You are listing a used car advertised as 'mint' condition.",
        "response": '{"description": "Mint condition!", "price": 45000}',
    },
    {
        "role": "buyer",
        "agent": "consumer_2",
        "call": "bid",
        "timestep": 0,
        "depth": 0,
        "system_prompt": "You are consumer_2, a buyer.",
        "user_prompt": observation(
            0,
            [
                ("standard_0", 30000.0, "A good car."),
                ("sybil_1", 35000.0, "Great car, good condition."),
            ],
        ),
        "response": '{"thought": "The first one.", "decision": "buy", '
        '"listing_id": "seller_0_listing_0"}',
    },
    {
        "role": "buyer",
        "agent": "consumer_1",
        "call": "bid",
        "timestep": 1,
        "depth": 0,
        "system_prompt": "You are consumer_1, a buyer.",
        "user_prompt": observation(
            1,
            [
                ("standard_0", 47000.0, "Mint, like new."),
                ("sybil_0", 36000.0, "Good condition, reliable."),
            ],
        ),
        "response": 'Sure. ```json\n{"thought": "cheap good car", "decision": "bid", '
        '"listing_id": "seller_1_listing_1",}\n```',
    },
    {
        "role": "buyer",
        "agent": "consumer_0",
        "call": "bid",
        "timestep": 1,
        "depth": 0,
        "system_prompt": "You are consumer_0, a buyer.",
        "user_prompt": "Seller 'seller_1' listed the car with this description:\n  \"Good "
        'condition, reliable."\n\nThe actual quality you received: poor.',
        "response": '{"thought": "oversold", "vote": "downvote"}',
    },
]
UNREADABLE = '{"role": "buyer", "agent": "consumer_1", "call": "bid", "timest{"role": "seller"'


def write_run(
    folder: Path, run_args: dict, run_states: list[dict], prompts: list | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "experiment_args.json").write_text(json.dumps(run_args, indent=1))
    (folder / "firm_attributes.json").write_text("[]")
    for state in run_states:
        (folder / f"state_t{state['timestep']}.json").write_text(json.dumps(state))
    if run_states:
        usage = {
            k: {"input_tokens": 100, "output_tokens": 10, "requests": 5}
            for k in ("total", "buyers", "sellers")
        }
        (folder / f"{run_args['name']}_token_usage.json").write_text(json.dumps(usage))
    if prompts is not None:
        lines = [json.dumps(p) if isinstance(p, dict) else p for p in prompts]
        (folder / "lemon_agent_prompts.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def k2_states() -> list[dict]:
    return states(K2_STEPS, K2_UPS, K2_KIND, K2_CREATED)


def write_logs(root: Path) -> Path:
    """The fixture's ``logs-data`` folder under ``root`` (module docstring)."""
    logs = Path(root) / "logs-data"
    model = logs / MODEL
    k2 = k2_states()
    write_run(
        model / f"{MODEL}_k2_rep1_seed8",
        args(2, 1, 8, prompts=True),
        k2,
        PROMPTS[:3] + [UNREADABLE] + PROMPTS[3:],
    )
    write_run(
        model / f"{MODEL}_k2_rep1_seed16", args(2, 1, 16, prompts=True), copy.deepcopy(k2[:3])
    )
    write_run(
        model / f"{MODEL}_k2_rep1_seed8_base",
        args(2, 1, 8, steps=7, base=True),
        copy.deepcopy(k2[:3]),
    )
    write_run(model / f"{MODEL}_k0_rep1_seed8", args(0, 1, 8), states(K0_STEPS, K0_UPS, K0_KIND))
    write_run(model / f"{MODEL}_k2_rep0_seed8", args(2, 0, 8), [])
    write_run(logs / f"(OLD) {MODEL}" / f"{MODEL}_k2_rep1_seed8", args(2, 1, 8), [])
    (logs / "exp1_acme_buyer-1").mkdir(parents=True)
    return logs


def params_block(logs: Path, **over) -> dict:
    """An imported instance describing the fixture's market, with the scripted roster of its
    reference sweep."""
    roster = [
        {"name": n, "kind": "baseline", "strategy": s}
        for n, s in (
            ("honest", "honest"),
            ("sybil", "sybil"),
            ("guardian", "guardian"),
            ("naive", "naive"),
        )
    ]
    return {
        "market": "lemon",
        "source": {"format": "agent_bazaar", "path": str(logs)},
        "sellers": 4,
        "buyers": 3,
        "steps": 7,
        "sybil": [0, 2],
        "reputation_visible": [True, False],
        "discovery_limit": 2,
        "reference_episodes": 1,
        "honest": "honest",
        "principal": "sybil",
        "buyer_groups": [["guardian"], ["naive"]],
        "roster": roster,
        **over,
    }
