"""Imports of a part of Agent Bazaar's lemon grid (issue 59), on the hand-written fixture of
``ab_fixture.py`` cut down:

- only K = 0 runs (no Sybil cluster anywhere: no identity, no principal): the import, our metrics,
  their EAS, the board and the figures, every stage; the numbers by hand from the fixture's K 0 run;
- no run in the authors' grid (only K 2 and ``_base`` runs, or the model folder renamed so that no
  run is named ``<folder>_k<K>_rep<r>_seed<s>``): their EAS is NaN for every model with the note
  that says why, and the figure and the table say it instead of a score.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from marketarena.config import load_params
from marketarena.markets.lemon.sources import authors

from . import ab_fixture as fx

INSTANCE = "lemon_authors"
K0 = f"{fx.MODEL}_k0_rep1_seed8"
RENAMED = "exp2_acme_buyer-1-renamed"


def only(logs: Path, keep: set[str]) -> Path:
    """The fixture's ``logs`` with only the runs ``keep`` of its model folder."""
    for run in (logs / fx.MODEL).iterdir():
        if run.name not in keep:
            shutil.rmtree(run)
    return logs


def renamed(logs: Path) -> Path:
    """The fixture's model folder renamed: its runs keep their names, none is <folder>_k..."""
    (logs / fx.MODEL).rename(logs / RENAMED)
    return logs


def stages(tmp_path: Path, logs: Path, texts: list[str], monkeypatch):
    """The imported instance through every stage up to the figures: (metrics frames, board,
    outputs); ``texts`` gets every text of every figure drawn."""
    from marketarena.markets.lemon.sources import plots as lemon_plots
    from marketarena.pipeline import (
        Paths,
        run_figures,
        run_metrics,
        run_ratings,
        run_reference,
        run_simulate,
        run_stats,
    )
    from marketarena.plots import published_scores

    def keep_texts(save):
        def wrapped(fig, path):
            texts.extend(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))
            return save(fig, path)

        return wrapped

    for module in (lemon_plots, published_scores):
        monkeypatch.setattr(module, "save", keep_texts(module.save))
    root = tmp_path / "project"
    root.mkdir()
    block = {"markets": {INSTANCE: fx.params_block(logs)}}
    (root / "params.yaml").write_text(yaml.safe_dump(block))
    params, paths = load_params(root / "params.yaml"), Paths(root)
    run_reference(INSTANCE, params, paths)
    run_simulate(INSTANCE, params, paths, progress=False)
    frames = run_metrics(INSTANCE, params, paths)
    run_stats(INSTANCE, params, paths)
    board = run_ratings(INSTANCE, params, paths)
    outputs = {p.name: p for p in run_figures(INSTANCE, params, paths)}
    return frames, board, outputs


# ------------------------------------------------------------------ K = 0 only
def test_an_import_of_k0_runs_only_goes_through_every_stage(tmp_path, monkeypatch):
    """Their K 0 run: t0 c0 buys standard_0's good car at 30,000 and c1 detailed_1's mint one at
    45,000, c2 passes; t1 c0 terse_2's good car at 30,000, c1 bids on it too and loses, c2
    optimistic_3's fair one at 16,000; t2 c1 detailed_1's fair car at 17,000."""
    frames, board, outputs = stages(tmp_path, only(fx.write_logs(tmp_path), {K0}), [], monkeypatch)
    agents = frames["agents"].set_index("agent_id")
    assert set(agents["role"]) == {"honest", "buyer"}  # no principal, no identity
    assert agents.loc[
        ["standard_0", "detailed_1", "terse_2", "optimistic_3"], "revenue"
    ].tolist() == [30000.0, 62000.0, 30000.0, 16000.0]
    # surplus = value - price: c0 (35,000 - 30,000) x 2; c1 50,000 - 45,000 + 20,000 - 17,000;
    # c2 20,000 - 16,000
    assert agents.loc[["consumer_0", "consumer_1", "consumer_2"], "surplus"].tolist() == [
        10000.0,
        8000.0,
        4000.0,
    ]
    market = frames["market"].iloc[0]
    assert (market["volume"], market["purchases"]) == pytest.approx((6 / 3, 5 / 3))
    assert market["sybil_revenue_share"] == 0.0 and market["volume_ratio"] == pytest.approx(1.0)
    # their EAS of one run: W and V / V0 min-max over one run are 0, I = 0: (0 + 1 + 0) / 3
    theirs = frames["their_score"].iloc[0]
    assert (theirs["buyer_group"], theirs["their_runs"], theirs["their_note"]) == ("buyer-1", 1, "")
    assert theirs["their_eas"] == pytest.approx(1 / 3)
    buyers = board[board["role"] == "buyer"].set_index("name")
    assert list(buyers.index) == ["buyer-1"] and np.isfinite(buyers.loc["buyer-1", "eas_mean"])
    assert {"fig4_authors.png", "their_score.png", f"{INSTANCE}_their_score.md"} <= set(outputs)


# ------------------------------------------------------------------ no run in their grid
@pytest.mark.parametrize(
    "cut",
    [
        lambda logs: only(logs, {f"{fx.MODEL}_k2_rep1_seed8", f"{fx.MODEL}_k2_rep1_seed8_base"}),
        renamed,
    ],
    ids=["k2_and_base_only", "model_folder_renamed"],
)
def test_no_run_in_the_authors_grid_is_said_not_scored(tmp_path, monkeypatch, cut):
    texts: list[str] = []
    frames, board, outputs = stages(tmp_path, cut(fx.write_logs(tmp_path)), texts, monkeypatch)
    assert frames["their_score_runs"].empty
    assert set(authors.RUN_COLUMNS) <= set(frames["their_score_runs"].columns)
    theirs = frames["their_score"].set_index("buyer_group")
    assert sorted(theirs.index) == ["buyer-1", "buyer-1+base"]
    assert theirs["their_eas"].isna().all() and theirs["their_runs"].eq(0).all()
    assert theirs["their_note"].eq(authors.NOT_IN_GRID).all()
    # our own metrics and board are untouched by it
    assert board[board["role"] == "buyer"]["eas_mean"].notna().all()
    table = outputs[f"{INSTANCE}_their_score.md"].read_text()
    assert "theirs for none (no run in the authors' grid: buyer-1" in table
    assert "no run in the authors' grid" in texts  # the figure's note in place of the scores
