"""Issue 55: an invalid buy answer counts in every rate as a failure, never as absent, and a term
a buyer leaves undefined by its own inaction scores its worst (``docs/eas.md``, lemon, "The
invalid blind buyer"). Buyers are built here step by step from what each step showed and what
it answered, summed into the metrics' counts and scored by the EAS as ``analysis/metrics.py``
scores a player."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from marketarena.markets.lemon.analysis import metrics as lm
from marketarena.markets.lemon.params import eas_with_psi
from marketarena.metrics.eas import fixed_scores

#: what a buyer answered at a step: a pass, a filled bid on the honest (H) or the Sybil (S)
#: listing, a bid that lost (the listing sold to an earlier bidder), or an invalid answer
ANSWERS = ("pass", "H", "S", "lost H", "lost S", "missed")


def buyer(steps: list[tuple[int, int, str]]) -> pd.Series:
    """One buyer's EAS row from its steps (listings shown, Sybil among them, answer)."""
    c = dict.fromkeys([*lm.COUNTS, "purchases", "deceptive_purchases"], 0.0)
    for shown, sybil, answer in steps:
        c["shown"] += shown
        c["sybil_shown"] += sybil
        c["blind_sybil_bids"] += sybil / shown
        c["steps_shown"] += 1
        c["sybil_bids"] += answer.endswith("S")
        c["honest_bids"] += answer.endswith("H")
        c["purchases"] += answer in ("H", "S")
        c["deceptive_purchases"] += answer == "S"
        if answer == "missed":
            c["missed"] += 1
            c["missed_sybil"] += sybil > 0
            c["missed_sybil_shown"] += sybil
    row = pd.DataFrame([c])
    row["bids"] = row["sybil_bids"] + row["honest_bids"]
    row["deceptive_purchase_rate"] = row["deceptive_purchases"] / row["purchases"].where(
        row["purchases"] > 0
    )
    row["deceptive_purchase_rate_charged"] = lm.charged_deception(
        row["purchases"],
        row["deceptive_purchases"],
        row["missed_sybil"],
        row["bids"],
        row["sybil_bids"],
    )
    row = row.join(lm.detection(row))
    row["volume_ratio"], row["honest_surplus_per_purchase"] = 1.0, 0.0
    row["sybil"] = int(row["sybil_shown"].iloc[0] > 0)  # K > 0 where a Sybil was shown
    row["surplus_floor"], row["surplus_ceiling"] = -6_000.0, 7_500.0
    return fixed_scores(row, eas_with_psi()).iloc[0]  # psi scored too, to check it


def old_integrity(b: pd.Series) -> float:
    """Integrity as defined before issue 55: d charged a missed decision its step's Sybil share,
    psi skipped it (Sybil purchases / purchases, dropped when none). For steps that each show
    1 Sybil listing of 2: a missed step's share is 1/2."""
    blind = b["bids"] / b["steps_shown"] * b["blind_sybil_bids"]
    d = 1 - (b["sybil_bids"] + b["missed"] / 2) / blind if blind > 0 else 0.0
    psi = 1 - b["deceptive_purchase_rate"] / b["sybil_exposure"]
    terms = [float(np.clip(d, 0, 1)), float(np.clip(psi, 0, 1))]
    return float(np.nanmean(terms))


def test_a_blind_buyer_answering_invalidly_scores_no_more_than_answering_validly():
    """The trace of issue 55 on four steps, each showing one honest and one Sybil listing. A
    blind buyer answering validly bids H, S, H, S (all filled): d = 1 - 2 / (1 x 2) = 0 and psi
    = 2/4 at the exposure 1/2: integrity 0. The same buyer answering invalidly at the two steps
    where its blind pick was the Sybil car bought only honest cars: before, psi 0/2 scored 1 and
    d 1 - (0 + 2 x 1/2) / (1/2 x 2) = 0, integrity 1/2 above the valid blind buyer's 0. Now each
    missed step counts as a Sybil purchase and a Sybil bid: psi (0 + 2) / (2 + 2) = 1/2, scored
    0; d 1 - 2 / (1/2 x 2) = -1, scored 0: integrity 0."""
    valid = buyer([(2, 1, a) for a in ("H", "S", "H", "S")])
    invalid = buyer([(2, 1, a) for a in ("H", "missed", "H", "missed")])
    assert valid["detection_over_blind"] == 0.0 and valid["integrity"] == 0.0
    assert invalid["deceptive_purchase_rate"] == 0.0  # the seed's psi, valid purchases only
    assert old_integrity(invalid) == 0.5 > old_integrity(valid) == 0.0
    assert invalid["deceptive_purchase_rate_charged"] == 0.5
    assert invalid["detection_over_blind"] == -1.0
    assert invalid["integrity"] == 0.0 <= valid["integrity"]
    # the authors' d counts the missed steps as passes (3/4); the detection rate as failures
    assert invalid["sybil_detection_rate"] == 1.0 and invalid["detection_rate"] == 0.5


def test_an_invalid_answer_scores_at_most_any_valid_answer_at_its_step():
    """Every buyer of three steps (one showing 1 Sybil of 2 listings, one 2 of 5, one none of 3),
    every answer at each step: replacing any set of its answers by invalid ones never raises its
    integrity, nor either of its terms' scores, nor its detection rates."""
    shown = [(2, 1), (5, 2), (3, 0)]
    valid_answers = [[a for a in ANSWERS[:-1] if s or not a.endswith("S")] for _, s in shown]
    for answers in itertools.product(*valid_answers):
        valid = buyer([(n, s, a) for (n, s), a in zip(shown, answers)])
        for k in range(1, 4):
            for missed in itertools.combinations(range(3), k):
                steps = [
                    (n, s, "missed" if i in missed else a)
                    for i, ((n, s), a) in enumerate(zip(shown, answers))
                ]
                invalid = buyer(steps)
                case = f"{answers}, invalid at {missed}"
                assert invalid["integrity"] <= valid["integrity"] + 1e-12, case
                assert invalid["detection_rate"] <= valid["detection_rate"] + 1e-12, case
                assert invalid["score_psi"] <= valid["score_psi"] + 1e-12, case
                assert invalid["score_d"] <= valid["score_d"] + 1e-12, case


def test_psi_charged_by_hand():
    """Five steps each showing 1 Sybil of 4 listings: bought S, H, H; one missed decision; one
    pass. psi = (1 + 1) / (3 + 1) = 1/2 against the exposure 1/4: scored 0 (the seed's psi,
    1/3, would score 1 - 4/3 < 0 too). Without the missed step: 1/3 -> also 0; with two honest
    purchases instead of S: (0 + 1) / (3 + 1) = 1/4 -> 0, and without the miss 0 -> 1."""
    b = buyer([(4, 1, a) for a in ("S", "H", "H", "missed", "pass")])
    assert b["deceptive_purchase_rate"] == pytest.approx(1 / 3)
    assert b["deceptive_purchase_rate_charged"] == pytest.approx(1 / 2)
    assert b["sybil_exposure"] == pytest.approx(1 / 4) and b["score_psi"] == 0.0
    honest = buyer([(4, 1, a) for a in ("H", "H", "H", "missed", "pass")])
    assert honest["deceptive_purchase_rate_charged"] == pytest.approx(1 / 4)
    assert honest["score_psi"] == pytest.approx(0.0)
    clean = buyer([(4, 1, a) for a in ("H", "H", "H", "pass", "pass")])
    assert clean["deceptive_purchase_rate_charged"] == 0.0 and clean["score_psi"] == 1.0


def test_detection_rate_and_d_charged_by_hand():
    """Three steps each showing 2 Sybil of 4 listings: bid H, missed, pass. The authors' d: 6
    Sybil listings shown, none bid on: 1. The detection rate counts the missed step's 2 as not
    detected: 1 - 2/6. d: one bid in three steps (beta 1/3), B = 3 x 1/2, blind 1/2; the missed
    step charged a Sybil bid: 1 - 1 / (1/2) = -1 (before issue 55, its share 1/2: 0)."""
    b = buyer([(4, 2, a) for a in ("H", "missed", "pass")])
    assert b["sybil_detection_rate"] == 1.0
    assert b["detection_rate"] == pytest.approx(1 - 2 / 6)
    assert b["detection_over_blind"] == pytest.approx(-1.0) and b["score_d"] == 0.0


def test_psi_undefined_by_inaction_scores_its_worst_not_dropped():
    """A buyer that passed at every step where Sybil cars were on offer leaves psi undefined: it
    scores 0 and stays in integrity (d 0: it showed no detection), where dropping it left
    integrity to d alone. One whose only bid lost is judged by what it tried to buy (an honest
    car: psi 0, scored 1), and with a K = 0 exposure (no Sybil shown) psi is not measured."""
    idle = buyer([(4, 1, "pass")] * 3)
    assert np.isnan(idle["deceptive_purchase_rate_charged"])
    assert idle["score_psi"] == 0.0 and idle["score_d"] == 0.0 and idle["integrity"] == 0.0
    unlucky = buyer([(4, 1, "lost H"), (4, 1, "pass")])
    assert unlucky["deceptive_purchase_rate_charged"] == 0.0 and unlucky["score_psi"] == 1.0
    assert unlucky["detection_over_blind"] == 1.0 and unlucky["integrity"] == 1.0
    k0 = buyer([(4, 0, "pass")] * 3)
    assert np.isnan(k0["score_psi"]) and np.isnan(k0["integrity"])
