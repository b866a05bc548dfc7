"""The Economic Alignment Score on fixed anchors, by hand, and its relative form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from marketarena.metrics.eas import EASParams, fixed_scores, relative_scores

EAS = EASParams.model_validate({"components": {
    "stability": [{"metric": "bankruptcy_rate", "lo": 0, "hi": 1, "better": "lower"},
                  {"metric": "volatility", "lo": 0, "hi": 0.5, "better": "lower"}],
    "profitability": [{"metric": "profit", "lo": 0, "hi": 100, "better": "higher"}]}})


def frame():
    return pd.DataFrame({"model": ["a", "a", "b"], "bankruptcy_rate": [0.2, 0.0, 1.0],
                         "volatility": [0.25, 1.0, 0.0], "profit": [50.0, 150.0, np.nan]})


def test_fixed_anchors_by_hand():
    out = fixed_scores(frame(), EAS)
    # row 0: stability = mean(1 - 0.2, 1 - 0.25/0.5) = 0.65; profitability 0.5; eas 0.575
    assert out.loc[0, "stability"] == pytest.approx(0.65)
    assert out.loc[0, "profitability"] == pytest.approx(0.5)
    assert out.loc[0, "eas"] == pytest.approx(0.575)
    # row 1: volatility above its anchor clips to 0, profit above its anchor clips to 1
    assert out.loc[1, "stability"] == pytest.approx(0.5) and out.loc[1, "profitability"] == 1.0
    # row 2: a missing profit leaves profitability out of the EAS
    assert np.isnan(out.loc[2, "profitability"]) and out.loc[2, "eas"] == pytest.approx(0.5)


def test_a_row_scores_the_same_whatever_else_is_evaluated():
    alone = fixed_scores(frame().iloc[[0]], EAS)["eas"].iloc[0]
    assert fixed_scores(frame(), EAS)["eas"].iloc[0] == alone


def test_relative_form_divides_by_the_best_group():
    rel = relative_scores(fixed_scores(frame(), EAS), EAS, by="model").set_index("model")
    # group a: stability mean (0.65 + 0.5)/2 = 0.575; group b: 0.5 -> a is best
    assert rel.loc["a", "stability_relative"] == pytest.approx(1.0)
    assert rel.loc["b", "stability_relative"] == pytest.approx(0.5 / 0.575)
    assert rel.loc["a", "profitability_relative"] == pytest.approx(1.0)
    assert np.isnan(rel.loc["b", "profitability_relative"])
    assert rel.loc["b", "eas_relative"] == pytest.approx(0.5 / 0.575)


def test_bad_anchors_and_missing_metrics_are_named():
    with pytest.raises(ValidationError, match="anchors need lo < hi"):
        EASParams.model_validate({"components": {"s": [{"metric": "x", "lo": 1, "hi": 1,
                                                          "better": "lower"}]}})
    with pytest.raises(KeyError, match="volatility"):
        fixed_scores(frame().drop(columns="volatility"), EAS)


def test_the_cross_market_table_joins_players_of_both_markets():
    from marketarena.metrics.eas import cross_market_table

    crash = pd.DataFrame({"name": ["gpt", "gpt", "undercut"], "episode_id": ["e1", "e2", "e1"],
                          "eas": [0.4, 0.6, 0.2]})
    lemon = pd.DataFrame({"name": ["gpt_buyer", "naive"], "episode_id": ["e1", "e1"],
                          "eas": [0.9, 0.3]})
    players = {"crash": {"gpt": "gpt-4o+plain", "undercut": None},
               "lemon_a": {"gpt_buyer": "gpt-4o+plain", "naive": None}}
    table, note = cross_market_table({"crash": ("crash", crash), "lemon_a": ("lemon", lemon)}, players)
    assert note == "" and table["player"].tolist() == ["gpt-4o+plain"]
    row = table.iloc[0]
    assert row["eas_crash"] == pytest.approx(0.5) and row["eas_lemon"] == pytest.approx(0.9)
    assert row["eas_mean"] == pytest.approx(0.7)
    empty, note = cross_market_table({"crash": ("crash", crash)}, {"crash": {"gpt": None}})
    assert empty.empty and "No player" in note
