"""The overall board (issue 54): every LLM under its model's identity, imported or played; each
side of a board ranked apart; an instance counted once per player; ``models.csv`` and the names the
rule could not place (``pipeline.run_overall`` on hand-written boards and seats)."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from marketarena.config import parse_params
from marketarena.core.paths import Paths
from marketarena.overall import matrix_cell, overall_board, percentile_intervals, percentiles
from marketarena.pipeline import run_overall

MARKETS = Path(__file__).resolve().parents[1] / "lib" / "marketarena" / "markets"


def test_each_side_of_a_board_is_ranked_apart():
    # lemon's board: buyers ranked 1..3, sellers 1..2 (ranks restart per role)
    board = pd.DataFrame(
        {"rank": [1, 2, 3, 1, 2], "name": list("abcde"), "role": ["buyer"] * 3 + ["seller"] * 2}
    )
    assert percentiles(board).tolist() == [1.0, 0.5, 0.0, 1.0, 0.0]
    # a board whose ranks run on across roles reads the same
    board["rank"] = [1, 2, 3, 4, 5]
    assert percentiles(board).tolist() == [1.0, 0.5, 0.0, 1.0, 0.0]
    single = pd.DataFrame({"rank": [1], "name": ["a"]})
    assert percentiles(single).tolist() == [1.0]


def test_a_rank_interval_is_a_percentile_interval_on_the_same_side():
    # buyers ranked 1..3 with rank intervals, sellers 4..5 (ranks run on): each side apart
    board = pd.DataFrame(
        {
            "rank": [1, 2, 3, 4, 5],
            "rank_lo": [1, 1, 2, 4, 4],
            "rank_hi": [2, 3, 3, 5, 5],
            "name": list("abcde"),
            "role": ["buyer"] * 3 + ["seller"] * 2,
        }
    )
    lo, hi = percentile_intervals(board)
    # buyer b: ranks 1-3 of 3 -> percentiles 0 to 1; seller d: ranks 1-2 of 2 -> 0 to 1
    assert lo.tolist() == [0.5, 0.0, 0.0, 0.0, 0.0]
    assert hi.tolist() == [1.0, 1.0, 0.5, 1.0, 1.0]
    # a board ranked by a score has no rank interval: none
    lo, hi = percentile_intervals(board.drop(columns=["rank_lo", "rank_hi"]))
    assert lo.isna().all() and hi.isna().all()


def test_a_matrix_cell_leads_with_the_percentile_so_a_column_sorts_by_it():
    row = {"percentile": 0.842, "percentile_lo": 0.6, "percentile_hi": 0.95, "rank": 4}
    assert matrix_cell({**row, "n_models": 20}) == "84 [60, 95] · 4/20"
    assert matrix_cell({**row, "percentile_lo": float("nan"), "n_models": 20}) == "84 · 4/20"
    # the site sorts a cell by the number it starts with: a better standing, a larger number,
    # whatever the number of models (3rd of 5 is below 4th of 20)
    assert matrix_cell({"percentile": 0.5, "rank": 3, "n_models": 5}).startswith("50 ")


def test_an_instance_counts_once_however_many_rows_a_player_holds_there():
    lemon = pd.DataFrame(
        {
            "rank": [1, 2, 1, 2],
            "name": ["x-buyer", "naive", "honest", "x-seller"],
            "role": ["buyer", "buyer", "seller", "seller"],
            "kind": ["llm", "baseline", "baseline", "llm"],
        }
    )
    crash = pd.DataFrame({"rank": [1, 2], "name": ["x", "y"], "kind": ["llm", "llm"]})
    players = {
        "lemon": {"x-buyer": "x", "x-seller": "x", "naive": None, "honest": None},
        "crash": {"x": "x", "y": "y"},
    }
    out, note = overall_board({"lemon": lemon, "crash": crash}, players)
    assert note == "" and out["player"].tolist() == ["x"]
    row = out.iloc[0]
    # lemon: buyer 1.0 and seller 0.0 averaged to 0.5, then with crash's 1.0: 0.75, not 2/3
    assert row["mean_percentile"] == pytest.approx(0.75) and row["n_markets"] == 2
    assert row["names"] == "x-buyer,x-seller,x"


def two_instances(model_id: str, identities: dict | None = None):
    blocks = {}
    for name in ("cournot", "bertrand"):
        blocks.update(yaml.safe_load((MARKETS / name / "default_params.yaml").read_text()))
    for block in blocks.values():
        block["roster"] = block["roster"][:2]
    blocks["cournot"]["roster"].append({"name": "mine", "kind": "llm", "model": "m"})
    data = {
        "models": {"m": {"model": model_id, "provider": "mock"}},
        "markets": blocks,
        "identities": identities or {},
    }
    return parse_params(data)


def write_instance(paths: Paths, instance: str, board: list[tuple], seats: list[tuple]) -> None:
    boards = paths.reports / "leaderboards"
    boards.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(board, columns=["rank", "name", "kind"]).to_csv(boards / f"{instance}.csv")
    folder = paths.metrics(instance)
    folder.mkdir(parents=True, exist_ok=True)
    agents = pd.DataFrame(seats, columns=["episode_id", "name", "kind", "model", "harness"])
    agents.to_parquet(folder / "agents.parquet")


def test_a_played_model_and_the_same_model_imported_are_one_row(tmp_path):
    params = two_instances("openai/gpt-5.4")
    paths = Paths(tmp_path)
    nash = [r["name"] for r in params.markets["cournot"].model_dump()["roster"]][:2]
    write_instance(
        paths,
        "cournot",
        [(1, "mine", "llm"), (2, nash[0], "baseline"), (3, nash[1], "baseline")],
        [("e1", "mine", "llm", "m", "json"), ("e1", nash[0], "baseline", None, "")],
    )
    bertrand = [r["name"] for r in params.markets["bertrand"].model_dump()["roster"]]
    # bertrand's board holds two published players, as an imported instance's does
    write_instance(
        paths,
        "bertrand",
        [(1, bertrand[0], "baseline"), (2, "acme_FT", "llm"), (3, "gpt-5.4", "llm")],
        [
            ("e1", "gpt-5.4", "llm", "openai-gpt-5.4", "agent-bazaar-llm"),
            ("e1", "acme_FT", "llm", "acme_FT", "agent-bazaar-llm"),
            ("e1", bertrand[0], "baseline", None, ""),
        ],
    )
    overall = run_overall(params, paths)
    assert overall["player"].tolist() == ["gpt-5.4"]
    row = overall.iloc[0]
    assert (row["model"], row["provider"], row["n_markets"]) == ("gpt-5.4", "openai", 2)
    assert row["mean_percentile"] == pytest.approx((1.0 + 0.0) / 2)
    assert row["names"] == "mine,gpt-5.4"
    out = paths.reports / "overall"
    models = pd.read_csv(out / "models.csv", keep_default_na=False).set_index("name")
    assert models.loc["mine", "written"] == "openai/gpt-5.4" and models.loc["mine", "harness"]
    assert models.loc["acme_FT", "placed"] == "unplaced"
    text = (out / "overall.md").read_text()
    assert "`acme_FT`" in text and "params `identities`" in text
    # placed by the table: acme_FT is the user's own gpt-5.4 finetune, read as another model
    params = two_instances("openai/gpt-5.4", {"acme_FT": {"model": "acme-ft", "provider": "acme"}})
    run_overall(params, paths)
    models = pd.read_csv(out / "models.csv", keep_default_na=False).set_index("name")
    assert models.loc["acme_FT", "placed"] == "table" and models.loc["acme_FT", "key"] == "acme-ft"
    assert "`acme_FT`" not in (out / "overall.md").read_text()


def test_a_models_page_lists_every_instance_it_played(tmp_path):
    from marketarena.report.captions import Headline
    from marketarena.report.profiles import model_pages

    test_a_played_model_and_the_same_model_imported_are_one_row(tmp_path)
    paths = Paths(tmp_path)
    headlines = {"cournot": Headline(column="mu", label="TrueSkill μ")}
    pages, matrix = model_pages(paths.reports, headlines, {"cournot", "bertrand"})
    # every model is on the matrix and has a page, also one seen in a single instance
    assert {p.key for p in pages} == {"gpt-5.4", "acme-ft"}
    assert matrix.set_index("player").loc["gpt-5.4", "studies"] == 2
    # cournot: gpt-5.4 is its only model (1 of 1); bertrand: below acme-ft (2 of 2)
    # (its percentile first; these boards rank by a score, so no interval)
    assert matrix.set_index("player").loc["gpt-5.4", ["cournot", "bertrand"]].tolist() == [
        "100 · 1/1",
        "0 · 2/2",
    ]
    page = next(p for p in pages if p.key == "gpt-5.4")
    assert page.slug == "model-gpt-5.4" and page.studies == 2
    assert page.facts["provider"] == "openai"
    assert page.facts["names as written"] == "openai-gpt-5.4, openai/gpt-5.4"
    rows = {r[0]: dict(zip(page.board.columns, r)) for r in page.board.rows}
    assert rows["cournot"]["among models"] == "1 of 1"
    assert rows["cournot"]["harness"] == "notes"  # the roster entry's: cournot's default harness
    assert (
        rows["bertrand"]["board row"] == "gpt-5.4" and rows["bertrand"]["rank on the board"] == "3"
    )


def matrix_of(a: list[float], b: list[float], common: int) -> pd.DataFrame:
    """Two instances' percentiles of models m0.. (the first ``common`` in both)."""
    rows = [("A", f"m{i}", p) for i, p in enumerate(a)]
    rows += [("B", f"m{i}" if i < common else f"x{i}", p) for i, p in enumerate(b)]
    return pd.DataFrame(rows, columns=["market", "player", "percentile"])


def test_studies_that_rank_their_common_models_alike_agree_and_reversed_disagree():
    from marketarena.overall import MIN_COMMON, study_agreement

    up = [i / 9 for i in range(10)]
    same = study_agreement(matrix_of(up, up, 10), n_boot=200, n_perm=200).iloc[0]
    assert (same["n_models"], same["rho"], same["verdict"]) == (10, 1.0, "agree")
    flipped = study_agreement(matrix_of(up, up[::-1], 10), n_boot=200, n_perm=200).iloc[0]
    assert flipped["rho"] == -1.0 and flipped["verdict"] == "disagree"
    # models outside the common set do not count; below MIN_COMMON the pair is not read
    few = study_agreement(matrix_of(up, up, MIN_COMMON - 1), n_boot=200, n_perm=200).iloc[0]
    assert few["n_models"] == MIN_COMMON - 1 and few["verdict"] == "too few models in common"
    noisy = [0.1, 0.9, 0.3, 0.7, 0.5, 0.2, 0.8, 0.4, 0.6, 0.0]
    unclear = study_agreement(matrix_of(up, noisy, 10), n_boot=200, n_perm=200).iloc[0]
    assert unclear["rho_lo"] < 0 < unclear["rho_hi"] and unclear["verdict"] == "cannot tell"


def test_the_overall_stage_writes_the_agreement_with_its_figure(tmp_path):
    test_a_played_model_and_the_same_model_imported_are_one_row(tmp_path)
    out = tmp_path / "reports" / "overall"
    agreement = pd.read_csv(out / "agreement.csv")
    assert agreement[["study_a", "study_b", "n_models"]].values.tolist() == [
        ["bertrand", "cournot", 1]
    ]
    assert agreement["verdict"].tolist() == ["too few models in common"]
    assert (out / "agreement.png").stat().st_size > 0
    assert "Do the studies agree?" in (out / "agreement.md").read_text()


def test_a_board_beside_a_studys_own_rating_matches_models_by_identity(tmp_path):
    from marketarena.core.sources import SourceError
    from marketarena.metrics.published_rating import read_rating, with_rating

    board = pd.DataFrame(
        {
            "name": ["gpt-5.4", "claude-sonnet-4-6-adaptive", "o3", "naive", "phi-4"],
            "kind": ["llm", "llm", "llm", "baseline", "llm"],
            "mu": [30.0, 28.0, 20.0, 25.0, 10.0],
        }
    )
    path = tmp_path / "rating.csv"
    path.write_text(
        "model,rating\nopenai/gpt-5.4,1500\nanthropic/claude-sonnet-4-6-adaptive,1450\n"
        "o3,1300\nmicrosoft/phi-4,1100\nnot-on-the-board,900\n"
    )
    side, fit = with_rating(board, read_rating(path), n_boot=200)
    assert side["name"].tolist() == ["gpt-5.4", "claude-sonnet-4-6-adaptive", "o3", "phi-4"]
    assert side["rated_as"].iloc[0] == "openai/gpt-5.4" and fit["n"] == 4
    assert fit["rho"] == 1.0 and fit["unmatched"] == ["not-on-the-board"]
    path.write_text("model,rating\no3,1300\nphi-4,high\n")
    with pytest.raises(SourceError, match=r"rating.csv:3: rating 'high' is not a number"):
        read_rating(path)
    path.write_text("name,score\no3,1\n")
    with pytest.raises(SourceError, match="needs a header with the columns model and rating"):
        read_rating(path)
