"""The marketarena CLI: validate, play, leaderboard."""

from __future__ import annotations

import copy

import yaml
from typer.testing import CliRunner

from marketarena.cli import app

runner = CliRunner()

PARAMS = {
    "personas": {"per_tribe": 4},
    "markets": {"supply_chain": {"runs": 1, "steps": 2, "beta": 5, "roster": [
        {"name": "cp", "kind": "baseline", "strategy": "cost_plus"},
        {"name": "vol", "kind": "baseline", "strategy": "volume"},
        {"name": "rnd", "kind": "baseline", "strategy": "random"},
    ]}},
}


def write(tmp_path, params):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return str(path)


def test_validate_ok_and_bad(tmp_path):
    ok = runner.invoke(app, ["validate", "--params", write(tmp_path, PARAMS)])
    assert ok.exit_code == 0 and "supply_chain: 1 runs, 3 agents" in ok.output
    bad = copy.deepcopy(PARAMS)
    bad["markets"]["supply_chain"]["rounds"] = 0
    res = runner.invoke(app, ["validate", "--params", write(tmp_path, bad)])
    assert res.exit_code == 2
    assert "markets.supply_chain.rounds" in res.output


def test_play_prints_a_summary_per_agent(tmp_path):
    res = runner.invoke(app, ["play", "supply_chain", "--params", write(tmp_path, PARAMS),
                              "--root", str(tmp_path)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    header = next(i for i, l in enumerate(lines) if "final_funds" in l)
    assert "profit" in lines[header]
    rows = [l.split() for l in lines[header + 1:] if l.strip()]
    assert {r[0] for r in rows} == {"R01", "R02", "R03"}
    assert {r[1] for r in rows} == {"cp", "vol", "rnd"}


def test_unknown_market_and_missing_leaderboard(tmp_path):
    res = runner.invoke(app, ["play", "bazaar", "--params", write(tmp_path, PARAMS)])
    assert res.exit_code == 2 and "'bazaar' is not in params.markets" in res.output
    res = runner.invoke(app, ["leaderboard", "supply_chain", "--root", str(tmp_path)])
    assert res.exit_code == 1 and "run `dvc repro`" in res.output
