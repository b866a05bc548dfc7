"""The interpreter's speed on a publisher's code (issue 53): one firm-day of Agent Bazaar's crash
firm run by their code in ``core.pycode`` (``markets/crash/authors_firm.py``'s ``FirmSeat``:
their ``decide_firm_action`` to the prompt and through a fixed answer, then the day's
bookkeeping and reflection), synchronously (no thread, no model), a stabilizing firm so that
their best-days slab is built every day.

    .venv/bin/python benchmarks/bench_their_code.py --code AI-Bazaar [--days 100]

``--code``: the root of a copy of sethkarten/AI-Bazaar. Prints ms per firm-day (the median of
``--repeat`` runs of ``--days`` days after 5 days of warm-up); asserts nothing. To compare two
versions of ours, run it with ``PYTHONPATH=<other checkout>/lib`` in turn.
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

from marketarena.markets._shared.their_agents import read_answer
from marketarena.markets.crash.authors_firm import FirmSeat

ANSWER = '{"thought": "ok", "supply_quantity_food": 40, "produce_food": 100, "price_food": 1.5}'


def run(code: str, days: int) -> float:
    """Seconds per firm-day over ``days`` days after 5 days of warm-up."""
    seat = FirmSeat(code, "stabilizing_firm", {"food": 1.0}, True, None)
    cash, last = 500.0, {}

    def day(t: int) -> None:
        nonlocal cash, last
        seat._sync(seat.ledger.attrs["agent_money"], seat.name, cash)
        seat.day, seat.start = t, seat._copy()
        seat.firm.attrs["call_llm"] = partial(read_answer, ANSWER)
        market = {"last_prices": {seat.name: last, "competitive_1": {"food": 1.4}}}
        result = seat.program.call(seat.firm, "decide_firm_action", t, market)
        _, prices = seat.action(result)
        seat.close({"food": 30.0}, prices, market_health=0.8)
        cash, last = seat.cash, dict(prices)

    for t in range(5):
        day(t)
    start = time.perf_counter()
    for t in range(5, 5 + days):
        day(t)
    return (time.perf_counter() - start) / days


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--code", required=True)
    ap.add_argument("--days", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    runs = [run(a.code, a.days) for _ in range(a.repeat)]
    print(f"{statistics.median(runs) * 1000:.2f} ms per firm-day (median of {a.repeat} runs)")


if __name__ == "__main__":
    main()
