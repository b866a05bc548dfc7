"""Agent Bazaar's own crash firm for a seat of ours (issue 53): their ``FirmAgent`` run by their
code, read at run time from the user's copy of sethkarten/AI-Bazaar (``code``: the repository's
root), in ``core.pycode``'s interpreter, never copied.

A model put on the authors' crash board must see the task their firm models saw. Their firm's
prompt is Python (ai_bazaar/agents/firm.py: ``_create_system_prompt``, ``add_message``,
``_build_best_n_slab``; ai_bazaar/agents/llm_agent.py: ``get_historical_message``, ``act_llm``,
``prompt_cot``), and it shows state their own bookkeeping keeps: three days of history, each with
the reflection their ``build_reflection`` writes from three ledgers (the day's start, before the
market cleared, its end), and for a stabilizing firm the best three days by their metric (the
day's market health plus its profit over the initial cash). :class:`FirmSeat` keeps that state
by running their methods at the points their environment (ai_bazaar/env/bazaar_env.py, ``step``)
runs them, over a ledger of their ``Ledger`` class:

=============================  ==================================================================
a day of ours                  their calls
=============================  ==================================================================
:meth:`FirmSeat.begin`         the ledger set to our market's cash and stock where their book
                               differs by more than rounding (ours is the game), the start
                               ledger copied,
                               ``decide_firm_action(timestep, market_data)`` run to its model call
                               (``their_agents.Call``); its answer moves their ledger (supply
                               bought, all supply produced) and names the action
:meth:`FirmSeat.close`         the clearing (units sold at the posted price), ``update_profit``,
                               ``pay_overhead_costs``, ``pay_taxes``, the platform fee (their
                               env's 5% of cash), ``update_expenses`` and
                               ``apply_expense_to_profit`` for each expense in their order, then
                               ``reflect(timestep, start, pre_clearing, end, market_health)``
=============================  ==================================================================

``market_data`` is what their environment passes: ``{"last_prices": {<own name>: {good: price},
<competitor>: {...}, ...}}``, yesterday's prices of the firm itself and of the competitors it
may see, in the order it drew them. Their runs' arguments that a firm reads are
:class:`FirmSetting` (their exp1: 50 consumers, overhead 14 a week paid daily, 5% tax, 500 cash,
best 3, chain of thought, three days of history, no diaries). A published run's system prompt is
logged (``firm_attributes.json``); ``benchmarks/bench_authors_firm.py`` renders each one here and
compares.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketarena.agents.harnesses.base import Harness
from marketarena.core.pycode import CodeError, Ns, Obj, Program
from marketarena.core.types import Reply
from marketarena.markets._shared.their_agents import (
    Call,
    TheirCodeParams,
    TheirJSON,
    answer_keys,
    asked,
    check_renders,
    invalid,
    their_program,
)
from marketarena.markets.crash.joint import COMMON, FILES, GOOD
from marketarena.markets.crash.observations import (
    MAX_PRICE,
    MAX_SUPPLY,
    FirmAction,
    FirmObservation,
)

FIRM, LEDGER = "FirmAgent", "Ledger"


#: what stands for ours in their firm's code (their ``collections.defaultdict``)
HOST = {"defaultdict": defaultdict}


def program(code: str | Path) -> Program:
    """Their firm's code in ``code`` (``their_agents.their_program``)."""
    return their_program(code, FILES, HOST)


@dataclass(frozen=True)
class FirmSetting:
    """Their run's arguments a firm reads (their exp1's by default)."""

    num_consumers: int = 50
    overhead_costs: float = 14.0  # a week's; paid daily at ``overhead_scale``
    overhead_scale: float = 1.0 / 7.0
    tax_rate: float = 0.05
    fee_rate: float = 0.05  # their env's platform fee, a share of the cash after taxes
    initial_cash: float = 500.0
    best_n: int = 3
    prompt_algo: str = "cot"
    history_len: int = 3
    goods: tuple[str, ...] = ("food",)


class FirmSeat:
    """Their ``FirmAgent`` as one of our seats, driven day by day (module docstring)."""

    def __init__(
        self,
        code: str | Path,
        name: str,
        unit_costs: dict[str, float],
        stabilizing: bool,
        persona: str | None,
        setting: FirmSetting = FirmSetting(),
    ):
        self.setting, self.program = setting, program(code)
        p, goods = self.program, list(setting.goods)
        self.ledger = Obj(LEDGER, agent_money={}, agent_inventories={})
        self.firm = Obj(
            FIRM,
            name=name,
            goods=goods,
            ledger=self.ledger,
            args=Ns(
                consumer_scenario="THE_CRASH",
                num_consumers=setting.num_consumers,
                no_diaries=True,
                log_alignment_traces=False,
                overhead_costs=setting.overhead_costs,
            ),
            persona=persona,
            stabilizing_firm=stabilizing,
            initial_cash=setting.initial_cash,
            best_n=setting.best_n,
            prompt_algo=setting.prompt_algo,
            history_len=setting.history_len,
            timeout=0,
            llm=Ns(),
            diary=[],
            trajectory=[],
            in_business=True,
            profit=0.0,
            overhead_scale=setting.overhead_scale,
            expenses_info={},
            sales_info=[],
            supply_unit_costs=dict(unit_costs),
            system_prompt=None,
        )
        for attr in ("_timestep_stats", "total_quantity_sold_by_good"):
            self.firm.attrs[attr] = p.assigned(self.firm, "__init__", attr, {"goods": goods})
        p.call(self.ledger, "credit", name, setting.initial_cash)
        for good in ("supply", *goods):
            p.call(self.ledger, "add_good", name, good, 0.0)
        self.firm.attrs["inventory"] = self.ledger.attrs["agent_inventories"][name]
        p.call(self.firm, "init_message_history")
        self.firm.attrs["system_prompt"] = p.call(self.firm, "_create_system_prompt")
        self.day: int | None = None
        self.start: Obj | None = None
        self.pre: Obj | None = None
        self.supply_entries: list[dict] = []
        #: mornings their book differed from our market by more than rounding (then set to ours)
        self.resyncs = 0

    @property
    def name(self) -> str:
        return self.firm.attrs["name"]

    @property
    def system_prompt(self) -> str:
        return self.firm.attrs["system_prompt"]

    def _copy(self) -> Obj:
        """Their ``Ledger.copy()`` (a new ledger: each agent's money and a copy of its stock)."""
        led = self.ledger.attrs
        return Obj(
            LEDGER,
            agent_money=dict(led["agent_money"]),
            agent_inventories={k: dict(v) for k, v in led["agent_inventories"].items()},
        )

    def begin(self, timestep: int, cash: float, stock: dict[str, float], market_data: dict) -> Call:
        """Day ``timestep`` (their count: 0 is the first day) to the firm's model call: the
        ledger set to our market's ``cash`` and ``stock`` (good -> units), then their
        ``decide_firm_action``; ``Call.answer`` gives the method's return (:meth:`action`)."""
        self._sync(self.ledger.attrs["agent_money"], self.name, cash)
        inventory = self.firm.attrs["inventory"]
        for good, units in stock.items():
            self._sync(inventory, good, units)
        self.firm.attrs["in_business"] = True  # our market asks only firms in business
        self.firm.attrs["expenses_info"] = {}
        self.firm.attrs["sales_info"] = []
        self.day, self.start = timestep, self._copy()
        return Call(self.program, self.firm, "decide_firm_action", (timestep, market_data), {})

    def _sync(self, book: dict, key: str, ours: float) -> None:
        """Their book's ``key`` set to our market's value where the two differ by more than float
        rounding (counted in :attr:`resyncs`); within it, theirs is kept, so that a prompt shows
        the same cash (and the same numpy float) as their reflection of the day before did."""
        theirs = book.get(key)
        if theirs is None or abs(float(theirs) - ours) > 1e-9 * max(1.0, abs(ours)):
            book[key] = ours
            self.resyncs += theirs is not None and self.day is not None

    def action(self, result: dict) -> tuple[dict[str, float], dict[str, float]]:
        """Their ``decide_firm_action`` return as (units bought per good, price per good), the
        ledger before the market clears kept for the reflection."""
        self.pre = self._copy()
        self.supply_entries = list(result["supply_entries"])
        bought = {e["good"]: float(e["quantity"]) for e in self.supply_entries}
        return bought, {g: float(p) for g, p in result["prices"].items()}

    def close(self, sold: dict[str, float], prices: dict[str, float], market_health: float) -> None:
        """The day's end as their environment books it (module docstring): ``sold`` units per
        good at ``prices``; ``market_health`` their step health (the share of firms alive and
        the mean posted price's nearness to the unit cost, halved)."""
        p, firm, name, t = self.program, self.firm, self.name, self.day
        inventory = firm.attrs["inventory"]
        for good, units in sold.items():
            inventory[good] = inventory.get(good, 0.0) - units
            p.call(self.ledger, "credit", name, units * prices[good])
        firm.attrs["profit"] = 0.0
        for good, units in sold.items():
            if units > 0:
                p.call(firm, "update_profit", units, prices[good])
        expenses = list(self.supply_entries)
        if firm.attrs["in_business"]:
            paid = p.call(firm, "pay_overhead_costs", t)
            expenses.append({"expense_type": "overhead", "amount": paid})
        if firm.attrs["in_business"]:
            paid = p.call(firm, "pay_taxes", t, self.setting.tax_rate)
            expenses.append({"expense_type": "taxes", "amount": paid})
        if firm.attrs["in_business"]:
            fee = self.ledger.attrs["agent_money"][name] * self.setting.fee_rate
            p.call(self.ledger, "credit", name, -fee)
            expenses.append({"expense_type": "platform_fee", "amount": fee})
        for e in expenses:
            p.call(
                firm,
                "update_expenses",
                e["expense_type"],
                e["amount"],
                quantity=e.get("quantity"),
                unit_price=e.get("unit_price"),
                good=e.get("good"),
            )
            p.call(firm, "apply_expense_to_profit", e["amount"])
        if firm.attrs["in_business"]:
            p.call(
                firm, "reflect", t, self.start, self.pre, self.ledger, market_health=market_health
            )

    @property
    def cash(self) -> float:
        """Their ledger's cash for the firm (after :meth:`close`: the day's end as they book it)."""
        return float(self.ledger.attrs["agent_money"][self.name])


def check_code(code: str | Path) -> None:
    """Their firm's code in ``code`` renders a first day's prompt, before any game
    (``their_agents.check_renders``)."""

    def render(root: Path) -> None:
        seat = FirmSeat(root, "firm_check", {"food": 1.0}, True, None)
        call = seat.begin(0, 500.0, {"food": 0.0}, {"last_prices": {"firm_check": {}}})
        if call.prompt is None:
            call.answer("")
            raise CodeError(root / FILES[0], "decide_firm_action asked no model")
        call.abandon()

    check_renders(code, (*FILES, COMMON), render)


# -- the harness -----------------------------------------------------------------------------------
#: the keys their firm's answer carries (their ``decide_firm_action``), for one good
KEYS = (f"supply_quantity_{GOOD}", f"produce_{GOOD}", f"price_{GOOD}")


class FirmJSON(TheirJSON):
    """Any answer (``_shared/their_agents.py``); the stand-ins answer as their firm is asked to."""

    @classmethod
    def from_action(cls, action: Any, observation: Any, messages: list) -> "FirmJSON | None":
        if not isinstance(action, FirmAction):
            return None
        answer = {"thought": "steady", KEYS[0]: action.supply, KEYS[1]: 100, KEYS[2]: action.price}
        return cls(text=json.dumps(answer))


def judge(text: str, bought: float, price: float) -> tuple[str, str]:
    """("", "") for an answer their engine acted on as asked, else (why, its kind): no JSON object
    or a key missing or unreadable (their parse falls back: ``format``), a price or a supply our
    market cannot post (``rule``)."""
    found = answer_keys(text, KEYS)
    if found is None:
        return "no JSON object (their fallback: buy nothing, keep yesterday's price)", "format"
    missing = [k for k in KEYS if found[k] is None]
    if missing:
        return f"missing {', '.join(missing)} (their fallback for it)", "format"
    for key in (KEYS[0], KEYS[2]):
        try:
            float(str(found[key]).replace("$", "").replace(",", "").replace(" units", ""))
        except ValueError:
            return f"{key} {str(found[key])[:40]!r} is not a number (their fallback)", "format"
    if not 0 < price <= MAX_PRICE:
        return f"price {price:g} is not in (0, {MAX_PRICE:g}]", "rule"
    if not 0 <= bought <= MAX_SUPPLY:
        return f"supply {bought:g} is not in [0, {MAX_SUPPLY:g}]", "rule"
    return "", ""


def market_data(obs: FirmObservation, own: str) -> dict:
    """What their environment hands a firm (module docstring): yesterday's prices, its own first,
    then each competitor it sees, by name (none yet on the first day)."""
    mine = {GOOD: obs.history[-1].price} if obs.history else {}
    prices = obs.competitor_prices or [None] * len(obs.competitor_names)
    rivals = {n: ({} if p is None else {GOOD: p}) for n, p in zip(obs.competitor_names, prices)}
    return {"last_prices": {own: mine, **rivals}}


class AuthorsFirm(Harness):
    """Their firm's prompts, answer reading and bookkeeping for a crash seat (module
    docstring). The seat's id is the firm's name (the joint runs seat their names); a competitor
    is their ``competitive`` persona, a stabilizing seat their stabilizing firm."""

    name = "agent_bazaar"
    Params = TheirCodeParams
    roles = frozenset({"stabilizing", "competitor"})
    max_reasks = 0  # FirmJSON: their fallback at once

    def reset(self, rng: Any = None) -> None:
        self.seat: FirmSeat | None = None

    def _seat(self, obs: FirmObservation) -> FirmSeat:
        if self.seat is None:
            setting = FirmSetting(
                num_consumers=obs.consumers,
                overhead_costs=obs.overhead * 7,
                overhead_scale=1.0 / 7.0,
                tax_rate=obs.tax_rate,
                fee_rate=obs.platform_fee,
                initial_cash=obs.initial_cash,
                prompt_algo=self.params.prompt_algo,
                history_len=self.params.history_len,
            )
            persona = None if obs.stabilizing else "competitive"
            costs = {GOOD: obs.unit_cost}
            self.seat = FirmSeat(
                self.params.code, obs.agent_id, costs, obs.stabilizing, persona, setting
            )
        return self.seat

    async def respond(self, agent: Any, observation: Any, decision: Any, retry: Any = None):
        if retry is not None:  # never: a scaled-down supply is a note, not a re-ask
            return Reply(action=None, error="re-asked by the market")
        if not isinstance(observation, FirmObservation):
            raise TypeError(
                f"the agent_bazaar harness plays firms, not {type(observation).__name__}"
            )
        obs, seat = observation, self._seat(observation)
        t = obs.day - 1  # their timestep: 0 on the first day
        if seat.day is not None and seat.day < t and obs.history:
            last = obs.history[-1]  # yesterday, as our market booked it
            seat.close({GOOD: last.units_sold}, {GOOD: last.price}, obs.health)
        call = seat.begin(t, obs.cash, {GOOD: obs.stock}, market_data(obs, seat.name))
        result, text, calls = await asked(call, agent, FirmJSON, decision)
        if text is None:
            raise CodeError(Path(self.params.code) / FILES[0], "decide_firm_action asked no model")
        bought, prices = seat.action(result)
        why, kind = judge(text, bought.get(GOOD, 0.0), prices.get(GOOD, 0.0))
        if why:
            return invalid(calls, why, kind)
        action = FirmAction(price=prices[GOOD], supply=bought.get(GOOD, 0.0))
        return Reply(action=action, calls=calls)
