"""Each baseline's defining behaviour, the buyer/seller mirror, and the never-through-value bound."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from marketarena.core.params import RosterEntry
from marketarena.markets.double_auction.baselines import (
    STRATEGIES,
    aa_aggressiveness,
    aa_target,
    gd_belief,
    midpoint_surplus,
)

from .conftest import baseline_lineup, mirror_record, obs, play, record, small_params


def make(strategy, agent_id="B1", seed=0, **params):
    agent = STRATEGIES.make(agent_id, RosterEntry(name="x", kind="baseline", strategy=strategy,
                                                params=params))
    agent.reset(np.random.default_rng(seed))
    return agent


def quote(agent, o):
    return asyncio.run(agent.act(o, None)).quote


QUIET = [record(r, {"B1": 30, "B2": 20}, {"S1": 90, "S2": 95}) for r in range(1, 30)]


def test_truthful_quotes_its_value_in_both_roles():
    assert quote(make("truthful"), obs("B1", 73)) == 73
    assert quote(make("truthful", "S2"), obs("S2", 41)) == 41


def test_shading_is_mirrored():
    assert quote(make("shade", delta=5), obs("B1", 73)) == 68
    assert quote(make("shade", "S1", delta=10), obs("S1", 41)) == 51
    assert quote(make("shade", delta=10), obs("B1", 4)) == 0


def test_random_and_zic_stay_within_value():
    r = make("random")
    qs = [quote(r, obs("B1", 40, rnd=i + 1, history=QUIET[:i])) for i in range(29)]
    assert min(qs) >= 0 and max(qs) <= 40 and len(set(qs)) > 5
    z = make("zic", window=5)
    h = [record(1, {"B1": 50}, {"S1": 50}, [("B1", "S1", 50)])]
    qs = [quote(z, obs("B2", 80, rnd=2, history=h)) for _ in range(50)]
    assert min(qs) >= 45 and max(qs) <= 55


def test_sniper_parks_then_strikes():
    s = make("sniper")  # park_shade 40 for 25 rounds, strike in the last 5 at v - 1
    qs = [quote(s, obs("B1", 80, rnd=r, rounds=30, history=QUIET[:r - 1])) for r in range(1, 31)]
    assert qs[:25] == [40] * 25 and qs[25:] == [79] * 5
    s = make("sniper", "S1")
    qs = [quote(s, obs("S1", 20, rnd=r, rounds=30, history=QUIET[:r - 1])) for r in range(1, 31)]
    assert qs[:25] == [60] * 25 and qs[25:] == [21] * 5


def test_sniper_takes_a_bargain():
    h = [record(1, {"B1": 30}, {"S1": 50, "S2": 90})]
    assert quote(make("sniper"), obs("B1", 80, rnd=2, history=h)) == 50  # 50 <= 80 - 20
    assert quote(make("sniper"), obs("B1", 65, rnd=2, history=h)) == 25  # no bargain: park


def test_penny_jumper_quotes_one_tick_inside():
    h = [record(1, {"B1": 10, "B2": 40, "B3": 35}, {"S1": 60, "S2": 70})]
    assert quote(make("penny_jumper", "B1"), obs("B1", 80, rnd=2, history=h)) == 41
    assert quote(make("penny_jumper", "S2"), obs("S2", 20, rnd=2, history=h)) == 59
    assert quote(make("penny_jumper", "B1"), obs("B1", 38, rnd=2, history=h)) == 38  # capped
    assert quote(make("penny_jumper", "B1"), obs("B1", 80)) == 70  # nothing seen: v - 10


def test_gd_and_fictitious_play_best_respond_to_asks():
    h = [record(r, {"B1": 10}, {"S1": 30, "S2": 30}) for r in range(1, 4)]
    assert quote(make("gd"), obs("B1", 80, rnd=4, history=h)) == 30
    assert quote(make("fictitious_play"), obs("B1", 80, rnd=4, history=h)) == 30
    hs = [mirror_record(r) for r in h]
    assert quote(make("gd", "S1"), obs("S1", 20, rnd=4, history=hs)) == 70


def test_exploiter_targets_the_predictable_seller():
    h = [record(r, {"B1": 10}, {"S1": 45, "S2": 20 + 30 * (r % 2)}) for r in range(1, 6)]
    assert quote(make("exploiter"), obs("B1", 80, rnd=6, history=h)) == 45


def test_tit_for_tat_mirrors_the_other_side():
    h = [record(1, {"B1": 60}, {"S1": 50}), record(2, {"B1": 60}, {"S1": 47})]
    t = make("tit_for_tat")  # starts at v - 10 = 70; the ask fell by 3 -> bid rises by 3
    assert quote(t, obs("B1", 80, rnd=3, history=h)) == 73
    h.append(record(3, {"B1": 73}, {"S1": 52}))  # they toughen by 5 -> we lower by 5
    assert quote(t, obs("B1", 80, rnd=4, history=h)) == 68


def test_adaptive_greedier_after_trade_more_aggressive_after_none():
    a = make("adaptive")  # shade 10
    traded = [record(1, {"B1": 70}, {"S1": 50}, [("B1", "S1", 60)])]
    assert quote(a, obs("B1", 80, rnd=2, history=traded)) == 68  # shade 12
    none = traded + [record(2, {"B1": 68}, {"S1": 90})]
    assert quote(a, obs("B1", 80, rnd=3, history=none)) == 72  # shade 8.4 -> 71.6


def test_momentum_follows_and_contrarian_opposes_a_trend():
    h = [record(r, {"B1": 90}, {"S1": 10}, [("B1", "S1", 40 + 5 * r)]) for r in range(1, 5)]
    m = quote(make("momentum", shade=0), obs("B2", 100, rnd=5, history=h))
    c = quote(make("contrarian", shade=0), obs("B2", 100, rnd=5, history=h))
    assert m > 55 and c < 60 and m > c


def test_regime_switcher_picks_by_volatility():
    calm = [record(r, {"B1": 90}, {"S1": 10}, [("B1", "S1", 50 + r % 2)]) for r in range(1, 7)]
    wild = [record(r, {"B1": 90}, {"S1": 10}, [("B1", "S1", 30 + 40 * (r % 2))]) for r in range(1, 7)]
    a, b = make("regime_switcher"), make("regime_switcher")
    quote(a, obs("B2", 100, rnd=7, history=calm))
    quote(b, obs("B2", 100, rnd=7, history=wild))
    assert not a.volatile and b.volatile


def test_learners_only_use_their_arms():
    for name in ("q_learning", "roth_erev", "bandit"):
        agent = make(name, seed=3)
        qs = [quote(agent, obs("B1", 80, rnd=r, history=QUIET[:r - 1])) for r in range(1, 30)]
        assert set(qs) <= {80 - d for d in (0, 2, 5, 10, 15, 20)}, name


def test_signal_jammer_adds_bounded_noise():
    j = make("signal_jammer", inner="shade", inner_params={"delta": 10}, noise=3)
    qs = [quote(j, obs("B1", 80)) for _ in range(60)]
    assert min(qs) >= 67 and max(qs) <= 73 and len(set(qs)) > 3


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_mirror_symmetry(strategy):
    """A seller with cost c facing history H quotes 100 - (what a buyer with value 100 - c quotes
    facing the mirrored H), with the same random stream."""
    rng = np.random.default_rng(7)
    hist = []
    for r in range(1, 16):
        bids = {f"B{i}": int(rng.integers(20, 90)) for i in range(1, 5)}
        asks = {f"S{i}": int(rng.integers(10, 80)) for i in range(1, 5)}
        tr = [("B1", "S2", 50)] if r % 3 else []
        hist.append(record(r, bids, asks, tr))
    buyer, seller = make(strategy, "B1", seed=11), make(strategy, "S1", seed=11)
    for r in range(1, 16):
        qb = quote(buyer, obs("B1", 70, rnd=r, rounds=15, history=[mirror_record(h) for h in hist[:r - 1]]))
        qs = quote(seller, obs("S1", 30, rnd=r, rounds=15, history=hist[:r - 1]))
        assert qs == 100 - qb, (strategy, r)


@pytest.mark.parametrize("dist", ["uniform", "correlated", "semi_bimodal", "heavy_tailed"])
def test_no_baseline_quotes_through_its_value(dist):
    params = small_params(rounds=30)
    names = sorted(STRATEGIES)
    for k in range(0, len(names), 8):
        lineup = (names[k:k + 8] + names[:8])[:8]
        res, market = play(params, baseline_lineup(lineup, params), seed=k, distribution=dist)
        st = res.tables["states"]
        assert res.decisions["valid"].all()
        q = st[st["quote"] >= 0]
        buyers, sellers = q[q["role"] == "buyer"], q[q["role"] == "seller"]
        assert (buyers["quote"] <= buyers["value"]).all() and (sellers["quote"] >= sellers["value"]).all()
        assert (st["payoff"] >= 0).all()


def test_validate_baseline_names_the_key():
    with pytest.raises(ValueError, match=r"roster.3.params.delta"):
        STRATEGIES.validate(RosterEntry(name="s", kind="baseline", strategy="shade",
                                        params={"delta": -1}), "roster.3")
    with pytest.raises(ValueError, match="unknown double_auction strategy"):
        STRATEGIES.validate(RosterEntry(name="s", kind="baseline", strategy="nope"), "roster.0")
    with pytest.raises(ValueError, match="inner"):
        STRATEGIES.validate(RosterEntry(name="s", kind="baseline", strategy="signal_jammer",
                                        params={"inner": "nope"}), "roster.0")


def priced(prices, bid=90, ask=10):
    return [record(r, {"B1": bid}, {"S1": ask}, [("B1", "S1", p)]) for r, p in enumerate(prices, 1)]


def test_regression_extrapolates_the_price_line():
    h = priced([40, 45, 50, 55])  # rounds 0..3 -> forecast 60 for round index 4, minus shade 3
    assert quote(make("regression"), obs("B2", 100, rnd=5, history=h)) == 57


def test_mean_reversion_bids_the_long_run_mean():
    assert quote(make("mean_reversion"), obs("B2", 100, rnd=6, history=priced([50] * 5))) == 47


def test_bayesian_learns_the_clearing_price():
    b = make("bayesian")
    assert quote(b, obs("B2", 100)) == 40  # prior 50 - 0.5 x 20
    q = quote(b, obs("B2", 100, rnd=11, history=priced([70] * 10)))
    assert 66 <= q <= 70


def test_risk_aversion_bids_higher_for_a_surer_trade():
    h = [record(r, {"B1": 10}, {"S1": 20 + 10 * (r % 5), "S2": 25 + 10 * (r % 4)}) for r in range(1, 11)]
    calm = quote(make("risk_aware", alpha=0.001), obs("B1", 90, rnd=11, history=h))
    scared = quote(make("risk_aware", alpha=0.5), obs("B1", 90, rnd=11, history=h))
    assert scared >= calm and scared > 0


def test_aa_target_and_its_inverse():
    v, p_star, theta = 90.0, 50.0, -5.0
    assert aa_target(-1, v, p_star, theta) == pytest.approx(0.0)
    assert aa_target(0, v, p_star, theta) == pytest.approx(50.0)
    assert aa_target(1, v, p_star, theta) == pytest.approx(90.0)
    assert aa_target(0.5, 40.0, p_star, theta) == 40.0  # extra-marginal: never above its limit
    for r in (-0.7, -0.2, 0.3, 0.9):
        assert aa_aggressiveness(aa_target(r, v, p_star, theta), v, p_star, theta) == pytest.approx(r, abs=1e-6)


def test_aa_aggressiveness_update():
    """Vytelingum's short-term learning on hand-made rounds: a rival bid above its target with no
    trade makes it more aggressive; a trade below its target makes it less aggressive."""
    a = make("aa")  # r0 = 0: target = p* once prices are seen
    h = priced([50, 50])  # B1 and S1 trade at 50; we are B2, valuing at 90
    q1 = quote(a, obs("B2", 90, rnd=3, history=h))
    r1 = a.r  # near 0: one step down (a trade at its target), one back up (a trade above it)
    assert abs(r1) < 0.1 and 48 <= q1 <= 52
    h.append(record(3, {"B1": 70, "B2": q1}, {"S1": 95}))  # no trade; a rival bid 70 >= target
    q2 = quote(a, obs("B2", 90, rnd=4, history=h))
    assert a.r > r1 + 0.2 and q1 < q2 <= 90
    r_before = a.r
    h.append(record(4, {"B1": 90, "B2": q2}, {"S1": 10}, [("B1", "S1", 30)]))  # traded at 30 < τ
    quote(a, obs("B2", 90, rnd=5, history=h))
    assert a.r < r_before
    # mirrored for a seller
    hs = [mirror_record(r) for r in priced([50, 50])] + [mirror_record(record(3, {"B1": 95}, {"S1": 70, "S2": 50}))]
    s = make("aa", "S2")
    quote(s, obs("S2", 10, rnd=3, history=hs[:2]))
    quote(s, obs("S2", 10, rnd=4, history=hs))
    assert s.r > 0


def test_followers_concede_after_a_miss_and_hold_after_a_trade():
    h = priced([50, 50, 50])  # the market clears at 50; B2 quotes 45 and never trades
    m = make("momentum")  # shade 5, concede 2
    assert quote(m, obs("B2", 90, rnd=4, history=h)) == 45
    for r in range(4, 8):
        h.append(record(r, {"B1": 90, "B2": 45 + 2 * (r - 4)}, {"S1": 10}, [("B1", "S1", 50)]))
    assert quote(m, obs("B2", 90, rnd=8, history=h)) == 53  # four misses: 45 + 4 x 2
    h.append(record(8, {"B1": 60, "B2": 53}, {"S1": 10}, [("B2", "S1", 50)]))
    assert quote(m, obs("B2", 90, rnd=9, history=h)) == 51  # a trade takes one step back
    assert quote(make("momentum"), obs("B2", 48, rnd=8, history=h[:7])) == 48  # never past v
    for name in ("contrarian", "regression", "mean_reversion", "regime_switcher", "signal_jammer"):
        f = make(name)
        base = quote(f, obs("B2", 90, rnd=4, history=h[:3]))
        misses = h[:3] + [record(r, {"B1": 90, "B2": 0}, {"S1": 10}, [("B1", "S1", 50)])
                          for r in range(4, 12)]
        assert quote(f, obs("B2", 90, rnd=12, history=misses)) > base + 8, name


def test_gd_belief_from_taken_and_rejected_bids():
    # remembered: bids 40 (taken), 20 (rejected), 60 (taken); asks 30, 50
    bids, taken, asks = np.array([40.0, 20.0, 60.0]), np.array([True, False, True]), np.array([30.0, 50.0])
    q = gd_belief(100, bids, taken, asks)
    # at 20: TBL 0, AL 0, RBG(>=20) 1 -> 0; at 30: AL 1, RBG 0 -> 1 ... at 40: TBL 1 + AL 1 -> 1
    assert q[0] == 0 and q[20] == 0 and q[30] == 1 and q[100] == 1
    assert q[25] == pytest.approx(0.5)  # linear between the quoted prices 20 and 30
    # a rejected bid above the asks lowers the belief there
    q2 = gd_belief(100, np.array([40.0, 45.0]), np.array([False, False]), np.array([30.0]))
    # at 30 and 40: AL 1, RBG(>=) 2 -> 1/3; at 45: RBG 1 -> 1/2; the top anchor: 1
    assert q2[30] == pytest.approx(1 / 3) and q2[40] == pytest.approx(1 / 3)
    assert q2[45] == pytest.approx(0.5) and q2[100] == 1
    assert np.all(np.diff(q2) >= 0)


def test_gd_bids_with_the_midpoint_price():
    # asks 30 and 60, bids rejected at 25: the belief jumps at 30 and 60
    h = [record(r, {"B1": 25}, {"S1": 30, "S2": 60}) for r in range(1, 4)]
    assert quote(make("gd"), obs("B2", 80, rnd=4, history=h)) == 30


def test_fictitious_play_knows_trades_clear_at_the_midpoint():
    h = [record(r, {"B1": 10}, {"S1": 30, "S2": 60}) for r in range(1, 5)]
    # F(30) = 1/2: 1/2 x (80 - 30) = 25; F(60) = 1: 80 - (60 + 45)/2 = 27.5 -> bid 60
    assert quote(make("fictitious_play"), obs("B2", 80, rnd=5, history=h)) == 60


def test_q_learning_breaks_ties_at_random():
    q = make("q_learning", epsilon=0.0)  # a fresh table: every arm ties
    arms = {q.choose(None) for _ in range(60)}
    assert len(arms) == len(q.params.deltas)


def test_linear_equilibrium_bids_and_asks():
    assert quote(make("linear_eq"), obs("B1", 60)) == 48  # 2/3 x 60 + 100/12
    assert quote(make("linear_eq", "S1"), obs("S1", 30)) == 45  # 2/3 x 30 + 100/4
    assert quote(make("linear_eq"), obs("B1", 12)) == 12  # capped at the value


def test_zic_plus_stays_between_the_last_price_and_its_value():
    z = make("zic_plus", seed=3)
    qs = [quote(z, obs("B2", 80, rnd=3, history=priced([60, 60]))) for _ in range(50)]
    assert min(qs) >= 60 and max(qs) <= 80 and len(set(qs)) > 5


def test_collusive_holds_the_best_price_then_gives_way():
    c = make("collusive")  # patience 3, step 3
    h = priced([50, 44, 47])  # its side's best price so far: 44
    assert quote(c, obs("B2", 90, rnd=3, history=h[:2])) == 44  # two idle rounds: within patience
    assert quote(c, obs("B2", 90, rnd=4, history=h)) == 44 + 3  # the third: gives way once
    h += [record(r, {"B1": 90, "B2": 44}, {"S1": 60}) for r in range(4, 9)]  # five more idle rounds
    assert quote(c, obs("B2", 90, rnd=9, history=h)) == 44 + 3 * 6
    h.append(record(9, {"B2": 62}, {"S1": 40}, [("B2", "S1", 51)]))  # a trade: back to the line
    assert quote(c, obs("B2", 90, rnd=10, history=h)) == 44


def test_aa_cliff_climbs_towards_a_better_offset():
    a = make("aa_cliff", seed=1, sigma=0.0)  # offset 10, step 2
    h = []
    for r in range(1, 9):
        b = quote(a, obs("B2", 80, rnd=r, history=h))
        h.append(record(r, {"B2": b}, {"S1": 75}, [("B2", "S1", (b + 75) // 2)] if b >= 75 else []))
    assert 0 <= a.offset <= 80 and 0.25 <= a.gamma <= 20


def test_zip_raises_its_bid_after_losing_trades():
    z = make("zip")  # margin 0.3: bids 56 on a value of 80
    assert quote(z, obs("B2", 80)) == 56
    h = priced([70] * 8)  # trades at 70 without us
    q = quote(z, obs("B2", 80, rnd=9, history=h))
    assert 60 < q <= 80


def test_gdx_evolves_its_population():
    g = make("gdx", seed=2)
    genes0 = g.genes.copy()
    h = [record(r, {"B1": 10}, {"S1": 30 + r % 7, "S2": 60}) for r in range(1, 11)]
    q = quote(g, obs("B1", 80, rnd=11, history=h))
    assert 0 <= q <= 80 and not np.array_equal(genes0, g.genes)


def test_the_compiled_gd_bid_is_the_numpy_definition():
    """kernels.gd_bid gives argmax(gd_belief * midpoint_surplus) bit for bit, on random memories
    with taken and rejected bids, ties, empty sides and quotes at 0 and 100."""
    from marketarena.markets.double_auction import kernels

    rng = np.random.default_rng(3)
    for n in range(4000):
        v = int(rng.integers(0, 101))
        nb, na = int(rng.integers(0, 30)), int(rng.integers(0, 30))
        lo, hi = (0, 100) if n % 3 else (40, 60)
        bids = rng.integers(lo, hi + 1, nb).astype(float)
        taken = rng.random(nb) < 0.4
        asks = rng.integers(lo, hi + 1, na).astype(float)
        q = gd_belief(v, bids, taken, asks) if v > 0 else None
        expected = -1 if q is None else int(np.argmax(q * midpoint_surplus(v, asks)))
        assert kernels.gd_bid(v, bids, taken, asks, 100) == expected, (v, bids, taken, asks)


def test_the_compiled_fictitious_play_bid_and_sliced_memories_are_the_definitions():
    from marketarena.markets.double_auction import kernels
    from marketarena.markets.double_auction.baselines import View, remembered, remembered_windows

    rng = np.random.default_rng(5)
    for n in range(3000):
        v = int(rng.integers(0, 101))
        asks = rng.integers(0, 101, int(rng.integers(1, 40))).astype(float)
        b = np.arange(v + 1)
        cdf = (asks[None, :] <= b[:, None]).mean(axis=1)
        assert kernels.fp_bid(v, asks) == int(np.argmax(cdf * midpoint_surplus(v, asks)))
    # a view with T rounds of history: every window's slice equals remembered(view, w)
    for T in (0, 1, 3, 12):
        view = View(obs("B1", 70, rnd=T + 1))
        for t in range(T):
            view.own.append(None if t % 4 == 3 else int(rng.integers(0, 100)))
            view.same.append([int(q) for q in rng.integers(0, 100, int(rng.integers(0, 4)))])
            view.same_taken.append([bool(x) for x in rng.random(len(view.same[-1])) < 0.5])
            view.opp.append([int(q) for q in rng.integers(0, 100, int(rng.integers(0, 5)))])
            view.my_price.append(None if rng.random() < 0.5 else 40)
        windows = [1, 2, 5, 10]
        sliced = remembered_windows(view, windows)
        for w in windows:
            for got, want in zip(sliced[w], remembered(view, w)):
                assert got.dtype == want.dtype and np.array_equal(got, want), (T, w)
