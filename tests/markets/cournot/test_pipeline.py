"""cournot and bertrand through every generic stage function (reference -> simulate -> metrics ->
stats -> ratings -> figures) on the proposed default blocks, scaled down (3 firms, a round robin of
3 episodes, short runs); a re-run replays nothing."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import yaml

from marketarena.config import parse_params
from marketarena.pipeline import (
    Paths,
    run_figures,
    run_metrics,
    run_overall,
    run_ratings,
    run_reference,
    run_stats,
)
from marketarena.simulate import simulate

matplotlib.use("Agg")
MARKETS = Path(__file__).resolve().parents[3] / "lib" / "marketarena" / "markets"


def small_defaults(nash_player: str | None = None):
    """``nash_player``: the nash firms of both markets as one cross-market player."""
    blocks = {}
    for name in ("cournot", "bertrand"):
        blocks.update(yaml.safe_load((MARKETS / name / "default_params.yaml").read_text()))
    blocks["cournot"].update(rounds=10, runs=3, roster=blocks["cournot"]["roster"][:3])
    blocks["bertrand"].update(runs=3, roster=[blocks["bertrand"]["roster"][k] for k in (0, 3, 4)])
    for block in blocks.values():
        for entry in block["roster"]:
            if nash_player and entry.get("strategy") == "nash":
                entry["player"] = nash_player
    blocks["cournot"]["bootstrap"].update(n_resamples=500, level=0.9)
    blocks["bertrand"].update(rounds=20, collusion_window=5)
    return parse_params(
        {"markets": blocks, "stats": {"n_boot": 100, "n_perm": 100}, "ratings": {"n_boot": 10}}
    )


def test_both_markets_through_every_stage(tmp_path):
    params = small_defaults()
    paths = Paths(tmp_path)
    for market in ("cournot", "bertrand"):
        run_reference(market, params, paths)
        summary = simulate(market, params, paths.data, paths.episodes(market), progress=False)
        assert summary["played"] == 3
        assert (
            simulate(market, params, paths.data, paths.episodes(market), progress=False)["played"]
            == 0
        )
        run_metrics(market, params, paths)
    stats = {m: run_stats(m, params, paths) for m in ("cournot", "bertrand")}
    assert stats["cournot"]["target"] == "profit" and stats["bertrand"]["n_episodes"] == 3
    boards = {m: run_ratings(m, params, paths) for m in ("cournot", "bertrand")}
    assert len(boards["cournot"]) == 3 and len(boards["bertrand"]) == 3
    assert run_overall(params, paths).empty  # baselines of different markets never meet
    assert "no cross-market ranking" in (paths.reports / "overall" / "overall.md").read_text()
    # one player in both: overall.md holds the table its caption describes, as the CSV does
    overall = run_overall(small_defaults(nash_player="nash_both"), paths)
    assert list(overall["player"]) == ["nash_both"] and overall["n_markets"].tolist() == [2]
    md = (paths.reports / "overall" / "overall.md").read_text().splitlines()
    assert md[0].startswith("Cross-market standing: mean percentile rank")
    assert md[2].split("|")[1:-1] == [
        " rank ",
        " player ",
        " model ",
        " variant ",
        " provider ",
        " kind ",
        " markets ",
        " n_markets ",
        " mean_percentile ",
        " names ",
        " decisions ",
        " valid_first ",
        " valid_reasked ",
        " fallback ",
        " format_failures ",
        " rule_failures ",
        " flagged ",
    ]
    row = [c.strip() for c in md[4].split("|")[1:-1]]
    # baselines answer validly: nothing fell back, nothing flagged
    assert row[-4:] == ["0.000", "0.000", "0.000", ""]  # flagged: no mark
    assert "above 0.2 (params `ratings.flag_fallback_above`)" in md[0]
    # a baseline followed by its player id has no model identity: model, variant, provider blank
    assert row[:8] == ["1", "nash_both", "", "", "", "baseline", "cournot,bertrand", "2"]
    written = [p for m in ("cournot", "bertrand") for p in run_figures(m, params, paths)]
    assert {p.name for p in written} >= {
        "fig2_quantities.png",
        "fig3_cv.png",
        "fig_prices.png",
        "fig_collusion_index.png",
        "cournot_specialisation.md",
        "bertrand_collusion.tex",
    }
    assert (paths.data / "references" / "cournot" / "reference.md").is_file()
    # captions say what is plotted: the configured level, never a smallest p of 0
    table = (paths.reports / "tables" / "cournot" / "cournot_specialisation.md").read_text()
    assert "90% percentile interval" in table and "95%" not in table
