"""Table 2 and the generic Markdown / LaTeX table helpers, checked against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from marketarena.markets.supply_chain.analysis.tables import table2, table2_frame
from marketarena.plots.tables import (
    format_number,
    highlight_ranks,
    latex_escape,
    latex_table,
    markdown_table,
)

NAN = float("nan")


def _agent_row(ep, aid, name, kind, **m):
    base = dict(
        NPM=0.0,
        Pi=0.0,
        RAR=0.0,
        IEI=0.0,
        stockout_rate=0.0,
        bid_efficiency=0.0,
        OSI=0.0,
        fill_rate=0.0,
        MMS=0.0,
    )
    base.update(m)
    return dict(
        episode_id=ep,
        agent_id=aid,
        name=name,
        kind=kind,
        model=name if kind == "llm" else "",
        strategy="llm" if kind == "llm" else name,
        **base,
    )


@pytest.fixture
def agents() -> pd.DataFrame:
    """3 names x 2 episodes; ``gamma_b`` has two instances in episode e1."""
    rows = [
        # alpha_one (llm)
        _agent_row(
            "e1",
            "a1",
            "alpha_one",
            "llm",
            NPM=0.2,
            Pi=1000.4,
            RAR=1.0,
            IEI=0.8,
            stockout_rate=0.9,
            bid_efficiency=0.5,
            OSI=0.6,
            fill_rate=0.3,
            MMS=0.6,
        ),
        _agent_row(
            "e2",
            "a1",
            "alpha_one",
            "llm",
            NPM=0.4,
            Pi=2000.0,
            RAR=2.0,
            IEI=0.6,
            stockout_rate=0.9,
            bid_efficiency=0.7,
            OSI=0.8,
            fill_rate=0.1,
            MMS=0.6,
        ),
        # beta (llm)
        _agent_row(
            "e1",
            "a2",
            "beta",
            "llm",
            NPM=0.1,
            Pi=300.0,
            RAR=0.5,
            IEI=0.9,
            stockout_rate=0.4,
            bid_efficiency=0.2,
            OSI=0.9,
            fill_rate=0.2,
            MMS=0.7,
        ),
        _agent_row(
            "e2",
            "a2",
            "beta",
            "llm",
            NPM=0.1,
            Pi=500.0,
            RAR=0.5,
            IEI=0.9,
            stockout_rate=0.6,
            bid_efficiency=0.2,
            OSI=0.9,
            fill_rate=0.2,
            MMS=NAN,
        ),
        # gamma_b (baseline): two instances in e1, one in e2
        _agent_row(
            "e1",
            "b1",
            "gamma_b",
            "baseline",
            NPM=0.0,
            Pi=100.0,
            RAR=0.0,
            IEI=0.5,
            stockout_rate=0.6,
            bid_efficiency=0.9,
            OSI=0.5,
            fill_rate=0.0,
            MMS=NAN,
        ),
        _agent_row(
            "e1",
            "b2",
            "gamma_b",
            "baseline",
            NPM=0.2,
            Pi=300.0,
            RAR=0.2,
            IEI=0.7,
            stockout_rate=0.8,
            bid_efficiency=0.7,
            OSI=0.7,
            fill_rate=0.4,
            MMS=NAN,
        ),
        _agent_row(
            "e2",
            "b1",
            "gamma_b",
            "baseline",
            NPM=0.5,
            Pi=-100.0,
            RAR=-0.3,
            IEI=0.2,
            stockout_rate=0.75,
            bid_efficiency=0.1,
            OSI=0.3,
            fill_rate=0.3,
            MMS=NAN,
        ),
    ]
    return pd.DataFrame(rows)


def _md_rows(md: str) -> dict[str, list[str]]:
    """Agent name -> the table row's cells (Type, Agent, 9 metrics)."""
    out = {}
    for line in md.splitlines():
        if not line.startswith("| ") or line.startswith("| Type") or line.startswith("| :"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out[cells[1]] = cells
    return out


COLS = ["NPM", "Pi", "RAR", "IEI", "stockout_rate", "bid_efficiency", "OSI", "fill_rate", "MMS"]


def test_table2_frame_means_are_two_level(agents):
    t = table2_frame(agents).set_index("name")
    # alpha_one: plain mean over two episodes
    assert t.loc["alpha_one", "NPM"] == pytest.approx((0.2 + 0.4) / 2)
    assert t.loc["alpha_one", "Pi"] == pytest.approx((1000.4 + 2000.0) / 2)
    # beta: MMS NaN in e2 is skipped
    assert t.loc["beta", "MMS"] == pytest.approx(0.7)
    assert t.loc["beta", "stockout_rate"] == pytest.approx(0.5)
    # gamma_b: mean over instances within e1, then over episodes
    assert t.loc["gamma_b", "NPM"] == pytest.approx(((0.0 + 0.2) / 2 + 0.5) / 2)
    assert t.loc["gamma_b", "Pi"] == pytest.approx(((100 + 300) / 2 + -100) / 2)
    assert t.loc["gamma_b", "stockout_rate"] == pytest.approx(((0.6 + 0.8) / 2 + 0.75) / 2)
    assert math.isnan(t.loc["gamma_b", "MMS"])
    assert t.loc["gamma_b", "n_episodes"] == 2
    # grouping and order: LLM first, Pi descending within group
    assert list(t.index) == ["alpha_one", "beta", "gamma_b"]
    assert list(t["kind"]) == ["LLM", "LLM", "Baseline"]


def test_table2_markdown_values_and_markers(agents, tmp_path):
    md_path, tex_path = table2(agents, tmp_path / "t" / "table2.md", tmp_path / "t" / "table2.tex")
    assert md_path.exists() and tex_path.exists()
    md = md_path.read_text(encoding="utf-8")
    rows = _md_rows(md)
    assert set(rows) == {"alpha_one", "beta", "gamma_b"}
    m = {name: dict(zip(COLS, cells[2:], strict=True)) for name, cells in rows.items()}
    a, b, g = m["alpha_one"], m["beta"], m["gamma_b"]

    # NPM: alpha 0.300 best; gamma 0.300 as well -> both bold (tie); beta 0.100 second
    assert a["NPM"] == "**0.300**" and g["NPM"] == "**0.300**" and b["NPM"] == "_0.100_"
    # Pi: integer, alpha 1500 best, beta 400 second, gamma 50 unmarked
    assert a["Pi"] == "**1500**" and b["Pi"] == "_400_" and g["Pi"] == "50"
    # Stockout rate is lower-is-better: beta 0.500 best, gamma 0.725 second, alpha 0.900 unmarked
    assert b["stockout_rate"] == "**0.500**"
    assert g["stockout_rate"] == "_0.725_"
    assert a["stockout_rate"] == "0.900"
    # RAR: alpha 1.5, beta 0.5, gamma (0.1 - 0.3)/2 = -0.1 -> "-0.100"
    assert a["RAR"] == "**1.500**" and b["RAR"] == "_0.500_" and g["RAR"] == "-0.100"
    # MMS: beta 0.7 best, alpha 0.6 second, gamma missing
    assert b["MMS"] == "**0.700**" and a["MMS"] == "_0.600_" and g["MMS"] == "–"
    # header with arrows, group caption, legend of markers
    assert "| Type | Agent | NPM ↑ | Pi ↑ |" in md
    assert "Stockout Rate ↓" in md
    for group in ("Economics", "Operation", "Cognitive"):
        assert f"**{group}**" in md
    assert "mean over 2 episodes" in md


def test_table2_latex_layout(agents, tmp_path):
    _, tex_path = table2(agents, tmp_path / "table2.md", tmp_path / "table2.tex")
    tex = tex_path.read_text(encoding="utf-8")
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"\multicolumn{4}{c}{Economics}" in tex
    assert r"\multicolumn{4}{c}{Operation}" in tex
    assert r"\multicolumn{1}{c}{Cognitive}" in tex
    assert r"\cmidrule(lr){3-6}" in tex and r"\cmidrule(lr){7-10}" in tex
    assert r"$\Pi\uparrow$" in tex and r"Stockout Rate $\downarrow$" in tex
    # escaping: every underscore in a name is escaped
    assert r"alpha\_one" in tex and r"gamma\_b" in tex
    assert "alpha_one" not in tex
    # markers
    assert r"\textbf{0.500}" in tex  # beta stockout (lower is better)
    assert r"\underline{0.725}" in tex  # gamma stockout second
    assert r"\textbf{1500}" in tex and r"\underline{400}" in tex
    # row groups: name printed once per block, blocks separated by \midrule
    lines = tex.splitlines()
    llm = [i for i, line in enumerate(lines) if line.startswith("LLM &")]
    base = [i for i, line in enumerate(lines) if line.startswith("Baseline &")]
    assert len(llm) == 1 and len(base) == 1
    assert lines[base[0] - 1] == r"\midrule"
    assert lines[llm[0] + 1].startswith(" & beta")


def test_table2_empty(tmp_path):
    md_path, tex_path = table2(pd.DataFrame(), tmp_path / "e.md", tmp_path / "e.tex")
    assert "no data" in md_path.read_text(encoding="utf-8")
    assert r"\begin{tabular}" in tex_path.read_text(encoding="utf-8")


def test_format_number():
    assert format_number(0.1234) == "0.123"
    assert format_number(-0.0004) == "0.000"
    assert format_number(-0.4, 0) == "0"
    assert format_number(36589.4, 0) == "36589"
    assert format_number(-58.2, 0) == "-58"
    assert format_number(NAN) == "–"
    assert format_number(None) == "–"


def test_highlight_ranks_directions_ties_and_nan():
    shown = ["0.100", "0.300", "0.300", "–", "0.200"]
    raw = [0.1, 0.3, 0.3, NAN, 0.2]
    assert highlight_ranks(shown, raw, "max") == [0, 1, 1, 0, 2]
    assert highlight_ranks(shown, raw, "min") == [1, 0, 0, 0, 2]
    # all equal: nothing stands out
    assert highlight_ranks(["1", "1"], [1, 1], "max") == [0, 0]
    # values equal after rounding get the same mark
    assert highlight_ranks(["0.500", "0.500", "0.400"], [0.5001, 0.4999, 0.4], "max") == [1, 1, 2]


def test_generic_markdown_and_latex():
    df = pd.DataFrame({"agent": ["x_1", "y&z"], "score": [1.0, 2.0], "n": [3, 4]})
    md = markdown_table(df, highlight={"score": "min"}, labels={"score": "Score ↓"})
    assert "| agent | Score ↓ | n |" in md
    assert "| x_1 | **1.000** | 3 |" in md
    assert "| y&z | _2.000_ | 4 |" in md
    tex = latex_table(df, highlight={"score": "max"}, column_groups=[("Result", ["score", "n"])])
    assert r"\multicolumn{2}{c}{Result}" in tex and r"\cmidrule(lr){2-3}" in tex
    assert r"x\_1" in tex and r"y\&z" in tex
    assert r"\textbf{2.000}" in tex and r"\underline{1.000}" in tex
    assert r"\begin{table}" not in tex
    wrapped = latex_table(df, caption="c", label="tab:x")
    assert r"\begin{table}" in wrapped and r"\label{tab:x}" in wrapped
    with pytest.raises(ValueError):
        latex_table(df, column_groups=[("bad", ["agent", "n"])])


def test_latex_escape():
    assert latex_escape("a_b%c&d#e$f{g}h~i^j\\k") == (
        r"a\_b\%c\&d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k"
    )


def test_numpy_scalars_format():
    df = pd.DataFrame(
        {"v": np.array([1.5, 2.5], dtype=np.float32), "k": np.array([1, 2], dtype=np.int64)}
    )
    md = markdown_table(df)
    assert "| 1.500 | 1 |" in md and "| 2.500 | 2 |" in md
