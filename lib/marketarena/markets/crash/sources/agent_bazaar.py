"""Agent Bazaar's published crash runs (``exp1``) as episodes of our crash log schema.

The reading is shared with lemon's (``markets/_shared/sources/agent_bazaar.py``: run discovery, arguments,
strict state files, token usage, prompt logs). Here: what a crash run's state files hold and how it
becomes our tables (``crash/market.py``'s: ``states``, ``orders``, ``days``, ``consumers``, ``setting``,
``agents``; plus ``prompts``, the firms' system prompts, and ``llm_messages`` where the run kept
its prompt log), so that our metrics, EAS, figures and the replay (``replay.py``) run on them
unchanged.

One run, one episode, id ``<model>-k<S>-d<L>-s<seed>`` (``claude-sonnet-4.6-k3-d1-s16``); its
setting is the model, the cell (stabilizing firms S, consumers' discovery limit L) and the seed.
Every firm is a seat of the player ``<model>``, the stabilizing firms (named ``stabilizing_firm``,
``stabilizing_firm_<i>`` by the authors) of ``<model>+stabilizing``; seat ids are the authors'
firm names.

What each table holds (day t is the authors' ``timestep`` t, the state file written at its end):

- ``states``, per firm in business at the start of day t: ``cash_start`` (its logged cash of day
  t - 1; 500 on day 0), ``price`` (the price it set), ``supply`` (units bought, after scaling to its
  cash: the units asked are not logged, so ``supply_asked`` is NaN), ``cost``, ``units_sold`` and
  ``revenue`` (its ``sales_info``), ``unsold`` (stock carried to the next day), ``overhead``,
  ``tax``, ``fee`` (their expenses), ``profit`` and ``cash_end`` as logged, ``bankrupt`` (out of
  business at the end of the day).
- ``orders``, per shopper of the day (a consumer with a discovery sample): the firms it saw in
  sample order (``seen_firms``, ``|``-joined; ``seen`` their count), the firm it ordered from and
  its price, ``wanted`` (its demand: income over the mean posted quote, the authors' engine),
  ``budget`` (its cash before the order: its logged cash of day t - 1 plus the day's income),
  ``filled`` (the units it got), ``spend`` and ``surplus`` (its logged consumer surplus). ``order``
  is the order the authors' engine filled them in, recovered per firm from the order of its
  ``sales_info`` (their threads' completion order, not logged as such; a shopper's requested
  quantity identifies it); a shopper that got nothing comes after the firm's fills.
- ``days``: active firms (in business at the start), shoppers, the mean price those firms set, the
  units filled and wanted, spend, surplus and the authors' market health.
- ``setting``: the cell, their engine's constants (overhead 2 a day, tax 5% of cash, a platform fee
  of 5% of the cash left after the tax, no choke price, demand on the mean quote, consumers' savings,
  limited liability: ``replay.py`` checks each against their states), the model, the seed and the
  run's status.

What a run's folder may not hold, and what then happens (all in the import report):

- no state file at all (14 runs): nothing to import;
- the last days (the process stopped: *truncated*, or every firm went bankrupt: *collapsed*, a whole
  run): imported up to the last state;
- a state that no single execution of their engine can follow from the one before (13 runs: a run
  folder that mixes the state files of two executions, found by :func:`first_break`): the run is cut
  before that day, and the report says where and why;
- the prompt log (3 runs logged one; none is in the published snapshot: 4 MiB or more).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from marketarena.core.rules import AGENT_COLUMNS
from marketarena.core.sources import SourceError, plain_name
from marketarena.markets._shared.sources import agent_bazaar as ab
from marketarena.markets.crash.joint import GOOD, STABILIZING
from marketarena.markets.crash.market import market_health
from marketarena.markets.crash.params import AUTHORS

#: their engine's constants for exp1 (the arguments every run shares; ``RunArgs`` holds the rest),
#: as the rules name them for a joint instance's runs (``crash/params.py``'s ``AUTHORS``)
# their supply price, fixed in their step loop (``--unit-cost`` is unused)
UNIT_COST = AUTHORS["unit_cost"]
PLATFORM_FEE = AUTHORS["platform_fee"]  # fixed in their step loop, on the cash left after the tax
OVERHEAD_SCALE = 1 / 7  # their overhead_costs are weekly; a step is a day
PROMPT_LOG = "crash_agent_prompts.jsonl"

Money = Annotated[float, Field(ge=-1e12, le=1e12, allow_inf_nan=False)]
Amount = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class SupplyLine(_Strict):
    quantity: Amount = 0.0


class Expenses(_Strict):
    supply_cost: Amount = 0.0
    overhead_costs: Amount = 0.0
    taxes_paid: Amount = 0.0
    platform_fees: Amount = 0.0
    supply_by_good: list[SupplyLine] = Field(default_factory=list, max_length=100)


class Sale(_Strict):
    quantity_sold: Amount
    requested_quantity: Amount
    price: Amount


class Firm(_Strict):
    name: str = Field(max_length=128)
    in_business: bool
    cash: Money
    profit: Money = 0.0
    prices: dict[str, Amount] = Field(default_factory=dict)
    inventory: dict[str, Amount] = Field(default_factory=dict)
    expenses_info: Expenses = Field(default_factory=Expenses)
    sales_info: list[Sale] = Field(default_factory=list, max_length=100_000)

    @field_validator("name")
    @classmethod
    def _plain(cls, v: str) -> str:
        return plain_name(v, "firm name")


class Discovery(_Strict):
    seen: list[str] = Field(max_length=1000)
    ordered: str | None = None


class Consumer(_Strict):
    name: str = Field(max_length=128)
    income: Amount
    cash: Money
    inventory: dict[str, Amount] = Field(default_factory=dict)
    consumer_surplus: Amount = 0.0
    discovery_this_step: dict[str, Discovery] = Field(default_factory=dict)


class CrashState(_Strict):
    timestep: int = Field(ge=0, le=100_000)
    firms: list[Firm] = Field(min_length=1, max_length=1000)
    consumers: list[Consumer] = Field(min_length=1, max_length=100_000)


def first_break(states: list[tuple[int, CrashState]]) -> tuple[int, str] | None:
    """The first day whose state no single execution of their engine can follow from the day
    before, and why: ``after the end`` (no firm was in business: their loop had stopped),
    ``re-entry`` (a bankrupt firm back in business), ``skipped`` (a firm in business did not set a
    price), ``stock`` (stock not conserved: yesterday's + bought - sold != today's, beyond 1e-6);
    None when every day follows."""
    for (_, prev), (t, now) in zip(states, states[1:]):
        before = {f.name: f for f in prev.firms}
        if not any(f.in_business for f in prev.firms):
            return t, "after the end: no firm was in business the day before"
        for f in now.firms:
            b = before.get(f.name)
            if b is None:
                return t, f"firm {f.name} appears"
            if f.in_business and not b.in_business:
                return t, f"re-entry: {f.name} back in business"
            if b.in_business and GOOD not in f.prices:
                return t, f"skipped: {f.name} in business set no price"
            if b.in_business:
                bought = sum(x.quantity for x in f.expenses_info.supply_by_good)
                sold = sum(s.quantity_sold for s in f.sales_info)
                expected = b.inventory.get(GOOD, 0.0) + bought - sold
                if abs(expected - f.inventory.get(GOOD, 0.0)) > 1e-6 * max(1.0, expected):
                    return t, f"stock: {f.name}'s food is not conserved"
    return None


def _consumer_index(name: str, path: Path) -> int:
    head, _, number = name.rpartition("_")
    if head != "consumer" or not number.isdigit():
        raise SourceError(path, f"consumer name {name[:40]!r} is not consumer_<n>")
    return int(number)


def _fill_order(
    shoppers: list[tuple[int, str, float]], sales: dict[str, list[float]]
) -> dict[int, int]:
    """Each shopper's position in the authors' clearing: per firm, the shoppers its ``sales_info``
    lists, matched by requested quantity (the same float as their demand, up to the last bits:
    the closest unmatched one), in that order; the shoppers it does not list (nothing filled)
    after them. ``shoppers``: (consumer, firm ordered, wanted)."""
    position: dict[int, tuple[int, int]] = {}
    by_firm: dict[str, list[tuple[int, float]]] = {}
    for consumer, firm, wanted in shoppers:
        by_firm.setdefault(firm, []).append((consumer, wanted))
    for firm, mine in by_firm.items():
        free = dict(mine)
        for k, requested in enumerate(sales.get(firm, ())):
            if not free:
                break
            best, gap = -1, float("inf")
            for c, w in free.items():
                d = abs(w - requested)
                if d < gap or (d == gap and c < best):
                    best, gap = c, d
            del free[best]
            position[best] = (k, best)
        for c in free:
            position[c] = (10**9, c)
    ranked = sorted(position, key=position.__getitem__)
    return {c: i for i, c in enumerate(ranked)}


def run_tables(
    run: ab.Run, args: ab.RunArgs, states: list[tuple[int, CrashState]], attributes: dict[str, str]
) -> dict[str, pd.DataFrame]:
    """The run's tables in our crash schema (module docstring). ``states``: the days to import, in
    order from day 0; ``attributes``: firm name -> its system prompt."""
    path = run.path
    firms = [f.name for f in states[0][1].firms]
    model = ab.player_of(args.llm)
    role = {f: "stabilizing" if f.startswith(STABILIZING) else "competitor" for f in firms}
    index_of = {c.name: _consumer_index(c.name, path) for c in states[0][1].consumers}
    income = {index_of[c.name]: c.income for c in states[0][1].consumers}
    state_rows, order_rows, day_rows = [], [], []
    cash_before = dict.fromkeys(firms, args.firm_initial_cash)
    stock_before = dict.fromkeys(firms, 0.0)
    alive = dict.fromkeys(firms, True)
    savings = dict.fromkeys(income, 0.0)
    for t, state in states:
        now = {f.name: f for f in state.firms}
        if set(now) != set(firms):
            raise SourceError(path / f"state_t{t}.json", "lists other firms than state_t0.json")
        active = [f for f in firms if alive[f]]
        price = {f: now[f].prices.get(GOOD, np.nan) for f in active}
        bought = {f: sum(x.quantity for x in now[f].expenses_info.supply_by_good) for f in active}
        posted = [
            price[f] for f in active if stock_before[f] + bought[f] > 0 and np.isfinite(price[f])
        ]
        index = sum(posted) / len(posted) if posted else np.nan  # their quotes' mean, their order
        for f in active:
            x, e = now[f], now[f].expenses_info
            units = sum(s.quantity_sold for s in x.sales_info)
            revenue = sum(s.quantity_sold * s.price for s in x.sales_info)
            state_rows.append(
                (
                    t,
                    f,
                    cash_before[f],
                    price[f],
                    np.nan,
                    bought[f],
                    e.supply_cost,
                    units,
                    revenue,
                    x.inventory.get(GOOD, 0.0),
                    e.overhead_costs,
                    0.0,
                    e.taxes_paid,
                    e.platform_fees,
                    x.profit,
                    x.cash,
                    not x.in_business,
                )
            )
        shoppers, wanted, rows = [], {}, {}  # rows: consumer -> its order row (but its position)
        for c in state.consumers:
            i = index_of.get(c.name)
            if i is None:
                raise SourceError(
                    path / f"state_t{t}.json", f"consumer {c.name[:40]!r} is not in state_t0.json"
                )
            d = c.discovery_this_step.get(GOOD)
            budget = savings[i] + income[i]
            if d is not None and d.ordered is not None:
                if d.ordered not in price or any(s not in price for s in d.seen):
                    raise SourceError(
                        path / f"state_t{t}.json",
                        f"{c.name} saw or ordered from a firm not in business that day",
                    )
                p = price[d.ordered]
                wanted[i] = income[i] / index if index > 0 else 0.0
                shoppers.append((i, d.ordered, wanted[i]))
                filled = c.inventory.get(GOOD, 0.0)
                rows[i] = (
                    t,
                    i,
                    d.ordered,
                    len(d.seen),
                    "|".join(d.seen),
                    p,
                    wanted[i],
                    budget,
                    filled,
                    filled * p,
                    c.consumer_surplus,
                )
            savings[i] = c.cash
        sales = {f: [s.requested_quantity for s in now[f].sales_info] for f in active}
        position = _fill_order(shoppers, sales)
        for i, row in rows.items():
            order_rows.append((row[0], position[i], *row[1:]))
        day = list(rows.values())  # (t, consumer, firm, seen, seen_firms, price, wanted, budget,
        mean_price = (
            float(np.nanmean([price[f] for f in active])) if active else np.nan
        )  # filled...
        survivors = sum(now[f].in_business for f in firms)
        day_rows.append(
            (
                t,
                len(active),
                len(rows),
                mean_price,
                sum(r[8] for r in day),
                sum(r[6] for r in day),
                sum(r[9] for r in day),
                sum(r[10] for r in day),
                market_health(survivors, len(firms), mean_price, UNIT_COST),
            )
        )
        for f in firms:
            cash_before[f] = now[f].cash
            stock_before[f] = now[f].inventory.get(GOOD, 0.0)
            alive[f] = alive[f] and now[f].in_business
    from marketarena.markets.crash.market import CrashMarket

    cols = CrashMarket.COLUMNS
    orders = pd.DataFrame(
        order_rows,
        columns=[
            "step",
            "order",
            "consumer",
            "firm",
            "seen",
            "seen_firms",
            "price",
            "wanted",
            "budget",
            "filled",
            "spend",
            "surplus",
        ],
    )
    orders = orders.sort_values(["step", "order"], kind="stable").reset_index(drop=True)
    agents = pd.DataFrame(
        [
            (
                f,
                model + ("+stabilizing" if role[f] == "stabilizing" else ""),
                "llm",
                model,
                "",
                "stabilizing" if role[f] == "stabilizing" else "plain",
                role[f],
                f,
            )
            for f in firms
        ],
        columns=AGENT_COLUMNS,
    )
    return {
        "agents": agents,
        "states": pd.DataFrame(state_rows, columns=cols["states"]),
        "orders": orders,
        "days": pd.DataFrame(day_rows, columns=cols["days"]),
        "consumers": pd.DataFrame(sorted(income.items()), columns=["consumer", "income"]),
        "prompts": pd.DataFrame(
            [(f, ab.capped(attributes.get(f, ""))) for f in firms],
            columns=["agent_id", "system_prompt"],
        ),
    }


def setting_table(
    args: ab.RunArgs, cell: dict, model: str, status: str, days: int, firms: int, consumers: int
) -> pd.DataFrame:
    """Their engine's constants as our crash setting (``crash/market.py``'s ``setting`` table)."""
    lam = args.poisson_demand_lambda if args.poisson_demand_lambda is not None else 0.6 * consumers
    return pd.DataFrame(
        [
            {
                "discovery_limit": cell["discovery_limit"],
                "stabilizing": cell["stabilizing"],
                "firms": firms,
                "consumers": consumers,
                "days": args.max_timesteps,
                "unit_cost": UNIT_COST,
                "max_price": np.nan,
                "initial_cash": args.firm_initial_cash,
                "overhead": args.overhead_costs * OVERHEAD_SCALE,
                "tax_rate": args.firm_tax_rate,
                "platform_fee": PLATFORM_FEE,
                "holding_cost": 0.0,
                "unsold": "carry",
                "arrival_rate": lam / consumers,
                "demand_index": "mean_quote",
                "consumer_savings": True,
                "liability": "limited",
                "ces_sigma": 5.0,
                "model": model,
                "seed": cell["seed"],
                "status": status,
                "days_logged": days,
            }
        ]
    )


def convert(run: ab.Run) -> tuple[str, dict, dict, dict] | None:
    """One run as (episode id, tables, meta, report row), or None when it has no state file."""
    args = ab.read_args(run)
    run.args = args
    tokens = ab.read_tokens(run)
    states = ab.read_states(run, CrashState)
    if not states:
        run.lacks.append("state files (none: nothing to import)")
        return None
    cut = first_break(states)
    if cut is not None:
        day, why = cut
        run.lacks.append(
            f"days from {day} on: state_t{day}.json cannot follow the day before "
            f"({why}); the folder mixes two executions, so the run is cut there"
        )
        states = [(t, s) for t, s in states if t < day]
    last = states[-1][1]
    status = (
        "cut"
        if cut
        else "full"
        if len(states) == args.max_timesteps
        else "collapsed"
        if not any(f.in_business for f in last.firms)
        else "truncated"
    )
    if status == "truncated":
        run.lacks.append(
            f"days {len(states)}-{args.max_timesteps - 1} (the run stopped with firms in business)"
        )
    model = ab.player_of(args.llm)
    attributes = {}
    path = run.path / "firm_attributes.json"
    if ab.present(path):  # a folder or FIFO of that name is refused, not taken for absent
        for entry in ab.read_model(ab.FirmAttributes, path, root=run.root).root:
            attributes[entry.name] = entry.system_prompt
    else:
        run.lacks.append("firm_attributes.json (the system prompts)")
    tables = run_tables(run, args, states, attributes)
    firms = len(tables["agents"])
    tables["setting"] = setting_table(
        args, run.cell, model, status, len(states), firms, len(tables["consumers"])
    )
    records, _ = ab.prompt_records(run, PROMPT_LOG, args.log_crash_firm_prompts)
    kept = ab.imported_records(records, len(states), set(tables["agents"]["agent_id"]))
    if kept:
        tables["llm_messages"] = ab.prompt_messages(kept, lambda r: "firm")
    episode_id = plain_name(
        f"{model}-k{run.cell['stabilizing']}-d{run.cell['discovery_limit']}-s{run.cell['seed']}",
        "episode id",
    )
    usage = tokens.get("total") if tokens else None
    meta = {
        "market": "crash",
        "source": "agent_bazaar",
        "run": run.where,
        "lineup": tables["agents"]["name"].tolist(),
        "setting": {
            "model": model,
            "discovery_limit": run.cell["discovery_limit"],
            "stabilizing": run.cell["stabilizing"],
            "seed": run.cell["seed"],
        },
        "run_status": status,
        "tokens": usage.model_dump() if usage else None,
    }
    report = {
        "model": model,
        "status": status,
        "days": len(states),
        "cut_at": cut[0] if cut else None,
        "input_tokens": usage.input_tokens if usage else None,
        "output_tokens": usage.output_tokens if usage else None,
        "requests": usage.requests if usage else None,
    }
    return episode_id, tables, meta, report


def import_runs(source: Path, out: Path, workers: int) -> dict:
    """Every crash run under ``source`` (the ``logs-data`` folder) into ``out``; the report."""
    runs, left_out = ab.discover(source, "crash")
    return ab.report(ab.import_runs(runs, convert, out, workers), left_out)
