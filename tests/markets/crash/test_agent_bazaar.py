"""Agent Bazaar's published crash runs, imported, replayed and scored, on the hand-written fixture
of ``agent_bazaar_fixture.py`` (every number there worked out by hand from the authors' engine)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from marketarena.core.reader import EpisodeReader, read_episode
from marketarena.core.sources import SourceError
from marketarena.markets.crash.sources import agent_bazaar as cab
from marketarena.markets.crash.sources import replay
from tests.markets.crash import agent_bazaar_fixture as fx

EP1 = "test-model-k1-d1-s8"
EP2 = "test-model-k0-d1-s16"

ROOT = Path(__file__).resolve().parents[3]


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def logs(tmp_path) -> Path:
    return fx.write(tmp_path / "logs-data")


@pytest.fixture
def imported(logs, tmp_path):
    out = tmp_path / "episodes"
    out.mkdir()
    report = cab.import_runs(logs, out, workers=1)
    return out, report


def test_the_runs_become_episodes_with_their_setting_and_players(imported):
    out, report = imported
    reader = EpisodeReader(out)
    assert reader.episode_ids() == [EP2, EP1]
    meta = reader.meta(EP1)
    assert meta["setting"] == {
        "model": "test-model",
        "discovery_limit": 1,
        "stabilizing": 1,
        "seed": 8,
    }
    assert meta["lineup"] == ["test-model", "test-model+stabilizing"]
    assert meta["run_status"] == "truncated" and meta["tokens"]["requests"] == 4
    _, t = read_episode(out, EP1)
    agents = t["agents"].set_index("agent_id")
    assert agents.loc["stabilizing_firm", ["name", "role", "harness"]].tolist() == [
        "test-model+stabilizing",
        "stabilizing",
        "stabilizing",
    ]
    assert agents.loc["competitive_1", ["name", "kind", "model"]].tolist() == [
        "test-model",
        "llm",
        "test-model",
    ]
    st = t["states"].set_index(["step", "agent_id"])
    assert st.loc[
        (0, "competitive_1"), ["cash_start", "price", "supply", "units_sold", "revenue", "unsold"]
    ].tolist() == [500.0, 2.0, 10.0, 2.4, 4.8, 7.6]
    assert st.loc[(1, "competitive_1"), "cash_start"] == 444.752
    assert np.isnan(st.loc[(0, "competitive_1"), "supply_asked"])  # not in their logs
    orders = t["orders"]
    day1 = orders[orders["step"] == 1].sort_values("order")
    assert day1["consumer"].tolist() == [2, 0]  # the fill order of A's sales_info
    assert day1["wanted"].tolist() == pytest.approx([4.5, 3.0])
    assert day1["budget"].tolist() == pytest.approx([18.0, 7.2])
    s = t["setting"].iloc[0]
    assert (s["demand_index"], s["consumer_savings"], s["liability"], s["platform_fee"]) == (
        "mean_quote",
        True,
        "limited",
        0.05,
    )
    assert s["overhead"] == 2.0 and np.isnan(s["max_price"]) and s["days"] == 3
    assert (
        t["prompts"].set_index("agent_id").loc["stabilizing_firm", "system_prompt"]
        == "You are a firm manager named stabilizing_firm."
    )


def test_the_report_says_which_runs_lack_what(imported):
    _, report = imported
    assert report["runs_found"] == 2 and report["runs_imported"] == 2
    assert report["by_model"] == {"test-model": {"runs": 2, "truncated": 1, "full": 1}}
    lacks = report["lacks"]
    run1, run2 = f"{fx.FOLDER}/{fx.RUN1}", f"{fx.FOLDER}/{fx.RUN2}"
    assert any("days 2-2" in x for x in lacks[run1])  # the last day, not logged
    assert any("crash_agent_prompts.jsonl" in x for x in lacks[run1])  # logged by the run
    assert any("token usage" in x for x in lacks[run2])
    assert {
        "folder": "exp2_* (1 folders)",
        "why": "another experiment (the other market's)",
    } in report["left_out"]


def test_the_replay_agrees_day_by_day(imported):
    out, _ = imported
    reader = EpisodeReader(out)
    tables = {n: reader.table(n) for n in ("states", "orders", "consumers", "setting")}
    days, per_run, rules_table = replay.replay(
        tables["states"], tables["orders"], tables["consumers"], tables["setting"]
    )
    assert len(days) == 6 and days["agree"].all()  # 2 + 2 firm-days of run 1, 2 of run 2
    assert days.set_index(["episode_id", "step", "agent_id"]).loc[
        (EP2, 0, "competitive_1"), ["cash_ours", "bankrupt_ours"]
    ].tolist() == [0.0, True]
    base = rules_table.set_index("rules")
    assert base.loc["ours (the instance's params)", "explains"] == 0
    # what our former rules would get wrong on these days
    assert base.loc["no platform fee", "explains"] == 5  # every firm-day's cash but the bankrupt
    assert base.loc["demand on the chosen price", "explains"] >= 1  # c0 would want 3, not 2.4
    assert base.loc["unlimited liability", "explains"] == 1  # cash -1, not 0


def test_a_logged_sale_that_breaks_our_rules_is_reported(logs, tmp_path):
    path = logs / fx.FOLDER / fx.RUN1 / "state_t1.json"
    s = json.loads(path.read_text())
    s["firms"][0]["sales_info"][1]["quantity_sold"] = 2.0  # c0 got 2 of its 3 units, stock left
    s["firms"][0]["inventory"]["food"] = 1.1
    path.write_text(json.dumps(s))
    out = tmp_path / "ep"
    out.mkdir()
    cab.import_runs(logs, out, workers=1)
    reader = EpisodeReader(out)
    t = {n: reader.table(n) for n in ("states", "orders", "consumers", "setting")}
    days, per_run, _ = replay.replay(t["states"], t["orders"], t["consumers"], t["setting"])
    bad = days[~days["agree"]]
    assert bad[["episode_id", "step", "agent_id"]].values.tolist() == [[EP1, 1, "competitive_1"]]
    assert bad["units_log"].iloc[0] == 6.5 and bad["units_ours"].iloc[0] == pytest.approx(7.5)
    assert per_run.set_index("episode_id").loc[EP1, "agree"] == 0.75  # 3 of its 4 firm-days


def test_a_run_folder_mixing_two_executions_is_cut_where_they_meet(logs, tmp_path):
    d = logs / fx.FOLDER / fx.RUN1
    s = json.loads((d / "state_t1.json").read_text())
    s["firms"][1]["in_business"] = True
    s["firms"][0]["inventory"]["food"] = 5.0  # 7.6 + 0 - 7.5 is 0.1: stock not conserved
    (d / "state_t1.json").write_text(json.dumps(s))
    out = tmp_path / "ep"
    out.mkdir()
    report = cab.import_runs(logs, out, workers=1)
    assert read_episode(out, EP1)[1]["states"]["step"].max() == 0
    assert any(
        "stock: competitive_1's food is not conserved" in x
        for x in report["lacks"][f"{fx.FOLDER}/{fx.RUN1}"]
    )
    assert report["by_model"]["test-model"]["cut"] == 1


def test_a_prompt_log_keeps_only_the_imported_days_and_seats(logs, tmp_path):
    """RUN1 stopped after day 1 of 3 (days 0 and 1 imported): a prompt of day 7, and one of an
    agent with no seat, are not among the episode's messages."""
    record = {
        "role": "firm",
        "agent": "competitive_1",
        "call": "price",
        "timestep": 0,
        "system_prompt": "s",
        "user_prompt": "u",
        "response": "{}",
    }
    lines = [
        record,
        {**record, "timestep": 7},
        {**record, "agent": "nobody"},
        {**record, "timestep": 1, "agent": "stabilizing_firm"},
    ]
    (logs / fx.FOLDER / fx.RUN1 / cab.PROMPT_LOG).write_text(
        "".join(json.dumps(r) + "\n" for r in lines)
    )
    out = tmp_path / "ep"
    out.mkdir()
    cab.import_runs(logs, out, workers=1)
    messages = read_episode(out, EP1)[1]["llm_messages"]
    assert messages[["step", "agent_id"]].values.tolist() == [
        [0, "competitive_1"],
        [1, "stabilizing_firm"],
    ]


@pytest.mark.parametrize(
    "case, match",
    [
        ("truncated", r"state_t1.json: not valid JSON"),
        ("missing_field", r"state_t0.json: firms.0.cash: Field required"),
        ("nan", r"state_t0.json: firms.0.cash: Input should be a finite number"),
        ("infinite", r"state_t0.json: firms.0.cash: Input should be a finite number"),
        (
            "duplicate",
            r"holds the same run as exp1_vendor_test-model/exp1_vendor_test-model_stab_0",
        ),
        ("pathlike_firm", r"state_t0.json: firms.0.name: Value error, firm name '\.\./x'"),
        ("args_missing", r"experiment_args.json: missing"),
        ("huge_count", r"experiment_args.json: max_timesteps: Input should be less than"),
        ("tokens_a_folder", r"_token_usage.json: cannot be read"),
    ],
)
def test_malformed_input_is_one_error_naming_the_file(logs, case, match):
    run = logs / fx.FOLDER / fx.RUN2
    if case == "truncated":
        p = logs / fx.FOLDER / fx.RUN1 / "state_t1.json"
        p.write_bytes(p.read_bytes()[:200])
    elif case == "duplicate":  # the same model, cell and seed under another spelling of the model
        shutil.copytree(run, logs / "exp1_vendor_test_model" / fx.RUN2)
    elif case == "args_missing":
        (run / "experiment_args.json").unlink()
    elif case == "tokens_a_folder":
        tokens = run / f"{fx.RUN2}_token_usage.json"
        tokens.unlink(missing_ok=True)
        tokens.mkdir()
    elif case == "huge_count":
        a = json.loads((run / "experiment_args.json").read_text())
        a["max_timesteps"] = 10**9
        (run / "experiment_args.json").write_text(json.dumps(a))
    else:
        s = json.loads((run / "state_t0.json").read_text())
        if case == "missing_field":
            del s["firms"][0]["cash"]
            text = json.dumps(s)
        elif case == "pathlike_firm":
            s["firms"][0]["name"] = "../x"
            text = json.dumps(s)
        else:
            text = json.dumps(s).replace(
                '"cash": 0.0', '"cash": ' + ("NaN" if case == "nan" else "1e999"), 1
            )
        (run / "state_t0.json").write_text(text)
    with pytest.raises(SourceError, match=match):
        cab.import_runs(logs, Path(str(logs) + "-out"), workers=1)


# ------------------------------------------------------------------ through the pipeline
def _params(tmp_path: Path, logs: Path, played: str = "") -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(f"""markets:
  crash_authors:
    market: crash
    source: {{format: agent_bazaar, path: {logs}}}
    max_price: null
    demand_index: mean_quote
    consumer_savings: true
    liability: limited
    platform_fee: 0.05
{played}stats: {{n_boot: 200, n_perm: 200}}
""")
    return path


def _played(indent: str = "    ") -> str:
    """A tiny played crash instance (``crash_ours``) for the site to draw beside the imported."""
    tiny = (ROOT / "lib" / "marketarena" / "markets" / "crash" / "tiny_params.yaml").read_text()
    body = "".join(indent + line + "\n" for line in tiny.splitlines() if line and line[0] != "#")
    return "  crash_ours:\n    market: crash\n" + body


def test_an_imported_instance_runs_through_the_pipeline(logs, tmp_path):
    from marketarena.config import load_params
    from marketarena.pipeline import (
        Paths,
        run_figures,
        run_metrics,
        run_ratings,
        run_reference,
        run_report,
        run_simulate,
        run_stats,
    )
    from marketarena.simulate.importing import REPORT

    params = load_params(_params(tmp_path, logs, _played()))
    paths = Paths(tmp_path)
    run_reference("crash_authors", params, paths)
    assert run_simulate("crash_authors", params, paths, progress=False)["imported"] == 2
    record = json.loads((paths.episodes("crash_authors") / REPORT).read_text())
    assert record["report"]["runs_imported"] == 2 and "pre-release" in record["report"]["note"]
    frames = run_metrics("crash_authors", params, paths)
    assert frames["replay"]["agree"].all()
    assert set(frames["agents"]["model"]) == {"test-model"}
    board = run_ratings("crash_authors", params, paths)
    assert board["name"].tolist() == ["test-model"] and board["runs"].iloc[0] == 2
    assert {"eas", "eas_lo", "eas_hi", "their_health"} <= set(board.columns)
    figures = run_figures("crash_authors", params, paths)
    names = {p.name for p in figures}
    assert {
        "fig3_bankruptcy_models.png",
        "fig8_days_model.png",
        "fig_scores.png",
        "crash_authors_replay.md",
        "crash_authors_scores.md",
    } <= names
    run_stats("crash_authors", params, paths)
    for stage in (run_reference, run_simulate, run_metrics, run_stats, run_ratings, run_figures):
        stage("crash_ours", params, paths, **({"progress": False} if stage is run_simulate else {}))
    run_report(params, paths)
    page = (paths.reports / "site" / "crash_authors.html").read_text()
    assert "pre-release runs" in page and "our EAS (the mean of the model" in page
    # the seed's Figure 3 from their runs, ours beside it (the played instance's own figure)
    assert 'src="crash_authors/figures/ours_crash_ours_fig3_bankruptcy_grid.png"' in page
    assert "has no caption" not in page
    # a bad file now: one error, the earlier import byte for byte as it was
    before = digest(paths.episodes("crash_authors"))
    p = logs / fx.FOLDER / fx.RUN2 / "state_t0.json"
    p.write_text(p.read_text()[:100])
    with pytest.raises(SourceError, match="state_t0.json: not valid JSON"):
        run_simulate("crash_authors", params, paths, progress=False)
    assert digest(paths.episodes("crash_authors")) == before


def test_the_command_imports_checks_and_reports(logs, tmp_path):
    from marketarena.cli import app

    res = CliRunner().invoke(
        app, ["import-agent-bazaar", str(logs), "--out", str(tmp_path / "ab"), "--market", "crash"]
    )
    assert res.exit_code == 0, res.output
    assert "crash: 2 runs imported of 2 found (1 model), 0 without states" in res.output
    assert "replay: 6 of 6 firm-days agree (100.000%)" in res.output
    assert (tmp_path / "ab" / "crash" / "replay_rules.csv").is_file()
    res = CliRunner().invoke(app, ["import-agent-bazaar", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "not a folder" in res.output
