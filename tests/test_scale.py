"""The ``scale`` switch: ``quick`` plays each instance's sizes as written, ``paper`` puts each
instance's ``paper:`` block over them (config.py); only the instances it changes re-run."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from marketarena.config import ParamsError, load_params, parse_params
from marketarena.pipeline import Paths, run_instances

ROOT = Path(__file__).resolve().parents[1]

CRASH = {
    "runs": 8,
    "days": 30,
    "discovery_limits": [3],
    "stabilizing": [0, 1],
    "roster": [
        {"name": "stabilizer", "kind": "baseline", "strategy": "stabilizer"},
        {"name": "undercut", "kind": "baseline", "strategy": "undercut"},
    ],
    "competitors": ["undercut"],
    "stabilizer": "stabilizer",
    "paper": {"runs": 16, "days": 365},
}
BASE = {
    "markets": {
        "crash": CRASH,
        "cournot": {
            "runs": 2,
            "roster": [
                {"name": "nash", "kind": "baseline", "strategy": "nash"},
                {"name": "collude", "kind": "baseline", "strategy": "collude"},
            ],
        },
    }
}


def parsed(scale: str | None, mutate=None):
    data = copy.deepcopy(BASE)
    if scale is not None:
        data["scale"] = scale
    if mutate:
        mutate(data)
    return parse_params(data)


def test_quick_plays_the_sizes_written_and_paper_the_paper_block():
    quick = parsed(None)
    assert quick.scale == "quick"
    assert (quick.markets["crash"].runs, quick.markets["crash"].days) == (8, 30)
    assert quick.markets["crash"].paper_applied == {}
    paper = parsed("paper")
    assert (paper.markets["crash"].runs, paper.markets["crash"].days) == (16, 365)
    assert paper.markets["crash"].paper_applied == {"runs": 16, "days": 365}
    # an instance without a paper block is the same at either scale
    assert paper.markets["cournot"] == quick.markets["cournot"]
    assert paper.markets["cournot"].paper_applied == {}


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d.update(scale="huge"), "scale: must be one of quick, paper (got 'huge')"),
        (
            lambda d: d["markets"]["crash"]["paper"].update(rnus=3),
            "params.yaml (under scale: paper): markets.crash.rnus: Extra inputs",
        ),
        (
            lambda d: d["markets"]["crash"].update(paper=[96]),
            "markets.crash.paper: must be a mapping",
        ),
        (
            lambda d: d["markets"]["crash"]["paper"].update(market="lemon"),
            "markets.crash.paper.market: only sizes and settings",
        ),
        # a bad paper value is an error under quick too: switching cannot fail later
        (
            lambda d: d["markets"]["crash"]["paper"].update(runs=-1),
            "(under scale: paper): markets.crash.runs",
        ),
    ],
)
def test_bad_scale_or_paper_block_names_the_key(mutate, expected):
    with pytest.raises(ParamsError) as exc:
        parsed(None, mutate)
    assert expected in str(exc.value)


def test_switching_the_scale_changes_only_the_instance_files_of_instances_it_changes(tmp_path):
    """The per-instance stages depend on data/instances/<name>.json (dvc.yaml): the switch must
    change that file for an instance with a paper block and leave every other byte alone."""
    paths = Paths(tmp_path)

    def files(scale):
        run_instances(parsed(scale), paths)
        return {p.name: p.read_text() for p in sorted((tmp_path / "data/instances").iterdir())}

    quick, paper = files("quick"), files("paper")
    assert quick["cournot.json"] == paper["cournot.json"]
    assert quick["crash.json"] != paper["crash.json"]
    assert json.loads(paper["crash.json"])["paper"] == {"runs": 16, "days": 365}
    assert "paper" not in json.loads(quick["crash.json"])


def test_the_shipped_params_load_at_both_scales_and_paper_is_larger(tmp_path):
    """params.yaml's quick sizes are smaller than its paper ones, and both pass every check."""
    text = (ROOT / "params.yaml").read_text()
    quick = load_params(ROOT / "params.yaml")
    assert quick.scale == "quick"
    target = tmp_path / "params.yaml"
    target.write_text(text.replace("\nscale: quick", "\nscale: paper", 1))
    paper = load_params(target)
    assert paper.scale == "paper"
    grown = [name for name, mp in paper.markets.items() if mp.paper_applied]
    assert grown, "no instance of params.yaml has a paper: block"
    for name in grown:
        assert paper.markets[name].runs >= quick.markets[name].runs, name


def test_a_change_to_one_instances_params_changes_only_its_file(tmp_path):
    """The per-instance stages track no params of their instance (dvc.yaml): its file carries
    them, as validated. A key changed changes that instance's file; a default written out, or a
    comment, changes nothing."""
    paths = Paths(tmp_path)

    def files(mutate=None):
        data = copy.deepcopy(BASE)
        if mutate:
            mutate(data)
        run_instances(parse_params(data), paths)
        return {p.name: p.read_text() for p in sorted((tmp_path / "data/instances").iterdir())}

    before = files()
    after = files(lambda d: d["markets"]["cournot"].update(a=120))
    assert before["crash.json"] == after["crash.json"]
    assert before["cournot.json"] != after["cournot.json"]
    assert files(lambda d: d["markets"]["cournot"].update(seed=0)) == before  # the default
