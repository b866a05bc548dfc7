"""Scripted bidders that err as LLMs do: the metrics recover the configured rates (failed bids of
each kind per bid made, belief errors per checked field the authors' way and per answer ours,
format failures per answer), bidders without errors score 0, and more errors score worse."""

from __future__ import annotations

import math

import pytest

from marketarena.config import parse_params
from marketarena.core.reader import EpisodeReader
from marketarena.markets.english_auction.analysis import metrics as em
from marketarena.pipeline import Paths, run_simulate

RATES = {
    "under_minimum": 0.1,
    "over_budget": 0.06,
    "budget_belief_error": 0.2,
    "own_belief_error": 0.1,
    "other_belief_error": 0.15,
    "format_error": 0.03,
}


@pytest.fixture(scope="module")
def agents(tmp_path_factory):
    root = tmp_path_factory.mktemp("rates")
    roster = [
        {"name": "increment", "kind": "baseline", "strategy": "increment"},
        {"name": "pacer", "kind": "baseline", "strategy": "pacer"},
        {"name": "erring", "kind": "baseline", "strategy": "planner", "params": RATES},
        {
            "name": "half",
            "kind": "baseline",
            "strategy": "planner",
            "params": {k: v / 2 for k, v in RATES.items()},
        },
    ]
    p = parse_params(
        {
            "markets": {
                "english_auction": {"runs": 45, "seed": 3, "roster": roster, "shard_episodes": 45}
            },
            "execution": {"workers": 1},
        }
    )
    paths = Paths(root)
    run_simulate("english_auction", p, paths, progress=False)
    return em.compute(EpisodeReader(paths.episodes("english_auction")))["agents"]


def near(measured: float, p: float, n: int) -> bool:
    """Within 4 binomial standard errors."""
    return abs(measured - p) <= 4 * math.sqrt(p * (1 - p) / n)


def test_the_metrics_recover_the_configured_rates(agents):
    s = agents[agents["name"] == "erring"].sum(numeric_only=True)
    assert s["bids_made"] > 800 and s["self_fields"] > 1000
    assert near(s["failed_under_minimum"] / s["bids_made"], RATES["under_minimum"], s["bids_made"])
    assert near(s["failed_over_budget"] / s["bids_made"], RATES["over_budget"], s["bids_made"])
    # the authors' per-field rates: self = (budget + 2 x own) / 3 fields, other = per field
    self_rate = (RATES["budget_belief_error"] + 2 * RATES["own_belief_error"]) / 3
    assert near(s["self_field_errors"] / s["self_fields"], self_rate, s["self_fields"])
    assert near(
        s["other_field_errors"] / s["other_fields"], RATES["other_belief_error"], s["other_fields"]
    )
    # ours per answer: any of its 3 self fields wrong; any of 2 fields x 3 other bidders wrong
    answers = s["self_fields"] / 3
    p_self = 1 - (1 - RATES["budget_belief_error"]) * (1 - RATES["own_belief_error"]) ** 2
    p_other = 1 - (1 - RATES["other_belief_error"]) ** 6
    e = agents[agents["name"] == "erring"]
    weights = e["self_fields"] / 3
    assert near((e["self_answer_error_rate"] * weights).sum() / answers, p_self, answers)
    assert near((e["other_answer_error_rate"] * weights).sum() / answers, p_other, answers)
    assert near(s["format_failures"] / s["answers"], RATES["format_error"], s["answers"])


def test_bidders_without_errors_score_zero_and_more_errors_score_worse(agents):
    means = agents.groupby("name")[
        ["failed_bid_rate", "self_error_rate", "other_error_rate", "cfr", "format_failure_rate"]
    ].mean()
    for clean in ("increment", "pacer"):
        assert (means.loc[clean] == 0).all()
    assert (means.loc["erring"] > means.loc["half"]).all()
    assert (means.loc["half"] > 0).all()
