"""The results site's parts that need no pipeline run: boards with their intervals folded in,
numbers as printed, the captions files (every market has one; errors name the file and key), and
the ``report`` stage on a full disk (the earlier site left as it was, the error naming the file of
the site it could not write)."""

from __future__ import annotations

import builtins
import errno
import io
import math
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from marketarena.core.registry import market_names
from marketarena.report import captions
from marketarena.report.board import Board, number


def test_board_folds_intervals_beside_their_values():
    board = Board.of(
        pd.DataFrame(
            {
                "name": ["a", "b"],
                "mu": [27.5, 22.25],
                "sigma": [1.0, 1.5],
                "mu_lo": [25.0, 20.125],
                "mu_hi": [30.0, 24.5],
                "games": [10, 10],
                "rank_lo": [1.0, 1.0],
                "rank_hi": [1.0, 2.0],
                "csa_mean": [0.5, -0.25],
                "csa_lo": [0.1, -0.5],
                "csa_hi": [0.9, 0.0],
            }
        )
    )
    assert board.columns == [
        "name",
        "mu (95% interval)",
        "sigma",
        "games",
        "rank (95% interval)",
        "csa_mean (95% interval)",
    ]
    assert board.rows == [
        ["a", "27.50 [25, 30]", "1", "10", "[1, 1]", "0.500 [0.100, 0.900]"],
        ["b", "22.25 [20.12, 24.50]", "1.500", "10", "[1, 2]", "-0.250 [-0.500, 0]"],
    ]
    html = Board.of(pd.DataFrame({"name": ["<b>x</b>"]})).html()
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>" not in html  # names are text


@pytest.mark.parametrize(
    "value, shown",
    [
        (3, "3"),
        (12345.0, "12,345"),
        (0.12345, "0.123"),
        (12.345, "12.35"),
        (123.45, "123.5"),
        (-1234.5, "-1,234"),
        (-0.0001, "0.000"),
        (math.nan, "–"),
        (None, "–"),
        (math.inf, "∞"),
        (True, "True"),
        ("text", "text"),
    ],
)
def test_numbers_as_printed(value, shown):
    assert number(value) == shown


def test_every_market_has_its_captions_file():
    for kind in market_names():
        c = captions.load(kind)
        assert c.market.title and c.market.seed and c.figures, kind


def test_captions_errors_name_the_file_and_the_key(tmp_path, monkeypatch):
    bad = tmp_path / "figures.yaml"
    bad.write_text(
        "market: {title: x, source: y, seed: '1', about: z}\nfigures:\n  fig1: {title: t}\n"
    )
    monkeypatch.setattr(captions, "path_of", lambda kind: bad)
    captions.load.cache_clear()
    try:
        with pytest.raises(
            ValueError, match=r"figures\.yaml: figures\.fig1\.caption: Field required"
        ):
            captions.load("anything")
    finally:
        captions.load.cache_clear()


def test_missing_says_which_stem_and_where_to_add_it():
    kind = "cournot"
    lines = captions.missing(
        kind,
        "cournot_b",
        ["fig2_quantities", "fig9_new"],
        ["cournot_b_specialisation", "cournot_b_extra"],
    )
    path = str(captions.path_of(kind))
    assert lines == [
        f"figure 'fig9_new' (reports/figures/cournot_b/fig9_new.png) has no caption: add it to "
        f"{path} under `figures:` as `fig9_new: {{title: ..., caption: ...}}`",
        f"table 'cournot_b_extra' (reports/tables/cournot_b/cournot_b_extra.md) has no caption: "
        f"add it to {path} under `tables:` as `extra: {{title: ..., caption: ...}}`",
    ]


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_full_disk_leaves_the_earlier_site_as_it_was_and_names_the_file(tmp_path, monkeypatch):
    from stages.report import app

    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump(
            {
                "markets": {
                    "crash": {
                        "runs": 1,
                        "days": 5,
                        "firms": 2,
                        "roster": [
                            {"name": "undercut", "kind": "baseline", "strategy": "undercut"},
                            {"name": "myopic", "kind": "baseline", "strategy": "myopic"},
                        ],
                    }
                }
            }
        )
    )
    figures = tmp_path / "reports" / "figures" / "crash"
    figures.mkdir(parents=True)
    for name in ("fig3_bankruptcy_grid", "fig_spillover"):
        (figures / f"{name}.png").write_bytes(b"\x89PNG first " + name.encode())
    runner = CliRunner()
    res = runner.invoke(app, ["--params", str(params)])
    assert res.exit_code == 0, res.output
    site = tmp_path / "reports" / "site"
    before = _files(site)
    assert "index.html" in before and "crash/figures/fig_spillover.png" in before

    for png in figures.iterdir():  # new figures: a site rewritten in part would differ
        png.write_bytes(b"\x89PNG second")
    real_open = io.open

    def full_disk(file, mode="r", *args, **kwargs):  # the second figure: the first one is written
        if (
            "w" in mode
            and isinstance(file, (str, os.PathLike))
            and Path(file).name == "fig_spillover.png"
        ):
            raise OSError(errno.ENOSPC, "No space left on device")  # as a write: no file named
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", full_disk)  # pathlib's writes
    monkeypatch.setattr(builtins, "open", full_disk)  # shutil's copies
    res = runner.invoke(app, ["--params", str(params)])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 1 and len(lines) == 1, res.output
    assert lines[0] == (
        f"error: no space left on the device ({site}/crash/figures/fig_spillover.png); "
        "the earlier reports/site is left as it was; free some space and run again"
    )
    assert _files(site) == before
    assert sorted(p.name for p in site.parent.iterdir()) == ["figures", "site"]  # no temporary left


def test_a_board_shows_its_main_columns_and_links_each_player_to_the_viewer():
    from marketarena.report.board import viewer_url

    frame = pd.DataFrame(
        {
            "rank": [1, 2],
            "name": ["a b", "<i>x</i>"],
            "mu": [6.5, 5.25],
            "mu_lo": [6.0, 4.0],
            "mu_hi": [7.0, 6.0],
            "rank_lo": [1, 1],
            "rank_hi": [1, 2],
            "games": [10, 12],
            "csa_mean": [0.5, 0.25],
            "csa_lo": [0.1, 0.0],
            "csa_hi": [0.9, 0.5],
            "valid_first": [0.9, 1.0],
            "something_new": [3, 4],
        }
    )
    board = Board.of(
        frame,
        main={"rank", "name", "mu", "games", "valid_first"},
        link=lambda n: viewer_url("da", "p", n),
    )
    shown = [c for c, m in zip(board.columns, board.main) if m]
    assert shown == ["rank (95% interval)", "name", "mu (95% interval)", "games", "valid_first"]
    assert board.hidden == 2  # csa and the unknown column: behind the switch
    html = board.html("board")
    assert (
        '<a class="player" href="http://127.0.0.1:8765/i/da/p/%3Ci%3Ex%3C%2Fi%3E">&lt;i&gt;x'
        in html
    )
    assert '<tr data-player="a b">' in html and "<i>" not in html
    assert '<th class="more">csa_mean (95% interval)</th>' in html
    assert '<td data-sort="5.25">5.250 [4, 6]</td>' in html  # sorts by the value, not the text


def test_a_flagged_player_is_marked_and_the_failure_kinds_shown_by_default(tmp_path):
    """The board as the ratings stage writes it (``metrics.validity.with_validity``), read back
    from its CSV as the site reads it: the flag a mark, the kinds among the main columns."""
    from marketarena.metrics.validity import with_validity
    from marketarena.report.board import MAIN_COLUMNS

    counts = pd.DataFrame(
        {
            "episode_id": "e",
            "name": ["often", "rarely"],
            "decisions": [10, 10],
            "valid_first": [5, 9],
            "valid_reasked": [0, 0],
            "fallback": [5, 1],
            "format_failures": [4.0, 0.0],
            "rule_failures": [1.0, 1.0],
        }
    )
    board = pd.DataFrame({"rank": [1, 2, 3], "name": ["often", "rarely", "published"]})
    with_validity(board, counts, 0.3).to_csv(tmp_path / "board.csv", index=False)
    shown = Board.of(pd.read_csv(tmp_path / "board.csv"), main={"rank", "name", *MAIN_COLUMNS})
    assert all(shown.main)  # every validity column is shown by default
    cells = {row[1]: dict(zip(shown.columns, row)) for row in shown.rows}
    assert [cells[n]["flagged"] for n in ("often", "rarely", "published")] == ["⚑", "", "–"]
    assert (
        cells["often"]["format_failures"] == "0.400" and cells["often"]["rule_failures"] == "0.100"
    )
    assert cells["published"]["format_failures"] == "–"


def test_the_page_states_its_result_in_a_sentence():
    from marketarena.report.board import summary
    from marketarena.report.captions import Headline

    headline = Headline(column="mu", label="TrueSkill μ")
    frame = pd.DataFrame(
        {
            "name": ["<b>top</b>", "two", "llm"],
            "kind": ["baseline", "baseline", "llm"],
            "mu": [7.0, 6.0, 5.0],
            "mu_lo": [6.5, 5.0, 4.0],
            "mu_hi": [7.5, 7.0, 6.0],
            "rank_lo": [1, 1, 2],
            "rank_hi": [2, 3, 3],
            "games": [9, 9, 4],
        }
    )
    text = str(summary(frame, headline))
    assert text == (
        "<strong>&lt;b&gt;top&lt;/b&gt;</strong> leads 3 players on TrueSkill μ: 7 [6.500, "
        "7.500] over 9 games; next is <strong>two</strong> (6). Its 95% rank interval is "
        "[1, 2]: first place is not settled. LLM players: <strong>llm</strong> ranks 3 of "
        "3 (5 [4, 6])."
    )
    two = frame.assign(role=["buyer", "buyer", "seller"], rank_hi=[1, 2, 1])
    text = str(summary(two, headline))
    assert (
        text.startswith("Among buyers, <strong>&lt;b&gt;top")
        and "Among sellers, <strong>llm" in text
    )
    assert "first place is clear" in text
    assert str(summary(frame.drop(columns="mu"), headline)) == ""  # no headline column: no sentence


def test_every_table_has_its_csv():
    from marketarena.report.items import markdown_csv
    from marketarena.report.site import _markdown

    text = "Caption line.\n\n| name | mu | note |\n| --- | ---: | --- |\n| **a** | _1.5_ | x, y |\n| b | 2 | `z` |\n"
    assert markdown_csv(_markdown(), text) == 'name,mu,note\na,1.5,"x, y"\nb,2,z\n'


def test_head_to_head_counts_the_games_met_and_who_scored_above():
    from marketarena.report.headtohead import game_scores, head_to_head

    agents = pd.DataFrame(
        {
            "episode_id": ["e1"] * 3 + ["e2"] * 3 + ["e3"] * 2,
            "name": ["a", "b", "c", "a", "b", "b", "a", "c"],
            "csa": [3.0, 1.0, 2.0, 0.0, 1.0, 1.0, 1.0, 1.0],
        }
    )
    scores = game_scores(agents, "csa")  # b holds two seats in e2: their sum, 2.0
    assert scores.loc["e2", "b"] == 2.0
    pairs = head_to_head(scores, ["a", "b", "c", "nobody"]).set_index(["player", "opponent"])
    assert pairs.loc[("a", "b")].tolist() == [2, 0.5, 0.0]  # e1 won by 2, e2 lost by 2
    assert pairs.loc[("b", "a")].tolist() == [2, 0.5, 0.0]
    assert pairs.loc[("a", "c")].tolist() == [2, 0.75, 0.5]  # e3 a tie: half a win
    assert pairs.loc[("c", "b")].tolist() == [1, 1.0, 1.0]
    assert len(pairs) == 6


def test_a_figures_data_is_what_it_draws(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from marketarena.plots.style import figure_data, save

    fig, (left, right) = plt.subplots(1, 2)
    left.plot([1, 2], [3.5, float("nan")], label="mean")
    left.set_title("Prices")
    left.set_xlabel("round")
    right.bar(["x", "y"], [4, 5], label="units")
    save(fig, tmp_path / "figures" / "plain.png")
    assert not (tmp_path / "data").exists()  # outside a figure_data block: the PNG only
    fig, (left, right) = plt.subplots(1, 2)
    left.plot([1, 2], [3.5, float("nan")], label="mean")
    left.set_title("Prices")
    left.set_xlabel("round")
    right.bar(["x", "y"], [4, 5], label="units")
    with figure_data(tmp_path / "data"):
        save(fig, tmp_path / "figures" / "fig.png")
    assert (tmp_path / "data" / "fig.csv").read_text().splitlines() == [
        "panel,x_axis,y_axis,kind,series,x,y,y2",
        "Prices,round,,line,mean,1,3.5,",
        "Prices,round,,line,mean,2,,",
        "panel 2,,,bar,units,x,4,0",
        "panel 2,,,bar,units,y,5,0",
    ]


def test_every_market_declares_its_headline():
    for kind in market_names():
        declared = yaml.safe_load(captions.path_of(kind).read_text())["headline"]
        assert captions.load(kind).headline.model_dump() == declared, kind


def test_a_horizontal_bar_is_its_length_against_its_category():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from marketarena.plots.drawn import rows_of

    fig, ax = plt.subplots()
    ax.barh(["gd", "zip"], [1.5, -2.0], label="μ")
    fig.canvas.draw()
    assert [r[3:] for r in rows_of(fig)] == [
        ["bar", "μ", "1.5", "gd", 0],
        ["bar", "μ", "-2", "zip", 0],
    ]
    plt.close(fig)
