"""Tests for marketarena.metrics.indices: hand-computed values, scipy agreement, properties."""

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from marketarena.metrics.indices import cr, cv, gini, hhi, rank_mobility, shares, spearman, theil

nonneg = st.lists(st.integers(0, 10**6).map(float), min_size=1, max_size=40)
positive_total = nonneg.filter(lambda v: sum(v) > 0)
scale = st.floats(0.01, 100.0)


# --- hand-computed values -------------------------------------------------------------------


def test_gini_known_values():
    assert gini([1, 2, 3, 4]) == pytest.approx(0.25)
    assert gini([0, 0, 0, 10]) == pytest.approx(0.75)
    assert gini([5, 5, 5]) == 0.0
    assert gini([0, 0, 0]) == 0.0
    assert gini([7]) == 0.0


def test_gini_clips_negative_wealth():
    assert gini([-50, 0, 0, 10]) == pytest.approx(0.75)
    assert gini([-1, -2]) == 0.0


def test_theil_known_values():
    assert theil([3, 3, 3, 3]) == pytest.approx(0.0, abs=1e-15)
    assert theil([0, 0, 0, 1]) == pytest.approx(math.log(4))
    assert theil([0, 0]) == 0.0
    # two agents 1 and 3: mu = 2 -> (0.5 ln 0.5 + 1.5 ln 1.5) / 2
    assert theil([1, 3]) == pytest.approx((0.5 * math.log(0.5) + 1.5 * math.log(1.5)) / 2)
    assert theil([-4, 0, 0, 1]) == pytest.approx(math.log(4))


def test_cv_known_values():
    assert cv([1, 2, 3, 4]) == pytest.approx(math.sqrt(1.25) / 2.5)  # population SD
    assert cv([80, 0]) == pytest.approx(1.0)  # complete specialisation over two products
    assert cv([0, 0]) == 0.0
    assert cv([4, 4]) == 0.0
    assert cv([1, 3], eps=2.0) == pytest.approx(1.0 / 4.0)  # sigma / (mu + eps), eq. (18)


def test_shares_hhi_cr_known_values():
    np.testing.assert_allclose(shares([1, 3]), [0.25, 0.75])
    np.testing.assert_array_equal(shares([0, 0, 0]), [0, 0, 0])
    assert hhi([1, 1, 1, 1]) == pytest.approx(0.25)
    assert hhi([0, 0, 9]) == pytest.approx(1.0)
    assert hhi([0, 0]) == 0.0
    assert hhi([1, 3]) == pytest.approx(0.25**2 + 0.75**2)
    assert cr(np.ones(20)) == pytest.approx(0.2)
    assert cr([5, 1, 1, 1, 1, 1], k=1) == pytest.approx(0.5)
    assert cr([1, 2], k=4) == pytest.approx(1.0)
    assert cr([0, 0, 0]) == 0.0


def test_shares_reject_negative_and_bad_k():
    with pytest.raises(ValueError):
        shares([1, -1])
    with pytest.raises(ValueError):
        hhi([2, -1])
    with pytest.raises(ValueError):
        cr([1, 2], k=0)


def test_empty_and_nan_inputs():
    for f in (gini, theil, cv, hhi, cr):
        assert math.isnan(f([]))
        assert math.isnan(f([1.0, np.nan]))


def test_rank_mobility_known_values():
    assert rank_mobility([10, 20, 30, 40], [1, 2, 3, 4]) == pytest.approx(0.0)
    assert rank_mobility([10, 20, 30, 40], [4, 3, 2, 1]) == pytest.approx(2.0)
    assert rank_mobility([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)


def test_rank_mobility_degenerate():
    assert math.isnan(rank_mobility([5, 5, 5], [1, 2, 3]))
    assert math.isnan(rank_mobility([1, 2, 3], [0, 0, 0]))
    assert math.isnan(rank_mobility([1], [2]))
    assert math.isnan(rank_mobility([], []))
    with pytest.raises(ValueError):
        rank_mobility([1, 2], [1, 2, 3])


# --- vectorised (axis) form -----------------------------------------------------------------


@pytest.mark.parametrize("f", [gini, theil, cv, hhi, cr])
def test_axis_matches_row_by_row(f):
    m = np.random.default_rng(0).integers(0, 50, size=(6, 9)).astype(float)
    m[2] = 0.0
    np.testing.assert_allclose(f(m), [f(row) for row in m])
    np.testing.assert_allclose(f(m, axis=0), [f(col) for col in m.T])
    np.testing.assert_allclose(f(m.T, axis=0), f(m))


def test_shares_axis():
    m = np.array([[1.0, 3.0], [0.0, 0.0]])
    np.testing.assert_allclose(shares(m), [[0.25, 0.75], [0, 0]])
    np.testing.assert_allclose(shares(m, axis=0), [[1, 1], [0, 0]])


# --- spearman -------------------------------------------------------------------------------


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-3, 3)), min_size=2, max_size=30))
def test_spearman_agrees_with_scipy_including_ties(pairs):
    x, y = map(np.array, zip(*pairs))
    ours = spearman(x, y)
    if len(set(x)) < 2 or len(set(y)) < 2:
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)


def test_spearman_rows_match_scipy():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(50, 12)), rng.integers(0, 4, size=(50, 12))
    expected = [scipy.stats.spearmanr(a, b).statistic for a, b in zip(x, y)]
    np.testing.assert_allclose(spearman(x, y), expected, atol=1e-12)
    np.testing.assert_allclose(spearman(x.T, y.T, axis=0), expected, atol=1e-12)


def test_spearman_drops_nan_pairs():
    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0, 6.0])
    y = np.array([2.0, 1.0, 3.0, np.nan, 5.0, 4.0])
    keep = ~(np.isnan(x) | np.isnan(y))
    assert spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x[keep], y[keep]).statistic)
    assert math.isnan(spearman([np.nan, 1.0, 2.0], [1.0, np.nan, 2.0]))


def test_spearman_shape_mismatch():
    with pytest.raises(ValueError):
        spearman([1, 2, 3], [1, 2])


# --- properties -----------------------------------------------------------------------------


@given(st.lists(st.integers(-(10**6), 10**6).map(float), min_size=1, max_size=40))
def test_gini_in_unit_interval(v):
    g = gini(v)
    assert 0.0 <= g < 1.0
    assert g <= (len(v) - 1) / len(v) + 1e-12


@given(nonneg, scale)
def test_scale_invariance(v, c):
    scaled = [c * a for a in v]
    for f in (gini, theil, cv, hhi, cr):
        assert f(scaled) == pytest.approx(f(v), rel=1e-9, abs=1e-12)


@given(nonneg)
def test_theil_between_zero_and_log_n(v):
    assert -1e-12 <= theil(v) <= math.log(len(v)) + 1e-12


@given(positive_total)
def test_hhi_between_one_over_n_and_one(v):
    h = hhi(v)
    assert 1.0 / len(v) - 1e-12 <= h <= 1.0 + 1e-12
    assert h <= cr(v, k=1) + 1e-12  # sum s_i^2 <= max s_i


@given(positive_total, st.integers(1, 10))
def test_cr_monotone_in_k(v, k):
    assert cr(v, k) <= cr(v, k + 1) + 1e-12
    assert cr(v, k) >= min(k, len(v)) / len(v) - 1e-12  # top k hold at least their fair share


@given(nonneg)
def test_permutation_invariance(v):
    rev = v[::-1]
    for f in (gini, theil, cv, hhi, cr):
        assert f(rev) == pytest.approx(f(v), rel=1e-9, abs=1e-12)


def test_average_ranks_are_scipys_rankdata_with_ties_and_nans():
    """Our numpy ranks (scipy.stats is not imported by the stages) equal scipy's ``average``
    ranks exactly, ties and NaNs included, along the last axis of a matrix."""
    from scipy.stats import rankdata

    from marketarena.metrics.indices import average_ranks

    rng = np.random.default_rng(0)
    for trial in range(200):
        shape = (int(rng.integers(1, 6)), int(rng.integers(1, 40)))
        v = rng.integers(0, int(rng.integers(1, 10)), size=shape).astype(float)
        if trial % 2:
            v[rng.random(shape) < 0.2] = np.nan
        ok = ~np.isnan(v)
        expected = np.where(ok, rankdata(v, axis=-1, nan_policy="omit"), 0.0)
        assert np.array_equal(np.where(ok, average_ranks(v), 0.0), expected)
    assert average_ranks([3.0, 1.0, 3.0, 2.0]).tolist() == [3.5, 1.0, 3.5, 2.0]
