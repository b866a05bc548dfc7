"""What the episode viewer reads, without a browser: one game by id from either layout (the same
rows as the EpisodeReader gives), without touching the other shards; the instance index and its
filters; a decision with its prompt, raw answers and re-asks; ids that are no plain name found
nowhere, and a damaged table named with its episode."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from marketarena.core.reader import EpisodeReader, UnreadableTable, locate, read_episode
from marketarena.view.store import EpisodeStore, decision_view, episode_view, plots_of
from tests.view.conftest import NOT_JSON

INSTANCE = "double_auction"


def test_one_game_reads_the_same_rows_from_shards_and_folders(llm_runs):
    shards, folders = (llm_runs[k] / INSTANCE for k in ("shards", "folders"))
    assert locate(shards, "x-gpt_fake-0001").name == "x-gpt_fake-0001..x-gpt_fake-0001"  # a unit each
    assert locate(folders, "x-gpt_fake-0001").name == "x-gpt_fake-0001"
    assert locate(shards, "x-gpt_fake-0009") is None and locate(shards, "../x") is None
    reader = EpisodeReader(shards)
    for episode_id in ("ep-0002", "x-gpt_fake-0001"):
        meta_s, from_shard = read_episode(shards, episode_id)
        meta_f, from_folder = read_episode(folders, episode_id)
        assert meta_s["fingerprint"] == meta_f["fingerprint"] and meta_s["episode_id"] == episode_id
        assert sorted(from_shard) == sorted(from_folder)
        for name, df in from_shard.items():
            if name != "llm_costs":  # how answers were obtained (latencies) differs run to run
                pd.testing.assert_frame_equal(df, from_folder[name], check_dtype=False, obj=name)
            every = reader.table(name)
            mine = every[every["episode_id"] == episode_id].drop(columns="episode_id")
            pd.testing.assert_frame_equal(df, mine.reset_index(drop=True), check_dtype=False)


def test_one_game_is_read_without_touching_the_other_shards(llm_runs, tmp_path):
    root = tmp_path / INSTANCE
    shutil.copytree(llm_runs["shards"] / INSTANCE, root)
    for f in (root / "ep-0000..ep-0003").glob("*.parquet"):
        f.write_bytes(b"not parquet")  # a game of the other shard would fail to read
    meta, tables = read_episode(root, "x-gpt_fake-0002")
    assert meta["lineup"].count("gpt_fake") == 1 and len(tables["decisions"]) > 0
    with pytest.raises(Exception):
        read_episode(root, "ep-0001")


def test_index_filters_by_player_setting_and_seed(llm_runs):
    index = EpisodeStore(llm_runs["shards"]).index(INSTANCE)
    ids = [e.episode_id for e in index.entries]
    assert ids == ["ep-0000", "ep-0001", "ep-0002", "ep-0003",
                   "x-gpt_fake-0000", "x-gpt_fake-0001", "x-gpt_fake-0002"]
    assert "gpt_fake" in index.players and "distribution" in index.settings
    mine = index.filter(player="gpt_fake")
    assert [e.episode_id for e in mine] == ids[4:]
    for value in index.settings["distribution"]:
        got = index.filter(setting={"distribution": value})
        assert got and all(("distribution", value) in e.setting for e in got)
    one = index.entries[5]
    assert index.filter(seed=str(one.seed)) == [one]
    assert one in index.filter(seed=str(one.run))
    assert index.filter(player="gpt_fake", text="0002") == [index.entries[6]]
    assert index.filter(player="nobody") == []


def test_episode_view_has_the_timeline_plots_and_llm_decisions(llm_runs):
    view = episode_view(llm_runs["shards"] / INSTANCE, INSTANCE, "x-gpt_fake-0000")
    assert view.meta["setting"]["distribution"] and "run" not in view.meta
    names = [t["name"] for t in view.timeline]
    assert names[0] == "states" and view.steps == list(range(6))
    states = view.timeline[0]
    assert states["table"]["total"] == 6 * 8 and not states["table"]["cut"]
    titles = [p["title"] for p in states["plots"]]
    assert "quote" in titles and "surplus" in titles
    assert {line["name"].split()[0] for line in states["plots"][0]["lines"]} == \
        {f"B{i}" for i in range(1, 5)} | {f"S{i}" for i in range(1, 5)}
    decisions = view.decisions
    llm = decisions["columns"].index("llm")
    assert sum(row[llm] for row in decisions["data"]) == view.llm_decisions == 6  # 6 rounds


def test_plots_only_for_tables_of_one_row_per_step_and_seat():
    state = pd.DataFrame({"step": [0, 0, 1, 1], "agent_id": ["a", "b", "a", "b"],
                          "funds": [1.0, 2.0, 3.0, float("nan")], "flag": [True] * 4})
    (plot,) = plots_of(state, {"a": "a alice"})
    assert plot["title"] == "funds"
    assert plot["lines"][0] == {"name": "a alice", "x": [0, 1], "y": [1.0, 3.0]}
    assert plot["lines"][1]["y"] == [2.0, None]  # NaN is a gap, not a zero
    trades = pd.concat([state, state])  # several rows per step and seat: not a state
    assert plots_of(trades) == []


def test_decision_view_shows_prompt_raw_answers_and_the_reask(llm_runs):
    for layout in ("shards", "folders"):
        root = llm_runs[layout] / INSTANCE
        seat = read_episode(root, "x-gpt_fake-0000")[1]["agents"].query("name == 'gpt_fake'")
        agent = seat["agent_id"].iloc[0]
        view = decision_view(root, INSTANCE, "x-gpt_fake-0000", 0, 0, "quote", agent)
        assert view.seat["name"] == "gpt_fake" and len(view.attempts) == 1
        (call,) = view.attempts[0].calls
        assert call.row["attempts"] == 2 and call.row["valid"] and call.row["cached"] is False
        assert call.row["cost_usd"] > 0 and call.row["latency_s"] >= 0
        first, reask = call.exchanges
        assert [m["role"] for m in first["messages"]] == ["system", "user"]
        assert f"You are {agent} (" in first["messages"][1]["content"]
        assert first["answer"] == NOT_JSON and "not valid JSON" in first["error"]
        assert [m["role"] for m in reask["messages"]] == ["assistant", "user"]
        assert reask["messages"][0]["content"] == NOT_JSON
        assert json.loads(reask["answer"])["quote"] is not None and reask["error"] == ""
        later = decision_view(root, INSTANCE, "x-gpt_fake-0000", 3, 0, "quote", agent)
        assert len(later.attempts[0].calls[0].exchanges) == 1
        scripted = decision_view(root, INSTANCE, "x-gpt_fake-0000", 0, 0, "quote",
                                 "S1" if agent != "S1" else "S2")
        assert scripted.attempts[0].calls == []
    with pytest.raises(KeyError):
        decision_view(root, INSTANCE, "x-gpt_fake-0000", 99, 0, "quote", agent)


@pytest.mark.parametrize("episode_id", [
    "ep-" + "1" * 5000,  # over a file name's 255 bytes: os.stat raised "File name too long"
    "e" * 300, ".tmp-ep-0001", "..", "ep-0001/../ep-0002", "ep\x000001", "ep 0001", ""])
def test_an_id_that_is_not_a_plain_name_is_in_no_folder(llm_runs, episode_id):
    for layout in ("shards", "folders"):
        assert locate(llm_runs[layout] / INSTANCE, episode_id) is None
        with pytest.raises(KeyError):
            read_episode(llm_runs[layout] / INSTANCE, episode_id)


def test_a_damaged_table_is_named_with_its_episode(llm_runs, tmp_path):
    for layout in ("shards", "folders"):
        root = tmp_path / layout / INSTANCE
        shutil.copytree(llm_runs[layout] / INSTANCE, root)
        table = locate(root, "ep-0001") / "decisions.parquet"
        table.write_bytes(table.read_bytes()[:200])  # truncated
        with pytest.raises(UnreadableTable) as info:
            read_episode(root, "ep-0001")
        assert info.value.path == table and info.value.episode_id == "ep-0001" and info.value.damaged
        assert str(info.value).startswith(f"{table} of episode ep-0001 cannot be read (ArrowInvalid")
        assert str(info.value).endswith("it no longer has the size and hash its meta.json records (it "
                                        "changed after it was written); the next simulate run of "
                                        "this instance plays it again")
