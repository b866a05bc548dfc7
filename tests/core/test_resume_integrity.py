"""Issue 16, "wrong results that look right": a finished episode is reused only when it would be
reproduced exactly (the model behind an alias is part of that) and when its files are intact; a
corrupt input never deletes finished work."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from marketarena.config import parse_params
from marketarena.core import logs
from marketarena.core.reader import EpisodeReader
from marketarena.core.types import InputError
from marketarena.llm.fake import FakeEndpoint, Reply
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import simulate

ANSWER = {
    "observations_and_thoughts": "",
    "new_content": {"PLANS.txt": "", "INSIGHTS.txt": ""},
    "chosen_prices": {"Product_A": "1.7"},
}
MODEL = {
    "model": "fake-model",
    "base_url": "http://fake.invalid/v1",
    "api_key_env": None,
    "max_tokens": 200,
    "temperature": 0.0,
}


def params_for(tmp_path: Path, llm_seat: bool = True, **model):
    roster = [
        {"name": "nash", "kind": "baseline", "strategy": "nash"},
        {"name": "myopic", "kind": "baseline", "strategy": "myopic"},
    ]
    if llm_seat:
        roster[1] = {"name": "gpt", "kind": "llm", "model": "fake"}
    return parse_params(
        {
            "models": {"fake": {**MODEL, **model}},
            "llm": {"cache_dir": str(tmp_path / "llm")},
            "markets": {"bertrand": {"runs": 2, "rounds": 3, "roster": roster}},
        }
    )


def run(tmp_path, params):
    paths = Paths(tmp_path)
    if not (paths.references("bertrand") / "summary.json").exists():
        run_reference("bertrand", params, paths)
    fake = FakeEndpoint(responder=lambda body: Reply(ANSWER))
    summary = simulate("bertrand", params, paths.data, progress=False, openai_factory=fake.factory)
    return summary, paths.episodes("bertrand")


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other-model"},
        {"temperature": 0.7},
        {"base_url": "http://elsewhere.invalid/v1"},
        {"max_tokens": 100},
        {"price_in_per_mtok": 2.0},
    ],
)
def test_changing_the_model_behind_an_alias_replays_its_episodes(tmp_path, change):
    first, _ = run(tmp_path, params_for(tmp_path))
    assert (first["played"], first["skipped"]) == (2, 0)
    again, _ = run(tmp_path, params_for(tmp_path))
    assert (again["played"], again["skipped"]) == (0, 2)
    changed, _ = run(tmp_path, params_for(tmp_path, **change))
    assert (changed["played"], changed["skipped"]) == (2, 0)


def test_settings_that_cannot_change_an_answer_keep_the_episodes(tmp_path):
    run(tmp_path, params_for(tmp_path))
    again, _ = run(tmp_path, params_for(tmp_path, timeout_s=5, max_concurrency=1, max_retries=9))
    assert (again["played"], again["skipped"]) == (0, 2)


def test_model_specs_of_unseated_aliases_do_not_matter(tmp_path):
    run(tmp_path, params_for(tmp_path, llm_seat=False))
    again, _ = run(tmp_path, params_for(tmp_path, llm_seat=False, model="other-model"))
    assert (again["played"], again["skipped"]) == (0, 2)


def test_meta_records_size_and_hash_of_every_table(tmp_path):
    _, root = run(tmp_path, params_for(tmp_path))
    folder = root / "ep-0000"
    meta = json.loads((folder / "meta.json").read_text())
    assert sorted(meta["files"]) == sorted(p.name for p in folder.glob("*.parquet"))
    for name, record in meta["files"].items():
        assert record == logs.file_record(folder / name)


@pytest.mark.parametrize("damage", ["truncate", "delete", "flip"])
def test_resume_replays_an_episode_whose_tables_are_damaged(tmp_path, damage):
    _, root = run(tmp_path, params_for(tmp_path))
    target = root / "ep-0001" / "states.parquet"
    good = target.read_bytes()
    if damage == "truncate":
        target.write_bytes(good[: len(good) // 2])
    elif damage == "delete":
        target.unlink()
    else:  # same size, one byte changed
        target.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
    summary, _ = run(tmp_path, params_for(tmp_path))
    assert (summary["played"], summary["skipped"]) == (1, 1)
    assert target.read_bytes() == good  # replayed identically


def test_a_corrupt_input_deletes_no_finished_episode(tmp_path):
    params = params_for(tmp_path, llm_seat=False)
    _, root = run(tmp_path, params)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    ref = Paths(tmp_path).references("bertrand") / "summary.json"
    ref.write_text(ref.read_text()[:40])  # truncated reference
    with pytest.raises(InputError, match="summary.json"):
        run(tmp_path, params)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_readers_see_every_kept_episode(tmp_path):
    _, root = run(tmp_path, params_for(tmp_path, llm_seat=False))
    states = EpisodeReader(root).table("states")
    assert sorted(states["episode_id"].unique()) == ["ep-0000", "ep-0001"]
    assert isinstance(states, pd.DataFrame)


def test_a_truncated_parquet_input_is_caught_before_any_episode(tmp_path):
    from marketarena.simulate import check_input

    path = tmp_path / "persona_embeddings.parquet"
    pd.DataFrame({"persona_id": range(50), "vector": [[0.1] * 8] * 50}).to_parquet(path)
    check_input(path)
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(pa.ArrowInvalid):  # pyarrow's error for a truncated file
        check_input(path)


def test_a_second_concurrent_run_of_an_instance_is_refused(tmp_path):
    from marketarena.core.types import RunAborted
    from marketarena.simulate import episodes_lock

    params = params_for(tmp_path, llm_seat=False)
    run(tmp_path, params)
    root = Paths(tmp_path).episodes("bertrand")
    before = sorted(p.name for p in root.iterdir())
    # another run holds the folder
    with episodes_lock(root), pytest.raises(RunAborted, match="in use by another simulate run"):
        run(tmp_path, params_for(tmp_path, llm_seat=False, model="changed"))
    assert sorted(p.name for p in root.iterdir()) == before
    summary, _ = run(tmp_path, params)  # the lock is released afterwards
    assert summary["skipped"] == 2
