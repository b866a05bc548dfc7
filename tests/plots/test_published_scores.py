"""The figures that put a published source's own score beside ours (lemon's ``their_score.png``,
crash's ``fig_scores.png``; ``plots/published_scores.py``'s ``scores_beside``), on 21 models whose scores are as
close as in Agent Bazaar's lemon runs (issue 59: the scatter with a label at each point printed
about 8 names over each other).

Checked on the drawn figure itself: no two of its texts (model names, ranks, titles, notes)
overlap; the rows run from our best to our worst, each with its rank under both scores; where no
model has both scores the figure says why instead. And crash's many-panel figures: one legend
beside the panels instead of one over each panel's lines, a series in the same colour in every
panel, the title clear of the first row.
"""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from marketarena.markets.crash.sources import plots as crash_published  # noqa: E402
from marketarena.markets.lemon.sources import plots as lemon_authors  # noqa: E402
from marketarena.plots import published_scores, style  # noqa: E402

# (model, ours, theirs): the lemon board's values, rounded; 12 of them within 0.05 of each other
MODELS = [
    ("claude-sonnet-4.6", 0.569, 0.644),
    ("gpt-5.4", 0.562, 0.690),
    ("llama-3.3-70b-instruct", 0.542, 0.550),
    ("qwen3.5-9b", 0.533, 0.603),
    ("gemma-3-27b-it", 0.528, 0.576),
    ("gemini-3-flash-preview", 0.522, 0.691),
    ("llama-3.1-70b-instruct", 0.473, 0.540),
    ("llama-3.1-nemotron-70b-instruct", 0.472, 0.518),
    ("hermes-4-405b", 0.465, 0.514),
    ("deepseek-r1-distill-llama-70b", 0.461, 0.501),
    ("qwen-2.5-72b-instruct", 0.457, 0.533),
    ("gemma-3-4b-it", 0.441, 0.565),
    ("gemma-3-12b-it", 0.433, 0.549),
    ("llama-3.1-8b-instruct", 0.432, 0.543),
    ("hermes-3-llama-3.1-405b", 0.429, 0.575),
    ("deepseek-r1-distill-qwen-32b", 0.422, 0.493),
    ("mistral-7b-instruct-v0.1", 0.409, 0.734),
    ("qwen3-8b", 0.404, 0.560),
    ("gpt-oss-120b", 0.404, 0.471),
    ("phi-4", 0.356, 0.524),
    ("llama-3.2-3b-instruct", 0.316, 0.533),
]
RHO = {"rho": 0.44, "lo": -0.01, "hi": 0.76, "p_perm": 0.046, "n": 21}


@pytest.fixture
def drawn(monkeypatch):
    """Every figure the two modules save, kept open (drawn) instead of closed."""
    figures = []

    def keep(fig, path):
        fig.canvas.draw()
        figures.append(fig)
        return path

    for module in (crash_published, lemon_authors, published_scores, style):
        monkeypatch.setattr(module, "save", keep)
    return figures


def lemon_table(rows=MODELS) -> pd.DataFrame:
    ours = np.array([r[1] for r in rows])
    return pd.DataFrame(
        {
            "model": [r[0] for r in rows],
            "their_eas": [r[2] for r in rows],
            "their_se": 0.04,
            "our_eas": ours,
            "our_eas_lo": ours - 0.03,
            "our_eas_hi": ours + 0.03,
            "their_note": "",
        }
    )


def crash_board(rows=MODELS) -> pd.DataFrame:
    ours = np.array([r[1] for r in rows])
    return pd.DataFrame(
        {
            "name": [r[0] for r in rows],
            "their_health": [r[2] for r in rows],
            "eas": ours,
            "eas_lo": ours - 0.03,
            "eas_hi": ours + 0.03,
        }
    )


def texts(fig) -> list:
    """The texts a reader reads: the y tick labels (model names, ranks), axis titles and x labels,
    notes and labels placed in the axes."""
    out = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        lo, hi = sorted(ax.get_ylim())  # a locator's ticks beyond the limits are not drawn
        ticks = [t for t in ax.get_yticklabels() if lo <= t.get_position()[1] <= hi]
        out += [ax.title, ax.xaxis.label, *ax.texts, *ticks]
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def overlapping(fig, gap: float = 3.0) -> list[tuple[str, str]]:
    """The pairs of texts closer than ``gap`` pixels (at 100 dpi) in both directions: drawn over
    each other, or touching so that two read as one ("...interval)their composite...")."""
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer).padded(gap / 2)) for t in texts(fig)]
    return [
        (a, b)
        for (a, ba), (b, bb) in itertools.combinations(boxes, 2)
        if ba.x0 < bb.x1 and bb.x0 < ba.x1 and ba.y0 < bb.y1 and bb.y0 < ba.y1
    ]


def rows_top_down(fig) -> tuple[list[str], list[str]]:
    """The model labels from the top row down, and the ranks on the right edge."""
    left = fig.axes[0]
    edge = [
        ax
        for ax in fig.axes
        if ax.yaxis.get_label_position() == "right" or ax.yaxis.get_ticks_position() == "right"
    ][0]

    def top_down(ax) -> list[str]:
        return [
            t.get_text() for t in sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])
        ]

    return top_down(left), top_down(edge)


@pytest.mark.parametrize(
    "draw",
    [
        lambda path: lemon_authors.scores(lemon_table(), RHO, path),
        lambda path: crash_published.scores(crash_board(), RHO, path),
    ],
    ids=["lemon_their_score", "crash_fig_scores"],
)
def test_21_close_models_every_name_legible(tmp_path, drawn, draw):
    draw(tmp_path / "f.png")
    fig = drawn[0]
    assert overlapping(fig) == []
    names, ranks = rows_top_down(fig)
    assert len(names) == 21
    # ours, best first; the rank under theirs on the right edge of the same row
    assert names[:3] == ["1. claude-sonnet-4.6", "2. gpt-5.4", "3. llama-3.3-70b-instruct"]
    assert ranks[:3] == ["#4", "#3", "#10"]
    assert names[16] == "17. mistral-7b-instruct-v0.1" and ranks[16] == "#1"  # theirs: 0.734
    # qwen3-8b and gpt-oss-120b tie on ours (0.404): both 18th, the tie in name order
    assert names[17:19] == ["18. gpt-oss-120b", "18. qwen3-8b"]
    assert names[-1] == "21. llama-3.2-3b-instruct"


def test_a_model_without_their_score_is_named_not_drawn(tmp_path, drawn):
    table = lemon_table()
    table.loc[table["model"] == "phi-4", ["their_eas", "their_se"]] = np.nan
    table.loc[table["model"] == "phi-4", "their_note"] = "no run in the authors' grid"
    lemon_authors.scores(table, dict(RHO, n=20), tmp_path / "f.png")
    fig = drawn[0]
    names, _ = rows_top_down(fig)
    assert len(names) == 20 and not any("phi-4" in n for n in names)
    assert "without their score (no run in the authors' grid: phi-4)" in fig._suptitle.get_text()
    assert overlapping(fig) == []


def test_no_model_with_their_score_says_why(tmp_path, drawn):
    table = lemon_table(MODELS[:2]).assign(
        their_eas=np.nan, their_se=np.nan, their_note="no run in the authors' grid"
    )
    lemon_authors.scores(
        table,
        {"rho": np.nan, "lo": np.nan, "hi": np.nan, "p_perm": np.nan, "n": 0},
        tmp_path / "f.png",
    )
    notes = [t.get_text() for ax in drawn[0].axes for t in ax.texts]
    assert notes == ["no run in the authors' grid"] * 2
    assert "no Spearman: 0 model(s) with both scores" in drawn[0]._suptitle.get_text()


# ------------------------------------------------------------------ crash's many-panel figures
def crash_market(models: dict[str, list[int]], dls=(3,), seeds=3) -> pd.DataFrame:
    """One row per run: each model's numbers of stabilizing firms x ``dls`` x ``seeds``, its
    values made up from the cell (they only need to be drawn)."""
    rows = [
        {
            "episode_id": f"{m}-k{s}-d{d}-s{i}",
            "model": m,
            "stabilizing": s,
            "discovery_limit": d,
            "mean_price_over_cost": 1 + s / 10 + i / 100,
            "volume": 50 + s + i,
            "price_volatility": 0.1 * (i + 1),
        }
        for m, stabs in models.items()
        for s in stabs
        for d in dls
        for i in range(seeds)
    ]
    return pd.DataFrame(rows)


def line_colours(ax) -> dict[str, tuple]:
    return {
        line.get_label(): matplotlib.colors.to_rgba(line.get_color())
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    }


def test_survival_one_colour_per_number_of_stabilizers_and_one_legend(tmp_path, drawn):
    market = crash_market({"a-model": [0, 3, 5], "b-model": [0, 1, 3, 5]})
    survival = pd.DataFrame(
        [
            {"episode_id": ep, "step": t, "share_active": 1 - t / 20}
            for ep in market["episode_id"]
            for t in range(10)
        ]
    )
    crash_published.survival_models(survival, market, tmp_path / "s.png")
    fig = drawn[0]
    a, b = fig.axes[0], fig.axes[1]
    assert line_colours(a)["3"] == line_colours(b)["3"]  # a's second line, b's third
    assert line_colours(a)["5"] == line_colours(b)["5"] != line_colours(b)["1"]
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    assert [t.get_text() for t in legends[0].get_texts()] == ["0", "1", "3", "5"]
    assert a.get_title() == "a-model\nruns at 0/3/5: 3/3/3"
    assert overlapping(fig) == []


def test_appendix_c_title_clear_of_twenty_rows(tmp_path, drawn):
    market = crash_market({f"model-{i:02d}": [0, 3, 5] for i in range(20)}, dls=(1, 3))
    crash_published.appendix_c_models(market, tmp_path / "c.png")
    fig = drawn[0]
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    first_row = [ax for ax in fig.axes if ax.get_subplotspec().rowspan.start == 0]
    assert all(not title.overlaps(ax.get_tightbbox(renderer)) for ax in first_row)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1 and [t.get_text() for t in legends[0].get_texts()] == ["1", "3"]
    assert not any(
        legends[0].get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
        for ax in fig.axes
    )  # beside the panels, over none of them
