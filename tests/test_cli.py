"""The marketarena CLI: validate, play, leaderboard."""

from __future__ import annotations

import copy
import errno

import pytest
import yaml
from typer.testing import CliRunner

from marketarena.cli import app

runner = CliRunner()

PARAMS = {
    "personas": {"per_tribe": 4},
    "markets": {
        "supply_chain": {
            "runs": 1,
            "steps": 2,
            "beta": 5,
            "roster": [
                {"name": "cp", "kind": "baseline", "strategy": "cost_plus"},
                {"name": "vol", "kind": "baseline", "strategy": "volume"},
                {"name": "rnd", "kind": "baseline", "strategy": "random"},
            ],
        }
    },
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
    res = runner.invoke(
        app, ["play", "supply_chain", "--params", write(tmp_path, PARAMS), "--root", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    header = next(i for i, line in enumerate(lines) if "final_funds" in line)
    assert "profit" in lines[header]
    rows = [line.split() for line in lines[header + 1 :] if line.strip()]
    assert {r[0] for r in rows} == {"R01", "R02", "R03"}
    assert {r[1] for r in rows} == {"cp", "vol", "rnd"}


def test_unknown_market_and_missing_leaderboard(tmp_path):
    res = runner.invoke(app, ["play", "bazaar", "--params", write(tmp_path, PARAMS)])
    assert res.exit_code == 2 and "'bazaar' is not in params.markets" in res.output
    res = runner.invoke(app, ["leaderboard", "supply_chain", "--root", str(tmp_path)])
    assert res.exit_code == 1 and "run `dvc repro`" in res.output


def test_play_with_an_llm_seat_over_http_and_says_why_when_it_cannot(tmp_path, monkeypatch):
    from marketarena.llm.fake import LoopbackEndpoint, Reply

    answer = {
        "observations_and_thoughts": "",
        "new_content": {"PLANS.txt": "", "INSIGHTS.txt": ""},
        "chosen_quantities": {"Product_A": 30, "Product_B": 10},
    }
    with LoopbackEndpoint(lambda body: Reply(answer)) as server:
        params = {
            "models": {
                "loop": {
                    "model": "loopback",
                    "base_url": server.base_url,
                    "api_key_env": "MARKETARENA_PLAY_KEY",
                }
            },
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {
                "cournot": {
                    "runs": 1,
                    "rounds": 3,
                    "roster": [
                        {"name": "gpt", "kind": "llm", "model": "loop"},
                        {"name": "nash", "kind": "baseline", "strategy": "nash"},
                    ],
                }
            },
        }
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


CRASH = {
    "markets": {
        "crash": {
            "runs": 2,
            "days": 5,
            "firms": 2,
            "roster": [
                {"name": "undercut", "kind": "baseline", "strategy": "undercut"},
                {"name": "myopic", "kind": "baseline", "strategy": "myopic"},
            ],
        }
    },
    "execution": {"workers": 1},
}


def test_params_without_root_plays_into_the_params_files_folder(tmp_path, monkeypatch):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = runner.invoke(app, ["simulate", "crash", "--params", write(project, CRASH)])
    assert res.exit_code == 0, res.output
    assert len(list((project / "data" / "episodes" / "crash").glob("ep-*"))) == 2
    assert not any(elsewhere.iterdir())  # nothing in the shell's folder


@pytest.mark.parametrize(
    "error, expected",
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "/data/episodes/crash/.tmp-ep-0001"),
            "no space left on the device (/data/episodes/crash/.tmp-ep-0001); finished episodes are kept",
        ),
        (
            OSError(errno.EROFS, "Read-only file system", "/data/episodes/crash"),
            "read-only file system (/data/episodes/crash)",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied", "/data/episodes/crash"),
            "permission denied (/data/episodes/crash)",
        ),
        (
            OSError("[Errno 28] Error writing bytes to file"),  # how pyarrow reports a full disk
            "no space left on the device; finished episodes are kept",
        ),
        (MemoryError(), "out of memory"),
        (ValueError("something nobody foresaw"), "unexpected ValueError: something nobody foresaw"),
    ],
)
def test_every_fault_ends_in_one_error_line_and_debug_shows_the_traceback(
    tmp_path, monkeypatch, error, expected
):
    from marketarena.core import logs

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(logs, "write_episode", fail)
    path = write(tmp_path, CRASH)
    res = runner.invoke(app, ["simulate", "crash", "--params", path])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], res.output
    res = runner.invoke(app, ["simulate", "crash", "--params", path, "--debug"])
    assert res.exit_code == 1 and "Traceback" in res.output and "error: " in res.output
    monkeypatch.setenv("MARKETARENA_DEBUG", "1")
    res = runner.invoke(app, ["simulate", "crash", "--params", path])
    assert "Traceback" in res.output


def test_an_interrupt_exits_130_saying_the_run_resumes(tmp_path, monkeypatch):
    from marketarena.core import logs

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(logs, "write_episode", interrupt)
    res = runner.invoke(app, ["simulate", "crash", "--params", write(tmp_path, CRASH)])
    assert res.exit_code == 130 and res.output.startswith("error: interrupted; finished episodes")


def test_validate_shows_who_plays_whom_and_refuses_an_unseated_entry(tmp_path):
    res = runner.invoke(app, ["validate", "--params", write(tmp_path, CRASH)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "crash: 2 episodes (2 runs), 2 players {'baseline': 2}"
    assert lines[2].split() == ["undercut", "competitor", "2", "myopic", "2"]
    bad = copy.deepcopy(CRASH)
    bad["markets"]["crash"]["competitors"] = ["undercut"]
    res = runner.invoke(app, ["validate", "--params", write(tmp_path, bad)])
    assert res.exit_code == 2
    assert res.output.startswith(
        f"error: {tmp_path / 'params.yaml'}: markets.crash.roster.1: "
        "'myopic' is seated in none of the 2 planned episodes"
    )


def test_view_as_its_help_shows_it_serves_the_current_folder(tmp_path, monkeypatch):
    """The audit's V5: `marketarena view` without --root ended in a traceback (Paths(None))."""
    import socket

    from marketarena.view import app as view_app

    served = []
    monkeypatch.setattr(
        view_app, "serve", lambda root, host, port: served.append((str(root), port))
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    res = runner.invoke(app, ["view", "--port", str(port)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.splitlines() == [
        "error: data/episodes does not exist; run `dvc repro` (or "
        "`marketarena simulate <instance>`) first"
    ]
    (project / "data" / "episodes").mkdir(parents=True)
    res = runner.invoke(app, ["view", "--port", str(port)])
    assert res.exit_code == 0, res.output
    monkeypatch.chdir(tmp_path)  # elsewhere: the project of --params, as for the other commands
    res = runner.invoke(app, ["view", "--port", str(port), "--params", "project/params.yaml"])
    assert res.exit_code == 0, res.output
    assert served == [("data/episodes", port), ("project/data/episodes", port)]
