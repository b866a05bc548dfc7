"""Hand-computed cases for the supply_chain rules (settlement, buyers, attention, purchase walk)."""

from __future__ import annotations

import math

import numpy as np

from marketarena.markets.supply_chain import rules
from marketarena.markets.supply_chain.params import consideration_size


def settle(qty, price, supply, reserve, eligible=None, seed=0):
    qty, price = np.array(qty), np.array(price)
    eligible = np.ones(len(qty), bool) if eligible is None else np.array(eligible)
    return rules.settle_auction(
        qty, price, eligible, np.array(supply), np.array(reserve), np.random.default_rng(seed)
    )


# ------------------------------------------------------------------ settlement
def test_highest_bids_served_first_and_partial_fill():
    # item supply 10: bids 6 @ 12, 5 @ 15, 4 @ 11 -> 15 gets 5, 12 gets 5 (of 6), 11 gets 0
    alloc = settle([[6], [5], [4]], [[12], [15], [11]], [10], [10])
    assert alloc[:, 0].tolist() == [5, 5, 0]


def test_reserve_price_excludes_low_bids_and_equal_to_reserve_wins():
    alloc = settle([[5], [5], [5]], [[9], [10], [30]], [100], [10])
    assert alloc[:, 0].tolist() == [0, 5, 5]


def test_ineligible_bidder_gets_nothing():
    alloc = settle([[5], [5]], [[50], [20]], [100], [10], eligible=[False, True])
    assert alloc[:, 0].tolist() == [0, 5]


def test_ties_broken_randomly_but_seeded():
    # two bidders tie at 20 for 5 units with supply 5: exactly one of them is served in full
    outcomes = set()
    for seed in range(40):
        alloc = settle([[5], [5]], [[20], [20]], [5], [10], seed=seed)
        assert alloc.sum() == 5 and sorted(alloc[:, 0].tolist()) == [0, 5]
        outcomes.add(tuple(alloc[:, 0]))
        assert np.array_equal(alloc, settle([[5], [5]], [[20], [20]], [5], [10], seed=seed))
    assert outcomes == {(5, 0), (0, 5)}


def test_items_settle_independently():
    alloc = settle([[3, 4], [3, 4]], [[20, 7], [25, 8]], [4, 4], [10, 5])
    assert alloc.tolist() == [[1, 0], [3, 4]]


# ------------------------------------------------------------------ over-budget and dropped bids
def test_overspent_bid_set_is_invalid_and_flagged(market):
    from marketarena.markets.supply_chain.observations import Bid, ProcurementAction

    decision = market.reset(1)
    funds = market.funds[0]
    over = ProcurementAction(bids={"a": Bid(qty=int(funds // 10) + 1, price=10)})
    checked = market.check("R01", over, decision)
    assert checked.error.startswith("overspent")
    exact = ProcurementAction(bids={"a": Bid(qty=int(funds // 10), price=10)})
    assert (
        market.check("R02", exact, decision).error is None
    )  # spending exactly the funds is allowed
    assert (
        market.check("R01", over, decision) == checked
    )  # check is pure: asking twice changes nothing


def test_unknown_items_and_below_base_bids_are_dropped_not_fatal(market):
    from marketarena.markets.supply_chain.observations import Bid, ProcurementAction

    decision = market.reset(1)
    action = ProcurementAction(
        bids={"zzz": Bid(qty=1, price=5), "a": Bid(qty=2, price=9), "b": Bid(qty=1, price=100)}
    )
    checked = market.check("R01", action, decision)
    assert checked.error is None
    assert list(checked.action.bids) == ["b"]
    assert len(checked.notes) == 2


def test_overspent_flag_shown_next_round_and_zero_allocation(market):
    from marketarena.markets.supply_chain.observations import Bid, ProcurementAction

    decision = market.reset(3)
    ids = list(decision.observations)
    actions = {}
    for a in ids:
        act = (
            ProcurementAction(bids={"a": Bid(qty=10**6, price=10)})
            if a == "R01"
            else ProcurementAction()
        )
        checked = market.check(a, act, decision)
        actions[a] = checked.action if checked.action is not None else market.fallback(a, decision)
    nxt = market.step(actions)
    assert nxt.observations["R01"].overspent is True
    assert nxt.observations["R02"].overspent is False
    assert nxt.observations["R01"].indicative == {}


# ------------------------------------------------------------------ buyers
def test_buyer_demand_sums_to_rounded_ratio_times_supply():
    rng = np.random.default_rng(0)
    supply = np.array([200.0, 133.0, 75.0])
    b = rules.draw_buyers(
        rng,
        300,
        np.repeat(np.arange(4), 3),
        np.full(12, 0.6),
        np.array([0.4, 0.3, 0.2, 0.1]),
        np.array([0.2, 0.8, 0.9, 0.5]),
        np.array([1.5, 2.5, 3.0, np.nan]),
        supply,
        np.array([50.0, 150.0, 800.0]),
        0.95,
    )
    for x, q in enumerate(supply):
        assert b.demand[b.item == x].sum() == math.floor(0.95 * q + 0.5)  # 190, 126, 71
    # willingness to pay = base × tribe multiplier, no cap for a NaN multiplier
    expect = np.array([50.0, 150.0, 800.0])[b.item] * np.array([1.5, 2.5, 3.0, np.inf])[b.tribe]
    assert np.array_equal(b.wtp, expect)
    assert set(np.unique(b.tribe)) == {0, 1, 2, 3}
    # personas come from the buyer's own tribe
    assert np.array_equal(np.repeat(np.arange(4), 3)[b.persona], b.tribe)


# ------------------------------------------------------------------ attention
def test_consideration_size_formula():
    assert consideration_size(20, 0.6, 20) == 12  # not 13: 0.6 × 20 is 12 exactly
    assert consideration_size(5, 0.6, 20) == 5  # capped by the number of active agents
    assert consideration_size(20, 0.0, 20) == 1  # at least one
    assert consideration_size(20, 0.51, 10) == 6  # ceil(5.1)


def test_consideration_sets_have_exact_size_without_replacement():
    rng = np.random.default_rng(0)
    sims = rng.uniform(-1, 1, size=(500, 20))
    sizes = rng.integers(1, 21, size=500)
    mask = rules.consideration_mask(rng, sims, np.full(500, 0.8), sizes, 1.0)
    assert np.array_equal(mask.sum(axis=1), sizes)  # a set, no seller twice, exact size


def test_attention_probability_follows_weights_single_draw():
    # |V| = 1 over two sellers: P(seller 0) = w0 / (w0 + w1) with w = exp(λ·sim/τ)
    n = 40000
    rng = np.random.default_rng(1)
    sims = np.tile([0.5, -0.5], (n, 1))
    for lam, tau in [(0.9, 1.0), (0.2, 1.0), (0.9, 0.25)]:
        mask = rules.consideration_mask(rng, sims, np.full(n, lam), np.ones(n, int), tau)
        p = 1 / (1 + math.exp(-lam * 1.0 / tau))
        assert abs(mask[:, 0].mean() - p) < 0.01, (lam, tau)


def test_higher_lambda_and_lower_tau_concentrate_attention():
    rng = np.random.default_rng(2)
    n = 20000
    sims = np.tile(np.linspace(-0.5, 0.5, 10), (n, 1))
    share_best = {}
    for lam, tau in [(0.0, 1.0), (0.8, 1.0), (0.8, 0.2)]:
        mask = rules.consideration_mask(rng, sims, np.full(n, lam), np.full(n, 3), tau)
        share_best[(lam, tau)] = mask[:, -1].mean()
    assert abs(share_best[(0.0, 1.0)] - 0.3) < 0.02  # λ = 0: uniform, 3 of 10
    assert share_best[(0.0, 1.0)] < share_best[(0.8, 1.0)] < share_best[(0.8, 0.2)]


# ------------------------------------------------------------------ purchase walk
def one_item_buyers(demand, wtp):
    k = len(demand)
    return rules.Buyers(
        tribe=np.zeros(k, int),
        persona=np.zeros(k, int),
        item=np.zeros(k, int),
        demand=np.array(demand),
        wtp=np.array(wtp, float),
        lam=np.zeros(k),
        rho=np.zeros(k),
    )


def test_walk_buys_cheapest_first_and_counts_directed_demand():
    # one buyer wants 7; sellers price 12 (stock 3), 10 (stock 2), 15 (stock 9) -> buys 2@10, 3@12, 2@15
    buyers = one_item_buyers([7], [np.inf])
    prices = np.array([[12.0], [10.0], [15.0]])
    stock = np.array([[3], [2], [9]])
    res = rules.purchase_walk(
        np.random.default_rng(0), buyers, np.ones((1, 3), bool), prices, stock
    )
    visits = res.visits.astype(int)
    assert visits[:, 1].tolist() == [1, 0, 2]  # seller order by price
    assert visits[:, 3].tolist() == [7, 5, 2]  # units still wanted on arrival = directed demand
    assert visits[:, 5].tolist() == [2, 3, 2]
    assert res.stock[:, 0].tolist() == [0, 0, 7]
    assert res.bought.tolist() == [7]
    assert stock[:, 0].tolist() == [3, 2, 9]  # input untouched


def test_walk_respects_willingness_to_pay_visibility_and_unposted_prices():
    buyers = one_item_buyers([5], [11.0])
    prices = np.array([[12.0], [10.0], [np.nan], [9.0]])
    stock = np.full((4, 1), 10)
    visible = np.array([[True, True, True, False]])
    res = rules.purchase_walk(np.random.default_rng(0), buyers, visible, prices, stock)
    # seller 0 too expensive, 2 posted no price, 3 invisible: only seller 1 sells
    assert res.visits[:, 1].astype(int).tolist() == [1]
    assert res.bought.tolist() == [5]


def test_stockout_is_a_directed_attempt_at_zero_stock():
    # two buyers wanting 3 each, one seller with stock 3: whoever arrives first empties it,
    # the other stocks out
    buyers = one_item_buyers([3, 3], [np.inf, np.inf])
    res = rules.purchase_walk(
        np.random.default_rng(5), buyers, np.ones((2, 1), bool), np.array([[10.0]]), np.array([[3]])
    )
    v = res.visits.astype(int)
    assert len(v) == 2
    first, second = v[0], v[1]
    assert first[4] == 3 and second[4] == 0  # stock_before
    assert second[5] == 0 and second[3] == 3  # stockout: wanted 3, bought 0
    assert res.bought.sum() == 3


def test_walk_stops_when_demand_met():
    buyers = one_item_buyers([2], [np.inf])
    res = rules.purchase_walk(
        np.random.default_rng(0),
        buyers,
        np.ones((1, 3), bool),
        np.array([[1.0], [2.0], [3.0]]),
        np.full((3, 1), 5),
    )
    assert len(res.visits) == 1  # later sellers are not attempts


def reference_walk(rng, buyers, visible, prices, stock):
    """The walk as its docstring says it, one buyer and one seller at a time with the same draws
    (the plain loop ``purchase_walk`` was before it walked Python lists)."""
    stock = stock.copy()
    order, tiebreak = rng.permutation(len(buyers.item)), rng.random(visible.shape)
    visits, bought = [], np.zeros(len(buyers.item), dtype=np.int64)
    for j in order:
        x, want = buyers.item[j], int(buyers.demand[j])
        sellers = [
            s for s in range(visible.shape[1]) if visible[j, s] and prices[s, x] <= buyers.wtp[j]
        ]  # a NaN price compares False
        for s in sorted(sellers, key=lambda s: (prices[s, x], tiebreak[j, s])):
            if want == 0:
                break
            take = min(want, int(stock[s, x]))
            visits.append((j, s, x, want, int(stock[s, x]), take, prices[s, x]))
            stock[s, x] -= take
            want -= take
            bought[j] += take
    return np.array(visits, dtype=np.float64).reshape(-1, 7), bought, stock


def test_walk_equals_the_plain_loop_on_random_markets():
    rng = np.random.default_rng(11)
    for _ in range(200):
        k, m, n = int(rng.integers(0, 40)), int(rng.integers(1, 7)), int(rng.integers(1, 4))
        buyers = rules.Buyers(
            tribe=np.zeros(k, int),
            persona=np.zeros(k, int),
            item=rng.integers(0, n, k),
            demand=rng.integers(0, 6, k),
            wtp=np.where(rng.random(k) < 0.3, np.inf, rng.uniform(1, 100, k)),
            lam=np.zeros(k),
            rho=np.zeros(k),
        )
        visible = rng.random((k, m)) < 0.7
        prices = np.where(rng.random((m, n)) < 0.2, np.nan, rng.integers(1, 60, (m, n)) * 1.0)
        stock = rng.integers(0, 8, (m, n))
        seed = int(rng.integers(2**31))
        got = rules.purchase_walk(np.random.default_rng(seed), buyers, visible, prices, stock)
        visits, bought, left = reference_walk(
            np.random.default_rng(seed), buyers, visible, prices, stock
        )
        assert np.array_equal(got.visits, visits) and got.visits.dtype == np.float64
        assert np.array_equal(got.bought, bought) and got.bought.dtype == np.int64
        assert np.array_equal(got.stock, left) and got.stock.dtype == stock.dtype
        assert got.bought.sum() == stock.sum() - got.stock.sum()  # no unit made or lost


def test_equal_prices_order_is_seeded_random():
    buyers = one_item_buyers([1], [np.inf])
    firsts = {
        int(
            rules.purchase_walk(
                np.random.default_rng(s),
                buyers,
                np.ones((1, 2), bool),
                np.array([[5.0], [5.0]]),
                np.full((2, 1), 5),
            ).visits[0, 1]
        )
        for s in range(30)
    }
    assert firsts == {0, 1}
