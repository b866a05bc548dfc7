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
    assert ok.exit_code == 0 and "supply_chain: 1 episodes (1 runs), 3 players" in ok.output
    assert "  cp      retailer         1  vol 1, rnd 1" in ok.output.splitlines()
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


def test_play_with_an_llm_seat_over_http_and_says_why_when_it_cannot(tmp_path, monkeypatch):
    from marketarena.llm.fake import LoopbackEndpoint, Reply

    answer = {"observations_and_thoughts": "", "new_content": {"PLANS.txt": "", "INSIGHTS.txt": ""},
              "chosen_quantities": {"Product_A": 30, "Product_B": 10}}
    with LoopbackEndpoint(lambda body: Reply(answer)) as server:
        params = {"models": {"loop": {"model": "loopback", "base_url": server.base_url,
                                      "api_key_env": "MARKETARENA_PLAY_KEY"}},
                  "llm": {"cache_dir": str(tmp_path / "llm")},
                  "markets": {"cournot": {"runs": 1, "rounds": 3, "roster": [
                      {"name": "gpt", "kind": "llm", "model": "loop"},
                      {"name": "nash", "kind": "baseline", "strategy": "nash"}]}}}
        path = write(tmp_path, params)
        monkeypatch.delenv("MARKETARENA_PLAY_KEY", raising=False)
        res = runner.invoke(app, ["play", "cournot", "--params", path, "--root", str(tmp_path)])
        assert res.exit_code == 1 and "MARKETARENA_PLAY_KEY" in res.output
        monkeypatch.setenv("MARKETARENA_PLAY_KEY", "sk-local-test-key-000000000000")
        res = runner.invoke(app, ["play", "cournot", "--params", path, "--root", str(tmp_path)])
        assert res.exit_code == 0, res.output
        assert server.n_calls == 3
    row = next(line.split() for line in res.output.splitlines() if line.split()[:1] == ["F1"])
    assert row[1] == "gpt" and "sk-local" not in res.output
