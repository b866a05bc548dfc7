"""Atomic episode folders, resume, and the fingerprint that decides what is reused."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.core.run_logs import (
    RUN_LOG_COLUMNS,
    prune_run_logs,
    read_run_log,
    read_run_table,
)


def plan(n, fp="f"):
    return [logs.PlannedEpisode(f"ep-{i:04d}", i, 100 + i, f"{fp}{i}") for i in range(n)]


def write(root, ep, run_dir=None, wall=0.1, cost=0.0):
    costs = pd.DataFrame({"step": [0], "cost_usd": [cost], "latency_s": [wall], "cached": [False]})
    return logs.write_episode(
        root,
        ep,
        {"states": pd.DataFrame({"x": [ep.run]}), "llm_costs": costs},
        {"market": "m"},
        {"wall_time_s": wall, "cost_usd": cost},
        run_dir,
    )


def test_write_is_atomic_and_complete(tmp_path):
    ep = plan(1)[0]
    write(tmp_path, ep)
    folder = tmp_path / ep.episode_id
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["fingerprint"] == ep.fingerprint
    assert meta["seed"] == 100 and "run" not in meta
    assert not any(p.name.startswith(logs.TMP_PREFIX) for p in tmp_path.iterdir())
    assert EpisodeReader(tmp_path).table("states")["episode_id"].tolist() == [ep.episode_id]


def test_run_information_goes_to_the_run_log_and_leaves_the_results_identical(tmp_path):
    """Wall time, cost, latency: in the run log (not hashed by DVC), never in the episode folder,
    so replaying an identical episode in another time at another cost writes the same bytes."""
    ep = plan(1)[0]
    a = write(tmp_path / "a", ep, tmp_path / "a.runs", wall=0.1, cost=0.5)
    b = write(tmp_path / "b", ep, tmp_path / "b.runs", wall=7.0, cost=0.0)
    assert sorted(p.name for p in a.iterdir()) == ["meta.json", "states.parquet"]
    assert {p.name: p.read_bytes() for p in a.iterdir()} == {
        p.name: p.read_bytes() for p in b.iterdir()
    }
    runs = read_run_log(tmp_path / "a.runs")
    assert runs[
        ["unit", "episode_id", "fingerprint", "wall_time_s", "cost_usd"]
    ].values.tolist() == [[ep.episode_id, ep.episode_id, ep.fingerprint, 0.1, 0.5]]
    assert list(runs.columns) == RUN_LOG_COLUMNS and runs["finished_at"].str.endswith("Z").all()
    costs = read_run_table(tmp_path / "b.runs", "llm_costs")
    assert costs.columns[0] == "episode_id" and costs["latency_s"].tolist() == [7.0]
    # replaying rewrites the run log in place; pruning drops the logs of units not kept
    write(tmp_path / "c", ep, tmp_path / "a.runs", wall=3.0)
    assert read_run_log(tmp_path / "a.runs")["wall_time_s"].tolist() == [3.0]
    prune_run_logs(tmp_path / "a.runs", keep=set())
    assert read_run_log(tmp_path / "a.runs").empty


def test_prepare_keeps_finished_and_sweeps_partial_stale_and_unplanned(tmp_path):
    eps = plan(4)
    for ep in eps[:3]:
        write(tmp_path, ep)
    (tmp_path / f"{logs.TMP_PREFIX}ep-0003-999").mkdir()  # a run killed mid-write
    (tmp_path / "ep-0009").mkdir()  # no longer planned
    (tmp_path / "ep-0002" / "meta.json").write_text("{truncated")  # damaged
    stale = [eps[0], logs.PlannedEpisode("ep-0001", 1, 101, "other"), eps[2], eps[3]]
    todo = logs.prepare(tmp_path, stale)
    assert [e.episode_id for e in todo] == ["ep-0001", "ep-0002", "ep-0003"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ep-0000"]


def test_hash_files_tracks_content_not_mtime(tmp_path):
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    h1 = logs.hash_files([tmp_path])
    f.touch()
    assert logs.hash_files([tmp_path]) == h1
    f.write_text("x = 2\n")
    assert logs.hash_files([tmp_path]) != h1


def test_write_table_writes_exactly_the_bytes_of_pandas_to_parquet(tmp_path):
    """``logs.write_table`` builds the file in memory (speed); its bytes, and so every logged
    hash and the pipeline's dvc.lock, are what ``DataFrame.to_parquet`` writes."""
    import numpy as np
    import pandas as pd

    frames = {
        "mixed": pd.DataFrame(
            {
                "i": np.arange(5, dtype="int64"),
                "f": np.linspace(0, 1, 5),
                "s": list("abcde"),
                "b": [True, False, True, True, False],
                "n": pd.array([1, None, 3, None, 5], dtype="Int64"),
                "o": [None, "x", None, "y", "z"],
            }
        ),
        "empty": pd.DataFrame(
            {"a": pd.Series([], dtype="float64"), "s": pd.Series([], dtype="object")}
        ),
        "indexed": pd.DataFrame({"v": [3.5, 1.5]}, index=[7, 9]),
        "categorical": pd.DataFrame({"c": pd.Categorical(["lo", "hi", "lo"])}),
        "attrs": pd.DataFrame({"v": [1, 2]}),
    }
    frames["attrs"].attrs["note"] = "kept as pandas keeps it"
    for name, df in frames.items():
        record = logs.write_table(df, tmp_path / f"{name}.parquet")
        df.reset_index(drop=True).to_parquet(
            tmp_path / f"{name}.pandas.parquet", index=False, engine="pyarrow", compression="zstd"
        )
        ours = (tmp_path / f"{name}.parquet").read_bytes()
        assert ours == (tmp_path / f"{name}.pandas.parquet").read_bytes(), name
        assert record == logs.file_record(tmp_path / f"{name}.parquet")


def test_write_table_of_rows_writes_exactly_the_bytes_of_their_frame(tmp_path, monkeypatch):
    """``Rows`` are written without building their DataFrame (``logs._rows_table``: a schema
    kept per shape of table), yet byte for byte as ``rows.frame().to_parquet`` writes them: the
    first table of a shape, and the later ones whose columns Arrow builds and casts (missing
    values, ints that pandas makes floats, strings, casts of an empty table, values Arrow cannot
    take as pandas does)."""
    import numpy as np

    from marketarena.core.types import Rows

    cols = ["i", "f", "mixed", "i_none", "b", "b_none", "s", "s_none", "none", "nan", "np"]
    tables = {
        "full": Rows(
            cols,
            [
                (1, 0.5, 1, 1, True, True, "a", "x", None, float("nan"), np.int64(3)),
                (2, 1.5, 2.5, None, False, None, "b", None, None, 1.0, np.int64(4)),
            ],
        ),
        "same shape": Rows(
            cols,
            [
                (3, 2.5, 3, 5, True, False, "c", "y", None, float("nan"), np.int64(5)),
                (4, 3.5, 4.5, None, True, None, "d", None, None, 2.0, np.int64(6)),
            ],
        ),
        "no missing now": Rows(
            cols, [(5, 4.5, 5.5, 7, False, True, "e", "z", None, 3.0, np.int64(7))]
        ),
        "empty, cast": Rows(["step", "x"], [], {"step": "int64"}),
        "empty again": Rows(["step", "x"], [], {"step": "int64"}),
        "cast": Rows(["step", "v"], [(1, 2), (3, 4)], {"v": "float64"}),
        "cast again": Rows(["step", "v"], [(5, 6)], {"v": "float64"}),
        "unarrowable": Rows(["o"], [(1,), ("a",)]),
    }
    monkeypatch.setattr(logs, "_ROWS_SCHEMAS", {})
    built, frame = [], Rows.frame
    monkeypatch.setattr(Rows, "frame", lambda self: (built.append(1), frame(self))[1])
    for name, rows in tables.items():
        try:
            expected = tmp_path / f"{name}.pandas.parquet"
            rows.frame().to_parquet(expected, index=False, engine="pyarrow", compression="zstd")
        except Exception as err:  # noqa: BLE001 - what pandas refuses, ours refuses too
            with pytest.raises(type(err)):
                logs.write_table(rows, tmp_path / f"{name}.parquet")
            continue
        built.clear()
        record = logs.write_table(rows, tmp_path / f"{name}.parquet")
        assert (tmp_path / f"{name}.parquet").read_bytes() == expected.read_bytes(), name
        assert record == logs.file_record(tmp_path / f"{name}.parquet")
        assert bool(built) == (name in ("full", "no missing now", "empty, cast", "cast")), name
