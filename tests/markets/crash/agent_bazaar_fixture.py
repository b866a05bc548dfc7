"""Two crash runs written by hand in the schema of Agent Bazaar's published logs (``logs-data/
exp1_<model>/<run>/``: ``state_t<N>.json``, ``experiment_args.json``, ``firm_attributes.json``,
``consumer_attributes.json``, ``<name>_token_usage.json``), every number worked out by hand from
the authors' engine (unit cost 1, overhead 14 / 7 = 2 a day, tax 5% of the cash after overhead,
a platform fee of 5% of the cash after the tax; a shopper orders its income over the mean posted
quote from the cheapest firm it saw, capped at its cash, which keeps what it does not spend).

Run 1, ``exp1_vendor_test-model_stab_1_dlc1_seed8`` (model ``vendor/test-model``, one stabilizing
firm, discovery limit 1, 3 days planned, 2 logged: truncated): firms ``competitive_1`` (A) and
``stabilizing_firm`` (B), cash 500; consumers c0, c1, c2 of income 6, 3, 9.

  day 0: A price 2 buys 10, B price 3 buys 5; mean quote 2.5. c0 sees A: wants 6 / 2.5 = 2.4,
         pays 4.8 of its 6; c1 sees B: wants 1.2 = 3.6, has 3: buys 1.0. c2 does not shop.
         A: 500 - 10 + 4.8 = 494.8, - 2 = 492.8, tax 24.64, 468.16, fee 23.408, ends 444.752
         (profit -55.248, 7.6 unsold); B: 500 - 5 + 3 = 498, - 2 = 496, tax 24.8, 471.2, fee
         23.56, ends 447.64 (profit -52.36, 4 unsold). Consumers' cash: 1.2, 0, 9.
  day 1: A price 1 buys 0, B price 3 buys 0; mean quote 2. A fills c2 first (wants 4.5, has 18),
         then c0 (wants 3, has 7.2): 7.5 units, 7.5. A: 444.752 + 7.5 - 2 = 450.252, tax
         22.5126, fee 21.38697, ends 406.35243 (profit -38.39957); B: 447.64 - 2 = 445.64, tax
         22.282, fee 21.1679, ends 402.1901 (profit -45.4499). Cash: 4.2, 3, 13.5.

Run 2, ``exp1_vendor_test-model_stab_0_dlc1_seed16`` (no stabilizing firm, 1 day planned and
logged: full; no token usage file): firms ``competitive_1``, ``competitive_2``, cash 3.

  day 0: competitive_1 price 2 buys 2 (cash 1), sells nothing: it cannot pay the overhead of 2,
         pays its 1 and is out with cash 0 (profit -3); competitive_2 price 1.5 buys 1 (cash 2);
         mean quote 1.75; c0 sees competitive_2, wants 6 / 1.75 = 3.43, gets the 1 unit: 1.5;
         2 + 1.5 - 2 = 1.5, tax 0.075, fee 0.07125, ends 1.35375 (profit -1.64625).
"""

from __future__ import annotations

import json
from pathlib import Path

MODEL = "vendor/test-model"
FOLDER = "exp1_vendor_test-model"
RUN1 = "exp1_vendor_test-model_stab_1_dlc1_seed8"
RUN2 = "exp1_vendor_test-model_stab_0_dlc1_seed16"
INCOME = {0: 6.0, 1: 3.0, 2: 9.0}


def firm(name, in_business, cash, profit, price, bought, stock, sales, overhead, tax, fee):
    return {
        "name": name,
        "in_business": in_business,
        "persona": None if "stab" in name else "competitive",
        "cash": cash,
        "profit": profit,
        "reputation": 1.0,
        "upvotes": 0.0,
        "downvotes": 0.0,
        "expenses_info": {
            "supply_cost": bought,
            "overhead_costs": overhead,
            "taxes_paid": tax,
            "platform_fees": fee,
            "supply_by_good": [
                {"good": "food", "quantity": bought, "unit_cost": 1.0, "total_cost": bought}
            ],
        },
        "sales_info": [
            {"good": "food", "quantity_sold": q, "requested_quantity": r, "price": p}
            for q, r, p in sales
        ],
        "prices": {"food": price} if price is not None else {},
        "inventory": {"supply": 0.0, "food": stock},
        "diary": [],
        "sybil": False,
    }


def consumer(i, cash, bought, seen=None, surplus=0.0):
    disc = (
        {}
        if seen is None
        else {"food": {"seen": seen, "ordered": seen[0], "prices_seen": {s: 0.0 for s in seen}}}
    )
    return {
        "name": f"consumer_{i}",
        "labor": 40.0,
        "income": INCOME[i],
        "cash": cash,
        "utility": 0.0,
        "inventory": {"food": bought},
        "willingness_to_pay": {"food": 1.0},
        "consumer_surplus": surplus,
        "discovery_this_step": disc,
    }


def state(t, firms, consumers):
    return {
        "timestep": t,
        "ledger": {"money": {}, "inventories": {}},
        "firms": firms,
        "consumers": consumers,
        "total_fees": 0.0,
        "filled_orders_count": sum(len(f["sales_info"]) for f in firms),
        "filled_orders_count_by_firm": {},
        "views_by_firm": {},
        "shock": {"applied": False},
    }


def args(name, seed, stab, dlc, days, cash, firms):
    return {
        "num_firms": firms,
        "num_consumers": 3,
        "firm_type": "LLM",
        "unit_cost": 2.0,
        "discovery_limit_consumers": dlc,
        "poisson_demand_lambda": 1.8,
        "num_stabilizing_firms": stab,
        "max_timesteps": days,
        "firm_initial_cash": cash,
        "firm_tax_rate": 0.05,
        "consumer_scenario": "THE_CRASH",
        "llm": MODEL,
        "seed": seed,
        "name": name,
        "prompt_algo": "cot",
        "max_tokens": 2000,
        "overhead_costs": 14.0,
        "log_crash_firm_prompts": stab == 1,
        "wtp_algo": "none",
    }


RUNS = {
    RUN1: {
        "args": args(RUN1, 8, 1, 1, 3, 500.0, 2),
        "tokens": {"input_tokens": 1200, "output_tokens": 300, "requests": 4},
        "states": [
            state(
                0,
                [
                    firm(
                        "competitive_1",
                        True,
                        444.752,
                        -55.248,
                        2.0,
                        10.0,
                        7.6,
                        [(2.4, 2.4, 2.0)],
                        2.0,
                        24.64,
                        23.408,
                    ),
                    firm(
                        "stabilizing_firm",
                        True,
                        447.64,
                        -52.36,
                        3.0,
                        5.0,
                        4.0,
                        [(1.0, 1.2, 3.0)],
                        2.0,
                        24.8,
                        23.56,
                    ),
                ],
                [
                    consumer(0, 1.2, 2.4, ["competitive_1"], 1.2),
                    consumer(1, 0.0, 1.0, ["stabilizing_firm"], 0.0),
                    consumer(2, 9.0, 0.0),
                ],
            ),
            state(
                1,
                [
                    firm(
                        "competitive_1",
                        True,
                        406.35243,
                        -38.39957,
                        1.0,
                        0.0,
                        0.1,
                        [(4.5, 4.5, 1.0), (3.0, 3.0, 1.0)],
                        2.0,
                        22.5126,
                        21.38697,
                    ),
                    firm(
                        "stabilizing_firm",
                        True,
                        402.1901,
                        -45.4499,
                        3.0,
                        0.0,
                        4.0,
                        [],
                        2.0,
                        22.282,
                        21.1679,
                    ),
                ],
                [
                    consumer(0, 4.2, 3.0, ["competitive_1"], 1.5),
                    consumer(1, 3.0, 0.0),
                    consumer(2, 13.5, 4.5, ["competitive_1"], 2.5),
                ],
            ),
        ],
    },
    RUN2: {
        "args": args(RUN2, 16, 0, 1, 1, 3.0, 2),
        "tokens": None,
        "states": [
            state(
                0,
                [
                    firm("competitive_1", False, 0.0, -3.0, 2.0, 2.0, 2.0, [], 1.0, 0.0, 0.0),
                    firm(
                        "competitive_2",
                        True,
                        1.35375,
                        -1.64625,
                        1.5,
                        1.0,
                        0.0,
                        [(1.0, 6.0 / 1.75, 1.5)],
                        2.0,
                        0.075,
                        0.07125,
                    ),
                ],
                [
                    consumer(0, 4.5, 1.0, ["competitive_2"], 0.5),
                    consumer(1, 3.0, 0.0),
                    consumer(2, 9.0, 0.0),
                ],
            ),
        ],
    },
}


def write(root: Path, runs: dict | None = None, folder: str = FOLDER) -> Path:
    """The fixture as a ``logs-data`` folder under ``root``; returns it."""
    logs = Path(root)
    for name, run in (runs or RUNS).items():
        d = logs / folder / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "experiment_args.json").write_text(json.dumps(run["args"], indent=2))
        firms = [f["name"] for f in run["states"][0]["firms"]]
        (d / "firm_attributes.json").write_text(
            json.dumps(
                [
                    {
                        "name": f,
                        "goods": ["food"],
                        "supply_unit_costs": {"food": 1.0},
                        "persona": None if "stab" in f else "competitive",
                        "system_prompt": f"You are a firm manager named {f}.",
                    }
                    for f in firms
                ]
            )
        )
        (d / "consumer_attributes.json").write_text(
            json.dumps([{"name": f"consumer_{i}", "sigma": 5.0} for i in INCOME])
        )
        if run["tokens"] is not None:
            (d / f"{name}_token_usage.json").write_text(json.dumps(run["tokens"]))
        for s in run["states"]:
            (d / f"state_t{s['timestep']}.json").write_text(json.dumps(s, indent=1))
    (logs / "exp2_other-market").mkdir(exist_ok=True)  # the lemon experiment: not crash's
    return logs
