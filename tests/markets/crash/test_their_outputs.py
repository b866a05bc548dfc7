"""Golden test (issue 54): our "their score" of Agent Bazaar's crash runs against the authors' own
cached outputs, in CI, on a slice of their MIT-licensed data committed under
``fixtures/agent_bazaar_outputs`` (its README names the commit and every path taken).

Two of their runs are imported as the pipeline imports them (``crash/sources/agent_bazaar.py``)
and scored as the pipeline scores them (the imported instance's metrics, ``their_runs``:
``crash/sources/published.py``), then compared run by run with the figures their own script
cached for the same runs (their health-vs-size cache, which lists each run's bankruptcy rate,
final average price and price SD: ``crash/sources/cached.py``):

- Llama 3.1 8B, 3 stabilizing firms, discovery limit 3, seed 8: every firm bankrupt, and two
  posted prices of 0, which their script drops from a day's mean price (the bug this pins: we
  once counted them, and 31 instead of 33 of their Figure 3 cells agreed on the price SD);
- Nemotron 70B, same cell, seed 16: no firm bankrupt, a final average price of 1.68.

A whole cell (three runs) of either is 4 MB or more; the one Figure 3 cell with runs small
enough to commit (Llama 3.2 3B's) is 3.1 MB and has no price of 0. So the runs are compared one
by one (their caches keep each run's figures, and a cell is their mean), and the cell averaging
is checked on their committed Figure 3 grid.

Tolerance 1e-12 (relative, absolute below 1): our import and their script compute the same sums
in other orders, so the figures agree to the last bits, not bit for bit (0.28375741128364118 is
their 0.2837574112836411).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from marketarena.core.reader import EpisodeReader, read_episode
from marketarena.core.registry import market_kind
from marketarena.markets.crash.params import CrashParams
from marketarena.markets.crash.sources import agent_bazaar as cab
from marketarena.markets.crash.sources.cached import (
    FIELDS,
    compare,
    figure3_cells,
    health_vs_size_runs,
)

FIXTURE = Path(__file__).parent / "fixtures" / "agent_bazaar_outputs"
CACHE = FIXTURE / "paper" / "fig" / "exp1" / "data" / "exp1_health_vs_size_metrics.json"
GRID = (
    FIXTURE
    / "paper"
    / "fig"
    / "exp1"
    / "exp1_meta-llama_llama-3.2-3b-instruct"
    / "data"
    / "exp1_heatmap_food.json"
)
#: their display names -> model ids (their exp1_health_vs_size.py's MODELS)
MODELS = {
    "Llama 3.1 8B": "meta-llama/llama-3.1-8b-instruct",
    "Nemotron 70B": "nvidia/llama-3.1-nemotron-70b-instruct",
}
LLAMA = "llama-3.1-8b-instruct-k3-d3-s8"
NEMOTRON = "llama-3.1-nemotron-70b-instruct-k3-d3-s16"
TOL = 1e-12


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The slice imported and its metrics computed, as the pipeline's imported instance does."""
    out = tmp_path_factory.mktemp("episodes")
    report = cab.import_runs(FIXTURE / "logs-data", out, workers=1)
    mp = CrashParams.model_validate(
        {
            "market": "crash",
            "source": {"format": "agent_bazaar", "path": str(FIXTURE / "logs-data")},
            "max_price": None,
            "demand_index": "mean_quote",
            "consumer_savings": True,
            "liability": "limited",
            "platform_fee": 0.05,
        }
    )
    frames = market_kind("crash").analysis_of(mp).compute_metrics(EpisodeReader(out), mp, out)
    return out, report, frames


def their_records() -> pd.DataFrame:
    return health_vs_size_runs(CACHE, MODELS)


def test_our_their_score_is_their_cached_score_run_by_run(imported):
    _, report, frames = imported
    assert report["runs_imported"] == 2
    runs = frames["their_runs"]
    assert sorted(runs["episode_id"]) == [LLAMA, NEMOTRON]
    theirs = their_records()
    mine = set(zip(runs["model"], runs["stabilizing"], runs["seed"]))
    theirs = theirs[
        [
            (m.split("/")[-1], k, s) in mine
            for m, k, s in theirs[["model", "stabilizing", "seed"]].values
        ]
    ]
    assert len(theirs) == 2  # seed 8 of Llama 3.1 8B's cell, seed 16 of Nemotron 70B's
    table = compare(theirs, runs, TOL)
    assert len(table) == 2 * len(FIELDS) and (table["our_runs"] == 1).all()
    assert table["agree"].all(), table[~table["agree"]].to_string()
    by = table.set_index(["model", "field"])["theirs"]
    # the two runs differ where it matters: one all bankrupt, one with every firm in business
    assert by[("llama-3.1-8b-instruct", "bankruptcy_rate")] == 1.0
    assert by[("llama-3.1-nemotron-70b-instruct", "bankruptcy_rate")] == 0.0
    assert by[("llama-3.1-nemotron-70b-instruct", "final_avg_price")] == pytest.approx(1.68)


def test_a_drifted_figure_of_ours_does_not_agree(imported):
    _, _, frames = imported
    theirs = their_records()
    theirs = theirs[(theirs["model"] == MODELS["Nemotron 70B"]) & (theirs["seed"] == 16)]
    drifted = frames["their_runs"].copy()
    drifted["p_fin"] *= 1 + 1e-9
    table = compare(theirs, drifted, TOL).set_index("field")["agree"]
    assert table.to_dict() == {
        "bankruptcy_rate": True,
        "final_avg_price": False,
        "price_std": True,
    }


def test_the_slice_would_catch_a_posted_price_of_zero_counted(imported):
    """The run has prices of 0; counting them in the day's mean (our earlier σ) misses their
    cached figure by far more than the tolerance, so the test above fails on that bug."""
    out, _, frames = imported
    _, tables = read_episode(out, LLAMA)
    states = tables["states"]
    assert (states["price"] == 0).sum() == 2
    with_zeros = states.groupby("step")["price"].mean().std(ddof=1)
    theirs = their_records()
    record = theirs[(theirs["model"] == MODELS["Llama 3.1 8B"]) & (theirs["seed"] == 8)]
    their_sigma = float(record["price_std"].iloc[0])
    assert abs(with_zeros - their_sigma) > 1e-3 * their_sigma
    ours = frames["their_runs"].set_index("episode_id").loc[LLAMA, "sigma"]
    assert ours == pytest.approx(their_sigma, rel=TOL)


def test_a_figure3_cell_is_the_mean_of_its_runs():
    """Their committed Figure 3 grid (Llama 3.2 3B: one cell, 3 stabilizing firms at discovery
    limit 3): read as one row, which our runs with its per-seed figures meet on average (to
    1e-12), and which one run off by 1e-6 in its SD no longer meets."""
    import json

    cells = figure3_cells(GRID)
    assert cells[["model", "stabilizing", "discovery_limit", "their_seeds"]].values.tolist() == [
        ["llama-3.2-3b-instruct", 3, 3, 3]
    ]
    seeds = json.loads(GRID.read_text())["data"]["per_seed_data"]["3,1"]
    runs = pd.DataFrame(
        {
            "model": "llama-3.2-3b-instruct",
            "stabilizing": 3,
            "discovery_limit": 3,
            "seed": [8, 16, 64],
            **{ours: seeds[field] for field, ours in FIELDS.items()},
        }
    )
    table = compare(cells, runs, TOL)
    assert table["agree"].all() and (table["our_runs"] == 3).all()
    runs.loc[0, "sigma"] += 3e-6  # the cell's mean moves by 1e-6
    table = compare(cells, runs, TOL).set_index("field")["agree"]
    assert not table["price_std"] and table["bankruptcy_rate"]
    other = runs.assign(model="llama-3.1-8b-instruct")  # no run of that model: NaN, no agreement
    assert not compare(cells, other, TOL)["agree"].any()
