"""english_auction by hand: the minimum increment, the budget limit, a failed bid then a valid
rebid, final withdrawal, the seeded tie-break, the round without a new bid that sells, an unsold
item, profit and budget after a sale; belief checks that find exactly the injected errors; CFR on a
known count; money conservation; the seed's rule bidder; an LLM bidder over the fake endpoint."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.core.runner import run_episode
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.markets.english_auction import metrics as em
from marketarena.markets.english_auction import rules
from marketarena.markets.english_auction.baselines import Rule, status_after
from marketarena.markets.english_auction.observations import (
    BidAction,
    BidObservation,
    ItemView,
    PlanAction,
    RoundView,
    Status,
)
from marketarena.simulate import build
from marketarena.testing import play_over_fake, play_scripted

ITEMS = [{"name": "A", "start_price": 1000}, {"name": "B", "start_price": 2000},
         {"name": "C", "start_price": 3000}]
ROSTER = [{"name": "rule", "kind": "baseline", "strategy": "rule"},
          {"name": "increment", "kind": "baseline", "strategy": "increment"}]


def params(**over):
    block = {"runs": 1, "items": ITEMS, "budgets": [3000], "orders": ["ascending"],
             "roster": ROSTER, **over}
    return parse_params({"markets": {"english_auction": block}})


# ------------------------------------------------------------------ rules
def test_a_valid_bid_is_within_budget_over_the_start_and_the_increment():
    assert rules.min_bid(1000, None, 0.1) == 1000
    assert rules.min_bid(1000, 1500, 0.1) == 1600
    assert rules.bid_error(1000, 5000, 1000, None, 0.1) is None
    assert "starting price" in rules.bid_error(999, 5000, 1000, None, 0.1)
    assert rules.bid_error(1600, 5000, 1000, 1500, 0.1) is None
    assert "plus the minimum increase $100" in rules.bid_error(1599, 5000, 1000, 1500, 0.1)
    assert "exceeds your remaining budget $1,700" in rules.bid_error(1800, 1700, 1000, 1500, 0.1)


def test_items_come_in_the_asked_order_and_ties_keep_the_listed_order():
    prices = [3000, 1000, 2000, 1000]
    assert rules.order_items(prices, "ascending", None) == [1, 3, 2, 0]
    assert rules.order_items(prices, "descending", None) == [0, 2, 1, 3]
    shuffled = rules.order_items(prices, "random", np.random.default_rng(0))
    assert sorted(shuffled) == [0, 1, 2, 3]


def test_a_tie_is_broken_by_the_seeded_draw_and_both_sides_can_win():
    winners = {rules.leader({"B1": 1000.0, "B2": 1000.0, "B3": 900.0}, np.random.default_rng(s))
               for s in range(40)}
    assert winners == {"B1", "B2"}
    assert rules.leader({"B1": 1000.0, "B2": 1100.0}, np.random.default_rng(0)) == "B2"
    same = [rules.leader({"B1": 5.0, "B2": 5.0}, np.random.default_rng(7)) for _ in range(3)]
    assert len(set(same)) == 1


TRUTH = {"remaining_budget": 1700.0, "total_profits": {"Bidder 1": 700.0, "Bidder 2": 0.0},
         "winning_bids": {"Bidder 1": {"A": 1300.0}, "Bidder 2": {}}}


def test_belief_checks_find_exactly_the_injected_errors():
    assert rules.belief_errors("Bidder 1", json.loads(json.dumps(TRUTH)), TRUTH) == ([], [])
    wrong = json.loads(json.dumps(TRUTH))
    wrong["remaining_budget"] = 3000  # forgot it paid
    wrong["total_profits"]["Bidder 2"] = 500  # about another bidder
    own, others = rules.belief_errors("Bidder 1", wrong, TRUTH)
    assert len(own) == 1 and "remaining_budget is 1,700" in own[0]
    assert len(others) == 1 and "total_profits of Bidder 2" in others[0]
    wrong = json.loads(json.dumps(TRUTH))
    wrong["winning_bids"]["Bidder 1"] = {}  # forgot its own win
    wrong["winning_bids"]["Bidder 2"] = {"A": 1300}  # and gave it to the other
    own, others = rules.belief_errors("Bidder 2", wrong, TRUTH)
    assert len(own) == 1 and "winning_bids of Bidder 2" in own[0]
    assert len(others) == 1 and "winning_bids of Bidder 1" in others[0]
    # within the tolerance of one dollar is right; a missing field is an error
    close = json.loads(json.dumps(TRUTH))
    close["remaining_budget"] = 1700.4
    assert rules.belief_errors("Bidder 1", close, TRUTH) == ([], [])
    assert len(rules.belief_errors("Bidder 1", {}, TRUTH)[0]) == 3  # budget, own profit, own wins


# ------------------------------------------------------------------ an auction by hand
def truthful(phase, obs, retry):
    """A plan of 2s; the correct status after each item."""
    if phase in ("plan", "replan"):
        return PlanAction(priorities={i.name: 2 for i in obs.items})
    return status_after(obs)


def script(bids):
    """Bids from a table {(item, round): [answer of attempt 1, attempt 2, ...]} (missing:
    withdraw)."""
    def fn(phase, obs, retry):
        if phase != "bid":
            return truthful(phase, obs, retry)
        answers = bids.get((obs.item.name, obs.round - 1), [None])
        amount = answers[0 if retry is None else retry.attempt - 1]
        return BidAction(bid=amount)
    return fn


def play(p, fns, seed=0):
    return play_scripted("english_auction", p, fns, seed=seed)


def test_a_hand_computed_auction():
    # A (1000): B1 1000, B2 1200 -> B2 leads; B1 1250 fails (min 1300), rebids 1300 -> B1 leads;
    #   B2 withdraws -> no new bid: sold to B1 at 1300 (profit 2000 - 1300 = 700, budget 1700).
    # B (2000): B1 cannot cover 2000, is not asked; B2 2000 leads; nobody left to ask: sold to B2.
    # C (3000): B2 has 1000 left and B1 1700, nobody can cover 3000: unsold without a question.
    b1 = script({("A", 0): [1000], ("A", 1): [1250, 1300]})
    b2 = script({("A", 0): [1200], ("A", 2): [None], ("B", 0): [2000]})
    result, _, market = play(params(), {"B1": b1, "B2": b2})
    items = result.tables["items"].set_index("item")
    assert items.loc["A", "winner"] == "B1" and items.loc["A", "price"] == 1300
    assert items.loc["A", "rounds"] == 3 and items.loc["A", "bids"] == 3
    assert items.loc["B", "winner"] == "B2" and items.loc["B", "price"] == 2000
    assert items.loc["C", "winner"] == "" and np.isnan(items.loc["C", "price"])
    assert items.loc["C", "rounds"] == 0

    bids = result.tables["bids"]
    a = bids[bids["step"] == 0]
    assert a[["round", "agent_id"]].values.tolist() == [[0, "B1"], [0, "B2"], [1, "B1"], [2, "B2"]]
    assert a["bid"].tolist()[:3] == [1000, 1200, 1300] and np.isnan(a["bid"].iloc[3])
    assert a["leader"].tolist() == ["B2", "B2", "B1", "B1"]
    assert bids[bids["step"] == 1][["agent_id", "bid"]].values.tolist() == [["B2", 2000]]

    d = result.decisions
    failed = d[(d["phase"] == "bid") & ~d["valid"]]
    assert len(failed) == 1 and failed["agent_id"].item() == "B1" and failed["attempt"].item() == 0
    assert "below $1,300" in failed["error"].item()
    assert not ((d["phase"] == "bid") & (d["step"] == 1) & (d["agent_id"] == "B1")).any()

    final = result.tables["states"].query("step == 2").set_index("agent_id")
    assert final.loc["B1", "budget_left"] == 1700 and final.loc["B1", "profit"] == 700
    assert final.loc["B2", "budget_left"] == 1000 and final.loc["B2", "profit"] == 2000
    assert final["items_won"].tolist() == [1, 1]


def test_withdrawal_is_final_and_an_item_nobody_bids_on_is_unsold():
    asked = []

    def b1(phase, obs, retry):
        if phase == "bid":
            asked.append((obs.item.name, obs.round))
            return BidAction(bid=None if obs.item.name == "A" else obs.min_bid)
        return truthful(phase, obs, retry)

    b2 = script({("B", 0): [2000], ("B", 1): [2400]})
    result, _, _ = play(params(budgets=[10_000]), {"B1": b1, "B2": b2})
    items = result.tables["items"].set_index("item")
    assert items.loc["A", "winner"] == "" and items.loc["A", "rounds"] == 1
    # B: round 0 both bid 2000 (a tie); then whoever trails bids the minimum, and so on
    assert asked.count(("A", 1)) == 1 and ("A", 2) not in asked


def test_a_tie_in_the_log_goes_to_the_seeded_draw():
    both = script({("A", 0): [1000]})
    leaders = set()
    for seed in range(12):
        result, _, _ = play(params(items=ITEMS[:1]), {"B1": both, "B2": both}, seed=seed)
        items = result.tables["items"]
        assert items["price"].item() == 1000 and items["rounds"].item() == 2
        leaders.add(items["winner"].item())
    assert leaders == {"B1", "B2"}


def test_an_over_budget_bid_fails_three_times_then_withdraws():
    greedy = script({("A", 0): [5000, 4000, 3500]})
    result, _, _ = play(params(items=ITEMS[:1]), {"B1": greedy, "B2": script({})})
    d = result.decisions.query("phase == 'bid' and agent_id == 'B1'")
    assert d["attempt"].tolist() == [0, 1, 2] and not d["valid"].any()
    assert d["error"].str.contains("exceeds your remaining budget").all()
    assert result.tables["items"]["winner"].item() == ""


def test_money_is_conserved_and_profit_is_value_minus_price():
    p = parse_params({"markets": {"english_auction": {
        "runs": 6, "budgets": [20_000, 40_000], "orders": ["random", "ascending", "descending"],
        "roster": [{"name": n, "kind": "baseline", "strategy": n}
                   for n in ("rule", "increment", "pacer", "sniper", "collector", "random")]}}})
    for run in range(6):
        market, agents, table, spec = build("english_auction", p, run)
        result = asyncio.run(run_episode(market, agents, spec.seed))
        items, states = result.tables["items"], result.tables["states"]
        final = states[states["step"] == states["step"].max()]
        budget = result.tables["setting"]["budget"].item()
        sold = items[items["winner"] != ""]
        assert final["budget_left"].sum() + sold["price"].sum() == pytest.approx(6 * budget)
        assert final["profit"].sum() == pytest.approx((sold["true_value"] - sold["price"]).sum())
        assert (final["budget_left"] >= 0).all()
        assert final["items_won"].sum() == len(sold)


# ------------------------------------------------------------------ the rule bidder
def bid_obs(**over):
    item = ItemView(name="A", description="", start_price=1000, estimate=2200)
    base = dict(agent_id="B1", me="Bidder 1", item=item, round=1, remaining=[item], history=[],
                highest=None, highest_bidder=None, min_bid=1000, budget_left=5000, plan=None,
                status=Status(remaining_budget=5000, total_profits={}, winning_bids={}))
    return BidObservation(**{**base, **over})


def test_the_rule_bidder_bids_the_start_then_the_minimum_increase_at_most_four_times():
    rule = Rule("B1", {})
    rule.reset(np.random.default_rng(0))
    assert rule.bid(bid_obs()) == 1000
    # ignores value: bids 2600 over its estimate of 2200 while it may
    history = [RoundView(round=k + 1, bids={"Bidder 1": 1000.0 + 500 * k, "Bidder 2": 1200.0 + 500 * k})
               for k in range(3)]
    assert rule.bid(bid_obs(round=4, history=history, highest=2500, min_bid=2600)) == 2600
    history.append(RoundView(round=4, bids={"Bidder 1": 2600.0, "Bidder 2": 2800.0}))
    assert rule.bid(bid_obs(round=5, history=history, highest=2800, min_bid=2900)) is None
    assert rule.bid(bid_obs(budget_left=900)) is None  # the budget stops it


# ------------------------------------------------------------------ metrics
def test_cfr_failed_bids_and_belief_errors_on_a_known_count(tmp_path):
    # B1 fails one bid (1250) and one belief (its budget), B2 never fails:
    #   B1: bid answers 3 (1000, 1250 x, 1300), belief answers 3 items + 1 wrong = 4
    #   -> F = 2, C = 2 + 3 = 5, CFR = F / (C + F) = 2 / 7; failed-bid rate 1 / 3;
    #   self-error rate 1 / 4
    b1_bids = script({("A", 0): [1000], ("A", 1): [1250, 1300]})

    def b1(phase, obs, retry):
        if phase == "belief" and obs.item.name == "A" and retry is None:
            wrong = truthful(phase, obs, retry)
            return wrong.model_copy(update={"remaining_budget": 3000.0})
        return b1_bids(phase, obs, retry)

    b2 = script({("A", 0): [1200], ("A", 2): [None], ("B", 0): [2000]})
    result, _, _ = play(params(), {"B1": b1, "B2": b2})
    plan = logs.PlannedEpisode("ep-0000", 0, 0, "x")
    market, agents, table, spec = build("english_auction", params(), 0)
    logs.write_episode(tmp_path, plan, {**result.log_tables(), "agents": table}, {}, {})
    frames = em.compute(EpisodeReader(tmp_path))
    a = frames["agents"].set_index("agent_id")
    assert a.loc["B1", "cfr"] == pytest.approx(2 / 7)
    assert a.loc["B1", "failed_bid_rate"] == pytest.approx(1 / 3)
    assert a.loc["B1", "self_error_rate"] == pytest.approx(1 / 4)
    assert a.loc["B1", "other_error_rate"] == 0
    assert a.loc["B2", "cfr"] == 0 and a.loc["B2", "self_error_rate"] == 0
    assert a.loc["B1", "profit"] == 700 and a.loc["B1", "money_left"] == 1700
    # bid increments over the start price: B1 1000 (+0%), B2 1200 (+20%), B1 1300 (+10% over 1200)
    bip = frames["bids"].query("step == 0").sort_values(["round", "agent_id"])["bip"].tolist()
    assert bip == pytest.approx([0.0, 20.0, 10.0])
    eng = frames["engagement"].set_index(["agent_id", "item"])
    assert eng.loc[("B1", "A"), "n_bids"] == 2 and eng.loc[("B1", "A"), "won"] == 1
    assert eng.loc[("B1", "A"), "priority_initial"] == 2


# ------------------------------------------------------------------ an LLM bidder
MODELS = {"fake": {"model": "fake", "base_url": "http://fake.invalid/v1", "api_key_env": None}}


def test_an_llm_bidder_plans_bids_believes_and_replans_over_the_fake_endpoint(tmp_path):
    failed_once = []

    def responder(body):
        user = body["messages"][1]["content"]  # the decision's prompt (a re-ask appends to it)
        if "assign a priority level" in user or "Present the updated priorities" in user:
            names = re.findall(r"^\d+\. (\w+)(?:,| \()", user, flags=re.M)
            return Reply({"reasoning": "plan", "priorities": {n: 3 for n in names}})
        if "update the status" in user:
            status = json.loads(re.search(r"previous status:\n(\{.*\})", user).group(1))
            sold = re.search(r"Sold! (\w+) to (Bidder \d) at \$([\d,]+)! The true value for \w+ is \$([\d,]+)", user)
            if sold:
                item, who = sold.group(1), sold.group(2)
                price, value = (float(sold.group(k).replace(",", "")) for k in (3, 4))
                status["total_profits"][who] += value - price
                status["winning_bids"][who][item] = price
                if who == "Bidder 3":
                    status["remaining_budget"] -= price
            return Reply({"summary": "s", **status})
        minimum = float(re.search(r"a bid of at least \$([\d,]+)", user).group(1).replace(",", ""))
        if not failed_once:  # the first bid is one dollar short: a failed bid, asked again
            failed_once.append(minimum)
            return Reply({"reasoning": "low", "bid": minimum - 1})
        return Reply({"reasoning": "min", "bid": minimum})

    roster = ROSTER + [{"name": "gpt", "kind": "llm", "model": "fake"}]
    p = parse_params({"models": MODELS, "llm": {"cache_dir": str(tmp_path)},
                      "markets": {"english_auction": {"runs": 1, "items": ITEMS, "budgets": [6000],
                                                      "orders": ["ascending"], "roster": roster}}})
    fake = FakeEndpoint(responder=responder)

    result, _ = play_over_fake("english_auction", p, fake)
    d = result.decisions.query("agent_id == 'B3'")
    assert set(d["phase"]) == {"plan", "bid", "belief", "replan"}
    assert (d.query("phase == 'replan'")["step"].tolist()) == [1, 2]
    assert d.query("phase == 'belief'")["valid"].all() and len(d.query("phase == 'belief'")) == 3
    bad = d[~d["valid"]]
    assert len(bad) == 1 and bad["phase"].item() == "bid" and "failed bid" in bad["error"].item()
    retried = [r for r in fake.requests if "failed bid" in r.body["messages"][-1]["content"]]
    assert len(retried) == 1 and "below $1,000" in retried[0].body["messages"][-1]["content"]
    plans = result.tables["plans"].query("agent_id == 'B3'")
    assert set(plans["priority"]) == {3} and set(plans["source"]) == {"plan", "replan"}
    # one call per answer, each schema-valid JSON (a failed bid breaks a market rule, not the schema)
    assert len(result.llm_calls) == len(d) and result.llm_calls["valid"].all()


def test_the_static_and_no_plan_variants_make_no_planning_calls(tmp_path):
    def responder(body):
        user = body["messages"][1]["content"]
        assert "priority level" not in user and "updated priorities" not in user
        if "update the status" in user:
            return Reply({"summary": "", "remaining_budget": 0, "total_profits": {}, "winning_bids": {}})
        return Reply({"reasoning": "", "bid": None})

    for variant in ("static", "none"):
        roster = ROSTER + [{"name": "gpt", "kind": "llm", "model": "fake", "harness": "bdi",
                            "params": {"plan": variant}}]
        p = parse_params({"models": MODELS, "llm": {"cache_dir": str(tmp_path / variant)},
                          "markets": {"english_auction": {"runs": 1, "items": ITEMS[:2], "budgets": [6000],
                                                          "orders": ["ascending"], "roster": roster}}})
        if variant == "static":
            continue_plan = {"reasoning": "", "priorities": {"A": 1, "B": 3}}
            fake = FakeEndpoint(responder=lambda body: Reply(continue_plan) if "priority level" in
                                body["messages"][1]["content"] else responder(body))
        else:
            fake = FakeEndpoint(responder=responder)

        result, _ = play_over_fake("english_auction", p, fake)
        plans = result.tables["plans"].query("agent_id == 'B3'").set_index(["step", "item"])["priority"]
        if variant == "static":
            assert plans.loc[(0, "A")] == 1 and plans.loc[(1, "B")] == 3  # the first plan, kept
        else:
            assert set(plans) == {2}
        # wrong beliefs were corrected by the auctioneer after the bound
        beliefs = result.decisions.query("agent_id == 'B3' and phase == 'belief'")
        assert len(beliefs) == 2 * 4 and not beliefs["valid"].any()
