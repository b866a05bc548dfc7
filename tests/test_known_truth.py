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
    assert len(rows) == 5 * 3 * 8  # methods x replications x players


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
    got = rank_intervals(board, spread=1.0)
    # b: its μ interval [0.5, 3.2] against a 3.0, c 1.0 and d 0.5: at best 1st, at worst 3rd;
    # d has no interval: none
    assert got["rank_lo"].tolist()[:3] == [1, 1, 3]
    assert got["rank_hi"].tolist()[:3] == [1, 3, 4]
    assert got.loc[3, ["rank_lo", "rank_hi"]].isna().all()
    # stretched by 1.2 about μ (the boards' default): b's [0.5, 3.2] becomes [0.2, 3.44], below
    # d's 0.5 at worst; a's [2.4, 3.6] still above everyone; c's [-0.2, 1.6] still 3rd to 4th
    stretched = rank_intervals(board)
    assert stretched["rank_lo"].tolist()[:3] == [1, 1, 3]
    assert stretched["rank_hi"].tolist()[:3] == [1, 4, 4]
    assert stretched.loc[3, ["rank_lo", "rank_hi"]].isna().all()


def test_the_boards_rank_interval_covers_more_than_the_resamples_rank_percentiles(rows):
    """On the tiny field, as on BAZAAR's (docs/cost.md): reading the rank from the μ interval
    covers the true rank at least as often as the percentiles of each resample's rank did, and
    stretching the μ interval widens the rank interval and covers at least as often."""
    summary = kt.summarise(rows)
    assert summary.loc["board", "rank_cover"] >= summary.loc["rank_percentiles", "rank_cover"]
    plain = summary.loc["board_unstretched"]
    assert summary.loc["board", "rank_cover"] >= plain["rank_cover"]
    assert summary.loc["board", "rank_width"] > plain["rank_width"]


def test_deterministic_for_a_seed(field, rows):
    again = kt.replicate(field, TS, reps=3, seed=5, **SMALL)
    pd.testing.assert_frame_equal(rows, again)


def test_subsample_keeps_a_share_of_the_games(field):
    quarter = kt.subsample(field, 0.25, seed=0)
    assert quarter.n_games == 15
    skill = dict(zip(field.players, field.skills))
    assert all(skill[p] == s for p, s in zip(quarter.players, quarter.skills))


# ------------------------------------------------------------------------------------------------
# the stopping rule's questions on a tiny known-truth field


@pytest.fixture(scope="module")
def looks(field):
    """A new player far above the tiny field (skills 2-8) and one far below it, 3 draws each."""
    return kt.new_player_looks(
        field,
        {"top": 14.0, "bottom": -4.0},
        TS,
        draws=3,
        cap=40,
        batch=5,
        boot=30,
        passes=3,
        seed=2,
    )


def test_a_top_k_question_is_answered_in_for_a_top_player_and_out_for_a_bottom_one(looks):
    stops = kt.stop_rows(looks, top_k=2, min_games=5).set_index(["entrant", "draw"])
    assert stops["answered"].all() and stops["right"].all()
    assert (stops.loc["top", "rank_hi"] <= 2).all()  # in: within 1..2
    assert (stops.loc["bottom", "rank_lo"] > 2).all()  # out: beyond 2
    assert (stops["n"] < 40).all()  # answered before the cap


def test_the_rule_stops_at_the_first_look_that_answers(looks):
    """Stopping is at the first look of at least min_games whose interval is narrow enough, and
    at the cap (unanswered) when none is."""
    stops = kt.stop_rows(looks, rank_width=1, min_games=10)
    for row in stops.itertuples():
        seen = looks[(looks["entrant"] == row.entrant) & (looks["draw"] == row.draw)]
        narrow = seen[(seen["rank_hi"] - seen["rank_lo"] <= 1) & (seen["n"] >= 10)]
        assert row.n == (narrow["n"].min() if len(narrow) else 40)
        assert row.answered == bool(len(narrow))
    never = kt.stop_rows(looks.assign(rank_lo=1, rank_hi=9), rank_width=1, min_games=10)
    assert not never["answered"].any() and (never["n"] == 40).all()


def test_a_fixed_schedule_answers_as_often_by_hand():
    """At n 10 half the draws are answered, at n 20 all: a share of 0.5 needs 10, of 1.0 needs
    20, and a share no look reaches none."""
    looks = pd.DataFrame(
        {
            "level": [0.95] * 4,
            "entrant": ["a"] * 4,
            "draw": [0, 0, 1, 1],
            "n": [10, 20, 10, 20],
            "true_rank": [1] * 4,
            "rank": [1] * 4,
            "rank_lo": [1, 1, 1, 1],
            "rank_hi": [1, 1, 4, 2],
        }
    )
    assert kt.fixed_schedule(looks, 0.5, top_k=2) == 10
    assert kt.fixed_schedule(looks, 1.0, top_k=2) == 20
    assert kt.fixed_schedule(looks, 1.0, rank_width=0) is None
    stops = kt.stop_rows(looks, top_k=2, min_games=10)
    assert stops["n"].tolist() == [10, 20] and stops["right"].all()


def test_the_looks_are_deterministic_for_a_seed(field, looks):
    again = kt.new_player_looks(
        field,
        {"top": 14.0, "bottom": -4.0},
        TS,
        draws=3,
        cap=40,
        batch=5,
        boot=30,
        passes=3,
        seed=2,
    )
    pd.testing.assert_frame_equal(looks, again)


@pytest.mark.parametrize(
    "stop, message",
    [
        ({"batch": 5}, "ask one question: .* got none"),
        ({"rank_width": 3, "top_k": 2}, "got rank_width and top_k"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": "three"}, "top_k"),
        ({"rank_width": -1}, "rank_width"),
    ],
)
def test_a_bad_question_names_its_key(stop, message):
    from pathlib import Path

    import yaml

    from marketarena.config import ParamsError, parse_params

    root = Path(__file__).resolve().parents[1]
    block = yaml.safe_load(
        (root / "lib/marketarena/markets/double_auction/tiny_params.yaml").read_text()
    )
    block.update(stop=stop)
    with pytest.raises(ParamsError, match=r"markets\.double_auction\.stop") as err:
        parse_params({"markets": {"double_auction": block}})
    assert err.match(message)
