"""Cournot economics and the specialisation test, against closed forms derived by hand.

Notation: P = a - Q/b, firm i's profit (P - c_i) q_i.

Single product, n symmetric firms, no binding capacity. Firm i's first-order condition:
    d/dq_i [(a - (q_i + Q_-i)/b - c) q_i] = a - c - (2 q_i + Q_-i)/b = 0.
Symmetric q_i = q: a - c = (n + 1) q / b  =>  q* = b (a - c) / (n + 1); for n = 2, q* = b (a - c) / 3.
Price P* = a - n q*/b = (a + n c)/(n + 1); profit (P* - c) q* = b (a - c)^2 / (n + 1)^2.

Single-product monopoly: max (a - Q/b - c) Q  =>  a - c - 2Q/b = 0  =>  Q = b (a - c)/2,
P = (a + c)/2, profit b (a - c)^2 / 4.

Default 2 x 2 (a = 100, b = 2, c_1 = (40, 50), c_2 = (50, 40), capacity 100). Products are
independent unless capacity binds. Product A, first-order conditions (b = 2):
    firm 1: 100 - 40 - (2 q1 + q2)/2 = 0  =>  2 q1 + q2 = 120
    firm 2: 100 - 50 - (q1 + 2 q2)/2 = 0  =>  q1 + 2 q2 = 100
    => q1 = 140/3 = 46.667, q2 = 80/3 = 26.667, Q = 220/3, P = 100 - 110/3 = 190/3 = 63.333.
Product B is the mirror image. Each firm produces 220/3 = 73.3 <= 100: capacity slack, so this is
the constrained equilibrium too. Profits: cheap product (190/3 - 40)(140/3) = (70/3)(140/3) = 9800/9
= 1088.89; dear product (190/3 - 50)(80/3) = (40/3)(80/3) = 3200/9 = 355.56; per firm 13000/9 = 1444.44.
CV per firm: quantities (140/3, 80/3), mean 110/3, population SD 10 => CV = 30/110 = 3/11 = 0.2727.

Default 2 x 2 monopoly: joint profit is sum_m [(100 - Q_m/2) Q_m] - sum c q. Within a product only the
cheaper firm should produce while it has spare capacity (moving a unit from the dear to the cheap firm
saves 10 and leaves Q_m unchanged). Then max (100 - Q/2 - 40) Q  =>  Q = 60 <= 100: firm 1 makes 60
of A, firm 2 makes 60 of B, nothing else; P = 70, profit (70 - 40) 60 = 1800 per firm (3600 in total
vs 26000/9 = 2888.9 at Nash). CV = SD(60, 0)/mean = 30/30 = 1.

Default 2 x 2 with capacity 50 (binding). Nash by symmetry: firm 1 makes (x, y), firm 2 (y, x),
x + y = 50, shadow price lambda of capacity. KKT for firm 1:
    A: 100 - 40 - (2x + y)/2 = lambda,   B: 100 - 50 - (2y + x)/2 = lambda
    subtract: 10 - x/2 + y/2 = 0  =>  x - y = 20  =>  x = 35, y = 15, lambda = 60 - 35 - 7.5 = 17.5 > 0.
    Q = 50 per product, P = 75; firm profit (75 - 40) 35 + (75 - 50) 15 = 1225 + 375 = 1600.
Monopoly with capacity 50: marginal revenue 100 - Q. If each firm produced both products, the
cheap-product condition 60 - Q = mu and dear-product 50 - Q = mu could not both hold, so each firm
makes only its cheap product: 50 units (its capacity), mu = 60 - 50 = 10 >= 0, and the dear-product
condition 50 - 50 - 10 < 0 holds. P = 75, profit (75 - 40) 50 = 1750 per firm.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from scipy.optimize import brentq

from marketarena.markets.cournot.analysis.specialisation import block_bootstrap_test
from marketarena.markets.cournot.economics import (
    CournotConfig,
    best_response,
    cournot_nash,
    monopoly,
    prices,
    profits,
    reference_summary,
    specialisation_cv,
)

NASH_TOL = 1e-6  # cournot_nash stops at a sweep change < 1e-8; the contraction puts it within ~1e-8


# --------------------------------------------------------------------------------------------------
# independent references used by several tests
# --------------------------------------------------------------------------------------------------


def water_filling_best_response(i: int, q: np.ndarray, cfg: CournotConfig) -> np.ndarray:
    """Firm i's best response from its KKT conditions, independently of SLSQP.

    q_m(lambda) = max(0, b_m (A_m - c_m - lambda) / 2) with A_m = a_m - Q_-i,m / b_m; lambda = 0 if
    that fits in the capacity, else the lambda > 0 at which it exactly fills it.
    """
    a, b, c = cfg.a_vec, cfg.b_vec, cfg.cost_matrix[i]
    others = q.sum(axis=0) - q[i]
    intercept = a - others / b

    def plan(lam: float) -> np.ndarray:
        return np.maximum(b * (intercept - c - lam) / 2.0, 0.0)

    cap = cfg.capacity_vec[i]
    if plan(0.0).sum() <= cap:
        return plan(0.0)
    lam = brentq(lambda x: plan(x).sum() - cap, 0.0, float(np.max(intercept - c)), xtol=1e-15)
    return plan(lam)


def monopoly_kkt_violation(q: np.ndarray, cfg: CournotConfig) -> float:
    """How far q is from satisfying the joint problem's KKT conditions (price units)."""
    a, b, c = cfg.a_vec, cfg.b_vec, cfg.cost_matrix
    marginal = (a - 2.0 * q.sum(axis=0) / b)[None, :] - c
    worst = 0.0
    for i in range(cfg.n_firms):
        positive = q[i] > 1e-7
        binding = cfg.capacity_vec[i] - q[i].sum() < 1e-7
        lam = max(0.0, marginal[i].max()) if binding else 0.0
        worst = max(worst, float(np.max(marginal[i] - lam)))
        if positive.any():
            worst = max(worst, float(np.max(np.abs(marginal[i, positive] - lam))))
    return worst


configs = st.builds(
    lambda n, m, a, b, costs, caps: CournotConfig(
        a=tuple(a[:m]),
        b=tuple(b[:m]),
        costs=tuple(tuple(r[:m]) for r in costs[:n]),
        capacity=tuple(caps[:n]),
    ),
    n=st.integers(1, 3),
    m=st.integers(1, 3),
    a=st.lists(st.floats(50, 150), min_size=3, max_size=3),
    b=st.lists(st.floats(0.5, 4), min_size=3, max_size=3),
    costs=st.lists(st.lists(st.floats(0, 80), min_size=3, max_size=3), min_size=3, max_size=3),
    caps=st.lists(st.floats(5, 150), min_size=3, max_size=3),
)


# --------------------------------------------------------------------------------------------------
# config, prices, profits
# --------------------------------------------------------------------------------------------------


def test_default_config_is_the_seed_experiment():
    cfg = CournotConfig()
    assert (cfg.n_firms, cfg.n_products) == (2, 2)
    np.testing.assert_array_equal(cfg.cost_matrix, [[40, 50], [50, 40]])
    np.testing.assert_array_equal(cfg.a_vec, [100, 100])
    np.testing.assert_array_equal(cfg.b_vec, [2, 2])
    np.testing.assert_array_equal(cfg.capacity_vec, [100, 100])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"costs": ((40, 50), (50,))},
        {"costs": ()},
        {"costs": ((-1.0, 50.0), (50.0, 40.0))},
        {"a": (100.0, 100.0, 100.0)},
        {"b": 0.0},
        {"capacity": (100.0,)},
        {"capacity": -5.0},
        {"unknown": 1},
    ],
)
def test_invalid_configs_are_rejected(kwargs):
    with pytest.raises(ValidationError):
        CournotConfig(**kwargs)


def test_prices_and_profits_by_hand():
    cfg = CournotConfig()
    q = np.array([[10.0, 20.0], [30.0, 40.0]])
    # Q = (40, 60): P = (100 - 20, 100 - 30) = (80, 70)
    np.testing.assert_allclose(prices(q, cfg), [80.0, 70.0])
    # firm 1: (80-40)*10, (70-50)*20; firm 2: (80-50)*30, (70-40)*40
    np.testing.assert_allclose(profits(q, cfg), [[400.0, 400.0], [900.0, 1200.0]])


def test_price_is_clipped_at_zero():
    cfg = CournotConfig()
    q = np.array([[150.0, 0.0], [100.0, 0.0]])  # Q_A = 250 > a b = 200
    np.testing.assert_allclose(prices(q, cfg), [0.0, 100.0])
    np.testing.assert_allclose(profits(q, cfg)[:, 0], [-40 * 150.0, -50 * 100.0])


def test_prices_and_profits_are_vectorised_over_rounds():
    cfg = CournotConfig()
    rng = np.random.default_rng(0)
    batch = rng.uniform(0, 60, size=(5, 3, 2, 2))
    p = prices(batch, cfg)
    pr = profits(batch, cfg)
    assert p.shape == (5, 3, 2) and pr.shape == (5, 3, 2, 2)
    for idx in np.ndindex(5, 3):
        np.testing.assert_allclose(p[idx], prices(batch[idx], cfg))
        np.testing.assert_allclose(pr[idx], profits(batch[idx], cfg))


def test_wrong_quantity_shape_is_rejected():
    with pytest.raises(ValueError, match="firms x products"):
        prices(np.zeros((3, 2)), CournotConfig())


# --------------------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("a,b,c", [(100.0, 2.0, 40.0), (50.0, 0.5, 10.0), (80.0, 3.0, 0.0)])
def test_symmetric_single_product_duopoly(a, b, c):
    cfg = CournotConfig(a=a, b=b, costs=((c,), (c,)), capacity=math.inf)
    q = cournot_nash(cfg)
    np.testing.assert_allclose(q, [[b * (a - c) / 3]] * 2, atol=NASH_TOL)
    np.testing.assert_allclose(prices(q, cfg), [(a + 2 * c) / 3], atol=NASH_TOL)
    np.testing.assert_allclose(profits(q, cfg), [[b * (a - c) ** 2 / 9]] * 2, rtol=1e-7)


def test_symmetric_single_product_oligopoly_of_five():
    cfg = CournotConfig(costs=((40.0,),) * 5)
    np.testing.assert_allclose(cournot_nash(cfg), np.full((5, 1), 2 * 60 / 6), atol=NASH_TOL)


@pytest.mark.parametrize("a,b,c", [(100.0, 2.0, 40.0), (50.0, 0.5, 10.0)])
def test_single_product_monopoly(a, b, c):
    single = CournotConfig(a=a, b=b, costs=((c,),), capacity=math.inf)
    q = monopoly(single)
    np.testing.assert_allclose(q, [[b * (a - c) / 2]], atol=1e-9)
    np.testing.assert_allclose(prices(q, single), [(a + c) / 2], atol=1e-9)
    np.testing.assert_allclose(profits(q, single), [[b * (a - c) ** 2 / 4]], rtol=1e-12)
    # a lone firm's Nash is its monopoly
    np.testing.assert_allclose(cournot_nash(single), q, atol=NASH_TOL)


def test_symmetric_duopoly_collusion_splits_the_monopoly_output_evenly():
    cfg = CournotConfig(costs=((40.0,), (40.0,)))
    q = monopoly(cfg)
    np.testing.assert_allclose(q, [[30.0], [30.0]], atol=1e-9)  # total b(a-c)/2 = 60, split evenly


def test_capacity_binds_single_product():
    # unconstrained Nash 40 each; capacity 30 binds; best response to 30 is 60 - 15 = 45 > 30
    cfg = CournotConfig(costs=((40.0,), (40.0,)), capacity=30.0)
    q = cournot_nash(cfg)
    np.testing.assert_allclose(q, [[30.0], [30.0]], atol=NASH_TOL)
    np.testing.assert_allclose(prices(q, cfg), [70.0], atol=NASH_TOL)


def test_default_two_by_two_nash():
    cfg = CournotConfig()
    q = cournot_nash(cfg)
    np.testing.assert_allclose(q, [[140 / 3, 80 / 3], [80 / 3, 140 / 3]], atol=NASH_TOL)
    np.testing.assert_allclose(prices(q, cfg), [190 / 3, 190 / 3], atol=NASH_TOL)
    np.testing.assert_allclose(
        profits(q, cfg), [[9800 / 9, 3200 / 9], [3200 / 9, 9800 / 9]], rtol=1e-7
    )
    np.testing.assert_allclose(specialisation_cv(q), [3 / 11, 3 / 11], atol=1e-7)


def test_default_two_by_two_monopoly():
    cfg = CournotConfig()
    q = monopoly(cfg)
    np.testing.assert_allclose(q, [[60.0, 0.0], [0.0, 60.0]], atol=1e-9)
    np.testing.assert_allclose(prices(q, cfg), [70.0, 70.0], atol=1e-9)
    np.testing.assert_allclose(profits(q, cfg).sum(axis=1), [1800.0, 1800.0], rtol=1e-12)
    np.testing.assert_allclose(specialisation_cv(q), [1.0, 1.0], atol=1e-9)


def test_default_two_by_two_with_binding_capacity():
    cfg = CournotConfig(capacity=50.0)
    nash = cournot_nash(cfg)
    np.testing.assert_allclose(nash, [[35.0, 15.0], [15.0, 35.0]], atol=NASH_TOL)
    np.testing.assert_allclose(prices(nash, cfg), [75.0, 75.0], atol=NASH_TOL)
    np.testing.assert_allclose(profits(nash, cfg).sum(axis=1), [1600.0, 1600.0], rtol=1e-7)
    mono = monopoly(cfg)
    np.testing.assert_allclose(mono, [[50.0, 0.0], [0.0, 50.0]], atol=1e-9)
    np.testing.assert_allclose(profits(mono, cfg).sum(axis=1), [1750.0, 1750.0], rtol=1e-12)


def test_unlimited_capacity_is_allowed():
    cfg = CournotConfig(capacity=math.inf)
    np.testing.assert_allclose(
        cournot_nash(cfg), [[140 / 3, 80 / 3], [80 / 3, 140 / 3]], atol=NASH_TOL
    )
    np.testing.assert_allclose(monopoly(cfg), [[60.0, 0.0], [0.0, 60.0]], atol=1e-9)


def test_unprofitable_product_is_not_produced():
    cfg = CournotConfig(
        a=(100.0, 30.0), costs=((40.0, 50.0), (50.0, 40.0))
    )  # product B: a < every cost
    nash, mono = cournot_nash(cfg), monopoly(cfg)
    np.testing.assert_allclose(nash[:, 1], 0.0, atol=1e-9)
    np.testing.assert_allclose(mono[:, 1], 0.0, atol=1e-9)


# --------------------------------------------------------------------------------------------------
# solvers against independent references
# --------------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs, seed=st.integers(0, 2**32 - 1))
def test_best_response_matches_water_filling(cfg, seed):
    rng = np.random.default_rng(seed)
    q = rng.uniform(0, 60, size=(cfg.n_firms, cfg.n_products))
    i = int(rng.integers(cfg.n_firms))
    br = best_response(i, q, cfg)
    assert br.min() >= 0 and br.sum() <= cfg.capacity_vec[i] + 1e-9
    np.testing.assert_allclose(br, water_filling_best_response(i, q, cfg), atol=1e-8)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs)
def test_nash_is_a_mutual_best_response(cfg):
    q = cournot_nash(cfg)
    for i in range(cfg.n_firms):
        np.testing.assert_allclose(q[i], water_filling_best_response(i, q, cfg), atol=1e-6)


# found by hypothesis: SLSQP stopped with firm 0 at capacity making 1.5 of product 2, which firm 1
# (slack) makes 1.2e-7 cheaper; the polish's active set must be corrected to reach the KKT point
_FLAT_NEIGHBOUR = CournotConfig(
    a=(103.0, 50.0, 53.0),
    b=(1.0, 1.0, 1.0),
    costs=((0.0, 4.0, 1.192092896e-07), (1.0, 3.0, 0.0)),
    capacity=(53.0, 123.0),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs, seed=st.integers(0, 2**32 - 1))
@example(cfg=_FLAT_NEIGHBOUR, seed=0)
def test_monopoly_is_optimal(cfg, seed):
    q = monopoly(cfg)
    assert q.min() >= 0
    assert np.all(q.sum(axis=1) <= cfg.capacity_vec + 1e-9)
    assert monopoly_kkt_violation(q, cfg) < 1e-6
    # no random feasible plan (nor the Nash plan) earns more in total
    best = profits(q, cfg).sum()
    assert profits(cournot_nash(cfg), cfg).sum() <= best + 1e-6
    rng = np.random.default_rng(seed)
    plans = rng.uniform(0, 1, size=(200, cfg.n_firms, cfg.n_products))
    plans *= (
        rng.uniform(0, 1, size=(200, cfg.n_firms, 1)) * cfg.capacity_vec[None, :, None]
    ) / plans.sum(axis=-1, keepdims=True)
    assert profits(plans, cfg).sum(axis=(-1, -2)).max() <= best + 1e-6


def test_monopoly_on_a_flat_neighbour_is_the_hand_solution():
    # by hand: each product goes to its cheapest firm, Q_m = b (a_m - c_min) / 2, no capacity binds:
    # firm 0 makes 51.5 of product 0 (cost 0), firm 1 makes 23.5 of product 1 (cost 3) and 26.5 of
    # product 2 (cost 0, against firm 0's 1.2e-7)
    np.testing.assert_allclose(
        monopoly(_FLAT_NEIGHBOUR), [[51.5, 0.0, 0.0], [0.0, 23.5, 26.5]], atol=1e-9
    )


def test_nash_raises_clearly_when_it_does_not_converge():
    with pytest.raises(
        RuntimeError, match=r"cournot_nash did not converge for CournotConfig\(.*change"
    ):
        cournot_nash(CournotConfig(), max_iter=2)


# --------------------------------------------------------------------------------------------------
# specialisation CV and the reference summary
# --------------------------------------------------------------------------------------------------


def test_specialisation_cv_by_hand():
    assert specialisation_cv([60.0, 0.0]) == pytest.approx(1.0)
    assert specialisation_cv([30.0, 30.0]) == 0.0
    assert specialisation_cv([0.0, 0.0]) == 0.0
    assert specialisation_cv([140 / 3, 80 / 3]) == pytest.approx(3 / 11)
    # 3 products (1, 2, 3): mean 2, population SD sqrt(2/3)
    assert specialisation_cv([1.0, 2.0, 3.0]) == pytest.approx(math.sqrt(2 / 3) / 2)
    # two products: CV = |qA - qB| / (qA + qB), scale free
    assert specialisation_cv([80.0, 5.0]) == pytest.approx(75 / 85)
    assert specialisation_cv([8.0, 0.5]) == pytest.approx(75 / 85)


def test_specialisation_cv_is_per_firm_and_vectorised():
    rounds = np.array(
        [[[60.0, 0.0], [30.0, 30.0]], [[0.0, 0.0], [10.0, 30.0]]]
    )  # (round, firm, product)
    np.testing.assert_allclose(specialisation_cv(rounds), [[1.0, 0.0], [0.0, 0.5]])


def test_reference_summary_is_json_and_matches_hand_values():
    summary = reference_summary(CournotConfig())
    assert json.loads(json.dumps(summary)) == summary
    assert summary["n_firms"] == 2 and summary["n_products"] == 2
    nash, mono = summary["nash"], summary["monopoly"]
    np.testing.assert_allclose(
        nash["quantities"], [[140 / 3, 80 / 3], [80 / 3, 140 / 3]], atol=NASH_TOL
    )
    np.testing.assert_allclose(nash["prices"], [190 / 3] * 2, atol=NASH_TOL)
    np.testing.assert_allclose(nash["firm_profits"], [13000 / 9] * 2, rtol=1e-7)
    np.testing.assert_allclose(nash["total_profit"], 26000 / 9, rtol=1e-7)
    np.testing.assert_allclose(nash["cv"], [3 / 11] * 2, atol=1e-7)
    np.testing.assert_allclose(mono["quantities"], [[60, 0], [0, 60]], atol=1e-9)
    np.testing.assert_allclose(mono["profits"], [[1800, 0], [0, 1800]], atol=1e-6)
    np.testing.assert_allclose(mono["total_profit"], 3600, rtol=1e-12)
    np.testing.assert_allclose(mono["cv"], [1, 1], atol=1e-9)


def test_reference_summary_is_deterministic():
    cfg = CournotConfig(capacity=(70.0, 90.0), costs=((40.0, 45.0), (50.0, 40.0)))
    assert json.dumps(reference_summary(cfg)) == json.dumps(reference_summary(cfg))


# --------------------------------------------------------------------------------------------------
# block bootstrap test
# --------------------------------------------------------------------------------------------------


def test_bootstrap_rejects_a_series_far_above_the_nash_cv():
    rng = np.random.default_rng(1)
    series = np.clip(0.9 + 0.05 * rng.standard_normal(50), 0, 1)
    result = block_bootstrap_test(series, nash_cv=3 / 11)
    assert result["p_value"] == result["p_value_percentile"] == 1 / 10_001  # never exactly 0
    assert result["ci_lo"] > 3 / 11
    assert result["ci_lo"] <= result["mean"] <= result["ci_hi"]
    assert result["n"] == 50 and result["block"] == 7 and result["n_resamples"] == 10_000
    assert result["mean"] == pytest.approx(series.mean())


def test_bootstrap_does_not_reject_a_constant_series_at_the_nash_cv():
    for nash_cv in (3 / 11, 0.1, 0.0):
        result = block_bootstrap_test(np.full(50, nash_cv), nash_cv=nash_cv, n_resamples=500)
        assert result["p_value"] == 1.0 and result["p_value_percentile"] == 1.0
        assert result["ci_lo"] == pytest.approx(nash_cv) and result["ci_hi"] == pytest.approx(
            nash_cv
        )


def test_bootstrap_does_not_reject_a_series_below_the_nash_cv():
    rng = np.random.default_rng(2)
    result = block_bootstrap_test(
        0.1 + 0.02 * rng.standard_normal(50), nash_cv=3 / 11, n_resamples=2000
    )
    assert result["p_value"] == 1.0


def test_bootstrap_p_value_is_about_one_half_when_the_mean_equals_the_nash_cv():
    rng = np.random.default_rng(3)
    noise = rng.standard_normal(50)
    series = 0.5 + 0.05 * (noise - noise.mean())  # mean exactly 0.5 (up to rounding)
    result = block_bootstrap_test(series, nash_cv=float(series.mean()), n_resamples=4000)
    assert 0.3 < result["p_value"] < 0.7


def test_bootstrap_interval_width_matches_the_iid_standard_error_with_block_one():
    rng = np.random.default_rng(4)
    series = rng.standard_normal(400)
    result = block_bootstrap_test(series, nash_cv=0.0, block=1, n_resamples=4000)
    se = series.std() / math.sqrt(series.size)
    assert (result["ci_hi"] - result["ci_lo"]) == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_bootstrap_is_deterministic_and_seeded():
    rng = np.random.default_rng(5)
    series = 0.3 + 0.1 * rng.standard_normal(50)
    first = block_bootstrap_test(series, nash_cv=0.28, n_resamples=2000, seed=7)
    assert first == block_bootstrap_test(series, nash_cv=0.28, n_resamples=2000, seed=7)
    assert first == block_bootstrap_test(
        series, nash_cv=0.28, n_resamples=2000, seed=np.random.default_rng(7)
    )
    assert first != block_bootstrap_test(series, nash_cv=0.28, n_resamples=2000, seed=8)
    assert json.loads(json.dumps(first)) == first


@pytest.mark.parametrize(
    "series,kwargs",
    [
        ([0.5], {}),
        ([0.5, np.nan, 0.2], {}),
        ([0.1] * 10, {"block": 11}),
        ([0.1] * 10, {"block": 0}),
        ([0.1] * 10, {"n_resamples": 0}),
    ],
)
def test_bootstrap_rejects_bad_input(series, kwargs):
    with pytest.raises(ValueError):
        block_bootstrap_test(series, nash_cv=0.1, **kwargs)
