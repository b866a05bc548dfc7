"""Their score's per-run figures as their exp1 scoring script computes them (issue 54: "their"
crash health must be theirs; checked against their cached grids by
benchmarks/bench_their_outputs.py): a day's mean price over the firms that posted a price above 0
that day, its sample SD over days; the final price over the firms in business at the end of the
last day with a price above 0."""

import pandas as pd
import pytest

from marketarena.markets.crash.sources.published import run_figures


def test_a_posted_price_of_zero_is_not_in_the_days_mean():
    # one run, 3 days, firms a, b, c (unit cost 2)
    #   day 0: a 4, b 0 (posted 0), c 6              -> mean of a, c: 5
    #   day 1: a 4, b 8 (out of business at its end), c 6 -> mean of a, b, c: 6
    #   day 2: a 5, c 7                              -> 6
    # sigma = SD(5, 6, 6) with ddof 1 = sqrt(1/3); p_fin = (5 + 7) / 2 = 6; dev = |6 / 2 - 1| = 2
    states = pd.DataFrame(
        {
            "episode_id": ["r"] * 8,
            "step": [0, 0, 0, 1, 1, 1, 2, 2],
            "agent_id": ["a", "b", "c", "a", "b", "c", "a", "c"],
            "price": [4.0, 0.0, 6.0, 4.0, 8.0, 6.0, 5.0, 7.0],
            "bankrupt": [False, False, False, False, True, False, False, False],
        }
    )
    market = pd.DataFrame(
        {
            "episode_id": ["r"],
            "discovery_limit": [3],
            "stabilizing": [1],
            "bankruptcy_rate": [1 / 3],
        }
    )
    setting = pd.DataFrame({"episode_id": ["r"], "model": ["m"], "seed": [8], "unit_cost": [2.0]})
    run = run_figures(market, states, setting).iloc[0]
    assert run["sigma"] == pytest.approx((1 / 3) ** 0.5)  # with b's 0 counted: SD(10/3, 6, 6)
    assert run["p_fin"] == 6.0 and run["dev"] == 2.0 and run["b"] == pytest.approx(1 / 3)
    one_day = run_figures(market, states[states["step"] == 0], setting).iloc[0]
    assert one_day["sigma"] == 0.0  # one day: their script's 0, not NaN
    # a last day where a firm in business posted 0: not in the final price
    zero_last = states.copy()
    zero_last.loc[7, "price"] = 0.0
    assert run_figures(market, zero_last, setting).iloc[0]["p_fin"] == 5.0


def test_departures_list_where_bankruptcy_rises_with_stabilizing_firms():
    from marketarena.markets.crash.sources.published import departures

    rows = [
        # model a at limit 3: 0 of 2 seeds bankrupt without stabilizers, both with five: a rise
        ("a", 0, 3, 0.0),
        ("a", 0, 3, 0.0),
        ("a", 5, 3, 0.6),
        ("a", 5, 3, 0.6),
        # model a at limit 5: falls as the seed says; not listed
        ("a", 0, 5, 0.8),
        ("a", 5, 5, 0.2),
        # model b: one number of stabilizing firms only: nothing to compare
        ("b", 0, 3, 0.4),
        # model c: a smaller rise, listed after a's
        ("c", 0, 3, 0.2),
        ("c", 2, 3, 0.9),
        ("c", 5, 3, 0.3),
        # model d: the same rate, its mean over three runs off by rounding: no rise
        ("d", 0, 3, 0.8),
        ("d", 5, 3, 0.8),
        ("d", 5, 3, 0.8),
        ("d", 5, 3, 0.8),
    ]
    market = pd.DataFrame(
        rows, columns=["model", "stabilizing", "discovery_limit", "bankruptcy_rate"]
    )
    out = departures(market)
    assert out[["model", "discovery_limit"]].values.tolist() == [["a", 3], ["c", 3]]
    a = out.iloc[0]
    assert (a["fewest"], a["most"], a["runs_fewest"], a["runs_most"]) == (0, 5, 2, 2)
    assert a["bankruptcy_fewest"] == 0.0 and a["change"] == pytest.approx(0.6)
    # the fewest against the most, whatever lies between (c's 2 stabilizers at 0.9)
    assert out.iloc[1]["change"] == pytest.approx(0.1)
