"""A decision never given validly counts as failed in every rate (issue 55): a bidder that answers
garbage (a format failure, the fallback played) never shows a lower CFR or error rate than one
that answers validly but wrongly at every attempt; a hand-computed auction with k silent decisions
among n; the seed's own rates (``seed_``, answers judged by the rules only) kept beside."""

from __future__ import annotations

import pytest

from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.markets.english_auction import KIND
from marketarena.markets.english_auction.analysis import metrics as em
from marketarena.markets.english_auction.baselines import malformed, status_after
from marketarena.markets.english_auction.observations import BeliefAction, BidAction, PlanAction
from marketarena.testing import play_scripted
from tests.markets.english_auction.test_market import ITEMS
from tests.markets.english_auction.test_market import params as market_params

ROSTER = [
    {"name": "one", "kind": "baseline", "strategy": "rule"},
    {"name": "two", "kind": "baseline", "strategy": "increment"},
]
RATES = [
    "failed_bid_rate",
    "self_error_rate",
    "other_error_rate",
    "cfr",
    "self_answer_error_rate",
    "other_answer_error_rate",
]


def params(**over):
    """test_market's three-item auction, its two bidders named one and two."""
    return market_params(**{"roster": ROSTER, **over})


def truthful(phase, obs, retry):
    if phase in ("plan", "replan"):
        return PlanAction(priorities={i.name: 2 for i in obs.items})
    return status_after(obs)


def wrong(obs) -> BeliefAction:
    """A valid status wrong in every field: budget, every bidder's profit and winning items."""
    right = status_after(obs)
    return BeliefAction(
        summary="",
        remaining_budget=right.remaining_budget + 1000,
        total_profits={b: v + 1000 for b, v in right.total_profits.items()},
        winning_bids={b: {"nothing": 1.0} for b in right.winning_bids},
    )


def seat(bids=None, belief=truthful):
    """B1: bids from {(item, round): [answer per attempt]} (missing: withdraw; "garbage": an
    answer not in the format), beliefs from ``belief``."""
    bids = bids or {}

    def fn(phase, obs, retry):
        if phase != "bid":
            return belief(phase, obs, retry)
        answers = bids.get((obs.item.name, obs.round - 1), [None])
        amount = answers[min(0 if retry is None else retry.attempt - 1, len(answers) - 1)]
        return malformed("bid") if amount == "garbage" else BidAction(bid=amount)

    return fn


def silent_beliefs(phase, obs, retry):
    return malformed("belief") if phase == "belief" else truthful(phase, obs, retry)


def wrong_beliefs(phase, obs, retry):
    return wrong(obs) if phase == "belief" else truthful(phase, obs, retry)


def b1_metrics(tmp_path, p, b1, name):
    """B1's row of the agents metrics, the instance's attempts passed as the pipeline passes them."""
    result, table, _ = play_scripted("english_auction", p, {"B1": b1, "B2": seat()})
    folder = tmp_path / name
    logs.write_episode(
        folder,
        logs.PlannedEpisode("ep-0000", 0, 0, "x"),
        {**result.log_tables(), "agents": table},
        {},
        {},
    )
    mp = p.markets["english_auction"]
    frames = KIND.analysis.compute_metrics(EpisodeReader(folder), mp, folder)
    return frames["agents"].set_index("agent_id").loc["B1"]


# B1 bids 1000 on A and wins it (B2 withdraws from every item); it withdraws from B and C.
BIDS = {("A", 0): [1000]}


def test_a_silent_bidder_never_shows_lower_rates_than_one_answering_wrongly(tmp_path):
    p = params()
    silent = b1_metrics(tmp_path, p, seat(BIDS, silent_beliefs), "silent")
    wrong_ = b1_metrics(tmp_path, p, seat(BIDS, wrong_beliefs), "wrong")
    right = b1_metrics(tmp_path, p, seat(BIDS), "right")
    assert silent["format_failures"] == 3 and wrong_["format_failures"] == 0
    for rate in RATES:
        assert silent[rate] >= wrong_[rate], rate
    for rate in ("self_error_rate", "other_error_rate", "cfr", "self_answer_error_rate"):
        assert silent[rate] > right[rate], rate
    # every belief field failed: both at 1.0
    assert silent["self_error_rate"] == wrong_["self_error_rate"] == 1.0
    assert silent["other_error_rate"] == wrong_["other_error_rate"] == 1.0
    # the seed's definition leaves format failures out: there the silent bidder looks clean
    assert silent["seed_self_error_rate"] != silent["seed_self_error_rate"]  # NaN: nothing judged
    assert silent["seed_cfr"] < wrong_["seed_cfr"]


def test_a_bidder_silent_at_every_bid_fails_as_much_as_one_over_budget_at_every_attempt(tmp_path):
    p = params()
    garbage = {(i["name"], 0): ["garbage"] for i in ITEMS}
    too_much = {(i["name"], 0): [10_000.0] for i in ITEMS}
    silent = b1_metrics(tmp_path, p, seat(garbage), "silent")
    wrong_ = b1_metrics(tmp_path, p, seat(too_much), "wrong")
    # 3 bid decisions: 10 failed bids each (bid_attempts) for both; forced to withdraw
    assert (silent["unanswered_bids"], silent["failed_bids"]) == (30, 0)
    assert (wrong_["unanswered_bids"], wrong_["failed_bids"]) == (0, 30)
    assert silent["failed_bid_rate"] == wrong_["failed_bid_rate"] == 1.0
    assert silent["cfr"] == pytest.approx(wrong_["cfr"])
    assert silent["forced_withdrawals"] == wrong_["forced_withdrawals"] == 3
    assert silent["seed_failed_bid_rate"] != silent["seed_failed_bid_rate"]  # NaN: none judged


def test_k_silent_decisions_among_n_by_hand(tmp_path):
    """bid_attempts 3, belief_attempts 2, two bidders. B1's bid answers: A 1000; 1250 (under the
    minimum after B2's 1200), 1300; B 2500 (over its budget of 1700), withdraw; C garbage (1 silent
    bid decision among 6: 3 unused answers). Its belief answers: right after A and C, garbage
    after B (1 silent belief decision among 3: 2 unused answers, each 3 self and 2 other fields)."""
    p = params(bid_attempts=3, belief_attempts=2)

    def belief(phase, obs, retry):
        if phase == "belief" and obs.item.name == "B":
            return malformed("belief")
        return truthful(phase, obs, retry)

    b1 = seat(
        {("A", 0): [1000], ("A", 1): [1250, 1300], ("B", 0): [2500, None], ("C", 0): ["garbage"]},
        belief,
    )
    b2_bids = {("A", 0): [1200], ("A", 2): [None], ("B", 0): [2000]}
    result, table, _ = play_scripted("english_auction", p, {"B1": b1, "B2": seat(b2_bids)})
    folder = tmp_path / "hand"
    logs.write_episode(
        folder,
        logs.PlannedEpisode("ep-0000", 0, 0, "x"),
        {**result.log_tables(), "agents": table},
        {},
        {},
    )
    frames = em.compute(EpisodeReader(folder), {"bid": 3, "belief": 2})
    b1 = frames["agents"].set_index("agent_id").loc["B1"]
    assert (b1["judged_bids"], b1["failed_bids"], b1["unanswered_bids"]) == (5, 2, 3)
    assert (b1["judged_beliefs"], b1["unanswered_beliefs"]) == (2, 2)
    assert (b1["self_fields"], b1["self_field_errors"], b1["other_fields"]) == (6, 0, 4)
    assert b1["failed_bid_rate"] == pytest.approx((2 + 3) / (5 + 3))
    assert b1["self_error_rate"] == pytest.approx(6 / (6 + 6))
    assert b1["other_error_rate"] == pytest.approx(4 / (4 + 4))
    assert b1["self_answer_error_rate"] == pytest.approx(2 / (2 + 2))
    assert b1["other_answer_error_rate"] == pytest.approx(2 / (2 + 2))
    assert b1["cfr"] == pytest.approx((2 + 3 + 6 + 4) / (5 + 3 + 12 + 8))
    # the seed's, over the judged answers only
    assert b1["seed_failed_bid_rate"] == pytest.approx(2 / 5)
    assert b1["seed_self_error_rate"] == 0 and b1["seed_other_error_rate"] == 0
    assert b1["seed_cfr"] == pytest.approx(2 / (5 + 6 + 4))
    assert (b1["forced_withdrawals"], b1["beliefs_corrected"]) == (1, 1)
