"""A simulate run with nothing to play, recognised without planning (``simulate/complete.py``): it
imports neither the market's rules nor pandas; and it never hides what the full path would find
(a unit changed on disk, a leftover, other params, another input file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from marketarena.config import parse_params
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import complete, simulate

ROOT = Path(__file__).resolve().parents[2]


def params(**changes):
    block = {
        "runs": 3,
        "rounds": 4,
        "roster": [
            {"name": "nash", "kind": "baseline", "strategy": "nash"},
            {"name": "collude", "kind": "baseline", "strategy": "collude"},
        ],
        **changes,
    }
    return parse_params({"markets": {"bertrand": block}, "execution": {"workers": 1}})


def run(tmp_path: Path, p) -> dict:
    paths = Paths(tmp_path)
    if not (paths.references("bertrand") / "summary.json").exists():
        run_reference("bertrand", p, paths)
    return simulate("bertrand", p, paths.data, progress=False)


def test_a_complete_run_is_recorded_and_a_second_plays_nothing_without_the_rules(tmp_path):
    assert run(tmp_path, params())["played"] == 3
    held = json.loads((tmp_path / "data" / "run_logs" / "bertrand" / complete.RECORD).read_text())
    assert held["units"] == ["ep-0000", "ep-0001", "ep-0002"] and held["planned"] == 3
    (tmp_path / "params.yaml").write_text(
        json.dumps(
            {
                "markets": {
                    "bertrand": {
                        "runs": 3,
                        "rounds": 4,
                        "roster": [
                            {"name": "nash", "kind": "baseline", "strategy": "nash"},
                            {"name": "collude", "kind": "baseline", "strategy": "collude"},
                        ],
                    },
                    "execution": {"workers": 1},
                }
            }
        )
    )
    code = (
        "import json, sys\n"
        "from marketarena.config import load_params\n"
        "from marketarena.simulate import simulate\n"
        "p = load_params('params.yaml', ['bertrand'], deep=False)\n"
        "s = simulate('bertrand', p, 'data', progress=False)\n"
        "print(json.dumps([s['played'], s['skipped'], 'pandas' in sys.modules,\n"
        "                  'marketarena.markets.bertrand.market' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "lib"), "PATH": "/usr/bin:/bin"},
    )
    assert json.loads(out.stdout) == [0, 3, False, False]


def test_a_unit_changed_on_disk_is_played_again(tmp_path):
    run(tmp_path, params())
    table = tmp_path / "data" / "episodes" / "bertrand" / "ep-0001" / "firms.parquet"
    table.write_bytes(table.read_bytes()[:-20])  # truncated after the run was recorded
    assert run(tmp_path, params())["played"] == 1
    assert len(pd.read_parquet(table)) == 2 * 4


def test_a_leftover_other_params_or_another_input_take_the_full_path(tmp_path):
    run(tmp_path, params())
    leftover = tmp_path / "data" / "episodes" / "bertrand" / "ep-0009"
    leftover.mkdir()
    assert run(tmp_path, params())["played"] == 0 and not leftover.exists()  # swept
    assert run(tmp_path, params(runs=4))["played"] == 1  # one more run: only it is played
    assert run(tmp_path, params(runs=4, seed=7))["played"] == 4  # another seed: every one
    summary = tmp_path / "data" / "references" / "bertrand" / "summary.json"
    summary.write_text(summary.read_text().replace('"bertrand"', '"bertrand" '))
    assert (
        complete.nothing_to_play(
            "bertrand",
            params(runs=4, seed=7),
            tmp_path / "data" / "episodes" / "bertrand",
            tmp_path / "data" / "run_logs" / "bertrand",
        )
        is None
    )
