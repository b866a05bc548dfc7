"""A unit's folders made ahead of its write (``logs.make_room``, issue 53): what is committed is
byte for byte what a write without them commits, whatever the number of blank files made (none,
fewer or more than the files written), and nothing of them is left; no room is made for a unit
written already; a room swept by a new run is not used."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from marketarena.core import logs


def plan(n: int) -> list[logs.PlannedEpisode]:
    return [logs.PlannedEpisode(f"ep-{i:04d}", i, 100 + i, f"f{i}") for i in range(n)]


def tables(run: int) -> dict[str, pd.DataFrame]:
    """Three result tables and a run table of an episode."""
    return {
        "states": pd.DataFrame({"x": [run, run + 1]}),
        "trades": pd.DataFrame({"price": [1.5 * run], "qty": [2]}),
        "decisions": pd.DataFrame({"agent_id": ["a", "b"], "valid": [True, False]}),
        "llm_costs": pd.DataFrame({"step": [0], "cost_usd": [0.25], "latency_s": [0.5]}),
    }


def write(root, unit: logs.Unit, run_dir):
    if unit.shard:
        episodes = [(tables(e.run), {"market": "m"}, {"wall_time_s": 0.1}) for e in unit.episodes]
        return logs.write_shard(root, unit, episodes, {"wall_time_s": 0.1}, run_dir)
    ep = unit.episodes[0]
    return logs.write_episode(root, ep, tables(ep.run), {"market": "m"}, {}, run_dir)


def tree(root) -> dict[str, bytes]:
    """Every file under ``root``, hidden ones too, by path: run.json's time of writing left out."""
    return {
        str(p.relative_to(root)): b"" if p.name == logs.RUN_META else p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def room(root, unit: logs.Unit):
    return root / f"{logs.TMP_PREFIX}{unit.name}-{os.getpid()}"


@pytest.fixture(autouse=True)
def fresh_counts(monkeypatch):
    """No unit written in this process yet, as far as ``make_room`` knows."""
    monkeypatch.setattr(logs, "_files_written", {})
    monkeypatch.setattr(logs, "_made_room", {})


@pytest.mark.parametrize("shard", [False, True])
@pytest.mark.parametrize("blanks", [0, 2, 4, 30])
def test_a_unit_written_in_the_room_made_for_it_is_the_unit_written_without(
    tmp_path, monkeypatch, blanks, shard
):
    """4 files a unit (3 tables, meta.json): made ahead 0, 2, 4 or 30 blank files."""
    monkeypatch.setattr(logs, "FIRST_GUESS", blanks)
    eps = plan(3)
    unit = logs.Unit(f"{eps[0].episode_id}..{eps[-1].episode_id}", tuple(eps), True)
    if not shard:
        unit = logs.Unit(eps[0].episode_id, (eps[0],), False)
    logs.make_room(tmp_path / "a", unit, tmp_path / "a.runs")
    assert len(list(room(tmp_path / "a", unit).iterdir())) == blanks
    assert len(list(room(tmp_path / "a.runs", unit).iterdir())) == 2  # llm_costs, run.json
    write(tmp_path / "a", unit, tmp_path / "a.runs")
    write(tmp_path / "b", unit, tmp_path / "b.runs")
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert a == b and len(a) == 4
    assert tree(tmp_path / "a.runs") == tree(tmp_path / "b.runs")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [unit.name]
    assert sorted(p.name for p in (tmp_path / "a.runs").iterdir()) == [unit.name]


def test_the_next_room_has_as_many_blank_files_as_the_last_unit_written_there(tmp_path):
    first, second = [logs.Unit(e.episode_id, (e,), False) for e in plan(2)]
    write(tmp_path / "eps", first, tmp_path / "runs")
    logs.make_room(tmp_path / "eps", second, tmp_path / "runs")
    assert len(list(room(tmp_path / "eps", second).iterdir())) == 4
    assert len(list(room(tmp_path / "runs", second).iterdir())) == 2


def test_no_room_is_made_for_a_unit_written_already(tmp_path):
    unit = logs.Unit("ep-0000", tuple(plan(1)), False)
    write(tmp_path / "eps", unit, tmp_path / "runs")
    logs.make_room(tmp_path / "eps", unit, tmp_path / "runs")
    assert [p.name for p in (tmp_path / "eps").iterdir()] == ["ep-0000"]
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["ep-0000"]


def test_a_room_swept_by_a_new_run_is_not_used(tmp_path):
    """A run ends before the unit is written; the next one sweeps its temporaries and writes the
    unit in a folder of its own (and the next room for it is made afresh)."""
    ep = plan(1)[0]
    unit = logs.Unit(ep.episode_id, (ep,), False)
    logs.make_room(tmp_path / "eps", unit)
    assert logs.prepare_units(tmp_path / "eps", [unit]) == [unit]
    assert list((tmp_path / "eps").iterdir()) == []
    write(tmp_path / "eps", unit, None)
    assert logs.finished(tmp_path / "eps" / unit.name, unit)
    assert sorted(tree(tmp_path / "eps")) == [
        f"{unit.name}/{name}"
        for name in ("decisions.parquet", "meta.json", "states.parquet", "trades.parquet")
    ]
