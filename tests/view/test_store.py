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
    assert (
        locate(shards, "x-gpt_fake-0001").name == "x-gpt_fake-0001..x-gpt_fake-0001"
    )  # a unit each
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
    with pytest.raises(UnreadableTable):  # the shard's own bytes are not Parquet
        read_episode(root, "ep-0001")


def test_index_filters_by_player_setting_and_seed(llm_runs):
    index = EpisodeStore(llm_runs["shards"]).index(INSTANCE)
    ids = [e.episode_id for e in index.entries]
    assert ids == [
        "ep-0000",
        "ep-0001",
        "ep-0002",
        "ep-0003",
        "x-gpt_fake-0000",
        "x-gpt_fake-0001",
        "x-gpt_fake-0002",
    ]
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
    assert {line["name"].split()[0] for line in states["plots"][0]["lines"]} == {
        f"B{i}" for i in range(1, 5)
    } | {f"S{i}" for i in range(1, 5)}
    decisions = view.decisions
    llm = decisions["columns"].index("llm")
    assert sum(row[llm] for row in decisions["data"]) == view.llm_decisions == 6  # 6 rounds


def test_plots_only_for_tables_of_one_row_per_step_and_seat():
    state = pd.DataFrame(
        {
            "step": [0, 0, 1, 1],
            "agent_id": ["a", "b", "a", "b"],
            "funds": [1.0, 2.0, 3.0, float("nan")],
            "flag": [True] * 4,
        }
    )
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
        scripted = decision_view(
            root, INSTANCE, "x-gpt_fake-0000", 0, 0, "quote", "S1" if agent != "S1" else "S2"
        )
        assert scripted.attempts[0].calls == []
    with pytest.raises(KeyError):
        decision_view(root, INSTANCE, "x-gpt_fake-0000", 99, 0, "quote", agent)


@pytest.mark.parametrize(
    "episode_id",
    [
        "ep-" + "1" * 5000,  # over a file name's 255 bytes: os.stat raised "File name too long"
        "e" * 300,
        ".tmp-ep-0001",
        "..",
        "ep-0001/../ep-0002",
        "ep\x000001",
        "ep 0001",
        "",
    ],
)
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
        assert (
            info.value.path == table and info.value.episode_id == "ep-0001" and info.value.damaged
        )
        assert str(info.value).startswith(
            f"{table} of episode ep-0001 cannot be read (ArrowInvalid"
        )
        assert str(info.value).endswith(
            "it no longer has the size and hash its meta.json records (it "
            "changed after it was written); the next simulate run of "
            "this instance plays it again"
        )


# ----------------------------------------------------------------------------- outcomes, lists


def test_outcomes_count_each_players_calls_cost_and_reasked_decisions(llm_runs):
    """Without a metrics stage: seats from the units' agents tables, no score; the LLM's first
    round in each game is re-asked (an answer that is no JSON), never invalid; its cost comes from
    the run log."""
    for layout in ("shards", "folders"):
        index = EpisodeStore(llm_runs[layout]).index(INSTANCE)
        outcomes = index.outcomes()
        assert len(outcomes) == sum(len(set(e.lineup)) for e in index.entries)
        mine = outcomes[outcomes["player"] == "gpt_fake"].set_index("episode_id")
        assert sorted(mine.index) == ["x-gpt_fake-0000", "x-gpt_fake-0001", "x-gpt_fake-0002"]
        assert (mine["reasked"] == 1).all() and (mine["invalid"] == 0).all()
        assert (
            (mine["calls"] == 6).all()
            and (mine["tokens"] > 0).all()
            and (mine["cost_usd"] > 0).all()
        )
        others = outcomes[outcomes["player"] != "gpt_fake"]
        assert (others["calls"] == 0).all() and others["cost_usd"].isna().all()
        assert outcomes["score"].isna().all() and outcomes["rank"].isna().all()


def test_outcomes_take_scores_and_ranks_from_the_metrics_stage(llm_runs, tmp_path):
    """With data/metrics/<instance>/agents.parquet: each player's score (csa, summed over its
    seats) and its rank among the game's players, 1 the best; an episode the metrics do not hold
    (played since) still has its seats, without a score."""
    from marketarena.pipeline import Paths, run_metrics
    from tests.view.conftest import tiny_llm_params

    shutil.copytree(llm_runs["shards"].parent, tmp_path / "data")
    run_metrics(INSTANCE, tiny_llm_params(tmp_path, 600), Paths(tmp_path))
    metrics = tmp_path / "data" / "metrics" / INSTANCE / "agents.parquet"
    agents = pd.read_parquet(metrics)
    index = EpisodeStore(tmp_path / "data" / "episodes").index(INSTANCE)
    outcomes = index.outcomes().set_index(["episode_id", "player"])
    for (episode_id, name), score in agents.groupby(["episode_id", "name"])["csa"].sum().items():
        assert outcomes.loc[(episode_id, name), "score"] == pytest.approx(score)
    game = outcomes.loc["ep-0001"]
    assert sorted(game["rank"]) == sorted(game["score"].rank(ascending=False, method="min"))
    assert game["rank"].min() == 1 and (game["players"] == 8).all()
    agents[agents["episode_id"] != "ep-0002"].to_parquet(metrics)  # ep-0002: played since
    outcomes = index.outcomes()  # rebuilt: the metrics file changed
    later = outcomes[outcomes["episode_id"] == "ep-0002"]
    assert len(later) == 8 and later["score"].isna().all()


def test_lists_sort_filter_and_page(llm_runs):
    from marketarena.view import lists

    index = EpisodeStore(llm_runs["shards"]).index(INSTANCE)
    entrant = ["x-gpt_fake-0000", "x-gpt_fake-0001", "x-gpt_fake-0002"]
    rows = lists.episode_rows(index, index.entries)
    page = lists.page_of(
        rows, {"sort": "reasked", "desc": "1"}, ("episode_id", "reasked"), "episode_id"
    )
    assert [r["episode_id"] for r in page.rows[:3]] == entrant and page.total == len(index)
    assert page.rows[0]["calls"] == 6 and page.rows[-1]["cost_usd"] is None
    assert page.sort_link("reasked") == "?sort=reasked&desc=0"  # again: the other way
    assert list(lists.episode_rows(index, index.entries, only="reasked")["episode_id"]) == entrant
    assert lists.episode_rows(index, index.entries, only="invalid").empty
    one = lists.episode_rows(index, index.filter(seed=str(index.entries[1].seed)))
    assert list(one["episode_id"]) == [index.entries[1].episode_id]
    mine = lists.page_of(
        lists.player_rows(index, "gpt_fake", index.entries), {}, ("calls",), "episode_id"
    ).rows
    assert [r["episode_id"] for r in mine] == entrant
    assert all(r["calls"] == 6 and r["rank"] is None and "gpt_fake" in r["lineup"] for r in mine)
    assert lists.totals(lists.player_rows(index, "gpt_fake", index.entries)) == {
        "episodes": 3,
        "score": None,
        "rank": None,
        "won": 0,
        "calls": 18,
        "reasked": 3,
        "invalid": 0,
        "tokens": sum(r["tokens"] for r in mine),
        "cost_usd": pytest.approx(sum(r["cost_usd"] for r in mine)),
    }
    players = {p["player"]: p for p in lists.players(index)}
    assert players["gpt_fake"]["episodes"] == 3 and players["gpt_fake"]["reasked"] == 3
    shared = lists.shared_rows(index, "gpt_fake", "truthful", index.entries)
    assert list(shared["episode_id"]) == [
        e.episode_id for e in index.entries if {"gpt_fake", "truthful"} <= set(e.lineup)
    ]
    assert lists.versus(shared) == {
        "games": len(shared),
        "scored": 0,
        "win_share": None,
        "mean_difference": None,
    }  # no metrics: no scores


# ----------------------------------------------------------------- episode and decision pages


def test_decisions_mark_reasked_points_and_the_seat_steps_through_its_decisions(llm_runs):
    root = llm_runs["shards"] / INSTANCE
    view = episode_view(root, INSTANCE, "x-gpt_fake-0000")
    d = pd.DataFrame(view.decisions["data"], columns=view.decisions["columns"])
    assert list(d.columns[:4]) == ["llm", "answers", "reasked", "final"]
    llm = d[d["llm"]]
    assert llm.loc[llm["step"] == 0, "answers"].tolist() == [2]  # the answer that was no JSON
    assert llm["reasked"].tolist() == [True] + [False] * 5
    assert view.reasked == 1 and view.invalid == 0
    agent = llm["agent_id"].iloc[0]
    first = decision_view(root, INSTANCE, "x-gpt_fake-0000", 0, 0, "quote", agent)
    assert first.previous is None and first.position == (1, 6)
    assert first.next == {"step": 1, "round": 0, "phase": "quote", "agent_id": agent}
    last = decision_view(root, INSTANCE, "x-gpt_fake-0000", 5, 0, "quote", agent)
    assert last.next is None and last.previous["step"] == 4 and last.position == (6, 6)


def test_a_markets_none_value_is_a_gap_in_its_plots(llm_runs):
    """double_auction's price -1 (no trade) and quote -1 (sat out) are not prices (figures.yaml's
    viewer.missing): the timeline's plots leave them out."""
    view = episode_view(llm_runs["shards"] / INSTANCE, INSTANCE, "ep-0001")
    plots = {p["title"]: p for p in view.timeline[0]["plots"]}
    prices = [y for line in plots["price"]["lines"] for y in line["y"]]
    assert None in prices and -1 not in prices and min(y for y in prices if y is not None) >= 0
    table = pd.DataFrame(
        view.timeline[0]["table"]["data"], columns=view.timeline[0]["table"]["columns"]
    )
    assert (table["price"] == -1).any()  # the table itself shows what the log holds


def test_an_episode_downloads_as_a_zip_of_its_tables(llm_runs):
    import io
    import zipfile

    from marketarena.view.store import episode_zip

    data = episode_zip(llm_runs["folders"] / INSTANCE, "x-gpt_fake-0001")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = set(z.namelist())
        assert {
            "x-gpt_fake-0001/meta.json",
            "x-gpt_fake-0001/decisions.csv",
            "x-gpt_fake-0001/llm_messages.csv",
            "x-gpt_fake-0001/llm_costs.csv",
            "x-gpt_fake-0001/states.csv",
        } <= names
        assert json.loads(z.read("x-gpt_fake-0001/meta.json"))["episode_id"] == "x-gpt_fake-0001"
        assert NOT_JSON in z.read("x-gpt_fake-0001/llm_messages.csv").decode()
    with pytest.raises(KeyError):
        episode_zip(llm_runs["folders"] / INSTANCE, "x-gpt_fake-0042")


# ----------------------------------------------------------------------------------- search


def test_search_finds_prompts_answers_and_errors_with_filters(llm_runs):
    from marketarena.view.search import OPEN

    for layout in ("shards", "folders"):
        store = EpisodeStore(llm_runs[layout])
        index = store.search(INSTANCE)
        try:
            assert index.wait(120) and index.error == ""
            assert index.rows == 3 * 7  # 6 rounds of 3 games, and a re-ask in each game
            total, hits, _ = index.query("half of my value")
            assert total == 6  # the answer, and the re-ask quoting it
            assert {h.key["episode_id"] for h in hits} == {
                "x-gpt_fake-0000",
                "x-gpt_fake-0001",
                "x-gpt_fake-0002",
            }
            assert all(h.key["player"] == "gpt_fake" and h.key["model"] == "fake" for h in hits)
            assert all(OPEN in h.snippet for h in hits)
            assert index.query("half of my value", invalid=True)[0] == 3  # the refused answers
            assert index.query("", reasked=True)[0] == 6 and index.query("", invalid=True)[0] == 3
            assert index.query("not valid JSON")[0] == 6  # the error, and the re-ask's prompt
            assert index.query("Your private", episode="x-gpt_fake-0001")[0] == 6
            assert index.query("half", player="truthful")[0] == 0
            first = index.query("half", model="fake")
            assert first.total == len(first.hits) == 6 and first.page == 0
            for past in (1, 10**30):  # past the last page (or SQLite's integers): the last page
                assert index.query("half", model="fake", page=past) == first
            for hostile in ('"', 'half" OR "value', "*", "NEAR(", "'; DROP TABLE calls; --", ""):
                assert index.query(hostile).total in (0, 21)  # never a syntax error
            assert index.choices() == {"player": ["gpt_fake"], "model": ["fake"]}
        finally:
            store.close()
        assert not index.path.exists()  # its temporary file goes with the viewer


def test_an_unreadable_metrics_table_leaves_the_outcomes_without_scores(llm_runs, tmp_path, capfd):
    shutil.copytree(llm_runs["folders"].parent, tmp_path / "data")
    metrics = tmp_path / "data" / "metrics" / INSTANCE / "agents.parquet"
    metrics.parent.mkdir(parents=True)
    metrics.write_bytes(b"not parquet")
    outcomes = EpisodeStore(tmp_path / "data" / "episodes").index(INSTANCE).outcomes()
    assert len(outcomes) and outcomes["score"].isna().all()
    assert f"warning: {metrics} cannot be read" in capfd.readouterr().err


def test_a_decision_is_reasked_by_its_answers_not_by_its_calls():
    """A harness's two calls at one attempt (skeptical: review, then act) are not a re-ask; a
    client's re-ask or a market's second attempt is, on every row of that decision."""
    from marketarena.view.store import marked_decisions

    key = {"round": 0, "phase": "buy"}
    decisions = pd.DataFrame(
        [
            {
                "step": 0,
                "agent_id": "B1",
                "attempt": 0,
                "valid": True,
                **key,
            },  # two calls, no re-ask
            {"step": 1, "agent_id": "B1", "attempt": 0, "valid": False, **key},  # a broken rule ...
            {"step": 1, "agent_id": "B1", "attempt": 1, "valid": True, **key},  # ... asked again
            {"step": 2, "agent_id": "B1", "attempt": 0, "valid": True, **key},
        ]
    )  # the client re-asked
    calls = pd.DataFrame(
        [
            {"step": s, "agent_id": "B1", "attempt": a, "attempts": n, **key}
            for s, a, n in ((0, 0, 1), (0, 0, 1), (1, 0, 1), (1, 1, 1), (2, 0, 3))
        ]
    )
    marked = marked_decisions(decisions, calls)
    assert marked["answers"].tolist() == [1, 1, 1, 3]
    assert marked["reasked"].tolist() == [False, True, True, True]
    assert marked["final"].tolist() == [True, False, True, True]
    assert marked["llm"].all()
