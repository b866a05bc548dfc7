"""The pool + entrants schedule: adding a player plays its games only, post-processing keys replay
nothing, and CSα against truthful play under the pool's conditions puts Truthful near zero."""

from __future__ import annotations

import os

import numpy as np
import pytest

from marketarena.config import parse_params
from marketarena.markets.double_auction import KIND
from marketarena.markets.double_auction.schedule import lineup
from marketarena.pipeline import Paths, run_metrics, run_reference, run_simulate
from marketarena.simulate import simulate

POOL = ["truthful", "shade", "zic", "gd", "sniper", "momentum", "bandit", "aa", "random"]


def params_with(extra_roster=(), **over):
    roster = [{"name": n, "kind": "baseline", "strategy": n} for n in POOL] + list(extra_roster)
    market = {"runs": 8, "rounds": 5, "entrant_games": 3, "roster": roster, **over}
    return parse_params({"markets": {"double_auction": market}})


def snapshot(folder):
    """Every file of every episode: bytes and modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), os.stat(p).st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def test_the_plan_is_pool_games_then_each_entrants_games():
    newcomer = {"name": "zip_new", "kind": "baseline", "strategy": "zip"}
    mp = params_with([newcomer], pool=POOL).markets["double_auction"]
    plan = KIND.rules.plan(mp)
    assert [e.episode_id for e in plan] == [f"ep-{r:04d}" for r in range(8)] + [
        f"x-zip_new-{k:04d}" for k in range(3)
    ]
    for spec in plan[:8]:  # pool games draw from the pool only
        assert {s.entry.name for s in spec.seats} <= set(POOL) and len(spec.seats) == 8
    for k, spec in enumerate(plan[8:]):  # the entrant sits once in each of its games
        names = [s.entry.name for s in spec.seats]
        assert names.count("zip_new") == 1 and len(set(names)) == 8
        assert spec.get("distribution") == mp.distributions[k % 4]
    # lineups depend on the pool, not on the entrants
    assert [lineup(mp, r) for r in range(8)] == [
        lineup(params_with().markets["double_auction"], r) for r in range(8)
    ]


@pytest.mark.parametrize("shard", [None, 600], ids=["folders", "shards"])
def test_adding_an_entrant_plays_only_its_games(tmp_path, shard):
    data, out = tmp_path / "data", tmp_path / "episodes"
    first = simulate("double_auction", params_with(shard_episodes=shard), data, out, progress=False)
    assert first["played"] == 8
    before = snapshot(out)
    newcomer = {"name": "zip_new", "kind": "baseline", "strategy": "zip"}
    second = simulate(
        "double_auction",
        params_with([newcomer], pool=POOL, shard_episodes=shard),
        data,
        out,
        progress=False,
    )
    assert (second["played"], second["skipped"]) == (3, 8)
    after = snapshot(out)
    assert {k: v for k, v in after.items() if k in before} == before  # untouched, byte for byte
    # with shards, the newcomer's 3 games are a shard of their own (a shard never mixes series)
    assert {k.split("/")[0] for k in set(after) - set(before)} == (
        {f"x-zip_new-{k:04d}" for k in range(3)}
        if shard is None
        else {"x-zip_new-0000..x-zip_new-0002"}
    )
    # more games per entrant add games (a shard replays as a unit), and never touch the pool's
    third = simulate(
        "double_auction",
        params_with([newcomer], pool=POOL, entrant_games=4, shard_episodes=shard),
        data,
        out,
        progress=False,
    )
    assert (third["played"], third["skipped"]) == ((1, 11) if shard is None else (4, 8))
    assert {k: v for k, v in snapshot(out).items() if k in before} == before


def test_post_processing_keys_leave_episodes_untouched(tmp_path):
    data, out = tmp_path / "data", tmp_path / "episodes"
    simulate("double_auction", params_with(), data, out, progress=False)
    before = snapshot(out)
    changed = params_with(
        csa_clip=3.0,
        rating_passes=7,
        rating_tau=0.5,
        rating_scale="trueskill",
        rating_boot=5,
        rating_boot_passes=2,
        reference={"games_per_distribution": 50, "bucket_width": 10},
    )
    assert simulate("double_auction", changed, data, out, progress=False)["played"] == 0
    assert snapshot(out) == before


def test_a_pool_too_small_or_unknown_names_are_refused():
    with pytest.raises(Exception, match="pool: 5 traders cannot fill 8 seats"):
        params_with(pool=POOL[:5])
    with pytest.raises(Exception, match=r"pool: \['nobody'\] are not roster names"):
        params_with(pool=POOL + ["nobody"])


@pytest.mark.parametrize("games", [120])
def test_truthful_mean_csa_is_near_zero_against_the_pool(tmp_path, games):
    """The seed's Truthful has mean CSα -0.036: measured against truthful play under identical
    conditions, a truthful pool member sits near 0 (here within 0.15: ~3 standard errors of ~400
    seats), while the random trader stays below it."""
    params = parse_params(
        {
            "markets": {
                "double_auction": {
                    "games_per_distribution": games,
                    "rounds": 30,
                    "reference": {"games_per_distribution": 300, "min_count": 30},
                    "roster": [{"name": n, "kind": "baseline", "strategy": n} for n in POOL],
                }
            }
        }
    )
    paths = Paths(tmp_path)
    run_reference("double_auction", params, paths)
    run_simulate("double_auction", params, paths, progress=False)
    agents = run_metrics("double_auction", params, paths)["agents"]
    csa = agents.groupby("name")["csa"].mean()
    n = (agents["name"] == "truthful").sum()
    assert n > 350
    assert abs(csa["truthful"]) < 0.15, csa.round(3).to_dict()
    assert csa["random"] < -0.1
    assert np.isfinite(agents["csa"]).all()
