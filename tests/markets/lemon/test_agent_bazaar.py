"""Agent Bazaar's lemon runs imported, replayed and scored, on the hand-written fixture of
``ab_fixture.py`` (their schema; its docstring narrates every step).

- The importer: tables, settings, seats and players as the fixture says; a run that stopped early
  imported up to its last step with the gap reported; a run without states reported and skipped;
  the prompt log as ``llm_messages``, the buyers' answers re-parsed as ``decisions``.
- Their rules for parsing an answer, and the pairing of buyers with the cars they bought.
- The replay: every step of the fixture agrees with our rules; a step whose logged sale breaks
  our rule is reported as a disagreement, not hidden; the vote window by hand.
- Hostile input (a truncated state file, a missing field, NaN, Infinity, a duplicate run): one
  ``error:`` line naming the file, and an earlier import left byte for byte as it was.
- An imported lemon instance through the whole pipeline (reference, simulate = import, metrics,
  stats, ratings, figures, report).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from marketarena.config import load_params, parse_params
from marketarena.core.reader import EpisodeReader, read_episode
from marketarena.core.sources import SourceError
from marketarena.markets.lemon import authors_answers
from marketarena.markets.lemon.sources import agent_bazaar as lab
from marketarena.markets.lemon.sources import authors, reputation
from marketarena.markets.lemon.sources import steps as run_steps

from . import ab_fixture as fx

INSTANCE = "lemon_authors"
K2 = f"{fx.MODEL}_k2_rep1_seed8"


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def mp_of(logs: Path, **over):
    return parse_params({"markets": {INSTANCE: fx.params_block(logs, **over)}}).markets[INSTANCE]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The fixture imported with two worker processes: (logs, out folder, report)."""
    root = tmp_path_factory.mktemp("ab")
    logs = fx.write_logs(root)
    report = lab.import_runs(mp_of(logs), logs, root / "out", workers=2)
    return logs, root / "out", report


def episode(imported, episode_id: str) -> dict[str, pd.DataFrame]:
    return read_episode(imported[1], episode_id)[1]


# ------------------------------------------------------------------ the importer
def test_the_runs_found_imported_and_reported(imported):
    _, out, report = imported
    assert EpisodeReader(out).episode_ids() == [
        "buyer-1-k0-rep1-s8",
        "buyer-1-k2-rep1-s16",
        "buyer-1-k2-rep1-s8",
        "buyer-1-k2-rep1-s8-base",
    ]
    assert report["runs_found"] == 5 and report["runs_imported"] == 4
    assert report["runs_without_states"] == 1
    assert report["runs_without_states_list"] == [f"{fx.MODEL}/{fx.MODEL}_k2_rep0_seed8"]
    assert report["steps"] == 7 + 3 + 3 + 3
    assert report["left_out"] == [
        {"folder": f"(OLD) {fx.MODEL}", "why": "superseded by the authors"},
        {"folder": "exp1_* (1 folders)", "why": "another experiment (the other market's)"},
    ]
    assert "pre-release" in report["note"]
    assert report["lacks_by_run"] == {
        f"{fx.MODEL}_k0_rep1_seed8": "steps 3 to 6",
        f"{fx.MODEL}_k2_rep0_seed8": "token usage, no state file",
        f"{fx.MODEL}_k2_rep1_seed16": "steps 3 to 6, prompt log",
        K2: "1 unreadable line(s)",
        f"{K2}_base": "steps 3 to 6",
    }
    assert report["unreadable_prompt_lines"] == 1 and report["buyer_answers_invalid"] == 1
    assert report["sales_unpaired"] == 0


def test_a_run_missing_its_last_steps_is_imported_up_to_them(imported):
    _, _, report = imported
    t = episode(imported, "buyer-1-k2-rep1-s16")
    assert report["runs_truncated"][f"{fx.MODEL}/{fx.MODEL}_k2_rep1_seed16"] == 3
    assert sorted(t["listings"]["step"].unique()) == [0, 1, 2]  # 0-based, as theirs
    assert t["setting"][["steps", "steps_planned"]].values.tolist() == [[3, 7]]


def test_settings_seats_and_players(imported):
    t = episode(imported, "buyer-1-k2-rep1-s8")
    s = t["setting"].iloc[0]
    assert (s["sybil"], s["reputation_visible"], s["buyer_group"], s["seed"], s["base"]) == (
        2,
        True,
        "buyer-1",
        8,
        False,
    )
    assert (s["model"], s["seller_model"], s["discovery_limit"]) == (
        "acme/buyer-1",
        "acme/seller-1",
        2,
    )
    agents = t["agents"].set_index("agent_id")
    assert agents.loc[["standard_0", "detailed_1"], "name"].eq("seller-1+honest").all()
    assert agents.loc["sybil_principal", ["name", "role"]].tolist() == [
        "seller-1+sybil",
        "principal",
    ]
    ids = agents[agents["role"] == "identity"]
    assert sorted(ids.index) == ["sybil_0", "sybil_1", "sybil_2"]  # the replacement too
    assert (ids["actor"] == "sybil_principal").all() and (ids["name"] == "seller-1+sybil").all()
    assert agents[agents["role"] == "buyer"]["name"].eq("buyer-1").all()
    base = episode(imported, "buyer-1-k2-rep1-s8-base")
    assert base["agents"].query("role == 'buyer'")["name"].eq("buyer-1+base").all()
    k0 = episode(imported, "buyer-1-k0-rep1-s8")["agents"]
    assert set(k0["role"]) == {"honest", "buyer"}  # no principal at K = 0


def test_the_meta_names_its_market_lineup_and_setting_as_a_played_episodes(imported, tmp_path):
    """The viewer's setting filters and scores (``view/store.py``) read a meta's ``market``,
    ``lineup`` and ``setting``: an imported run's meta holds them as a played lemon episode's
    does (its setting under the played episodes' keys, with the run's seed, as crash's imports);
    an import made before they were written (no market, no lineup, its cell as ``cell``) still
    opens, its players from its seats."""
    from marketarena.markets.lemon import KIND
    from marketarena.view.store import InstanceIndex

    _, out, _ = imported
    meta, tables = read_episode(out, "buyer-1-k2-rep1-s8")
    assert meta["market"] == "lemon"
    assert meta["lineup"] == tables["agents"]["name"].tolist()
    assert meta["setting"] == {
        "sybil": 2,
        "reputation_visible": True,
        "buyers": "buyer-1",
        "seed": 8,
    }
    played = dict(KIND.rules.episode(mp_of(imported[0]), 0).setting)
    assert set(played) <= set(meta["setting"]) and "cell" not in meta
    assert read_episode(out, "buyer-1-k2-rep1-s8-base")[0]["setting"]["buyers"] == "buyer-1+base"
    index = InstanceIndex(out)
    assert index.market == "lemon"
    assert index.settings["sybil"] == ["0", "2"] and index.settings["seed"] == ["8", "16"]
    assert index.settings["buyers"] == ["buyer-1", "buyer-1+base"]
    assert len(index.filter(setting={"sybil": "2"})) == 3
    # an import made before: the same episodes, their players from their seats, no filters
    old = tmp_path / "old"
    shutil.copytree(out, old)
    for path in old.glob("*/meta.json"):
        m = json.loads(path.read_text())
        cell = {k: m["setting"][k] for k in ("sybil", "reputation_visible", "seed")}
        m = {k: v for k, v in m.items() if k not in ("market", "lineup", "setting")}
        path.write_text(json.dumps({**m, "cell": cell}))
    before = InstanceIndex(old)
    assert [(e.episode_id, set(e.lineup)) for e in before.entries] == [
        (e.episode_id, set(e.lineup)) for e in index.entries
    ]
    assert before.market == "" and before.settings == {}
    assert read_episode(old, "buyer-1-k2-rep1-s8")[1]["agents"].equals(tables["agents"])


def test_listings_purchases_bids_and_views(imported):
    t = episode(imported, "buyer-1-k2-rep1-s8")
    sold = t["listings"][t["listings"]["sold"]]
    got = {(r.step, r.buyer): (r.seller, r.price) for r in sold.itertuples()}
    assert got[(0, "consumer_0")] == ("sybil_0", 45000.0)
    assert got[(1, "consumer_2")] == ("standard_0", 47000.0)
    assert got[(6, "consumer_1")] == ("sybil_2", 47000.0)
    assert len(sold) == 14
    listing = t["listings"].set_index(["step", "seller"])
    assert listing.loc[(0, "sybil_0"), "claimed_tier"] == "mint"  # a poor car at a mint price
    assert listing.loc[(1, "sybil_0"), "claimed_tier"] == "good"
    assert listing.loc[(5, "sybil_0"), "reputation"] == pytest.approx(0.3)
    bids = t["bids"].set_index(["step", "buyer"])
    # consumer_1 bid on sybil_0's listing at t1 and lost it to consumer_0: its logged answer names it
    assert bids.loc[
        (1, "consumer_1"), ["decision", "kind", "filled", "seller", "answered"]
    ].tolist() == ["bid", "sybil", False, "sybil_0", "bid"]
    assert bids.loc[(4, "consumer_2"), ["decision", "kind", "filled", "seller"]].tolist() == [
        "bid",
        "honest",
        False,
        "",
    ]  # lost, its listing not logged
    assert bids.loc[(0, "consumer_2"), ["decision", "answered"]].tolist() == ["pass", "pass"]
    views = t["views"]
    assert len(views) == 7 * 3 * 2
    logged = views[(views["step"] == 1) & (views["buyer"] == "consumer_1")]
    assert logged[["seller", "alias", "kind"]].values.tolist() == [
        ["standard_0", "seller_0_listing_0", "honest"],
        ["sybil_0", "seller_1_listing_1", "sybil"],
    ]


def test_reputation_retirement_and_reviews(imported):
    t = episode(imported, "buyer-1-k2-rep1-s8")
    rep = t["reputation"].set_index(["step", "seller"])
    assert rep.loc[(4, "sybil_0"), ["reputation", "upvotes", "active", "logged"]].tolist() == [
        pytest.approx(0.3),
        3,
        True,
        True,
    ]
    # the retirement step: their stub says 1.0; ours is the only value the window allows
    assert rep.loc[(5, "sybil_0"), ["reputation", "active", "logged", "sales"]].tolist() == [
        pytest.approx(0.2),
        False,
        False,
        6,
    ]
    assert (6, "sybil_0") not in rep.index  # later stubs dropped
    assert rep.loc[(5, "sybil_2"), "reputation"] == pytest.approx(0.8)
    events = t["events"][["step", "agent_id", "event"]].values.tolist()
    assert events == [
        [0, "sybil_0", "joined"],
        [0, "sybil_1", "joined"],
        [5, "sybil_0", "retired"],
        [5, "sybil_2", "joined"],
    ]
    reviews = t["reviews"].set_index(["step", "buyer"])
    assert reviews.loc[(1, "consumer_0"), ["seller", "vote", "source"]].tolist() == [
        "sybil_0",
        "down",
        "prompt log",
    ]
    assert reviews.loc[(2, "consumer_0"), ["vote", "source"]].tolist() == ["down", "counts"]
    assert reviews.loc[(2, "consumer_2"), ["vote", "source"]].tolist() == ["", ""]  # 8 stays 8


def test_the_prompt_log_as_messages_and_decisions(imported):
    t = episode(imported, "buyer-1-k2-rep1-s8")
    messages = t["llm_messages"]
    assert messages[["step", "round", "phase", "agent_id"]].values.tolist() == [
        [0, 0, "list", "standard_0"],
        [0, 0, "list", "sybil_principal"],
        [0, 1, "buy", "consumer_2"],
        [1, 1, "buy", "consumer_1"],
        [1, 2, "review", "consumer_0"],
    ]
    assert json.loads(messages.iloc[2]["messages"])[1]["content"].startswith("Historical data:")
    d = t["decisions"].set_index(["step", "phase", "agent_id"])
    invalid = d.loc[(0, "buy", "consumer_2")]
    assert not invalid["valid"] and "neither bid nor pass" in invalid["error"]
    assert invalid["failure"] == "format" and d.loc[(1, "buy", "consumer_1"), "failure"] == ""
    assert json.loads(invalid["action"]) == {"decision": "pass", "listing": None}
    assert d.loc[(1, "buy", "consumer_1"), "valid"]
    assert json.loads(d.loc[(1, "review", "consumer_0"), "action"]) == {"vote": "down"}
    calls = t["llm_calls"]
    assert len(calls) == 3 and calls["valid"].tolist() == [False, True, True]
    assert (calls["model"] == "acme/buyer-1").all()


def test_source_errors_survive_the_worker_processes():
    e = pickle.loads(pickle.dumps(SourceError("/x/state_t3.json", "bad", 2)))
    assert str(e) == "/x/state_t3.json:2: bad" and e.what == "bad"


# ------------------------------------------------------------------ their rules, our pairing
@pytest.mark.parametrize(
    "answer, expected",
    [
        (
            '{"decision": "bid", "listing_id": "seller_0_listing_0"}',
            ("bid", "seller_0_listing_0", True),
        ),
        (
            'Thinking... ```json\n{"thought": "x {y}", "decision": "BID", "listing_id": '
            '"seller_0_listing_0",}\n```',
            ("bid", "seller_0_listing_0", True),
        ),
        ("{'decision': \"pass\", 'listing_id': null}", ("pass", None, True)),  # keys relaxed
        ("{'decision': 'pass'}", ("pass", None, False)),  # a quoted value is not: their re-ask
        ('{"final": {"decision": "pass"}}', ("pass", None, True)),
        (
            '{"bid_decision": "bid", "my_listing_id": "seller_0_listing_0"}',
            ("bid", "seller_0_listing_0", True),
        ),
        (
            '{"decision": "buy", "listing_id": "seller_0_listing_0"}',
            ("pass", "seller_0_listing_0", False),
        ),
        ('{"decision": "bid", "listing_id": "null"}', ("pass", None, False)),
        (
            '{"decision": "bid", "listing_id": "seller_9_listing_9"}',
            ("pass", "seller_9_listing_9", False),
        ),
        ("I pass.", ("pass", None, False)),
        (None, ("pass", None, False)),
        # JSON without a decision (a small model echoing its observation): their pass, invalid
        ('{"timestep": 1, "listings_visible": []}', ("pass", None, False)),
    ],
)
def test_a_bid_answer_parses_with_their_rules(answer, expected):
    p = authors_answers.parse_bid(answer, {"seller_0_listing_0", "seller_1_listing_1"})
    assert (p.decision, p.listing, p.valid) == expected
    assert p.valid == (p.error == "")
    # only a well-formed bid on a listing not shown broke a rule; the rest did not parse
    rule = p.listing == "seller_9_listing_9"
    assert p.failure == ("" if p.valid else "rule" if rule else "format")


def test_a_vote_parses_with_their_rules():
    assert authors_answers.parse_vote('{"vote": "Upvote "}') == ("up", True, "")
    assert authors_answers.parse_vote('{"thought": "bad", "vote": "downvote"}')[:2] == (
        "down",
        True,
    )
    assert authors_answers.parse_vote('{"vote": "meh"}')[:2] == ("abstain", False)
    assert authors_answers.parse_vote("no json")[:2] == ("abstain", False)


def test_buyers_are_paired_with_their_cars():
    # two listings at one price: the Sybil one goes to the buyer who bid on a Sybil listing
    price = np.array([30000.0, 30000.0, 5000.0])
    implied = np.array([5000.0, -25000.0, 0.0])
    sybil = np.array([False, True, False])
    got = run_steps.match_purchases(
        price,
        implied,
        sybil,
        np.array([30000.0, 30000.0, 7000.0]),
        np.array([-25000.0, 5000.0, 0.0]),
        np.array([1, 0, 0]),
    )
    assert got.tolist() == [1, 0, -1]  # the third paid a price no sold listing has
    # two alike: the logged answer decides
    alike = run_steps.match_purchases(
        np.array([44000.0, 44000.0]),
        np.array([-39000.0, -39000.0]),
        np.array([True, True]),
        np.array([44000.0, 44000.0]),
        np.array([-39000.0, -39000.0]),
        np.array([1, 1]),
        np.array([1, -1]),
    )
    assert alike.tolist() == [1, 0]


# ------------------------------------------------------------------ the replay
def test_the_vote_window_by_hand():
    u = reputation.UNKNOWN
    # a sale a step, up-votes 7, 6, 5, 4, 3, then under 0.3: every vote pinned down
    bad, pinned = reputation.window_replay(
        np.ones((1, 6), bool),
        np.full((1, 6), u),
        np.array([[7, 6, 5, 4, 3, 0]]),
        np.array([[7, 6, 5, 4, 3, 2]]),
        np.array([0]),
        10,
        8,
    )
    assert not bad.any() and (pinned == reputation.DOWN).all()
    # the count moves without a sale: unreachable; a count kept after a sale: not pinned
    bad, pinned = reputation.window_replay(
        np.array([[True, False, True]]),
        np.full((1, 3), u),
        np.array([[7, 6, 6]]),
        np.array([[7, 6, 6]]),
        np.array([0]),
        10,
        8,
    )
    assert bad.tolist() == [[False, True, False]] and pinned[0, 2] == u
    # a logged up-vote cannot lower the count
    bad, _ = reputation.window_replay(
        np.array([[True]]),
        np.array([[reputation.UP]]),
        np.array([[7]]),
        np.array([[7]]),
        np.array([0]),
        10,
        8,
    )
    assert bad.tolist() == [[True]]


def _pipeline_project(tmp_path: Path, logs: Path) -> tuple:
    from marketarena.pipeline import Paths

    root = tmp_path / "project"
    root.mkdir()
    (root / "params.yaml").write_text(
        yaml.safe_dump({"markets": {INSTANCE: fx.params_block(logs)}})
    )
    return load_params(root / "params.yaml"), Paths(root)


def _replayed(tmp_path: Path, logs: Path) -> dict[str, pd.DataFrame]:
    from marketarena.pipeline import run_metrics, run_reference, run_simulate

    params, paths = _pipeline_project(tmp_path, logs)
    run_reference(INSTANCE, params, paths)
    run_simulate(INSTANCE, params, paths, progress=False)
    return run_metrics(INSTANCE, params, paths)


def test_the_replay_agrees_step_by_step_on_the_fixture(tmp_path):
    frames = _replayed(tmp_path, fx.write_logs(tmp_path))
    steps = frames["replay_steps"]
    assert len(steps) == 16 and steps["agree"].all(), steps[~steps["agree"]]
    sellers = frames["replay_sellers"].set_index(["episode_id", "seller"])
    assert sellers["reproduced"].all()
    s0 = sellers.loc[("buyer-1-k2-rep1-s8", "sybil_0")]
    assert (s0["sales"], s0["votes_logged"], s0["votes_pinned"]) == (6, 1, 5)
    runs = frames["replay_runs"].set_index("episode_id")
    assert runs["steps_agree"].eq(1.0).all() and runs.loc["buyer-1-k2-rep1-s8", "steps"] == 7
    rules = frames["replay_rules"].set_index("rule")
    assert rules.loc["listings a buyer sees", ["explains", "of"]].tolist() == [48, 48]
    assert rules.loc["who wins a listing two buyers bid on", "explains"] == 5
    assert rules.loc["an answer that breaks a rule", ["explains", "of"]].tolist() == [1, 2]
    assert rules.loc["a retiring identity's last sale", "explains"] == 1


def _break_step_2(logs: Path) -> None:
    """consumer_1 bids on an honest listing at t2 and gets nothing, while both honest listings
    of t2 stay unsold: under our rule its bid fills."""
    run = logs / fx.MODEL / K2
    for t in range(2, 7):
        path = run / f"state_t{t}.json"
        state = json.loads(path.read_text())
        c1 = state["consumers"][1]
        c1["honest_passed_total"] -= 1  # one honest listing seen and not passed: a bid
        if t == 2:
            state["lemon_market_bids_count"] += 1
            state["lemon_market_passes_count"] -= 1
        path.write_text(json.dumps(state))


def _overpay_step_3(logs: Path) -> None:
    """consumer_1 pays 45,000 at t3 for detailed_1's car listed at 44,000."""
    run = logs / fx.MODEL / K2
    for t in range(3, 7):
        path = run / f"state_t{t}.json"
        state = json.loads(path.read_text())
        state["consumers"][1]["cash"] -= 1000
        if t == 3:
            state["consumers"][1]["consumer_surplus"] -= 1000
        path.write_text(json.dumps(state))


@pytest.mark.parametrize(
    "breaks, step, why",
    [
        (_break_step_2, 2, "unfilled_bid_listing_left 1"),
        (_overpay_step_3, 3, "sale_without_buyer 1, purchase_without_listing 1"),
    ],
)
def test_a_logged_sale_that_breaks_our_rule_is_a_disagreement(tmp_path, breaks, step, why):
    logs = fx.write_logs(tmp_path)
    breaks(logs)
    steps = _replayed(tmp_path, logs)["replay_steps"]
    bad = steps[~steps["agree"]]
    assert bad[["episode_id", "step"]].values.tolist() == [["buyer-1-k2-rep1-s8", step]]
    assert not bad.iloc[0]["sales"] and bad.iloc[0]["why"].startswith(why)


def test_their_score_as_their_script_computes_it(tmp_path):
    frames = _replayed(tmp_path, fx.write_logs(tmp_path))
    # their grid is K 0, 3, 6, 9: of the fixture's runs their script reads the K 0 one only
    assert frames["their_score_runs"]["episode_id"].tolist() == ["buyer-1-k0-rep1-s8"]
    reader = EpisodeReader(tmp_path / "project" / "data" / "episodes" / INSTANCE)
    runs = authors.their_runs(
        reader.table("setting"), reader.table("market_steps"), ks=(0, 2)
    ).set_index("episode_id")
    # on a grid with K 2: the seed 16 run and the K 0 run (seed 8) match, _base does not; W, I,
    # V from the logged state values; V0 = the K 0 rep 1 run's V = 2 + 3 + 1
    assert sorted(runs.index) == ["buyer-1-k0-rep1-s8", "buyer-1-k2-rep1-s16", "buyer-1-k2-rep1-s8"]
    k0, s8 = runs.loc["buyer-1-k0-rep1-s8"], runs.loc["buyer-1-k2-rep1-s8"]
    assert (k0["V"], k0["V0"], s8["V"]) == (6.0, 6.0, 16.0)
    assert s8["I"] == pytest.approx(
        np.mean(
            [0.6, 36000 / 83000, 1.0, 30000 / 74000, 29000 / 57000, 27500 / 33500, 47000 / 76000]
        )
    )
    ratio = runs["V"] / 6.0
    r_hat = (ratio - ratio.min()) / (ratio.max() - ratio.min())
    w_hat = (runs["W"] - runs["W"].min()) / (runs["W"].max() - runs["W"].min())
    assert runs["eas"].to_numpy() == pytest.approx(((w_hat + 1 - runs["I"] + r_hat) / 3).to_numpy())
    model = authors.their_models(runs.reset_index()).iloc[0]
    assert model["their_eas"] == pytest.approx(runs["eas"].mean()) and model["their_runs"] == 3
    assert model["their_se"] == pytest.approx(runs["eas"].std(ddof=1) / np.sqrt(3))
    ref = frames["reference_volume"].set_index(["buyer_group", "reputation_visible"])
    assert ref.loc[("buyer-1", True), "volume_k0"] == pytest.approx(2.0)
    assert ref.loc[("buyer-1+base", True), "source"] == "its model's K = 0 runs"
    board_input = frames["agents"].query("role == 'buyer'").set_index(["episode_id", "agent_id"])
    assert board_input.loc[("buyer-1-k2-rep1-s8", "consumer_2"), "answers_invalid"] == 1
    assert np.isnan(board_input.loc[("buyer-1-k0-rep1-s8", "consumer_2"), "answers"])
    table, rho = authors.comparison(
        frames["their_score"],
        pd.DataFrame(
            {
                "role": ["buyer"],
                "name": ["buyer-1"],
                "eas_mean": [0.5],
                "eas_lo": [0.4],
                "eas_hi": [0.6],
            }
        ),
    )
    assert table["our_eas"].tolist()[0] == 0.5 and np.isnan(rho["rho"])  # one model: no ordering
    # the _base runs are not in their grid: a row without their EAS, saying so, ranked by neither
    base = table.set_index("model").loc["buyer-1+base"]
    assert (base["their_runs"], base["their_note"]) == (0, authors.NOT_IN_GRID)
    assert np.isnan(base["their_eas"]) and np.isnan(base["our_rank"])


# ------------------------------------------------------------------ hostile input
def _state(t: int, change):
    def make(logs: Path) -> Path:
        path = logs / fx.MODEL / K2 / f"state_t{t}.json"
        change(path)
        return path

    return make


def _edit(fn):
    def change(path: Path) -> None:
        state = json.loads(path.read_text())
        fn(state)
        path.write_text(json.dumps(state, allow_nan=True))

    return change


def _duplicate(logs: Path) -> Path:
    copy = logs / "exp2_acme_buyer-1-again" / K2
    shutil.copytree(logs / fx.MODEL / K2, copy)
    return copy


HOSTILE = {
    "truncated": (_state(3, lambda p: p.write_bytes(p.read_bytes()[:500])), "not valid JSON"),
    "missing_field": (
        _state(2, _edit(lambda s: s.pop("lemon_market_new_listings"))),
        "lemon_market_new_listings: Field required",
    ),
    "nan": (
        _state(1, _edit(lambda s: s["consumers"][0].update(consumer_surplus=float("nan")))),
        "consumers.0.consumer_surplus",
    ),
    "infinity": (
        _state(4, _edit(lambda s: s["lemon_market_new_listings"][0].update(price=float("inf")))),
        "lemon_market_new_listings.0.price",
    ),
    "duplicate_run": (_duplicate, "holds run 'buyer-1-k2-rep1-s8', which"),
    "counter_falls": (
        _state(5, _edit(lambda s: s["consumers"][2].update(sybil_seen_total=0))),
        "consumers.2 (consumer_2): a cumulative counter fell",
    ),
    "pathlike_seller": (
        _state(1, _edit(lambda s: s["firms"][0].update(name="../../x"))),
        "is not a plain name",
    ),
}


@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    """A good import of the fixture through the simulate stage, and its every file's hash."""
    root = tmp_path_factory.mktemp("earlier")
    logs = fx.write_logs(root)
    params, paths = _pipeline_project(root, logs)
    res = _stage(root / "project")
    assert res.exit_code == 0, res.output
    return root, logs, paths.episodes(INSTANCE), tree_digest(paths.episodes(INSTANCE))


def _stage(project: Path):
    from stages.simulate import app

    return CliRunner().invoke(app, [INSTANCE, "--params", str(project / "params.yaml")])


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_bad_input_is_one_error_line_naming_the_file_and_the_import_is_kept(case, earlier):
    root, logs, out, digest = earlier
    saved = root / "saved"
    shutil.copytree(logs, saved)
    try:
        broken = HOSTILE[case][0](logs)
        res = _stage(root / "project")
        lines = [line for line in res.output.splitlines() if line.startswith("error:")]
        assert res.exit_code == 2, res.output  # besides it, the one progress line of the stage
        assert len(lines) == 1 and lines[0].startswith(f"error: {INSTANCE}: {broken}"), res.output
        assert HOSTILE[case][1] in lines[0] and "Traceback" not in res.output
        assert tree_digest(out) == digest  # the earlier import, byte for byte
        assert not list(out.parent.glob(f".{INSTANCE}.*.tmp"))  # no half-written import
    finally:
        shutil.rmtree(logs)
        shutil.copytree(saved, logs)
        shutil.rmtree(saved)


# ------------------------------------------------------------------ the whole pipeline
def test_an_imported_lemon_instance_runs_through_the_pipeline(tmp_path):
    from marketarena.pipeline import (
        run_figures,
        run_metrics,
        run_ratings,
        run_reference,
        run_report,
        run_simulate,
        run_stats,
    )
    from marketarena.simulate.importing import REPORT

    params, paths = _pipeline_project(tmp_path, fx.write_logs(tmp_path))
    summary = run_reference(INSTANCE, params, paths)
    assert summary["sweep_episodes"] == 8  # our scripted sweep: 2 K x 2 reputation x 2 groups
    assert run_simulate(INSTANCE, params, paths, progress=False)["imported"] == 4
    record = json.loads((paths.episodes(INSTANCE) / REPORT).read_text())
    assert record["source"]["format"] == "agent_bazaar" and record["report"]["runs_imported"] == 4
    again = run_simulate(INSTANCE, params, paths, progress=False)
    assert again["imported"] == 0 and again["skipped"] == 4
    frames = run_metrics(INSTANCE, params, paths)
    market = frames["market"].set_index("episode_id")
    assert market.loc["buyer-1-k0-rep1-s8", "volume_ratio"] == pytest.approx(1.0)
    assert market.loc["buyer-1-k2-rep1-s8", "volume"] == pytest.approx(16 / 7)
    assert set(frames["fig4_ours"]["buyer_group"]) == {"guardian", "naive"}
    assert len(frames["fig4_authors"]) == 16
    run_stats(INSTANCE, params, paths)
    board = run_ratings(INSTANCE, params, paths).set_index("name")
    assert board.loc["buyer-1", "invalid_answer_rate"] == pytest.approx(0.5)  # 1 of 2 answers
    assert np.isnan(board.loc["buyer-1+base", "invalid_answer_rate"])
    assert board.loc["buyer-1", "eas_lo"] <= board.loc["buyer-1", "eas_mean"]
    outputs = {p.name for p in run_figures(INSTANCE, params, paths)}
    assert {
        "fig4_authors.png",
        "their_score.png",
        f"{INSTANCE}_their_score.md",
        f"{INSTANCE}_replay.md",
        f"{INSTANCE}_replay_rules.md",
        f"{INSTANCE}_models.md",
        f"{INSTANCE}_model_cells.md",
        f"{INSTANCE}_reference_volume.md",
    } <= outputs
    run_report(params, paths)
    page = (paths.reports / "site" / f"{INSTANCE}.html").read_text()
    assert "pre-release runs" in page and "Their lemon EAS beside ours" in page
    assert "has no caption" not in page


def test_an_instance_that_names_only_its_source_gets_their_market():
    """lemon's ``SOURCE_DEFAULTS`` are the defaults of an agent_bazaar instance: their grid and
    our scripted sweep's groups, unless the instance writes a key itself."""
    from marketarena.config import parse_params

    block = {"market": "lemon", "source": {"format": "agent_bazaar", "path": "/nowhere"}}
    mp = parse_params({"markets": {"la": block}}).markets["la"]
    assert (mp.sellers, mp.buyers, mp.steps, list(mp.sybil)) == (12, 12, 50, [0, 3, 6, 9])
    assert mp.buyer_groups == [["guardian"], ["naive"]]
    mine = parse_params({"markets": {"la": {**block, "buyer_groups": [["naive"]]}}}).markets["la"]
    assert mine.buyer_groups == [["naive"]] and mine.steps == 50


def test_an_observation_with_a_price_too_large_for_a_float_is_read_as_none():
    from marketarena.markets.lemon.sources.prompt_log import OBSERVATION, observation_of

    listing = '{"listings_visible": [{"listing_id": "L1", "listed_price": %s}]}'
    assert observation_of(OBSERVATION + listing % "9000") == [("L1", 9000.0, "")]
    assert observation_of(OBSERVATION + listing % ("9" * 400)) == []
