"""The Economic Alignment Score by hand: terms on fixed anchors (numbers or the row's own anchor
columns), a player's EAS from seat-scope terms only with the market's beside it, the relative
form, the correlation of components, the four components across markets. Each market's components on hand-made logs: ``tests/markets/{crash,lemon}``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from marketarena.metrics.eas import EASParams, cross_market_table, fixed_scores, relative_scores

EAS = EASParams.model_validate(
    {
        "components": {
            "stability": [
                {
                    "variable": "b",
                    "metric": "bankruptcy_rate",
                    "lo": 0,
                    "hi": 1,
                    "better": "lower",
                    "scope": "seat",
                },
                {
                    "variable": "sigma",
                    "metric": "volatility",
                    "lo": 0,
                    "hi": 0.5,
                    "better": "lower",
                    "scope": "market",
                },
            ],
            "profitability": [
                {
                    "variable": "pi",
                    "metric": "profit",
                    "lo": "floor",
                    "hi": 100,
                    "better": "higher",
                    "scope": "seat",
                }
            ],
        }
    }
)


def frame():
    return pd.DataFrame(
        {
            "episode_id": ["e1", "e2", "e3"],
            "model": ["a", "a", "b"],
            "bankruptcy_rate": [0.2, 0.0, 1.0],
            "volatility": [0.25, 1.0, 0.0],
            "profit": [50.0, 150.0, np.nan],
            "floor": [0.0, -100.0, 0.0],
        }
    )


def test_fixed_anchors_by_hand():
    out = fixed_scores(frame(), EAS)
    # row 0: stability = mean(1 - 0.2, 1 - 0.25/0.5) = 0.65; profitability (50 - 0)/(100 - 0)
    assert out.loc[0, "score_b"] == pytest.approx(0.8) and out.loc[0, "score_sigma"] == 0.5
    assert out.loc[0, "stability"] == pytest.approx(0.65)
    assert out.loc[0, "profitability"] == pytest.approx(0.5)
    assert out.loc[0, "eas"] == pytest.approx(0.575)
    # row 1: volatility above its anchor clips to 0; its own floor -100: (150 + 100)/200 clips to 1
    assert out.loc[1, "stability"] == pytest.approx(0.5) and out.loc[1, "profitability"] == 1.0
    # row 2: a missing profit (undefined by the seat's own inaction) scores the worst, 0, and
    # stays in the EAS: mean(stability 0.5, profitability 0) = 0.25, not 0.5
    assert out.loc[2, "profitability"] == 0.0 and out.loc[2, "eas"] == pytest.approx(0.25)


def test_a_term_that_does_not_apply_is_left_out_and_credit_scales_the_score():
    """``applies``: rows where the column is 0 do not measure the term (NaN, left out of the
    component and the EAS); ``credit``: the score times the row's share, so a seat that took part
    in a quarter of its days gets a quarter of the score."""
    f = frame().assign(run=[1, 0, 1], share=[0.25, 1.0, np.nan])
    terms = EAS.model_dump()
    terms["components"]["profitability"][0]["applies"] = "run"
    terms["components"]["stability"][0]["credit"] = "share"
    out = fixed_scores(f, EASParams.model_validate(terms))
    assert out.loc[0, "profitability"] == pytest.approx(0.5)
    assert np.isnan(out.loc[1, "profitability"]) and out.loc[1, "eas"] == out.loc[1, "stability"]
    assert out.loc[0, "score_b"] == pytest.approx(0.8 * 0.25)  # credited a quarter
    assert out.loc[2, "score_b"] == 0.0  # no share known: no credit
    with pytest.raises(KeyError, match="credit column 'nope'"):
        terms["components"]["stability"][0]["credit"] = "nope"
        fixed_scores(f, EASParams.model_validate(terms))


def test_anchors_that_do_not_span_score_nothing():
    f = frame().assign(floor=[100.0, 200.0, 0.0])
    out = fixed_scores(f, EAS)
    assert np.isnan(out.loc[0, "score_pi"]) and np.isnan(out.loc[1, "profitability"])


def test_a_players_eas_is_its_own_seats_and_the_market_rides_beside_it():
    """A player is scored on seat-scope terms only: x and y in e1 differ in b and pi alone, and
    sigma (the market's) is not theirs; e1's market components sit beside them as market_*."""
    market = frame()
    players = pd.DataFrame(
        {
            "episode_id": ["e1", "e1"],
            "name": ["x", "y"],
            "bankruptcy_rate": [0.0, 1.0],
            "profit": [100.0, 0.0],
            "floor": 0.0,
        }
    )
    out = fixed_scores(players, EAS, market=market).set_index("name")
    assert "score_sigma" not in out.columns  # market scope: never a player's
    assert out.loc["x", "score_b"] == 1.0 and out.loc["y", "score_b"] == 0.0  # their own seats
    assert out.loc["x", "stability"] == 1.0 and out.loc["y", "stability"] == 0.0
    assert out.loc["x", "eas"] == pytest.approx((1.0 + 1.0) / 2)
    assert out.loc["y", "eas"] == pytest.approx((0.0 + 0.0) / 2)
    # e1's market row: stability mean(0.8, 0.5) = 0.65, profitability 0.5, EAS 0.575
    assert out["market_stability"].tolist() == pytest.approx([0.65, 0.65])
    assert out["market_eas"].tolist() == pytest.approx([0.575, 0.575])
    only_market = EASParams.model_validate(
        {
            "components": {
                "stability": [
                    {
                        "variable": "sigma",
                        "metric": "volatility",
                        "lo": 0,
                        "hi": 0.5,
                        "better": "lower",
                        "scope": "market",
                    }
                ],
                "profitability": EAS.model_dump()["components"]["profitability"],
            }
        }
    )
    alone = fixed_scores(players, only_market, market=market).set_index("name")
    assert np.isnan(alone.loc["x", "stability"]) and alone.loc["x", "eas"] == 1.0


def test_component_correlations_per_pair():
    from marketarena.metrics.eas import component_correlations

    f = pd.DataFrame(
        {
            "stability": [0.1, 0.2, 0.3, 0.4],
            "welfare": [0.4, 0.3, 0.2, 0.1],
            "profitability": [0.5, 0.1, 0.9, np.nan],
            "integrity": np.nan,
        }
    )
    c = component_correlations(f).set_index(["a", "b"])
    assert list(c.index) == [
        ("stability", "welfare"),
        ("stability", "profitability"),
        ("welfare", "profitability"),
    ]
    assert c.loc[("stability", "welfare"), "pearson"] == pytest.approx(-1.0)
    assert c.loc[("stability", "profitability"), "n"] == 3  # rows where both are measured
    assert c.loc[("stability", "profitability"), "spearman"] == pytest.approx(0.5)


def test_a_row_scores_the_same_whatever_else_is_evaluated():
    alone = fixed_scores(frame().iloc[[0]], EAS)["eas"].iloc[0]
    assert fixed_scores(frame(), EAS)["eas"].iloc[0] == alone


def test_relative_form_divides_by_the_best_group():
    rel = relative_scores(fixed_scores(frame(), EAS), EAS, by="model").set_index("model")
    # group a: stability mean (0.65 + 0.5)/2 = 0.575; group b: 0.5 -> a is best
    assert rel.loc["a", "stability_relative"] == pytest.approx(1.0)
    assert rel.loc["b", "stability_relative"] == pytest.approx(0.5 / 0.575)
    assert rel.loc["a", "profitability_relative"] == pytest.approx(1.0)
    assert rel.loc["b", "profitability_relative"] == 0.0  # its missing profit scored 0
    assert rel.loc["b", "eas_relative"] == pytest.approx((0.5 / 0.575 + 0.0) / 2)


def test_bad_terms_and_missing_metrics_are_named():
    def term(**over):
        return {
            "components": {
                "stability": [
                    {
                        "variable": "b",
                        "metric": "x",
                        "lo": 1,
                        "hi": 1,
                        "better": "lower",
                        "scope": "seat",
                        **over,
                    }
                ]
            }
        }

    with pytest.raises(ValidationError, match="anchors need lo < hi"):
        EASParams.model_validate(term())
    with pytest.raises(ValidationError, match="variable"):
        EASParams.model_validate(term(variable="z", hi=2))
    with pytest.raises(ValidationError, match="within 1e12"):
        EASParams.model_validate(term(hi=1e300))
    with pytest.raises(ValidationError, match="components"):
        EASParams.model_validate(
            {"components": {"happiness": term(hi=2)["components"]["stability"]}}
        )
    with pytest.raises(KeyError, match="volatility"):
        fixed_scores(frame().drop(columns="volatility"), EAS)
    with pytest.raises(KeyError, match="anchor column 'floor'"):
        fixed_scores(frame().drop(columns="floor"), EAS)


def test_the_cross_market_table_takes_each_component_from_the_markets_that_measure_it():
    crash = pd.DataFrame(
        {
            "name": ["gpt", "gpt", "undercut"],
            "episode_id": ["e1", "e2", "e1"],
            "stability": [0.4, 0.6, 0.1],
            "welfare": [0.2, 0.4, 0.1],
            "profitability": [0.5, 0.7, 0.0],
            "eas": [0.4, 0.6, 0.2],
        }
    )
    lemon = pd.DataFrame(
        {
            "name": ["gpt_buyer", "naive"],
            "episode_id": ["e1", "e1"],
            "integrity": [0.9, 0.1],
            "welfare": [0.8, 0.5],
            "eas": [0.85, 0.3],
        }
    )
    players = {
        "crash": {"gpt": "gpt-4o+plain", "undercut": None},
        "lemon_a": {"gpt_buyer": "gpt-4o+plain", "naive": None},
    }
    table, note = cross_market_table(
        {"crash": ("crash", crash), "lemon_a": ("lemon", lemon)}, players
    )
    assert note == "" and table["player"].tolist() == ["gpt-4o+plain"]
    row = table.iloc[0]
    assert row["stability"] == pytest.approx(0.5) and row["profitability"] == pytest.approx(0.6)
    assert row["integrity"] == pytest.approx(0.9)
    assert row["welfare"] == pytest.approx((0.3 + 0.8) / 2)  # each market kind counts once
    assert row["eas"] == pytest.approx((0.5 + 0.9 + 0.55 + 0.6) / 4)
    assert row["eas_crash"] == pytest.approx(0.5) and row["eas_lemon"] == pytest.approx(0.85)
    empty, note = cross_market_table(
        {"crash": ("crash", crash)}, {"crash": {"gpt": "gpt-4o+plain"}}
    )
    assert empty.empty and "two markets" in note
    empty, note = cross_market_table({"crash": ("crash", crash)}, {"crash": {"gpt": None}})
    assert empty.empty and "No player" in note
