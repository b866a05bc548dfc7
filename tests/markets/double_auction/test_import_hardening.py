"""``marketarena import-bazaar`` on what the file system can hold besides files (the reliability
audit's D2, ``shared/audits/reliability_3.md``: a FIFO, a link to a device, a link out of the logs
folder), and the seed's table compared only with BAZAAR's own games.

The malformed contents (the audit's 36 hostile files) are in ``test_bazaar_import.py``; here each
case is a copy of the fixture games with one ``*.jsonl`` entry replaced, imported by the command
(in process, in a forked child with a time limit and a memory cap: ``tests/core/hardening.py``)
over an earlier import, which must be left byte for byte. The command writes the pipeline's
layout (``pipeline.import_folder``): the board is ``<out>/reports/leaderboards/double_auction.csv``
and what the summary says (``sources/analysis.import_summary``) is read from what it wrote.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from marketarena.markets.double_auction.sources.analysis import import_summary
from tests.core.hardening import alter, assert_refused, run_cli, shown, tree_digest

GAMES = Path(__file__).parent / "fixtures" / "bazaar"
TARGET = "auction_fixture_1.jsonl"


def _import(logs: Path, out: Path) -> tuple[int, str]:
    """Every game here logged every seat's CSα: our reference only stands beside it (small)."""
    return run_cli(
        "marketarena.cli:app",
        ["import-bazaar", str(logs), "--out", str(out), "--passes", "3", "--reference-games", "10"],
    )


#: the files of an import that record where its games came from (the source folder's path, and
#: fingerprints over it): the same games imported from another folder differ there only
WHERE_FROM = (
    "data/episodes/double_auction/import.json",
    "data/references/double_auction/summary.json",
)


def games_digest(digest: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in digest.items() if k not in WHERE_FROM}


def _moved_inside(logs: Path, outside: Path) -> Path:
    """The game moved to a sub-folder under another name (not ``*.jsonl``: not read twice), a
    link to it in its place: a link that stays in the folder is followed."""
    (logs / "store").mkdir()
    shutil.move(logs / TARGET, logs / "store" / "game.json")
    return alter(logs / TARGET, "link", str(logs / "store" / "game.json"))


def _non_utf8_name(logs: Path, outside: Path) -> Path:
    target = os.fsencode(logs) + b"/auction_\xff.jsonl"
    os.rename(os.fsencode(logs / TARGET), target)
    return Path(os.fsdecode(target))


#: case -> (the alteration, returning the file the error must name; what it says, or None)
CASES = {
    "fifo": (lambda logs, outside: alter(logs / TARGET, "fifo"), "is not a regular file (a FIFO)"),
    "link_dev_zero": (
        lambda logs, outside: alter(logs / TARGET, "link", "/dev/zero"),
        "is not a regular file (a link to /dev/zero, a character device)",
    ),
    "link_dev_urandom": (
        lambda logs, outside: alter(logs / TARGET, "link", "/dev/urandom"),
        "is not a regular file (a link to /dev/urandom",
    ),
    # a good game, but outside the folder: a link may not lead there
    "link_outside": (
        lambda logs, outside: alter(logs / TARGET, "link", str(outside / "game.jsonl")),
        "outside the source folder",
    ),
    "link_etc_passwd": (
        lambda logs, outside: alter(logs / TARGET, "link", "/etc/passwd"),
        "outside the source folder",
    ),
    "broken_link": (
        lambda logs, outside: alter(logs / TARGET, "link", str(logs / "gone")),
        "which does not exist",
    ),
    "folder_of_logs_linked_outside": (
        lambda logs, outside: alter(logs / "more", "link", str(outside)),
        None,
    ),  # not entered
    "name_not_utf8": (_non_utf8_name, "its name is not UTF-8 text"),
    "link_inside": (_moved_inside, None),
}


@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    root = tmp_path_factory.mktemp("good")
    code, output = _import(GAMES, root / "bz")
    assert code == 0, output
    return root / "bz", tree_digest(root / "bz")


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_is_not_a_regular_file_in_the_folder_is_refused_in_one_line(case, earlier, tmp_path):
    good, digest = earlier
    out, logs, outside = tmp_path / "bz", tmp_path / "logs", tmp_path / "outside"
    shutil.copytree(good, out)
    shutil.copytree(GAMES, logs)
    outside.mkdir()
    shutil.copy(GAMES / TARGET, outside / "game.jsonl")
    make, what = CASES[case]
    named = make(logs, outside)
    code, output = _import(logs, out)
    if what is None:  # the same two games: the same import (but where it says they came from)
        assert code == 0, output
        assert games_digest(tree_digest(out)) == games_digest(digest)
    else:
        assert_refused(code, output, shown(named), what)
        assert tree_digest(out) == digest  # the earlier import, byte for byte
    assert not list(out.parent.glob(".bz.*"))  # nothing left beside it


# ------------------------------------------------------------------ the seed's table
def _game(folder: Path, k: int, rounds: int, models: list[str], llm: int) -> None:
    """A game of ``len(models) // 2`` buyers and sellers (``models`` in seat order: buyers B1..,
    sellers S1..), its first ``llm`` seats LLMs, no quote, every seat's CSα logged (the seat's
    index rotated by ``k``, so the games rank the players differently)."""
    n = len(models) // 2
    seats = [f"B{i + 1}" for i in range(n)] + [f"S{i + 1}" for i in range(n)]
    agents = {
        s: {
            "role": "buyer" if s[0] == "B" else "seller",
            "model_name": m,
            "is_llm": i < llm,
            "valuation": 90 - 10 * i if s[0] == "B" else None,
            "cost": 10 + 10 * (i - n) if s[0] == "S" else None,
        }
        for i, (s, m) in enumerate(zip(seats, models))
    }
    records = [
        {
            "type": "init",
            "game_id": f"g_{k}",
            "data": {
                "distribution": "uniform",
                "num_rounds": rounds,
                "num_buyers": n,
                "num_sellers": n,
                "agents": agents,
            },
        },
        {
            "type": "final",
            "data": {
                "market_efficiency": 0.0,
                "seat_surplus_share_map": dict.fromkeys(seats, 0.0),
                "final_payoff_map": dict.fromkeys(seats, 0.0),
                "seat_csa_map": {s: ((i + k) % len(seats)) / 10 for i, s in enumerate(seats)},
            },
        },
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"auction_{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


SEEDS_LLMS = ["o3", "gemini-2.5-pro", "grok-4-0709", "kimi-k2"]  # all in the seed's LLM table
BASELINES = ["truthful", "zic_plus", "gd", "random"]


def _summary(out: Path) -> dict:
    return import_summary(out)


def test_bazaars_own_games_are_compared_with_the_seeds_table(tmp_path):
    for k in range(4):  # the tournament's setting, its LLMs
        _game(tmp_path / "logs", k, 30, SEEDS_LLMS[k:] + SEEDS_LLMS[:k] + BASELINES, llm=4)
    code, output = _import(tmp_path / "logs", tmp_path / "bz")
    assert code == 0, output
    assert "Spearman of the LLMs' μ with the seed's table" in output and "over 4" in output
    summary = _summary(tmp_path / "bz")
    assert summary["seed_comparison"] == {"applies": True, "why": "BAZAAR's own games"}
    assert summary["spearman_llm"]["n"] == 4 and summary["spearman_baselines"]["n"] == 4


@pytest.mark.parametrize(
    "study, rounds, models, why",
    [
        # PACT: one buyer, one seller, 20 rounds; its models' names the seed table's, yet another study
        (
            "pact",
            20,
            ["o3", "gemini-2.5-pro"],
            "has 20 rounds and 1x1 seats, not BAZAAR's tournament",
        ),
        # the tournament's setting, but not its LLMs
        (
            "others",
            30,
            ["model-a", "model-b", "model-c", "o3"] + BASELINES,
            "1 of the games' 4 LLMs are in the seed's table",
        ),
    ],
)
def test_other_studies_are_not_compared_with_the_seeds_table(tmp_path, study, rounds, models, why):
    for k in range(4):
        _game(tmp_path / "logs", k, rounds, models, llm=len(models) if study == "pact" else 4)
    code, output = _import(tmp_path / "logs", tmp_path / "bz")
    assert code == 0, output
    assert "Spearman" not in output
    board = tmp_path / "bz" / "reports" / "leaderboards" / "double_auction.csv"
    assert f"board: {board} (not compared with the seed's table: " in output
    assert why in output
    summary = _summary(tmp_path / "bz")
    assert not summary["seed_comparison"]["applies"] and why in summary["seed_comparison"]["why"]
    assert not {"spearman_llm", "spearman_baselines", "llm_mu_range"} & set(summary)
