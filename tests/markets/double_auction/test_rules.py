"""Hand-computed clearing cases, CE surplus, value distributions, buckets and CSα."""

from __future__ import annotations

import numpy as np
import pytest

from marketarena.markets.double_auction import rules
from marketarena.markets.double_auction.rules import NO_QUOTE, match

U4 = np.array([0.1, 0.2, 0.3, 0.4])


def trades(c):
    return [
        (int(b), int(s), int(p)) for b, s, t, p in zip(c.buyer, c.seller, c.traded, c.price) if t
    ]


def test_rank_pairs_trade_while_bid_at_least_ask():
    c = match([90, 70, 50, 30], [20, 40, 60, 80], U4, U4, U4)
    assert trades(c) == [(0, 0, 55), (1, 1, 55)]  # 50 < 60 stops the pairing


def test_sorting_is_by_quote_not_seat():
    c = match([30, 90, 50, 70], [80, 40, 20, 60], U4, U4, U4)
    assert trades(c) == [(1, 2, 55), (3, 1, 55)]


def test_half_midpoint_rounded_by_the_pair_coin():
    up = match([51], [50], [0.5], [0.5], [0.49])
    down = match([51], [50], [0.5], [0.5], [0.5])
    assert trades(up) == [(0, 0, 51)] and trades(down) == [(0, 0, 50)]
    # each pair has its own coin
    c = match([81, 61], [20, 40], [0.1, 0.2], [0.1, 0.2], [0.9, 0.1])
    assert trades(c) == [(0, 0, 50), (1, 1, 51)]


def test_half_midpoint_is_a_fair_coin_with_a_generator():
    rng = np.random.default_rng(0)
    prices = [trades(rules.clear([51], [50], rng))[0][2] for _ in range(4000)]
    assert set(prices) == {50, 51}
    assert abs(np.mean(prices) - 50.5) < 0.03


def test_equal_bids_ordered_by_tie_break_key():
    c = match([60, 60], [50, 70], [0.9, 0.1], [0.5, 0.5], [0.5, 0.5])
    assert trades(c) == [(1, 0, 55)]
    c = match([60, 60], [50, 70], [0.1, 0.9], [0.5, 0.5], [0.5, 0.5])
    assert trades(c) == [(0, 0, 55)]
    c = match([60, 60], [50, 50], [0.5, 0.5], [0.7, 0.2], [0.5, 0.5])  # equal asks
    assert trades(c) == [(0, 1, 55), (1, 0, 55)]


def test_ties_are_fair_with_a_generator():
    rng = np.random.default_rng(1)
    winners = [trades(rules.clear([60, 60], [50, 70], rng))[0][0] for _ in range(2000)]
    assert 0.45 < np.mean(winners) < 0.55


def test_no_trade_and_all_trade():
    assert trades(match([10, 20, 30, 40], [50, 60, 70, 80], U4, U4, U4)) == []
    assert trades(match([NO_QUOTE] * 4, [0] * 4, U4, U4, U4)) == []
    c = match([100, 90, 80, 70], [0, 10, 20, 30], U4, U4, U4)
    assert trades(c) == [(0, 0, 50), (1, 1, 50), (2, 2, 50), (3, 3, 50)]


def test_bid_equal_ask_trades_at_that_price_and_sitting_out_never_trades():
    assert trades(match([40], [40], [0.1], [0.1], [0.1])) == [(0, 0, 40)]
    c = match([NO_QUOTE, 60, 0], [50, NO_QUOTE, 100], [0.1, 0.2, 0.3], [0.1, 0.2, 0.3], U4[:3])
    assert trades(c) == [(1, 0, 55)]


def test_unequal_sides():
    c = match([90, 80, 70], [10], [0.1, 0.2, 0.3], [0.1], [0.1])
    assert trades(c) == [(0, 0, 50)]


def test_clear_draws_a_fixed_number_of_uniforms():
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    rules.clear([90, NO_QUOTE, 3, 4], [1, 2, 3, 4], a)
    rules.clear([NO_QUOTE] * 4, [NO_QUOTE] * 4, b)
    assert a.random() == b.random()


def test_batched_match_equals_row_by_row():
    rng = np.random.default_rng(3)
    bids, asks = rng.integers(-1, 101, (50, 4)), rng.integers(-1, 101, (50, 4))
    ub, ua, co = rng.random((50, 4)), rng.random((50, 4)), rng.random((50, 4))
    batch = match(bids, asks, ub, ua, co)
    for g in range(50):
        one = match(bids[g], asks[g], ub[g], ua[g], co[g])
        np.testing.assert_array_equal(one.price, batch.price[g])
        np.testing.assert_array_equal(one.traded, batch.traded[g])


def test_payoffs_sum_to_realised_surplus():
    bv, sv = np.array([90, 70, 50, 30]), np.array([20, 40, 60, 80])
    c = match([95, 30, 60, 70], [60, 10, 40, 85], U4, U4, U4)  # B1 overbids value 90 -> 95
    pb, ps = rules.payoffs(c, bv, sv)
    t = trades(c)
    assert pb.sum() + ps.sum() == sum(bv[b] - sv[s] for b, s, _ in t)
    assert t == [(0, 1, 53), (3, 2, 55), (2, 0, 60)]  # 95|10 (52.5 up), 70|40, 60|60
    np.testing.assert_array_equal(pb, [90 - 53, 0, 50 - 60, 30 - 55])  # can be negative
    np.testing.assert_array_equal(ps, [60 - 20, 53 - 40, 55 - 60, 0])


def test_ce_surplus():
    assert rules.ce_surplus([90, 70, 50, 30], [20, 40, 60, 80]) == 100
    assert rules.ce_surplus([30, 90], [95, 20]) == 70
    assert rules.ce_surplus([10, 10], [50, 60]) == 0
    assert rules.ce_surplus([100, 100, 100, 100], [0, 0, 0, 0]) == 400
    assert rules.ce_surplus([60, 50, 40], [45]) == 15
    np.testing.assert_array_equal(
        rules.ce_surplus([[90, 70], [10, 10]], [[20, 40], [50, 60]]), [100, 0]
    )


@pytest.mark.parametrize("dist", ["uniform", "correlated", "semi_bimodal", "heavy_tailed"])
def test_value_ranges(dist):
    bv, sv = rules.draw_values(dist, 4, 4, np.random.default_rng(0), games=5000)
    assert bv.shape == (5000, 4) and sv.shape == (5000, 4)
    assert bv.min() >= 1 and bv.max() <= 100 and sv.min() >= 0 and sv.max() <= 99
    one = rules.draw_values(dist, 4, 4, np.random.default_rng(0))
    assert one[0].shape == (4,) and one[1].shape == (4,)


def test_value_distribution_shapes():
    rng = np.random.default_rng(1)
    bv, sv = rules.draw_values("semi_bimodal", 4, 4, rng, games=5000)
    v = np.concatenate([bv, sv], axis=1)
    assert (((v >= 0) & (v <= 20)) | ((v >= 80) & (v <= 100))).all()
    assert 0.47 < (v >= 80).mean() < 0.53
    bv, sv = rules.draw_values("uniform", 4, 4, rng, games=20000)
    assert set(np.unique(bv)) == set(range(1, 101)) and set(np.unique(sv)) == set(range(0, 100))
    bv, sv = rules.draw_values("correlated", 4, 4, rng, games=5000)
    v = np.concatenate([bv, sv], axis=1).astype(float)
    centre = v.mean(axis=1, keepdims=True)  # common centre: within-game spread < total spread
    assert (v - centre).std() < v.std()
    bv, sv = rules.draw_values("heavy_tailed", 4, 4, rng, games=5000)
    v = np.concatenate([bv, sv], axis=1)
    assert abs(np.median(v) - 50) <= 1
    assert ((v == 0) | (v >= 99)).mean() > 0.002  # fat tails reach the clip
    with pytest.raises(ValueError):
        rules.draw_values("lognormal", 4, 4, rng)


def test_value_bucket_and_csa():
    # buckets centred on multiples of 5: 0-2, 3-7, ..., 93-97, 98-100
    np.testing.assert_array_equal(
        rules.value_bucket([0, 2, 3, 7, 8, 57, 97, 98, 100]), [0, 0, 1, 1, 2, 11, 19, 20, 20]
    )
    np.testing.assert_array_equal(rules.value_bucket([1, 2, 5, 6], width=4), [0, 1, 1, 2])
    np.testing.assert_allclose(rules.csa([150, 1000, -1000, 100], 100.0, 50.0), [1, 5, -5, 0])


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

quotes = st.lists(st.one_of(st.just(NO_QUOTE), st.integers(0, 100)), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(quotes, quotes, st.integers(0, 2**32 - 1))
def test_clearing_invariants(bids, asks, seed):
    rng = np.random.default_rng(seed)
    c = rules.clear(bids, asks, rng)
    t = trades(c)
    live_b = sorted((q for q in bids if q >= 0), reverse=True)
    live_a = sorted(q for q in asks if q >= 0)
    # the number of trades is the largest k with b_(k) >= a_(k)
    k = sum(1 for b, a in zip(live_b, live_a) if b >= a)
    assert len(t) == k
    assert len({b for b, _, _ in t}) == k and len({s for _, s, _ in t}) == k
    for b, s, p in t:
        assert asks[s] <= p <= bids[b] and abs(2 * p - bids[b] - asks[s]) <= 1
    # the traders are exactly the top-k quotes (ties aside)
    if k:
        assert min(bids[b] for b, _, _ in t) >= (live_b[k] if k < len(live_b) else -1)
        assert max(asks[s] for _, s, _ in t) <= (live_a[k] if k < len(live_a) else 101)
    bv, sv = rng.integers(1, 101, len(bids)), rng.integers(0, 100, len(asks))
    pb, ps = rules.payoffs(c, bv, sv)
    assert pb.sum() + ps.sum() == sum(bv[b] - sv[s] for b, s, _ in t)


def test_clear_round_is_clear_on_python_ints():
    """The market's scalar clearing gives clear()'s trades and leaves the stream where clear()
    leaves it, on random rounds with sit-outs, equal quotes and odd totals."""
    pick = np.random.default_rng(7)
    for n in range(3000):
        nb, ns = int(pick.integers(1, 6)), int(pick.integers(1, 6))
        lo, hi = (0, 100) if n % 2 else (45, 55)  # narrow ranges make ties and crossings common
        bids = [int(q) if pick.random() > 0.2 else NO_QUOTE for q in pick.integers(lo, hi + 1, nb)]
        asks = [int(q) if pick.random() > 0.2 else NO_QUOTE for q in pick.integers(lo, hi + 1, ns)]
        a, b = np.random.default_rng(n), np.random.default_rng(n)
        c = rules.clear(bids, asks, a)
        expected = [
            (int(k), int(c.buyer[k]), int(c.seller[k]), int(c.price[k]))
            for k in np.flatnonzero(c.traded)
        ]
        assert rules.clear_round(bids, asks, b) == expected, (bids, asks)
        assert a.random() == b.random()
