"""The spillover study is a paired design (issue 55): replicate k of every cell draws the same
consumers, shoppers and seat streams (the seed of (seed, k), common random numbers), and every
cell seats the same number of firms (the none cell an ordinary competitor, a *filler*, in the
stabilizer's seat, not in the stabilizing role); a single-stabilizer grid keeps its seeds."""

from __future__ import annotations

import pandas as pd
import pytest

from marketarena.config import parse_params
from marketarena.core.rules import episode_seed
from marketarena.core.runner import play_episode
from marketarena.markets.crash import KIND
from marketarena.markets.crash.params import DEFAULT_PERSONAS
from marketarena.simulate import build

COMPETITORS = ["u", "v", "m", "k"]


def spillover(**over):
    """A tiny spillover instance: none, or one stabilizer of three margins, beside four
    competitors (two undercutters, a myopic firm that explores at random, a markup firm)."""
    roster = [
        {
            "name": f"stab_{m}",
            "kind": "baseline",
            "strategy": "stabilizer",
            "params": {"margin": m / 100},
        }
        for m in (0, 20, 50)
    ]
    roster += [
        {"name": n, "kind": "baseline", "strategy": st}
        for n, st in zip(COMPETITORS, ("undercut", "undercut", "myopic", "markup"))
    ]
    block = {
        "runs": 8,  # 4 cells x 2 replicates
        "seed": 3,
        "firms": 4,
        "consumers": 20,
        "days": 12,
        "discovery_limits": [3],
        "stabilizing": [0, 1],
        "stabilizer_seats": "add",
        "stabilizers": ["stab_0", "stab_20", "stab_50"],
        "competitors": COMPETITORS,
        "roster": roster,
        **over,
    }
    return parse_params({"markets": {"crash_spillover": {"market": "crash", **block}}})


def play_all(params) -> list[tuple[object, dict, object]]:
    """(spec, log tables, market) of every planned episode."""
    out = []
    for run in range(params.markets["crash_spillover"].runs):
        market, agents, _, spec = build("crash_spillover", params, run)
        out.append((spec, play_episode(market, agents, spec.seed).tables, market))
    return out


def test_paired_spillover_cells_draw_the_same_consumers():
    params = spillover()
    mp = params.markets["crash_spillover"]
    assert mp.paired and len(mp.cells) == 4
    played = play_all(params)
    by_replicate: dict[int, list] = {}
    for spec, tables, _ in played:
        by_replicate.setdefault(mp.replicate_of(spec.run), []).append((spec, tables))
    assert sorted(by_replicate) == [0, 1] and all(len(c) == 4 for c in by_replicate.values())
    first_days = {}
    for j, cells in by_replicate.items():
        spec0, t0 = cells[0]
        assert spec0.get("stabilizing") == 0  # the none cell comes first
        assert spec0.seed == episode_seed(3, j)
        for spec, tables in cells[1:]:
            assert spec.seed == spec0.seed
            # the same consumers (incomes) and the same shoppers on the first day
            pd.testing.assert_frame_equal(tables["consumers"], t0["consumers"])
            day0 = [
                t[t["step"] == 0]["consumer"].tolist() for t in (tables["orders"], t0["orders"])
            ]
            assert day0[0] == day0[1]
            # the same competitor seats, kinds and random streams: the myopic competitor
            # explores at random on day 1, the same draw in every cell
            states = [
                t[(t["step"] == 0)].set_index("agent_id")["price"]
                for t in (tables["states"], t0["states"])
            ]
            comp = [s.agent_id for s in spec.seats if s.role == "competitor"]
            assert comp == [s.agent_id for s in spec0.seats if s.role == "competitor"]
            myopic = next(
                s.agent_id for s in spec.seats if s.entry.name == "m" and s.role == "competitor"
            )
            assert states[0][myopic] == states[1][myopic]
        first_days[j] = t0["consumers"]["income"].to_numpy()
    # replicates differ: the pairing is across cells, not a single world played over and over
    assert not (first_days[0] == first_days[1]).all()


def test_every_cell_seats_the_same_number_of_firms_and_the_filler_does_not_stabilize():
    params = spillover(runs=16)  # 4 replicates: each competitor kind fills once
    mp = params.markets["crash_spillover"]
    fillers = []
    for run in range(mp.runs):
        market, _, table, spec = build("crash_spillover", params, run)
        assert [s.agent_id for s in spec.seats] == ["F1", "F2", "F3", "F4", "F5"]
        assert [s.role for s in spec.seats][1:] == ["competitor"] * 4
        obs = market.reset(spec.seed).observations
        if spec.get("stabilizing") == 0:
            f1 = spec.seats[0]
            assert f1.role == "filler" and table["role"].iloc[0] == "filler"
            # the rotation continued: replicate j's filler is the kind of its competitor seat 0
            j = mp.replicate_of(run)
            assert f1.entry.name == COMPETITORS[j % 4] == spec.seats[1].entry.name
            assert not obs["F1"].stabilizing
            assert market.personas[0] == DEFAULT_PERSONAS["competitive"]  # a competitor's
            assert market.tables()["setting"]["stabilizing"].iloc[0] == 0
            fillers.append(f1.entry.name)
        else:
            assert spec.seats[0].role == "stabilizing" and obs["F1"].stabilizing
            assert market.personas[0] == ""
        assert market.tables()["setting"]["firms"].iloc[0] == 5
    assert sorted(fillers) == sorted(COMPETITORS)
    # the competitor mix is the same in every cell, none included
    assert len({tuple(sorted(c.items())) for c in mp.competitor_mix().values()}) == 1


def test_a_grid_with_one_stabilizer_is_not_paired_and_keeps_its_seeds():
    params = spillover(stabilizers=None, stabilizer="stab_20")
    mp = params.markets["crash_spillover"]
    assert not mp.paired and mp.filler_seats(0) == 0
    specs = KIND.rules.plan(mp)
    assert [s.seed for s in specs] == [episode_seed(3, r) for r in range(mp.runs)]
    none = [s for s in specs if s.get("stabilizing") == 0]
    assert none and all(len(s.seats) == 4 for s in none)  # add: 4 competitors, no filler
    # under replace a paired design needs no filler: every cell already seats `firms`
    rep = spillover(stabilizer_seats="replace", firms=5).markets["crash_spillover"]
    assert rep.paired and {len(KIND.rules.seats(rep, r)) for r in range(rep.runs)} == {5}
    assert all(s.role != "filler" for r in range(rep.runs) for s in KIND.rules.seats(rep, r))


@pytest.mark.parametrize("stabilizing", [[0, 2], [1, 3]])
def test_fillers_make_up_the_largest_cells_field(stabilizing):
    mp = spillover(stabilizing=stabilizing).markets["crash_spillover"]
    for run in range(mp.runs):
        roles = [s.role for s in KIND.rules.seats(mp, run)]
        s = mp.cell_of(run)[1]
        assert (
            roles == ["stabilizing"] * s + ["filler"] * (max(stabilizing) - s) + ["competitor"] * 4
        )
