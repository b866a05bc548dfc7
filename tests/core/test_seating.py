"""Issue 29 (no player silently left out) and issue 27 (rosters that make sense): the seating of
the plan is checked before any episode, for every market, from the plan alone."""

from __future__ import annotations

import copy
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
import yaml

from marketarena.config import ParamsError, parse_params
from marketarena.core import seating
from marketarena.core.registry import market_kind, market_names
from marketarena.markets._shared.oligopoly import lineups
from marketarena.simulate import check_seating, simulate

ROOT = Path(__file__).resolve().parents[2]


def tiny(kind: str) -> dict:
    return yaml.safe_load(
        (ROOT / "lib/marketarena/markets" / kind / "tiny_params.yaml").read_text()
    )


def params_of(kind: str, block: dict, **extra):
    return parse_params({"markets": {kind: block}, **extra})


def appended(kind: str) -> dict:
    """The tiny instance with one more baseline entry of the market's first strategy, appended to
    the roster and named by no seating key."""
    block = copy.deepcopy(tiny(kind))
    first = block["roster"][-1]
    block["roster"].append({**first, "name": "newcomer"})
    return block


#: the key that would seat an appended entry, per market that does not seat it by itself
UNSEATED_HINT = {
    "crash": "markets.crash.competitors",
    "lemon": "markets.lemon.honest, .principal or .buyer_groups",
}


@pytest.mark.parametrize("kind", market_names())
def test_an_entry_appended_to_the_roster_is_seated_or_refused_naming_the_key(kind):
    block = appended(kind)
    if kind == "crash":  # as the probe: the competitors named, the newcomer not
        block["competitors"] = [e["name"] for e in block["roster"][1:-1]]
    params = params_of(kind, block)
    if kind in UNSEATED_HINT:
        with pytest.raises(ParamsError, match="'newcomer' is seated in none") as info:
            check_seating(kind, params)
        assert UNSEATED_HINT[kind] in str(info.value)
        assert f"markets.{kind}.roster.{len(block['roster']) - 1}" in str(info.value)
        return
    # every entry bids or retails in every episode; double_auction draws from the pool; cournot
    # and bertrand deal balanced lineups, so the tiny runs seat the newcomer too...
    found = check_seating(kind, params)
    assert found.episodes[found.names.index("newcomer")] > 0
    if kind in ("cournot", "bertrand"):  # ...but one lineup cannot seat four firms
        block["runs"] = 1
        with pytest.raises(
            ParamsError,
            match=rf"is seated in none of the 1 planned episodes, so it "
            rf"would never play; markets.{kind}.runs: 2 seats it",
        ):
            check_seating(kind, params_of(kind, block))


def test_simulate_refuses_before_touching_the_episodes_folder(tmp_path):
    block = appended("crash")
    block["competitors"] = [e["name"] for e in block["roster"][1:-1]]
    with pytest.raises(ParamsError, match="markets.crash.roster.4: 'newcomer'"):
        simulate("crash", params_of("crash", block), tmp_path, progress=False)
    assert not (tmp_path / "episodes").exists()


def test_a_six_entry_cournot_roster_meets_every_pair_equally_over_one_round_robin():
    block = tiny("cournot")
    block["roster"] = [{"name": f"f{i}", "kind": "baseline", "strategy": "nash"} for i in range(6)]
    block["runs"] = 15  # one round robin: C(6, 2) lineups
    mp = params_of("cournot", block).markets["cournot"]
    met = check_seating("cournot", params_of("cournot", block)).meetings
    off = met[~np.eye(6, dtype=bool)]
    assert (off == 1).all() and (np.diag(met) == 5).all()
    # and every prefix is as balanced as it can be: episode counts within one of each other
    counts = np.zeros(6, int)
    for run in range(15):
        for entry in mp.lineup(run):
            counts[int(entry.name[1:])] += 1
        assert counts.max() - counts.min() <= 1, (run, counts)


@pytest.mark.parametrize("n", range(2, 13))
def test_two_seat_lineups_are_a_round_robin_dealt_in_balanced_rounds(n):
    order = lineups(n, 2)
    assert sorted(order) == list(combinations(range(n), 2))  # each pairing once, in roster order
    counts = np.zeros(n, int)
    for a, b in order:
        counts[[a, b]] += 1
        assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize("n", range(3, 11))
def test_three_seat_lineups_stay_within_two(n):
    order = lineups(n, 3)
    assert sorted(order) == list(combinations(range(n), 3))
    counts = np.zeros(n, int)
    for lineup in order:
        counts[list(lineup)] += 1
        assert counts.max() - counts.min() <= 2
    met = np.zeros((n, n), int)
    for lineup in order:
        for a, b in combinations(lineup, 2):
            met[a, b] += 1
    assert set(met[np.triu_indices(n, 1)]) == {n - 2}  # C(n - 2, 1) meetings per pair


def test_a_seller_strategy_in_lemons_buyer_seats_is_refused_naming_the_key():
    block = tiny("lemon")
    block["buyer_groups"] = [["honest"]]
    with pytest.raises(
        ParamsError,
        match=r"markets.lemon.buyer_groups: seats 'honest' as buyer, a "
        r"role its strategy 'honest' cannot play",
    ):
        check_seating("lemon", params_of("lemon", block))


def test_one_entry_as_honest_seller_and_deceptive_principal_is_refused():
    block = tiny("lemon")
    block["honest"] = block["principal"] = "sybil"  # the audit's case: a scripted principal
    with pytest.raises(ParamsError, match="markets.lemon.honest: seats 'sybil' as honest"):
        check_seating("lemon", params_of("lemon", block))
    # an LLM can play any role, but not both sides at once
    block = tiny("lemon")
    block["roster"].append({"name": "gpt", "kind": "llm", "model": "m"})
    block["honest"] = block["principal"] = "gpt"
    models = {"models": {"m": {"model": "mock", "provider": "mock"}}}
    with pytest.raises(
        ParamsError, match="'gpt' would be both the deceptive principal and the honest seller"
    ):
        check_seating("lemon", params_of("lemon", block, **models))


def test_the_skeptical_harness_is_for_buyers():
    block = tiny("lemon")
    block["roster"].append({"name": "gpt", "kind": "llm", "model": "m", "harness": "skeptical"})
    block["honest"] = "gpt"
    models = {"models": {"m": {"model": "mock", "provider": "mock"}}}
    with pytest.raises(
        ParamsError, match="seats 'gpt' as honest, a role its harness 'skeptical' cannot play"
    ):
        check_seating("lemon", params_of("lemon", block, **models))
    block["honest"] = "honest"
    block["buyer_groups"] = [["gpt", "guardian"], ["naive", "reputation", "random"]]
    check_seating("lemon", params_of("lemon", block, **models))


@pytest.mark.parametrize("kind", market_names())
@pytest.mark.parametrize("runs", [None, 7])
def test_the_seating_of_a_periodic_plan_equals_the_whole_plans(kind, runs):
    block = tiny(kind)
    if runs is not None:
        block["runs"] = runs  # not a whole number of periods
    mp = params_of(kind, block).markets[kind]
    plugin = market_kind(kind).rules
    fast, full = seating.of_plan(plugin, mp), seating.seating(mp, plugin.plan(mp))
    assert fast.n_episodes == full.n_episodes == len(plugin.plan(mp))
    for field in ("episodes", "seats", "meetings"):
        assert (getattr(fast, field) == getattr(full, field)).all(), field
    assert fast.roles == full.roles


def test_double_auctions_seat_matrix_is_its_plan_with_entrants_and_many_games():
    block = tiny("double_auction")
    block["runs"], block["entrant_games"] = 600, 7
    block["roster"].append({"name": "gpt", "kind": "llm", "model": "m"})
    block["roster"][0] = {**block["roster"][0], "name": "outside"}
    block["pool"] = [e["name"] for e in block["roster"][1:-1]]  # a baseline entrant too
    mp = params_of(
        "double_auction", block, models={"m": {"model": "mock", "provider": "mock"}}
    ).markets["double_auction"]
    plugin = market_kind("double_auction").rules
    matrix, roles = plugin.seat_matrix(mp)
    plan = plugin.plan(mp)
    assert matrix.shape == (600 + 2 * 7, mp.seats)
    names = {e.name: i for i, e in enumerate(mp.roster)}
    assert [[names[s.entry.name] for s in spec.seats] for spec in plan] == matrix.tolist()
    assert [[s.role for s in spec.seats] for spec in plan] == [roles] * len(plan)
    fast, full = seating.of_plan(plugin, mp), seating.seating(mp, plan)
    for field in ("episodes", "seats", "meetings"):
        assert (getattr(fast, field) == getattr(full, field)).all(), field
    assert fast.roles == full.roles


def test_english_auctions_seat_matrix_is_its_plan_of_baselines_and_challengers():
    """Two fixed bidders and each other entry as the challenger in turn, ``runs`` auctions each:
    the plan has runs x challengers auctions, and an appended entry plays (it is a challenger)."""
    block = tiny("english_auction")
    block["baselines"] = ["rule", "increment"]
    block["roster"].append({"name": "late", "kind": "baseline", "strategy": "random"})
    mp = params_of("english_auction", block).markets["english_auction"]
    plugin = market_kind("english_auction").rules
    matrix, roles = plugin.seat_matrix(mp)
    plan = plugin.plan(mp)
    assert matrix.shape == (4 * 4, 3) == (len(plan), 3)  # 4 auctions x 4 challengers
    names = {e.name: i for i, e in enumerate(mp.roster)}
    assert [[names[s.entry.name] for s in spec.seats] for spec in plan] == matrix.tolist()
    assert [[s.role for s in spec.seats] for spec in plan] == [roles] * len(plan)
    fast = check_seating("english_auction", params_of("english_auction", block))
    assert fast.episodes.tolist() == [16, 16, 4, 4, 4, 4] and fast.n_episodes == 16


@pytest.mark.parametrize("kind", market_names())
def test_dense_and_sparse_counts_of_a_plan_agree(kind, monkeypatch):
    """``seating._summary`` counts a small plan in a dense array (no scipy import at a run's
    start) and a large one on a sparse matrix: the same episodes, seats and meetings (a seat
    twice in one episode included: a meeting counts episodes, seats count seats)."""
    mp = params_of(kind, tiny(kind)).markets[kind]
    specs = market_kind(kind).rules.plan(mp)
    dense = seating.seating(mp, specs)
    monkeypatch.setattr(seating, "_DENSE_CELLS", 0)
    sparse = seating.seating(mp, specs)
    for field in ("episodes", "seats", "meetings"):
        assert getattr(dense, field).dtype == getattr(sparse, field).dtype, field
        assert (getattr(dense, field) == getattr(sparse, field)).all(), field
    rows, cols = np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1])  # entry 0 twice in episode 0
    for cells in (0, 10**6):
        monkeypatch.setattr(seating, "_DENSE_CELLS", cells)
        made = seating._summary(mp, 2, rows, cols, set())
        assert list(made.seats[:2]) == [2, 2] and made.meetings[0, 1] == 1
        assert list(made.episodes[:2]) == [1, 2]
