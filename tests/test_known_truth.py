"""Coverage against a known truth (``marketarena.known_truth``) on a tiny synthetic field."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from marketarena import known_truth as kt
from marketarena.ratings import BAZAAR_SCALE, TrueSkillParams

TS = TrueSkillParams(**BAZAAR_SCALE, tau=0.001)
SMALL = dict(passes=8, n_boot=30, boot_passes=3, n_sim=20, sim_passes=2)


@pytest.fixture(scope="module")
def field():
    return kt.synthetic_field(n_players=8, n_games=60, seats=4, seed=1)


@pytest.fixture(scope="module")
def rows(field):
    return kt.replicate(field, TS, reps=3, seed=5, **SMALL)


def test_the_synthetic_field_is_as_asked(field):
    assert field.n_games == 60 and len(field.players) == 8
    assert field.counts.sum() == 60 * 4
    ranks = dict(zip(field.players, field.true_ranks()))  # p00 the best, skills evenly spread
    assert [ranks[f"p{i:02d}"] for i in range(8)] == list(range(1, 9))
    assert np.allclose(np.diff(np.sort(field.skills)), 6 / 7)


def test_play_ranks_seats_by_performance_and_follows_skill(field):
    """Every game keeps its composition; the better player finishes first more often than the
    worse one (hand-made: a gap of 6 against β 4.17 wins about 85% of head-to-heads)."""
    rng = np.random.default_rng(0)
    prep = kt.play(field, field.skills, TS.beta, rng, copies=200)
    assert prep.n_games == 200 * 60
    assert np.array_equal(np.sort(prep.seats[:60], axis=1), np.sort(field.seats, axis=1))
    firsts = np.bincount(prep.seats[:, 0], minlength=8)
    best, worst = field.players.index("p00"), field.players.index("p07")
    assert firsts[best] > firsts[worst]
    assert not prep.ties.any()


def test_coverage_lies_in_0_1_and_the_point_method_scores_worse(rows):
    summary = kt.summarise(rows, split=30)
    for col in ("rank_cover", "mu_cover", "rank_cover_few", "rank_cover_many"):
        values = summary[col].dropna()
        assert ((values >= 0) & (values <= 1)).all()
    # a zero-width interval at the point estimate covers less than the board's bootstrap
    assert summary.loc["point", "rank_cover"] < summary.loc["board", "rank_cover"]
    assert summary.loc["point", "rank_width"] == 0
    assert summary.loc["point", "mu_cover"] < summary.loc["board", "mu_cover"]
    assert len(rows) == 4 * 3 * 8  # methods x replications x players


def test_coverage_rows_by_hand(field):
    """A hand-made frame (fitted = truth, the field's mean skill 5): the true rank of p00 is 1,
    [2, 3] misses it; the centred true μ of p01 is +2.14, centred [0, 1] misses it; every other
    player's [rank, rank + 1] and [μ - 0.5, μ + 0.5] cover."""
    mu = field.skills.copy()  # fitted = truth: centred μ is the centred skill
    frame = pd.DataFrame(
        {
            "player": field.players,
            "mu": mu,
            "mu_lo": mu - 0.5,
            "mu_hi": mu + 0.5,
            "rank_lo": field.true_ranks().astype(float),
            "rank_hi": field.true_ranks() + 1.0,
        }
    )
    best, second = field.players.index("p00"), field.players.index("p01")
    frame.loc[best, ["rank_lo", "rank_hi"]] = [2, 3]
    frame.loc[second, ["mu_lo", "mu_hi"]] = [0 + 5, 1 + 5]  # centred: [0, 1]; its μ +2.14
    got = kt.coverage_rows(field, frame).set_index("player")
    assert not got.loc["p00", "rank_cover"] and got["rank_cover"].sum() == 7
    assert not got.loc["p01", "mu_cover"] and got["mu_cover"].sum() == 7
    assert got["rank_width"].tolist() == [1.0] * 8


def test_the_boards_rank_interval_is_read_from_its_mu_interval_by_hand():
    from marketarena.ratings import rank_intervals

    board = pd.DataFrame(
        {
            "player": list("abcd"),
            "mu": [3.0, 2.0, 1.0, 0.5],
            "mu_lo": [2.5, 0.5, 0.0, np.nan],
            "mu_hi": [3.5, 3.2, 1.5, np.nan],
            "games": [5, 5, 5, 1],
        }
    )
    got = rank_intervals(board)
    # b: its μ interval [0.5, 3.2] against a 3.0, c 1.0 and d 0.5: at best 1st, at worst 3rd;
    # d has no interval: none
    assert got["rank_lo"].tolist()[:3] == [1, 1, 3]
    assert got["rank_hi"].tolist()[:3] == [1, 3, 4]
    assert got.loc[3, ["rank_lo", "rank_hi"]].isna().all()


def test_the_boards_rank_interval_covers_more_than_the_resamples_rank_percentiles(rows):
    """On the tiny field, as on BAZAAR's (docs/cost.md): reading the rank from the μ interval
    covers the true rank at least as often as the percentiles of each resample's rank did."""
    summary = kt.summarise(rows)
    assert summary.loc["board", "rank_cover"] >= summary.loc["rank_percentiles", "rank_cover"]


def test_deterministic_for_a_seed(field, rows):
    again = kt.replicate(field, TS, reps=3, seed=5, **SMALL)
    pd.testing.assert_frame_equal(rows, again)


def test_subsample_keeps_a_share_of_the_games(field):
    quarter = kt.subsample(field, 0.25, seed=0)
    assert quarter.n_games == 15
    skill = dict(zip(field.players, field.skills))
    assert all(skill[p] == s for p, s in zip(quarter.players, quarter.skills))
