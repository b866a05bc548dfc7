"""End to end, on a copy of the built project: a stage depends on what its instance uses and
nothing else (issue 57). A change to the personas re-runs supply_chain's stages (the one market
whose episodes read them) and no other instance's; a change to one market's figure code re-runs
that market's instances only, and re-plays none of their episodes nor their reference."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.project import copy_of, dvc, episode_meta, ran, write_params

pytestmark = pytest.mark.slow

PER = ("simulate", "metrics", "stats", "ratings", "figures")


@pytest.fixture(scope="module")
def copy(project, tmp_path_factory):
    return copy_of(project, tmp_path_factory.mktemp("deps") / "project")


def instance_stages(out: str, instances) -> set[str]:
    return {s for s in ran(out) if "@" in s and s.split("@")[1] in instances}


def test_a_change_to_the_personas_reruns_only_supply_chains_stages(copy):
    params = yaml.safe_load((copy / "params.yaml").read_text())
    others = [i for i, b in params["markets"].items() if b.get("market", i) != "supply_chain"]
    params["personas"]["per_tribe"] = 7
    write_params(copy, params)
    status = dvc(copy, "status").stdout
    assert not any(f"@{i}:" in status for i in others), status
    out = dvc(copy, "repro").stdout
    assert {"personas", "embed", "instances", "simulate@supply_chain"} <= ran(out), out
    assert instance_stages(out, others) == set(), out


def test_a_change_to_one_markets_figures_reruns_only_its_instances(copy):
    params = yaml.safe_load((copy / "params.yaml").read_text())
    cournot = [i for i, b in params["markets"].items() if b.get("market", i) == "cournot"]
    others = [i for i in params["markets"] if i not in cournot]
    episodes = {i: episode_meta(copy, i) for i in cournot}
    reference = {
        i: (copy / "data" / "references" / i / "summary.json").stat().st_mtime_ns for i in cournot
    }
    plots = copy / "lib" / "marketarena" / "markets" / "cournot" / "analysis" / "plots.py"
    plots.write_text(plots.read_text() + "\n# an edit to cournot's figures\n")
    out = dvc(copy, "repro").stdout
    assert {f"figures@{i}" for i in cournot} <= ran(out), out
    assert instance_stages(out, others) == set(), out
    for i in cournot:  # no episode re-played, no reference computed again
        assert episode_meta(copy, i) == episodes[i]
        summary = copy / "data" / "references" / i / "summary.json"
        assert summary.stat().st_mtime_ns == reference[i], json.loads(summary.read_text())
