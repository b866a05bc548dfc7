"""Agent Bazaar's crash firm run by its own code for a seat of ours (``crash/authors_firm.py``),
on a firm written by us in their layout (``fixtures/ab_firm``): the prompts their methods build
from the seat's state, their answer reading and fallback, their day's bookkeeping (hand-computed),
the stabilizing firm's best days, and a missing file named before any game."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from marketarena.core.sources import SourceError
from marketarena.markets.crash.authors_firm import FirmSeat, FirmSetting, check_code

CODE = Path(__file__).parent / "fixtures" / "ab_firm"
SETTING = FirmSetting(num_consumers=50, overhead_costs=14.0, tax_rate=0.05, fee_rate=0.05)
ANSWER = '{"thought": "steady", "buy_food": 40, "make_food": 100, "price_food": 1.5}'


def day(seat: FirmSeat, t: int, cash: float, stock: float, answer: str, sold: float, health=0.5):
    call = seat.begin(t, cash, {"food": stock}, {"last_prices": {seat.name: {}}})
    bought, prices = seat.action(call.answer(answer))
    seat.close({"food": sold}, prices, market_health=health)
    return call.prompt, bought, prices


def test_the_system_prompts_are_their_codes_for_each_kind_of_firm():
    stab = FirmSeat(CODE, "stabilizing_firm_1", {"food": 1.0}, True, None, SETTING)
    comp = FirmSeat(CODE, "competitive_1", {"food": 1.0}, False, "competitive", SETTING)
    plain = FirmSeat(CODE, "firm_9", {"food": 1.0}, False, "unknown", SETTING)
    assert stab.system_prompt == (
        "You run stabilizing_firm_1, selling food to 50 buyers.\nHold a steady price above cost."
    )
    assert comp.system_prompt == (
        "You run competitive_1, selling food to 50 buyers.\nWin customers on price."
    )
    assert plain.system_prompt == "You run firm_9, selling food to 50 buyers."


def test_a_day_prompt_action_and_bookkeeping_hand_computed():
    seat = FirmSeat(CODE, "stabilizing_firm_1", {"food": 1.0}, True, None, SETTING)
    prompt, bought, prices = day(seat, 1, 500.0, 0.0, ANSWER, sold=30.0)
    assert prompt[0] == seat.system_prompt
    assert prompt[1] == (
        "Past days:\nDay 0:\nDay 1:\n"
        "Cash $500.00, stock {'supply': 0.0, 'food': 0.0}\n"
        "Seen: {'last_prices': {'stabilizing_firm_1': {}}}\n"
        'Answer {"buy_food": 1, "make_food": 100, "price_food": 2}. Think first.'
    )
    assert bought == {"food": 40.0} and prices == {"food": 1.5}
    # 500 - 40 bought + 30 x 1.5 sold - 2 overhead (14 a week) = 503; 5% tax; 5% fee
    cash = 503.0 * 0.95 * 0.95
    assert seat.cash == pytest.approx(cash, rel=1e-12)
    # their stock: 40 made (np.clip's float: numpy's repr), 30 sold
    assert repr(seat.firm.attrs["inventory"]) == "{'supply': 0.0, 'food': np.float64(10.0)}"
    # profit as their env books it: 45 margin - 40 supply - 2 - tax - fee
    assert seat.firm.attrs["profit"] == pytest.approx(45 - 40 - 2 - 503 * 0.05 - 503 * 0.95 * 0.05)


def test_a_stabilizing_firm_is_shown_its_best_days_by_their_metric():
    seat = FirmSeat(CODE, "stabilizing_firm_1", {"food": 1.0}, True, None, SETTING)
    cash, stock = 500.0, 0.0
    # day 1 at a profit (sells 40 at 3), day 2 at a loss, each at market health 0.5
    for t, (answer, sold) in enumerate(
        [(ANSWER.replace("1.5", "3"), 40.0), (ANSWER, 5.0)], start=1
    ):
        day(seat, t, cash, stock, answer, sold)
        cash, stock = seat.cash, float(seat.firm.attrs["inventory"]["food"])
    call = seat.begin(3, cash, {"food": stock}, {"last_prices": {}})
    user = call.prompt[1]
    call.abandon()
    # day 1: 120 margin - 40 supply - 2 overhead - 5% tax of 578 - 5% fee of 549.1 = 21.645;
    # their metric: health 0.5 + 21.645 / 500 initial cash; day 2 lost money: 0.5; day 0: 0
    assert "Best days:\nDay 1 (0.54)\nDay 2 (0.50)\nDay 0 (0.00)\n" in user


def test_an_answer_without_json_is_their_fallback_and_an_abandoned_call_ends():
    seat = FirmSeat(CODE, "competitive_1", {"food": 1.0}, False, "competitive", SETTING)
    _, bought, prices = day(seat, 1, 500.0, 0.0, ANSWER.replace("1.5", "2.5"), sold=0.0)
    assert prices == {"food": 2.5}
    call = seat.begin(2, seat.cash, {"food": 40.0}, {"last_prices": {}})
    bought, prices = seat.action(call.answer("I would rather not say."))
    assert bought == {"food": 0.0} and prices == {"food": 2.5}  # buy nothing, yesterday's price
    abandoned = seat.begin(3, seat.cash, {"food": 40.0}, {"last_prices": {}})
    abandoned.abandon()
    assert abandoned._green.dead


def test_calls_in_flight_at_once_are_answered_in_any_order_each_with_its_own_state():
    """The harness's way in a day: every seat's call paused at its model call at once (one
    thread), the answers coming back in another order; each method goes on with its own answer
    and its own seat, as when each is run alone."""
    names = ("competitive_1", "competitive_2", "competitive_3")

    def seats():
        return [FirmSeat(CODE, n, {"food": 1.0}, False, "competitive", SETTING) for n in names]

    prices = ("1.5", "2.5", "3.5")
    alone = []
    for seat, price in zip(seats(), prices):
        call = seat.begin(1, 500.0, {"food": 0.0}, {"last_prices": {}})
        alone.append((call.prompt, seat.action(call.answer(ANSWER.replace("1.5", price)))))
    together = seats()
    calls = [s.begin(1, 500.0, {"food": 0.0}, {"last_prices": {}}) for s in together]
    results = {}
    for i in (2, 0, 1):
        results[i] = together[i].action(calls[i].answer(ANSWER.replace("1.5", prices[i])))
    assert [(c.prompt, results[i]) for i, c in enumerate(calls)] == alone
    assert [r[1] for _, r in alone] == [{"food": float(p)} for p in prices]


def test_a_method_that_asks_its_model_twice_is_refused_by_name(tmp_path):
    from marketarena.core.pycode import CodeError, Obj, Program
    from marketarena.markets._shared.their_agents import Call

    (tmp_path / "agent.py").write_text(
        "class Agent:\n"
        "    def go(self):\n"
        "        a = self.call_llm('first', 0, ['x'], lambda v: v)\n"
        "        return self.call_llm('second', 0, ['x'], lambda v: v)\n"
    )
    agent = Obj("Agent", system_prompt="sys")
    call = Call(Program(tmp_path, ["agent.py"]), agent, "go", (), {})
    assert call.prompt == ("sys", "first")
    with pytest.raises(CodeError, match="asked its model twice"):
        call.answer('{"x": 1}')
    assert call._green.dead


def test_a_missing_file_is_named_before_any_game(tmp_path):
    check_code(CODE)
    broken = tmp_path / "ab"
    shutil.copytree(CODE, broken)
    (broken / "ai_bazaar" / "market_core" / "market_core.py").unlink()
    with pytest.raises(SourceError, match="market_core.py"):
        check_code(broken)


def test_their_book_is_kept_within_rounding_and_set_to_ours_beyond():
    """Our market is the game; their book shows the same cash their reflection printed unless
    ours differs by more than float rounding (then ours, counted)."""
    seat = FirmSeat(CODE, "competitive_1", {"food": 1.0}, False, "competitive", SETTING)
    day(seat, 1, 500.0, 0.0, ANSWER, sold=30.0)
    theirs = seat.cash
    call = seat.begin(2, theirs * (1 + 1e-13), {"food": 10.0}, {"last_prices": {}})
    call.abandon()
    assert seat.cash == theirs and seat.resyncs == 0  # rounding: theirs kept
    call = seat.begin(2, theirs + 0.01, {"food": 10.0}, {"last_prices": {}})
    call.abandon()
    assert seat.cash == theirs + 0.01 and seat.resyncs == 1  # ours, counted


def test_a_firm_that_cannot_pay_its_overhead_is_out_of_business_in_their_book():
    """Their ``mark_out_of_business`` (their log line through ``logging``, dropped) and no
    reflection for the day, as their environment skips a firm out of business."""
    seat = FirmSeat(CODE, "competitive_1", {"food": 1.0}, False, "competitive", SETTING)
    day(seat, 1, 1.0, 0.0, ANSWER.replace('"buy_food": 40', '"buy_food": 0'), sold=0.0)
    assert seat.firm.attrs["in_business"] is False
    assert seat.cash == pytest.approx(0.0)  # paid what it had
    assert "Sold " not in seat.firm.attrs["message_history"][1]["historical"]
