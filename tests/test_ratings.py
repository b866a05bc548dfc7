"""marketarena.ratings: the numpy TrueSkill against the trueskill package it replicates."""

from __future__ import annotations

import math

import numba
import numpy as np
import pandas as pd
import pytest
import trueskill
from hypothesis import given, settings
from hypothesis import strategies as st
from trueskill import backends

from marketarena._trueskill_kernel import _cdf_pdf, pow_array
from marketarena.ratings import (
    TrueSkillParams,
    _intervals,
    bootstrap_intervals,
    bootstrap_orders,
    bootstrap_ratings,
    draw_margin,
    multipass,
    pass_orders,
    prepare_games,
    rate_orders,
    rate_sequential,
)

TOL = 1e-9


def random_games(seed, n_games=30, n_players=10, sizes=(3, 8), tie_share=0.3):
    """Free-for-alls of mixed sizes; about ``tie_share`` of them score on 0..3 (ties likely)."""
    rng = np.random.default_rng(seed)
    games = []
    for _ in range(n_games):
        k = int(rng.integers(sizes[0], sizes[1] + 1))
        who = rng.choice(n_players, k, replace=False)
        scores = rng.integers(0, 4 if rng.random() < tie_share else 1000, k)
        games.append({f"p{i}": float(s) for i, s in zip(who, scores)})
    return games


def assert_lanes_match_oracle(games, orders, params=None, initial=None):
    players, mu, sigma = rate_orders(games, orders, params, initial=initial)
    for lane, order in enumerate(orders):
        ref = rate_sequential(games, params, order=order, initial=initial)
        assert set(ref) == set(players)
        for j, name in enumerate(players):
            assert abs(mu[lane, j] - ref[name][0]) <= TOL, (lane, name)
            assert abs(sigma[lane, j] - ref[name][1]) <= TOL, (lane, name)


# ---- the pieces ------------------------------------------------------------------------------


def test_defaults_are_design_section_8():
    p = TrueSkillParams()
    assert (p.mu, p.sigma, p.beta, p.tau, p.draw_probability, p.min_delta) == (
        25.0,
        25 / 3,
        25 / 6,
        25 / 300,
        0.0,
        trueskill.DELTA,
    )
    env = p.env()
    assert (env.mu, env.sigma, env.beta, env.tau, env.draw_probability) == (
        25.0,
        25 / 3,
        25 / 6,
        25 / 300,
        0.0,
    )


@pytest.mark.parametrize("prob", [0.0, 0.1, 0.5])
def test_draw_margin_is_the_packages(prob):
    params = TrueSkillParams(draw_probability=prob)
    assert draw_margin(params.draw_probability, params.beta) == trueskill.calc_draw_margin(
        prob, 2, params.env()
    )
    if prob == 0.0:  # the approximate ppf: not zero
        assert 1e-7 < draw_margin(params.draw_probability, params.beta) < 1e-6


def test_cdf_pdf_are_bit_identical_to_the_default_backend():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 3, 300), rng.uniform(-40, 40, 100), [0.0, -0.0, 1e-9]])
    for v in x.tolist():  # the compiled kernel's
        assert _cdf_pdf(v, 2.0) == (backends.cdf(v), backends.pdf(v)), v
    s = np.abs(x) + 1e-3  # and its pow, against Python's (the C library's)
    for e in (2.0, -2.0):
        assert pow_array(s, e).tolist() == [v**e for v in s.tolist()]


def test_prepare_sorts_seats_by_score_stably():
    prep = prepare_games([{"a": 1.0, "b": 3.0, "c": 1.0, "d": 2.0}, {"c": 0.0, "e": 5.0}])
    assert prep.players == ["a", "b", "c", "d", "e"]
    assert prep.seats.tolist() == [[1, 3, 0, 2], [4, 2, 5, 5]]  # b, d, then tied a before c
    assert prep.ties.tolist() == [[False, False, True], [False, False, False]]
    assert prep.sizes.tolist() == [4, 2]
    assert prep.counts.tolist() == [1, 1, 2, 1, 1]


@pytest.mark.parametrize(
    "bad", [[{"a": 1.0}], [{"a": 1.0, "b": math.nan}], [{"a": 1.0, "b": math.inf}], []]
)
def test_bad_games_are_refused(bad):
    with pytest.raises(ValueError):
        prepare_games(bad)


# ---- small games against the package, called directly ------------------------------------------


def test_two_players_against_the_package_and_by_hand():
    env = TrueSkillParams().env()
    _, mu, sigma = rate_orders([{"w": 2.0, "l": 1.0}], np.zeros((1, 1), dtype=int))
    (w,), (lo,) = env.rate([(env.create_rating(),), (env.create_rating(),)], ranks=[0, 1])
    assert mu[0].tolist() == [w.mu, lo.mu] and sigma[0].tolist() == [w.sigma, lo.sigma]
    # closed form for equal priors: v = pdf(0) / cdf(0), w = v**2 (the margin is ~2e-7, the
    # backend's erfc is good to ~1e-7, hence the loose tolerance)
    s2 = (25 / 3) ** 2 + (25 / 300) ** 2
    c = math.sqrt(2 * (25 / 6) ** 2 + 2 * s2)
    v = math.sqrt(2 / math.pi)
    assert mu[0, 0] == pytest.approx(25 + s2 / c * v, abs=1e-5)
    assert mu[0, 1] == pytest.approx(25 - s2 / c * v, abs=1e-5)
    assert sigma[0, 0] == pytest.approx(math.sqrt(s2 * (1 - s2 / c**2 * v * v)), abs=1e-5)


def test_two_player_tie_against_the_package():
    env = TrueSkillParams().env()
    start = {"a": (30.0, 2.0), "b": (20.0, 5.0)}
    players, mu, sigma = rate_orders(
        [{"a": 1.0, "b": 1.0}], np.zeros((1, 1), dtype=int), initial=start
    )
    ra, rb = trueskill.rate_1vs1(
        env.create_rating(*start["a"]), env.create_rating(*start["b"]), drawn=True, env=env
    )
    assert players == ["a", "b"]
    assert mu[0].tolist() == [ra.mu, rb.mu] and sigma[0].tolist() == [ra.sigma, rb.sigma]
    assert 20 < mu[0, 1] < mu[0, 0] < 30  # a draw pulls the two means together


def test_three_players_with_a_tie_after_earlier_games():
    env = TrueSkillParams().env()
    games = [{"x": 3.0, "y": 2.0, "z": 1.0}, {"x": 1.0, "y": 2.0}, {"z": 5.0, "x": 0.0, "y": 5.0}]
    ratings = {name: env.create_rating() for name in "xyz"}
    for game, ranks in zip(games, ([0, 1, 2], [1, 0], [0, 1, 0])):
        names = list(game)
        rated = env.rate([(ratings[n],) for n in names], ranks=ranks)
        ratings.update({n: r for n, (r,) in zip(names, rated)})
    players, mu, sigma = rate_orders(games, np.arange(3)[None, :])
    for j, name in enumerate(players):
        assert mu[0, j] == ratings[name].mu and sigma[0, j] == ratings[name].sigma


def test_floating_point_error_where_the_package_raises():
    start = {"a": (0.0, 1.0), "b": (300.0, 1.0)}  # the far weaker player wins
    with pytest.raises(FloatingPointError):
        rate_sequential([{"a": 1.0, "b": 0.0}], initial=start)
    with pytest.raises(FloatingPointError, match="lane 0"):
        rate_orders([{"a": 1.0, "b": 0.0}], np.zeros((2, 1), dtype=int), initial=start)


# ---- every lane of the fast implementation is the package's sequential result -----------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_pass_equals_the_oracle_in_its_order(seed):
    games = random_games(seed)
    assert any(len(set(g.values())) < len(g) for g in games)  # some ties
    assert len({len(g) for g in games}) > 2  # mixed sizes
    assert_lanes_match_oracle(games, pass_orders(len(games), 5, seed))


def test_two_to_twenty_seats_other_params_and_bootstrap_orders():
    games = random_games(7, n_games=16, n_players=24, sizes=(2, 20), tie_share=0.5)
    params = TrueSkillParams(
        mu=0.0, sigma=3.0, beta=1.0, tau=0.05, draw_probability=0.1, min_delta=1e-3
    )
    assert_lanes_match_oracle(games, bootstrap_orders(len(games), 4, 7), params)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 3), min_size=2, max_size=6),
        min_size=1,
        max_size=6,
    ),
    st.integers(0, 2**16),
)
def test_any_small_tournament_equals_the_oracle(games, seed):
    games = [{k: float(v) for k, v in g.items()} for g in games]
    assert_lanes_match_oracle(games, pass_orders(len(games), 3, seed))


# ---- the frames --------------------------------------------------------------------------------


def champion_games(seed=3, n_games=40):
    rng = np.random.default_rng(seed)
    games = []
    for _ in range(n_games):
        others = rng.choice(9, 4, replace=False)
        game = {f"p{i}": float(rng.integers(0, 10)) for i in others}
        game["champ"] = 100.0
        games.append(game)
    return games


def test_multipass_frame():
    games = champion_games()
    frame = multipass(games, passes=12, seed=5)
    assert list(frame.columns) == ["player", "mu", "sigma", "mu_lo", "mu_hi", "games"]
    assert frame.loc[0, "player"] == "champ" and frame["mu"].is_monotonic_decreasing
    assert (frame["mu_lo"] <= frame["mu"]).all() and (frame["mu"] <= frame["mu_hi"]).all()
    assert (frame["mu_lo"] < frame["mu_hi"]).all()  # the order of games matters
    counts = pd.Series([p for g in games for p in g]).value_counts()
    assert frame.set_index("player")["games"].to_dict() == counts.to_dict()
    # the frame summarises the documented passes
    players, mu, sigma = rate_orders(games, pass_orders(len(games), 12, 5))
    by_player = frame.set_index("player")
    for j, name in enumerate(players):
        assert by_player.loc[name, "mu"] == np.median(mu[:, j])
        assert by_player.loc[name, "sigma"] == np.median(sigma[:, j])
        assert by_player.loc[name, "mu_hi"] == np.percentile(mu[:, j], 97.5)


def test_multipass_is_deterministic_in_its_seed():
    games = random_games(4, n_games=20)
    a = multipass(games, passes=6, seed=11)
    pd.testing.assert_frame_equal(a, multipass(games, passes=6, seed=11))
    assert not a.equals(multipass(games, passes=6, seed=12))


def test_lanes_are_the_same_whatever_the_number_of_threads():
    games = random_games(5, n_games=30)
    orders = pass_orders(len(games), 40, 3)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = rate_orders(games, orders)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = rate_orders(games, orders)
    finally:
        numba.set_num_threads(before)
    assert one[0] == many[0]
    np.testing.assert_array_equal(one[1], many[1])
    np.testing.assert_array_equal(one[2], many[2])


def test_bootstrap_ratings():
    games = champion_games(n_games=30)
    frame = bootstrap_ratings(games, n_boot=20, seed=2)
    assert list(frame.columns) == [
        "player",
        "mu",
        "sigma",
        "mu_lo",
        "mu_hi",
        "games",
        "rank_lo",
        "rank_hi",
    ]
    assert frame.loc[0, "player"] == "champ"
    assert (frame.loc[0, "rank_lo"], frame.loc[0, "rank_hi"]) == (1, 1)  # wins every resample
    ref = rate_sequential(games)  # mu, sigma: one pass in the given order
    for row in frame.itertuples():
        assert abs(row.mu - ref[row.player][0]) <= TOL
        assert abs(row.sigma - ref[row.player][1]) <= TOL
        assert row.mu_lo < row.mu_hi
    pd.testing.assert_frame_equal(frame, bootstrap_ratings(games, n_boot=20, seed=2))


def test_bootstrap_interval_ignores_resamples_without_the_player():
    games = [{"a": 1.0, "b": 0.0}] * 30 + [{"a": 1.0, "rare": 0.0}]
    frame = bootstrap_ratings(games, n_boot=30, seed=0).set_index("player")
    # 'rare' only ever loses, so every resample that has them rates them below the prior
    assert frame.loc["rare", "mu_hi"] < 25.0


def skill_games(n_games: int, seed: int = 0) -> list[dict[str, float]]:
    """Six players of fixed skill (p0 best) in four-player games; score = skill + noise."""
    rng = np.random.default_rng(seed)
    games = []
    for _ in range(n_games):
        seated = rng.choice(6, 4, replace=False)
        games.append({f"p{i}": float(-i + rng.normal(0, 2.0)) for i in seated})
    return games


def test_bootstrap_interval_of_mu_shrinks_as_games_grow():
    params = TrueSkillParams(tau=0.0)  # without dynamics σ keeps shrinking with the games
    few = bootstrap_intervals(skill_games(60), params, n_boot=40, seed=1, passes=8)
    many = bootstrap_intervals(skill_games(1200), params, n_boot=40, seed=1, passes=8)
    few, many = few.set_index("player"), many.set_index("player")
    width = lambda f: (f["mu_hi"] - f["mu_lo"]).mean()  # noqa: E731
    assert width(many) < 0.6 * width(few)
    # rank intervals narrow too, and with many games the best player is ranked first every time
    assert (many["rank_hi"] - many["rank_lo"]).mean() < (few["rank_hi"] - few["rank_lo"]).mean()
    assert (many.loc["p0", "rank_lo"], many.loc["p0", "rank_hi"]) == (1, 1)


def test_rank_interval_by_hand():
    # two lanes: a > b > c, then b > a (c absent): ranks a {1, 2}, b {2, 1}, c {3}
    mu = np.array([[3.0, 2.0, 1.0], [1.0, 2.0, np.nan]])
    out = _intervals(["a", "b", "c"], mu).set_index("player")
    assert (out.loc["a", "rank_lo"], out.loc["a", "rank_hi"]) == (1, 2)
    assert (out.loc["c", "rank_lo"], out.loc["c", "rank_hi"]) == (3, 3)
    assert out.loc["c", "mu_lo"] == out.loc["c", "mu_hi"] == 1.0


def test_provisional_players_are_marked_and_ranked_after_the_settled_ones():
    import pandas as pd

    from marketarena.ratings import with_provisional

    board = pd.DataFrame(
        {
            "rank": [1, 2, 3, 4],
            "name": ["thin", "a", "wide", "b"],
            "games": [2, 50, 40, 30],
            "rank_lo": [1, 1, 1, 3],
            "rank_hi": [4, 2, 4, 4],
        }
    )
    out = with_provisional(board, min_games=10, max_rank_width=None)
    assert out["name"].tolist() == ["a", "wide", "b", "thin"]
    assert out["rank"].tolist() == [1, 2, 3, 4] and out["provisional"].tolist() == [0, 0, 0, 1]
    out = with_provisional(board, min_games=10, max_rank_width=3)  # wide spans 4 ranks
    assert out["name"].tolist() == ["a", "b", "thin", "wide"]
    assert out["provisional"].tolist() == [False, False, True, True]
    # lemon's board: each role ranked apart, its provisional players after its settled ones
    roles = board.assign(role=["buyer", "buyer", "seller", "seller"], rank=[1, 2, 1, 2])
    roles.loc[2, "games"] = 3
    out = with_provisional(roles, min_games=10, max_rank_width=None)
    assert out[["role", "name", "rank"]].values.tolist() == [
        ["buyer", "a", 1],
        ["buyer", "thin", 2],
        ["seller", "b", 1],
        ["seller", "wide", 2],
    ]
    # a board with no games column keeps everyone settled, in its order
    plain = with_provisional(board.drop(columns=["games"]), 10, None)
    assert plain["name"].tolist() == board["name"].tolist() and not plain["provisional"].any()
