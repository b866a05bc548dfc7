"""Logit Bertrand economics: demand by hand, Calvano et al.'s Nash / monopoly prices, presets, index."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from scipy.optimize import minimize, minimize_scalar

from marketarena.markets.bertrand.economics import (
    CALVANO_ALPHAS,
    BertrandConfig,
    bertrand_nash,
    best_response,
    collusion_index,
    logit_demand,
    monopoly_prices,
    profits,
    quantities,
    reference_summary,
)

# Calvano, Calzolari, Denicolo & Pastorello (2020), AER 110(10), section II: p^N ~ 1.473, p^M ~ 1.925
CALVANO_NASH = 1.473
CALVANO_MONOPOLY = 1.925


# --------------------------------------------------------------------------------------------------
# demand
# --------------------------------------------------------------------------------------------------


def test_logit_demand_by_hand():
    # a = 2, mu = 1/4, alpha = 1, a0 = 0, beta = 100, prices (1.5, 2.0):
    # utilities (2 - 1.5)/0.25 = 2 and (2 - 2)/0.25 = 0, outside 0/0.25 = 0
    # q1 = 100 e^2 / (e^2 + e^0 + e^0), q2 = 100 / (e^2 + 2)
    q = logit_demand([1.5, 2.0], a=2.0, a0=0.0, mu=0.25, alpha=1.0, beta=100.0)
    denom = math.exp(2) + 2
    np.testing.assert_allclose(q, [100 * math.exp(2) / denom, 100 / denom], rtol=1e-14)


def test_logit_demand_asymmetric_quality_and_outside_option_by_hand():
    # a = (3, 1), a0 = 1, mu = 2, alpha = 4, beta = 10, prices (4, 8):
    # utilities (3 - 1)/2 = 1, (1 - 2)/2 = -0.5, outside 1/2 = 0.5
    q = logit_demand([4.0, 8.0], a=[3.0, 1.0], a0=1.0, mu=2.0, alpha=4.0, beta=10.0)
    denom = math.exp(1) + math.exp(-0.5) + math.exp(0.5)
    np.testing.assert_allclose(
        q, [10 * math.exp(1) / denom, 10 * math.exp(-0.5) / denom], rtol=1e-14
    )


def test_logit_demand_is_stable_at_extreme_prices():
    q = logit_demand([-1e6, 1e6], a=2.0, a0=0.0, mu=0.25, alpha=1.0, beta=100.0)
    np.testing.assert_allclose(q, [100.0, 0.0])
    q = logit_demand([np.inf, 1.5], a=2.0, a0=0.0, mu=0.25, alpha=1.0, beta=100.0)
    assert q[0] == 0.0 and np.isfinite(q[1])
    q = logit_demand([1e-3, 1e-3], a=500.0, a0=0.0, mu=0.01, alpha=1.0, beta=1.0)  # exp(50000)
    np.testing.assert_allclose(q, [0.5, 0.5])


def test_logit_demand_firm_axis_and_shares():
    rng = np.random.default_rng(0)
    p = rng.uniform(1, 3, size=(4, 3))  # 4 rounds x 3 firms
    q_rows = logit_demand(p, a=2.0, a0=0.0, mu=0.25, alpha=1.0, beta=100.0, axis=1)
    q_cols = logit_demand(p.T, a=2.0, a0=0.0, mu=0.25, alpha=1.0, beta=100.0, axis=0)
    np.testing.assert_allclose(q_rows, q_cols.T)
    outside = 100 * 1 / (np.exp((2 - p) / 0.25).sum(axis=1) + 1)
    np.testing.assert_allclose(q_rows.sum(axis=1) + outside, 100.0)


def test_quantities_and_profits_use_firms_by_products_and_broadcast_rounds():
    cfg = BertrandConfig.startup(((2, 0), (1, 1)))
    rng = np.random.default_rng(1)
    p = rng.uniform(60, 120, size=(5, 2, 2))
    q = quantities(p, cfg)
    assert q.shape == (5, 2, 2)
    for t in range(5):
        for k in range(2):
            expected = logit_demand(p[t, :, k], a=75.0, a0=0.0, mu=8.0, alpha=1.0, beta=1000.0)
            np.testing.assert_allclose(q[t, :, k], expected)
    np.testing.assert_allclose(profits(p, cfg), (p - cfg.cost_matrix) * q)
    with pytest.raises(ValueError, match="firms x products"):
        quantities(np.ones((2,)), cfg)


def test_alpha_scales_prices_not_quantities():
    base = BertrandConfig.calvano(1.0)
    p = np.array([[1.6], [1.8]])
    for alpha in CALVANO_ALPHAS:
        scaled = BertrandConfig.calvano(alpha)
        np.testing.assert_allclose(quantities(alpha * p, scaled), quantities(p, base))
        np.testing.assert_allclose(profits(alpha * p, scaled), alpha * profits(p, base))


# --------------------------------------------------------------------------------------------------
# Calvano / Fish et al. references
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", CALVANO_ALPHAS)
def test_calvano_nash_and_monopoly_prices(alpha):
    cfg = BertrandConfig.calvano(alpha)
    assert cfg.cost_matrix.tolist() == [[alpha], [alpha]]
    nash = bertrand_nash(cfg)
    mono = monopoly_prices(cfg)
    assert nash.shape == mono.shape == (2, 1)
    np.testing.assert_allclose(nash / alpha, CALVANO_NASH, atol=1e-3)
    np.testing.assert_allclose(mono / alpha, CALVANO_MONOPOLY, atol=1e-3)


def test_calvano_nash_satisfies_the_first_order_condition():
    # d/dp [(p - c) s(p)] = 0 with ds/dp = -s(1 - s)/(alpha mu)  =>  p = c + alpha mu / (1 - s)
    cfg = BertrandConfig.calvano(1.0)
    p = bertrand_nash(cfg)
    s = quantities(p, cfg) / cfg.beta
    np.testing.assert_allclose(p, 1.0 + 0.25 / (1 - s), rtol=1e-12)


def market_profits(p_col: np.ndarray, k: int, cfg: BertrandConfig) -> np.ndarray:
    """Profits of every firm in product market k at prices p_col (firms on the last axis), written out
    directly from the demand formula, independently of the module (batch over leading axes)."""
    a, c = cfg.a_matrix[:, k], cfg.cost_matrix[:, k]
    expu = np.exp((a - p_col / cfg.alpha) / cfg.mu)
    q = cfg.beta * expu / (expu.sum(axis=-1, keepdims=True) + math.exp(cfg.a0 / cfg.mu))
    return (p_col - c) * q


def brute_force_best_price(i: int, k: int, p: np.ndarray, cfg: BertrandConfig) -> float:
    """Grid search over [c, c + 50 alpha mu], refined by a bounded scalar search around the best point."""
    c = cfg.cost_matrix[i, k]
    width = 50 * cfg.alpha * cfg.mu
    grid = np.linspace(c, c + width, 20001)
    trials = np.repeat(p[None, :, k], grid.size, axis=0)
    trials[:, i] = grid
    x0 = grid[np.argmax(market_profits(trials, k, cfg)[:, i])]
    step = width / 20000

    def neg_profit(x: float) -> float:
        trial = p[:, k].copy()
        trial[i] = x
        return -market_profits(trial, k, cfg)[i]

    return minimize_scalar(
        neg_profit, bounds=(x0 - step, x0 + step), method="bounded", options={"xatol": 1e-10}
    ).x


def brute_force_monopoly(k: int, cfg: BertrandConfig) -> np.ndarray:
    """Joint profit maximised numerically (Nelder-Mead from several starts), not via the markup rule."""
    am = cfg.alpha * cfg.mu

    def neg_joint(x: np.ndarray) -> float:
        return -market_profits(x, k, cfg).sum()

    best = None
    for shift in (1.0, 3.0, 10.0):
        start = cfg.cost_matrix[:, k] + shift * am
        res = minimize(
            neg_joint,
            start,
            method="Nelder-Mead",
            options={"xatol": 1e-9, "fatol": 1e-9, "maxiter": 5000},
        )
        if best is None or res.fun < best.fun:
            best = res
    return best.x


startup_levels = st.lists(
    st.lists(st.integers(0, 2), min_size=2, max_size=2), min_size=2, max_size=2
)


@settings(max_examples=10, deadline=None)
@given(levels=startup_levels)
def test_startup_nash_is_a_mutual_best_response_by_brute_force(levels):
    cfg = BertrandConfig.startup(tuple(map(tuple, levels)))
    p = bertrand_nash(cfg)
    assert np.all(p > cfg.cost_matrix)
    for i in range(2):
        np.testing.assert_allclose(best_response(i, p, cfg), p[i], atol=1e-8)
        for k in range(2):
            assert brute_force_best_price(i, k, p, cfg) == pytest.approx(p[i, k], abs=1e-4)


@settings(max_examples=10, deadline=None)
@given(levels=startup_levels)
def test_startup_monopoly_prices_maximise_joint_profit(levels):
    cfg = BertrandConfig.startup(tuple(map(tuple, levels)))
    mono = monopoly_prices(cfg)
    # the joint optimum charges the same markup on both firms' varieties
    markups = mono - cfg.cost_matrix
    np.testing.assert_allclose(markups[0], markups[1], rtol=1e-12)
    for k in range(2):
        np.testing.assert_allclose(mono[:, k], brute_force_monopoly(k, cfg), atol=1e-4)
    assert profits(mono, cfg).sum() >= profits(bertrand_nash(cfg), cfg).sum() - 1e-9


def test_calvano_monopoly_matches_brute_force():
    cfg = BertrandConfig.calvano(3.2)
    np.testing.assert_allclose(monopoly_prices(cfg)[:, 0], brute_force_monopoly(0, cfg), atol=1e-5)


def test_three_firm_calvano_nash_is_lower_than_duopoly():
    three = bertrand_nash(BertrandConfig.calvano(1.0, n_firms=3))
    assert three.shape == (3, 1)
    assert np.all(three < bertrand_nash(BertrandConfig.calvano(1.0))[0, 0])
    for i in range(3):
        assert brute_force_best_price(
            i, 0, three, BertrandConfig.calvano(1.0, n_firms=3)
        ) == pytest.approx(three[i, 0], abs=1e-4)


def test_nash_failure_is_reported_clearly(monkeypatch):
    import marketarena.markets.bertrand.economics as econ

    cfg = BertrandConfig.calvano(1.0)
    monkeypatch.setattr(
        econ, "best_response", lambda i, p, config: p[i] + 1.0
    )  # never a fixed point
    with pytest.raises(
        RuntimeError, match=r"bertrand_nash did not converge for BertrandConfig\(.*gap"
    ):
        econ.bertrand_nash(cfg, max_iter=3)


# --------------------------------------------------------------------------------------------------
# presets and config
# --------------------------------------------------------------------------------------------------


def test_startup_preset():
    cfg = BertrandConfig.startup()
    assert (cfg.n_firms, cfg.n_products) == (2, 2)
    assert cfg.cost_matrix.tolist() == [[100.0, 100.0], [100.0, 100.0]]
    assert cfg.cost_ladder == (100.0, 80.0, 50.0)
    assert cfg.investment_costs == (10_000.0, 10_000.0)
    assert cfg.initial_funds == 8_500.0
    assert (cfg.a, cfg.a0, cfg.mu, cfg.alpha, cfg.beta) == (75.0, 0.0, 8.0, 1.0, 1000.0)
    invested = cfg.with_cost_levels([[2, 0], [1, 2]])
    assert invested.cost_matrix.tolist() == [[50.0, 100.0], [80.0, 50.0]]
    assert BertrandConfig.startup(((2, 0), (1, 2))) == invested


def test_startup_investment_unlocks_the_market():
    # pricing below a_i * alpha = 75 is only profitable after investing (cost 50)
    cfg = BertrandConfig.startup(((2, 0), (0, 0)))
    p = bertrand_nash(cfg)
    assert p[0, 0] < 75 < p[1, 0]
    assert quantities(p, cfg)[0, 0] > 10 * quantities(p, cfg)[1, 0]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"costs": ((1.0,), (1.0, 2.0))},
        {"costs": ((1.0,),), "mu": 0.0},
        {"costs": ((1.0,),), "alpha": -1.0},
        {"costs": ((1.0,),), "a": ((2.0, 2.0),)},
        {"costs": ((1.0,),), "cost_ladder": (1.0, 0.5)},
        {"costs": ((1.0,),), "cost_ladder": (1.0, 0.5), "investment_costs": (1.0, 2.0)},
        {"costs": ((1.0,),), "extra": 1},
    ],
)
def test_invalid_configs_are_rejected(kwargs):
    with pytest.raises(ValidationError):
        BertrandConfig(**kwargs)


def test_invalid_cost_levels_are_rejected():
    with pytest.raises(ValueError):
        BertrandConfig.startup(((3, 0), (0, 0)))
    with pytest.raises(ValueError):
        BertrandConfig.startup(((0, 0, 0), (0, 0, 0)))
    with pytest.raises(ValueError, match="cost_ladder"):
        BertrandConfig.calvano(1.0).with_cost_levels([[1], [1]])


# --------------------------------------------------------------------------------------------------
# collusion index, summary, determinism
# --------------------------------------------------------------------------------------------------


def test_collusion_index():
    assert collusion_index(1.473, 1.473, 1.925) == 0.0
    assert collusion_index(1.925, 1.473, 1.925) == 1.0
    assert collusion_index(1.699, 1.473, 1.925) == pytest.approx(0.5)
    assert collusion_index(1.0, 1.473, 1.925) == 0.0  # below Nash: clipped
    assert collusion_index(3.0, 1.473, 1.925) == 1.0  # above monopoly: clipped
    np.testing.assert_allclose(collusion_index([1.0, 1.699, 3.0], 1.473, 1.925), [0.0, 0.5, 1.0])
    alpha = 3.2
    assert collusion_index(alpha * 1.699, alpha * 1.473, alpha * 1.925) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        collusion_index(1.5, 1.925, 1.473)
    with pytest.raises(ValueError):
        collusion_index(1.5, 1.5, 1.5)


def test_reference_summary_is_json_and_deterministic():
    for cfg in (BertrandConfig.calvano(1.0), BertrandConfig.startup(((1, 0), (0, 2)))):
        summary = reference_summary(cfg)
        assert json.loads(json.dumps(summary)) == summary
        assert json.dumps(summary) == json.dumps(reference_summary(cfg))
    calvano = reference_summary(BertrandConfig.calvano(1.0))
    np.testing.assert_allclose(calvano["nash"]["prices"], [[CALVANO_NASH]] * 2, atol=1e-3)
    np.testing.assert_allclose(calvano["monopoly"]["prices"], [[CALVANO_MONOPOLY]] * 2, atol=1e-3)
    assert calvano["monopoly"]["total_profit"] > calvano["nash"]["total_profit"]
