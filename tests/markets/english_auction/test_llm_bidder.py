"""An LLM bidder (the ``bdi`` harness) over the fake OpenAI-compatible endpoint, end to end: the
seed's prompts and the authors' conversation. The bid prompt holds the plan the model wrote and
its earlier reasons on the item, and neither a computed minimum bid nor its budget; later rounds
name the round with an ordinal; a failed bid is re-asked with the auctioneer's reason; a replan
shows the previous plan; a ``none`` bidder's prompts hold no plan; a ``static`` bidder keeps its
first plan; an answer in no valid format is logged with its raw text."""

from __future__ import annotations

import re

import numpy as np
import pytest

from marketarena.config import parse_params
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.testing import play_over_fake

ITEMS = [
    {"name": "Widget A", "start_price": 1000},
    {"name": "Gadget B", "start_price": 3000},
    {"name": "Doodad D", "start_price": 2000},
]
MODELS = {"fake": {"model": "fake", "base_url": "http://fake.invalid/v1", "api_key_env": None}}


def money(text: str) -> float:
    return float(text.replace(",", ""))


def previous_status(prompt: str) -> dict:
    """The status JSON from the authors' status text in a belief prompt."""
    block = prompt.split("Here's your previous status:\n```\n")[1].split("\n```")[0]
    budget, profits_text, wins_text = re.split(r"\n\n\* (?:Total Profits|Winning Bids):\n", block)
    profits = {
        n: money(v) for n, v in re.findall(r"^  \* (Bidder \d+): \$(-?[\d.]+)$", profits_text, re.M)
    }
    wins: dict[str, dict[str, float]] = {}
    for line in wins_text.splitlines():
        if m := re.match(r"^  \* (Bidder \d+):$", line):
            who = wins.setdefault(m.group(1), {})
        elif m := re.match(r"^    \* (.+): \$(-?[\d.]+)$", line):
            who[m.group(1)] = money(m.group(2))
    return {
        "remaining_budget": money(re.search(r"Remaining Budget: \$(-?[\d.]+)", budget).group(1)),
        "total_profits": profits,
        "winning_bids": wins,
    }


def correct_status(prompt: str, me: str) -> dict:
    status = previous_status(prompt)
    if sold := re.search(
        r"Sold! (.+?) to (Bidder \d+) at \$([\d.]+)! The true value for .+? is \$([\d.]+)\.", prompt
    ):
        item, who, price, value = (
            sold.group(1),
            sold.group(2),
            money(sold.group(3)),
            money(sold.group(4)),
        )
        status["total_profits"][who] += value - price
        status["winning_bids"][who][item] = price
        if who == me:
            status["remaining_budget"] -= price
    return status


def lowest_valid_bid(messages: list[dict]) -> tuple[float, float]:
    """(the lowest valid bid, the start price) from the auctioneer's last words in the conversation."""
    for m in reversed(messages):
        text = m["content"]
        if m["role"] == "user" and (
            h := re.search(
                r"Now we have \$([\d.]+) from .+? The minimum increase "
                r"over this highest bid is \$([\d.]+)\.",
                text,
            )
        ):
            start = money(
                re.findall(
                    r"starting price for bidding for .+? is \$([\d.]+)",
                    " ".join(x["content"] for x in messages),
                )[-1]
            )
            return money(h.group(1)) + money(h.group(2)), start
        if m["role"] == "user" and (
            s := re.search(r"starting price for bidding for .+? is \$([\d.]+)", text)
        ):
            return money(s.group(1)), money(s.group(1))
    raise AssertionError("no auctioneer message in the conversation")


class Bidder:
    """The fake model: plans (all 3s), bids the minimum up to 1.3 x the start price (one bid a
    dollar short first), and reports the correct status."""

    def __init__(self, plain_text_bid: bool = False):
        self.failed = False
        self.plain_text_bid = plain_text_bid
        self.rounds: dict[str, int] = {}

    def __call__(self, body: dict) -> Reply:
        msgs = body["messages"]
        last, me = (
            msgs[-1]["content"],
            re.search(r"You are (Bidder \d+)", msgs[0]["content"]).group(1),
        )
        if "Please plan for your bidding strategy" in last or "review your strategies" in last:
            names = re.findall(r'^"?\d+\. (.+?), starting price is', last, flags=re.M)
            tag = "REPLAN-TEXT" if "review your strategies" in last else "PLAN-TEXT"
            return Reply(
                {
                    "reasoning": f"{tag}: I value {names[0]} most.",
                    "priorities": {n: 3 for n in names},
                }
            )
        if "update the status of the auction" in msgs[1]["content"]:
            return Reply({"summary": "", **correct_status(msgs[1]["content"], me)})
        if self.plain_text_bid:
            return Reply("I bid $1200!")
        lowest, start = lowest_valid_bid(msgs)
        k = sum(1 for m in msgs if m["role"] == "user" and "the auctioneer says" in m["content"])
        if not self.failed:  # a dollar short: a failed bid, asked again
            self.failed = True
            return Reply({"reasoning": f"BID-REASON round {k}: low", "bid": lowest - 1})
        bid = lowest if lowest <= 1.3 * start else None
        return Reply({"reasoning": f"BID-REASON round {k}", "bid": bid})


def run(tmp_path, harness_params: dict | None = None, model=None):
    roster = [
        {"name": "rule", "kind": "baseline", "strategy": "rule"},
        {"name": "increment", "kind": "baseline", "strategy": "increment"},
        {
            "name": "gpt",
            "kind": "llm",
            "model": "fake",
            "harness": "bdi",
            "params": harness_params or {},
        },
    ]
    p = parse_params(
        {
            "models": MODELS,
            "llm": {"cache_dir": str(tmp_path)},
            "markets": {
                "english_auction": {
                    "runs": 1,
                    "items": ITEMS,
                    "budgets": [6000],
                    "orders": ["ascending"],
                    "roster": roster,
                }
            },
        }
    )
    fake = FakeEndpoint(responder=model or Bidder())
    result, _ = play_over_fake("english_auction", p, fake)
    return result, [r.body["messages"] for r in fake.requests]


def kind(messages: list[dict]) -> str:
    last = messages[-1]["content"]
    if "Please plan for your bidding strategy" in last:
        return "plan"
    if "review your strategies" in last:
        return "replan"
    if "update the status" in messages[1]["content"]:
        return "belief"
    return "bid"


def test_an_adaptive_bidder_sees_its_plan_and_its_reasons_and_works_out_bids_itself(tmp_path):
    result, requests = run(tmp_path)
    plans = [m for m in requests if kind(m) == "plan"]
    assert len(plans) == 1 and [x["role"] for x in plans[0]] == ["system", "user"]
    assert "total budget of $6000" in plans[0][1]["content"]
    assert (
        "1. Widget A, starting price is $1000. Your estimated value for this item is $2200."
        in plans[0][1]["content"]
    )

    bids = [m for m in requests if kind(m) == "bid"]
    first = bids[0]  # the first bid on Widget A: system, plan instruction, the plan, the call
    assert [x["role"] for x in first] == ["system", "user", "assistant", "user"]
    assert first[1] == plans[0][1] and "PLAN-TEXT: I value Widget A most." in first[2]["content"]
    call = first[3]["content"]
    assert call.startswith(
        'Now, the auctioneer says: "Attention, bidders! 3 item(s) left, they are: '
        "Widget A, Doodad D, Gadget B."
    )
    assert "The starting price for bidding for Widget A is $1000." in call
    assert "according to your plan" in call and "status quo" not in call
    # nothing computed for it: no minimum valid bid, no budget
    assert "$6000" not in call and "budget" not in call.replace(
        "remaining budget in future bidding", ""
    )
    assert "at least" not in call

    # the failed bid (a dollar short) is asked again with the auctioneer's reason
    reask = bids[1]
    assert reask[-2]["role"] == "assistant" and '"bid": 999' in reask[-2]["content"].replace(
        ".0", ""
    )
    assert reask[-1]["content"].startswith(
        "Your bid of $999 failed, because your bid is lower than the "
        "starting bid ($1000): You must reconsider your bid."
    )

    # a later round: its earlier reasons and the re-ask stay in the conversation, the message is
    # only the auctioneer's, naming the last round by its ordinal
    later = next(m for m in bids if "This is the 2nd round" in m[-1]["content"])
    said = [x["content"] for x in later if x["role"] == "assistant"]
    assert [s.split('"reasoning": "')[1].split('"')[0] for s in said[1:]] == [
        "BID-REASON round 1: low",
        "BID-REASON round 1",
    ]  # the first bid, then its rebid
    assert any("Your bid of $999 failed" in x["content"] for x in later if x["role"] == "user")
    msg = later[-1]["content"]
    assert msg.startswith(
        'Now, the auctioneer says: "Thank you! This is the 2nd round of bidding for this item:\n- '
    )
    highest, increase = (
        money(v)
        for v in re.search(
            r"Now we have \$([\d.]+) from .+?The minimum increase over this highest bid is \$([\d.]+)\.",
            msg,
        ).groups()
    )
    assert increase == 100 and f"${highest + increase:.0f}" not in msg
    assert "You (Bidder 3)" in msg or "Bidder 3" not in msg.split("Now we have")[0]

    # the replan shows the last plan and its answer; the next item's bids show the replan
    replans = [m for m in requests if kind(m) == "replan"]
    assert len(replans) == 2
    assert [x["role"] for x in replans[0]] == ["system", "user", "assistant", "user"]
    assert (
        "PLAN-TEXT" in replans[0][2]["content"] and "Remaining Budget:" in replans[0][3]["content"]
    )
    after = next(m for m in bids if "please bid on Doodad D" in m[-1]["content"])
    assert after[1] == replans[0][3] and "REPLAN-TEXT" in after[2]["content"]
    assert not any("Widget A" in x["content"] and "BID-REASON" in x["content"] for x in after)

    d = result.decisions.query("agent_id == 'B3'")
    assert set(d["phase"]) == {"plan", "bid", "belief", "replan"}
    assert d.query("phase == 'belief'")["valid"].all() and len(d.query("phase == 'belief'")) == 3
    bad = d[~d["valid"]]
    assert len(bad) == 1 and bad["error"].item().startswith("failed bid (under minimum)")
    plans_table = result.tables["plans"].query("agent_id == 'B3'")
    assert set(plans_table["priority"]) == {3} and set(plans_table["source"]) == {"plan", "replan"}
    assert len(result.llm_calls) == len(d) and result.llm_calls["valid"].all()


def test_a_none_bidder_sees_no_plan_and_its_status_before_each_item(tmp_path):
    result, requests = run(tmp_path, {"plan": "none"})
    assert not any(kind(m) in ("plan", "replan") for m in requests)
    bids = [m for m in requests if kind(m) == "bid"]
    assert bids
    for m in bids:
        text = "\n".join(x["content"] for x in m)
        assert "PLAN-TEXT" not in text and "priority" not in text and "Please plan" not in text
    firsts = [m for m in bids if "Attention, bidders!" in m[-1]["content"]]  # round 1, each item
    assert len(firsts) == 3 and all([x["role"] for x in m] == ["system", "user"] for m in firsts)
    assert all(
        m[1]["content"].startswith("The status quo of this auction so far is:") for m in firsts
    )
    plans = result.tables["plans"].query("agent_id == 'B3'")
    assert plans["priority"].isna().all() and set(plans["source"]) == {"none"}


def test_a_static_bidder_plans_once_and_keeps_that_plan_in_every_bid(tmp_path):
    result, requests = run(tmp_path, {"plan": "static"})
    assert [kind(m) for m in requests].count("plan") == 1 and "replan" not in map(kind, requests)
    last_item = [
        m for m in requests if kind(m) == "bid" and "please bid on Gadget B" in m[-1]["content"]
    ]
    assert last_item and "PLAN-TEXT" in last_item[0][2]["content"]
    assert "The status quo of this auction so far is:" in last_item[0][-1]["content"]
    plans = result.tables["plans"].query("agent_id == 'B3'")
    assert set(plans.query("step > 0")["source"]) == {"static"} and set(plans["priority"]) == {3}


def test_an_answer_in_no_valid_format_is_logged_with_its_raw_text(tmp_path):
    result, requests = run(tmp_path, model=Bidder(plain_text_bid=True))
    d = result.decisions.query("agent_id == 'B3' and phase == 'bid'")
    assert len(d) == 3 and not d["valid"].any()  # one per item: withdrawn after each
    error = d["error"].iloc[0]
    assert error.startswith("llm: ") and 'raw answer: "I bid $1200!"' in error
    assert (result.events.query("agent_id == 'B3'")["event"] == "forced_withdrawal").sum() == 3
    calls = result.llm_calls.query("agent_id == 'B3' and phase == 'bid'")
    assert (calls["attempts"] == 3).all() and not calls["valid"].any()  # the client's 2 re-asks


@pytest.mark.parametrize("variant", ["adaptive", "none"])
def test_the_same_answers_replay_the_same_auction(tmp_path, variant):
    one, _ = run(tmp_path / "a", {"plan": variant})
    two, _ = run(tmp_path / "b", {"plan": variant})
    for name in ("items", "bids", "plans"):
        a, b = one.tables[name], two.tables[name]
        assert a.equals(b) or np.array_equal(a.fillna(-1).to_numpy(), b.fillna(-1).to_numpy())
