"""Each baseline's defining rule (as BAZAAR's logs show it) on hand-made histories, the
buyer/seller mirror, and the never-through-value bound."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from marketarena.core.params import RosterEntry
from marketarena.markets.double_auction.baselines import STRATEGIES, midpoint_best_response
from marketarena.markets.double_auction.baselines.market import MEAN_REVERSION_SHADE
from marketarena.markets.double_auction.baselines.special import (
    SNIPER_HOLD,
    SNIPER_STRIKE,
    ZIC_PLUS_SHADE,
)

from .conftest import baseline_lineup, mirror_record, obs, play, record, small_params


def make(strategy, agent_id="B1", seed=0, **params):
    agent = STRATEGIES.make(
        agent_id, RosterEntry(name="x", kind="baseline", strategy=strategy, params=params)
    )
    agent.reset(np.random.default_rng(seed))
    return agent


def quote(agent, o):
    return asyncio.run(agent.act(o, None)).quote


def self_play(
    agent, value, rounds=30, others=lambda r: ({"B2": 30}, {"S1": 95}, []), agent_id="B1"
):
    """The agent's quotes over ``rounds`` rounds; each round's record holds its own quote (as the
    market records it) beside ``others(r)`` = (other bids, asks, trades as (buyer, seller, p))."""
    hist, qs = [], []
    for r in range(1, rounds + 1):
        q = quote(agent, obs(agent_id, value, rnd=r, rounds=rounds, history=hist))
        qs.append(q)
        bids, asks, trades = others(r)
        side = bids if agent_id.startswith("B") else asks
        hist.append(
            record(
                r,
                {**bids, **({agent_id: q} if side is bids else {})},
                {**asks, **({agent_id: q} if side is asks else {})},
                trades,
            )
        )
    return qs


QUIET = [record(r, {"B1": 30, "B2": 20}, {"S1": 90, "S2": 95}) for r in range(1, 30)]


def test_truthful_and_shading_are_exact_and_mirrored():
    assert quote(make("truthful"), obs("B1", 73)) == 73
    assert quote(make("truthful", "S2"), obs("S2", 41)) == 41
    assert quote(make("shade", delta=5), obs("B1", 73)) == 68
    assert quote(make("shade", "S1", delta=10), obs("S1", 41)) == 51
    assert quote(make("shade", delta=10), obs("B1", 4)) == 0
    assert quote(make("shade", "S1", delta=10), obs("S1", 96)) == 100


def test_linear_eq_is_two_thirds_of_the_value_without_intercept():
    # BAZAAR's logs: round(2/3 v), ask round(100 - 2/3 (100 - c)), every round
    for v, bid in ((73, 49), (97, 65), (16, 11), (3, 2), (0, 0)):
        assert self_play(make("linear_eq"), v, rounds=5) == [bid] * 5
    assert quote(make("linear_eq", "S1"), obs("S1", 40)) == 60  # 100 - round(40)
    assert quote(make("linear_eq", "S1"), obs("S1", 99)) == 99  # 100 - round(2/3)
    # the textbook variant keeps Chatterjee & Samuelson's intercept M/12
    assert quote(make("linear_eq_cs"), obs("B1", 80)) == 62  # 53.3 + 8.3


def test_collusive_opens_within_twelve_then_quotes_its_value():
    for seed in range(20):
        qs = self_play(make("collusive", seed=seed), 70, rounds=6)
        assert 58 <= qs[0] <= 70 and qs[1:] == [70] * 5
    opening = {self_play(make("collusive", seed=s), 70, rounds=1)[0] for s in range(60)}
    assert len(opening) > 5


def test_midpoint_best_response_by_hand():
    # asks 30, 50, 70, 90, v = 80: (2v - b) n - S: b=30 -> 100, b=50 -> 140, b=70 -> 120
    assert midpoint_best_response(80, [30, 50, 70, 90]) == 50
    assert midpoint_best_response(80, [85, 90]) == 80  # nothing profitable: its value
    assert midpoint_best_response(40, [40]) == 40  # zero surplus is not profitable
    assert midpoint_best_response(80, [50, 50, 70]) == 50  # ties of value go to the higher bid:
    # b=50: (160-50)*2-100 = 120; b=70: (160-70)*3-170 = 100


def test_gd_remembers_five_rounds_and_fictitious_play_all():
    h = [record(1, {"B2": 10}, {"S1": 20})] + [
        record(r, {"B2": 10}, {"S1": 60}) for r in range(2, 7)
    ]
    # v = 62: over all six rounds 20 wins (2*62-20-20 = 84 > (124-60)*6-320 = 64); over the
    # last five only 60 is remembered ((124-60)*5-300 = 20 > 0)
    assert quote(make("gd"), obs("B1", 62, rnd=7, history=h)) == 60
    assert quote(make("fictitious_play"), obs("B1", 62, rnd=7, history=h)) == 20
    assert quote(make("gd"), obs("B1", 62)) == 62  # round 1: its value
    assert quote(make("fictitious_play"), obs("B1", 62)) == 62
    hs = [mirror_record(r) for r in h]
    assert quote(make("gd", "S1"), obs("S1", 38, rnd=7, history=hs)) == 40


def test_gdx_opens_one_under_and_bids_its_value_without_a_profitable_gd_bid():
    assert quote(make("gdx"), obs("B1", 70)) == 69
    dear = [record(1, {"B2": 10}, {"S1": 80, "S2": 90})]
    assert {quote(make("gdx", seed=s), obs("B1", 70, rnd=2, history=dear)) for s in range(20)} == {
        70
    }
    cheap = [record(1, {"B2": 10}, {"S1": 30, "S2": 90})]
    got = {quote(make("gdx", seed=s), obs("B1", 70, rnd=8, history=cheap)) for s in range(80)}
    assert 70 in got and 30 in got and got <= set(range(30, 71))


def test_bayesian_bids_halfway_between_its_belief_and_its_value():
    assert quote(make("bayesian"), obs("B1", 95)) == 72  # (50 + 95) / 2 = 72.5, halves to even
    assert quote(make("bayesian"), obs("B1", 93)) == 72  # 71.5
    assert quote(make("bayesian"), obs("B1", 40)) == 40  # below its belief: its value
    h = [record(1, {"B2": 90}, {"S1": 10}, [("B2", "S1", 70)])]
    assert quote(make("bayesian"), obs("B1", 100, rnd=2, history=h)) == 76  # mu 51.2


def test_risk_aware_gives_up_a_share_of_the_room():
    room = [record(1, {"B2": 10}, {"S1": 40})]
    got = [quote(make("risk_aware", seed=s), obs("B1", 80, rnd=2, history=room)) for s in range(40)]
    assert min(got) >= 80 - round(0.53 * 40) and max(got) <= 80 - round(0.13 * 40)
    none = [record(1, {"B2": 10}, {"S1": 90})]
    got = {quote(make("risk_aware", seed=s), obs("B1", 80, rnd=2, history=none)) for s in range(40)}
    assert got <= {78, 79, 80}
    opening = {quote(make("risk_aware", seed=s), obs("B1", 80)) for s in range(60)}
    assert opening == set(range(65, 76))  # round 1, no book: shade U{5..15}
    assert quote(make("risk_aware"), obs("S1", 20)) >= 25  # a seller shades upwards


def test_followers_move_with_or_against_the_last_price_move():
    def hist(p1, p2):
        return [
            record(1, {"B2": 90}, {"S1": 40}, [("B2", "S1", p1)]),
            record(2, {"B2": 90}, {"S1": 40}, [("B2", "S1", p2)]),
        ]

    up, down = hist(50, 60), hist(60, 50)
    m_up = quote(make("momentum"), obs("B1", 80, rnd=3, history=up))
    m_down = quote(make("momentum"), obs("B1", 80, rnd=3, history=down))
    c_up = quote(make("contrarian"), obs("B1", 80, rnd=3, history=up))
    c_down = quote(make("contrarian"), obs("B1", 80, rnd=3, history=down))
    assert m_up == 80 - round(0.10 * 40) and m_down == 80 - round(0.36 * 40)
    assert c_up == 80 - round(0.33 * 40) and c_down == 80 - round(0.11 * 40)
    assert quote(make("contrarian"), obs("B1", 80, rnd=2, history=up[:1])) == 80  # patient 2 rounds
    # round 1, no book: momentum shades half its value's excess over 50, contrarian bids its value
    assert [quote(make("momentum"), obs("B1", v)) for v in (40, 50, 60, 80, 100)] == [
        40,
        50,
        55,
        65,
        75,
    ]
    assert quote(make("momentum"), obs("S1", 20)) == 35  # the mirror: cost 20 is a buyer's 80
    assert quote(make("contrarian"), obs("B1", 80)) == 80


def test_mean_reversion_and_regression_follow_their_logged_tables():
    assert self_play(make("mean_reversion"), 80, rounds=8) == [
        80 - s for s in MEAN_REVERSION_SHADE[:8]
    ]
    # regression: shade 4 within 28 of 50, one more per 6 beyond; cycle +0, +1, -1
    assert self_play(make("regression"), 50, rounds=6) == [46, 45, 47, 46, 45, 47]
    assert self_play(make("regression"), 90, rounds=3) == [84, 83, 85]  # shade 6
    assert self_play(make("regression"), 100, rounds=3) == [92, 91, 93]  # shade 8
    assert self_play(make("regression"), 5, rounds=3) == [0, 0, 0]


def test_regime_switcher_dips_after_a_price_jump_then_recovers():
    calm = self_play(make("regime_switcher"), 80, rounds=8)
    assert calm == [80 - s for s in MEAN_REVERSION_SHADE[:8]]

    def jump(r):  # B1 trades every round; the price jumps from 50 to 60 in round 3
        return {"B2": 20}, {"S1": 10}, [("B1", "S1", 50 if r < 3 else 60)]

    qs = self_play(make("regime_switcher"), 80, rounds=8, others=jump)
    assert qs[:3] == [80, 79, 79] and qs[3:8] == [67, 68, 69, 70, 71]  # 13 then one a round less


def test_aa_margin_opens_at_eight_percent_and_shrinks_with_trades():
    assert quote(make("aa"), obs("B1", 87)) == 80
    assert quote(make("aa"), obs("B1", 95)) == 87
    traded = [record(r, {"B1": 90}, {"S1": 10}, [("B1", "S1", 50)]) for r in range(1, 11)]
    assert quote(make("aa"), obs("B1", 100, rnd=11, history=traded)) == 95  # 0.08*0.95^10
    many = [record(r, {"B1": 90}, {"S1": 10}, [("B1", "S1", 50)]) for r in range(1, 30)]
    assert quote(make("aa"), obs("B1", 100, rnd=30, history=many)) == 97  # floor 0.03


def test_aa_cliff_hugs_its_value_with_room_and_walks_away_without():
    assert quote(make("aa_cliff"), obs("B1", 80)) == 75
    room = [record(1, {"B1": 75}, {"S1": 60})]
    assert quote(make("aa_cliff"), obs("B1", 80, rnd=2, history=room)) == 79
    assert quote(make("aa_cliff"), obs("B1", 100, rnd=2, history=room)) == 98  # 0.015 v
    qs = self_play(make("aa_cliff", seed=3), 60, rounds=20)  # asks at 95: never any room
    assert qs[0] == 55 and all(a >= b for a, b in zip(qs, qs[1:])) and min(qs) >= 60 - 16


def test_adaptive_cycle():
    v = 80

    def market(r):  # B1 trades in rounds 1-9 and when it concedes (as the logged seats do)
        mine = r <= 9 or r in (13, 14, 18, 19)
        return {"B2": 60}, {"S1": 40, "S2": 90}, [("B1" if mine else "B2", "S1", 50)]

    qs = self_play(make("adaptive"), v, rounds=20, others=market)
    assert qs[0] == 79 and qs[1:9] == [80] * 8  # warm-up: its value for 8 rounds after a trade
    # then three rounds at the best ask (no trade), two one under the rival, three at the ask...
    assert qs[9:20] == [40, 40, 40, 59, 59, 40, 40, 40, 59, 59, 40]

    def idle(r):
        return {"B2": 60}, {"S1": 40}, [("B2", "S1", 50)]

    qs = self_play(make("adaptive"), v, rounds=12, others=idle)
    # never trades: every third failed round makes it concede for two rounds
    assert qs == [79, 40, 40, 59, 59, 40, 59, 59, 40, 59, 59, 40]


def test_learners_only_use_their_arms():
    arms = {
        "q_learning": range(0, 21, 2),
        "roth_erev": (0, 5, 10, 15),
        "bandit": (2, 4, 6, 8, 10, 15),
    }
    for name, a in arms.items():
        qs = self_play(make(name, seed=3), 80, rounds=30)
        assert set(qs) <= {80 - d for d in a}, name
        assert len(set(qs)) > 1, name
    qs = self_play(make("roth_erev", seed=5), 80, rounds=30)
    assert set(qs[4:]) <= {80, 75}  # from round 5 on, shades 0 and 5 only


def test_sniper_phases():
    v = 80
    qs = self_play(make("sniper"), v, rounds=30)  # rivals bid 30, asks at 95: no trade
    assert qs[0] == 48  # opens at 48 (ask 52)
    expect, last = [48], 48
    for t in range(1, 24):  # parking: climbs by 2 towards v - 1, holding where the table says 2
        last = min(last, v - 2) if SNIPER_HOLD[t] == 2 else min(v - 1, last + 2)
        expect.append(last)
    assert qs[:24] == expect
    assert qs[24:29] == list(SNIPER_STRIKE)  # deep strike shade in the 5 rounds before the last
    assert qs[29] == v - 1  # the last round: back to its value less one
    rival = self_play(make("sniper"), v, rounds=30, others=lambda r: ({"B2": 70}, {"S1": 95}, []))
    assert rival[:4] == [48, 72, 74, 76]  # jumps past the best rival bid
    low = self_play(make("sniper"), 30, rounds=30)
    assert all(q in (28, 29) for q in low)  # a low value: within 1-2 of it throughout


def test_sniper_kaplan_parks_then_strikes():
    s = make("sniper_kaplan")
    qs = [quote(s, obs("B1", 80, rnd=r, rounds=30, history=QUIET[: r - 1])) for r in range(1, 31)]
    assert qs[:25] == [40] * 25 and qs[25:] == [79] * 5


def test_tit_for_tat_threatens_then_decays_to_its_value():
    qs = self_play(
        make("tit_for_tat"), 80, rounds=30, others=lambda r: ({"B2": 60}, {"S1": 95}, [])
    )
    assert qs[:4] == [48, 61, 62, 63]  # threat 48, then one above the best rival, +1 a round
    assert qs[-1] == 80 and all(b - a in (0, 1) for a, b in zip(qs[1:], qs[2:]))
    assert quote(make("tit_for_tat"), obs("B1", 30)) == 30


def test_exploiter_probes_every_fourth_round():
    h = [record(r, {"B2": 70}, {"S1": 40, "S2": 90}, [("B2", "S1", 60)]) for r in range(1, 9)]
    qs = [quote(make("exploiter"), obs("B1", 80, rnd=r, history=h[: r - 1])) for r in range(1, 9)]
    assert qs == [80, 80, 80, 50, 80, 80, 80, 50]  # floor((40 + 60) / 2) in rounds 4 and 8
    dear = [record(r, {"B2": 70}, {"S1": 85}) for r in range(1, 4)]
    assert quote(make("exploiter"), obs("B1", 80, rnd=4, history=dear)) == 80
    # the probe floor((40 + 60) / 2) = 50 gains 9 for a value of 59 (under min_gain 10), 10 for 60
    assert quote(make("exploiter"), obs("B1", 59, rnd=4, history=h[:3])) == 59
    assert quote(make("exploiter"), obs("B1", 60, rnd=4, history=h[:3])) == 50


def test_penny_jumper_sits_thirty_percent_under_or_a_tick_off_the_book():
    assert quote(make("penny_jumper"), obs("B1", 80)) == 80
    assert (
        quote(make("penny_jumper"), obs("B1", 80, rnd=2, history=[record(1, {}, {"S1": 40})])) == 56
    )
    assert (
        quote(make("penny_jumper"), obs("B1", 80, rnd=2, history=[record(1, {}, {"S1": 75})])) == 73
    )
    assert (
        quote(make("penny_jumper"), obs("B1", 80, rnd=2, history=[record(1, {}, {"S1": 85})])) == 80
    )


def test_signal_jammer_noise_then_a_fixed_shade_once_it_traded():
    qs = self_play(make("signal_jammer", seed=1), 80, rounds=30)
    assert set(qs) <= {77, 78, 79, 80} and len(set(qs)) > 1
    traded = self_play(
        make("signal_jammer", seed=1),
        80,
        rounds=30,
        others=lambda r: ({"B2": 10}, {"S1": 20}, [("B1", "S1", 50)]),
    )
    assert traded[9:] == [74] * 21


def test_zic_walks_deterministically_and_zic_plus_follows_its_table():
    z = make("zic", seed=4)
    # a logged seat valuing 86 opens at 43, then walks 14, 21, 28, 0, 7 (step 7 mod 35); ours takes
    # m = round(0.4 × 86) = 34, so 35 wraps to 1
    z.opening, z.step, z.phase = 43, 7, 14.5 / 34
    assert self_play(z, 86, rounds=7) == [43, 72, 65, 58, 85, 78, 71]
    assert self_play(make("zic_plus"), 80, rounds=30) == [80 - s for s in ZIC_PLUS_SHADE]


def test_random_stays_within_value():
    r = make("random")
    qs = [quote(r, obs("B1", 40, rnd=i + 1, history=QUIET[:i])) for i in range(29)]
    assert min(qs) >= 0 and max(qs) <= 40 and len(set(qs)) > 5


def test_zip_raises_its_bid_after_losing_trades():
    z = make("zip")
    first = quote(z, obs("B1", 80))
    lost = [record(r, {"B2": 75}, {"S1": 60}, [("B2", "S1", 67)]) for r in range(1, 6)]
    assert quote(z, obs("B1", 80, rnd=6, history=lost)) > first


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
        qb = quote(
            buyer,
            obs("B1", 70, rnd=r, rounds=15, history=[mirror_record(h) for h in hist[: r - 1]]),
        )
        qs = quote(seller, obs("S1", 30, rnd=r, rounds=15, history=hist[: r - 1]))
        assert qs == 100 - qb, (strategy, r)


@pytest.mark.parametrize("dist", ["uniform", "correlated", "semi_bimodal", "heavy_tailed"])
def test_no_baseline_quotes_through_its_value(dist):
    params = small_params(rounds=30)
    names = sorted(STRATEGIES)
    for k in range(0, len(names), 8):
        lineup = (names[k : k + 8] + names[:8])[:8]
        res, market = play(params, baseline_lineup(lineup, params), seed=k, distribution=dist)
        st = res.tables["states"]
        assert res.decisions["valid"].all()
        q = st[st["quote"] >= 0]
        buyers, sellers = q[q["role"] == "buyer"], q[q["role"] == "seller"]
        assert (buyers["quote"] <= buyers["value"]).all() and (
            sellers["quote"] >= sellers["value"]
        ).all()
        assert (st["payoff"] >= 0).all()


def test_validate_baseline_names_the_key():
    with pytest.raises(ValueError, match=r"roster.3.params.delta"):
        STRATEGIES.validate(
            RosterEntry(name="s", kind="baseline", strategy="shade", params={"delta": -1}),
            "roster.3",
        )
    with pytest.raises(ValueError, match="unknown double_auction strategy"):
        STRATEGIES.validate(RosterEntry(name="s", kind="baseline", strategy="nope"), "roster.0")
    with pytest.raises(ValueError, match=r"roster.0.params.arms"):
        STRATEGIES.validate(
            RosterEntry(name="s", kind="baseline", strategy="bandit", params={"arms": []}),
            "roster.0",
        )
