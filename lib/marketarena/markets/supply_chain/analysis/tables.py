"""Market-Bench's Table 2 for supply_chain (:func:`table2`, :func:`table2_frame`), rendered with the
generic Markdown / LaTeX helpers of ``plots/tables.py``.

- One row per agent name. Values are the mean over episodes of the per-episode value, where the
  per-episode value is the mean over that name's instances in the episode (names are unique per
  episode in the roster, so this is normally one row). NaN (e.g. MMS when no buyer saw the agent) is
  skipped; a name with no finite value shows ``–``.
- Rows are grouped by kind, LLM first, then Baseline (the paper's Closed / Open groups), and sorted by
  Pi descending within a group (ties by name). Best and second best are taken over the whole table, as
  in the paper.
- Numbers as in the paper: 3 decimals, Pi as an integer (no thousands separator).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.plots.tables import (
    Direction,
    Formatter,
    format_number,
    latex_escape,
    latex_table,
    markdown_table,
    write_tables,
)

TABLE2_METRICS: tuple[str, ...] = (
    "NPM",
    "Pi",
    "RAR",
    "IEI",
    "stockout_rate",
    "bid_efficiency",
    "OSI",
    "fill_rate",
    "MMS",
)
TABLE2_DIRECTIONS: dict[str, Direction] = {m: "max" for m in TABLE2_METRICS} | {
    "stockout_rate": "min"
}
TABLE2_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Economics", ("NPM", "Pi", "RAR", "IEI")),
    ("Operation", ("stockout_rate", "bid_efficiency", "OSI", "fill_rate")),
    ("Cognitive", ("MMS",)),
)
_TITLES = {
    "NPM": "NPM",
    "Pi": "Pi",
    "RAR": "RAR",
    "IEI": "IEI",
    "stockout_rate": "Stockout Rate",
    "bid_efficiency": "Bid Eff.",
    "OSI": "OSI",
    "fill_rate": "Fill Rate",
    "MMS": "MMS",
}
KIND_LABELS: dict[str, str] = {"llm": "LLM", "baseline": "Baseline"}


def _tex_label(m: str) -> str:
    arrow = r"\uparrow" if TABLE2_DIRECTIONS[m] == "max" else r"\downarrow"
    if m == "Pi":
        return rf"$\Pi{arrow}$"
    return rf"{latex_escape(_TITLES[m])} ${arrow}$"


def _arrow(m: str) -> str:
    return "↑" if TABLE2_DIRECTIONS[m] == "max" else "↓"


def table2_frame(agents: pd.DataFrame) -> pd.DataFrame:
    """Table 2 numbers: columns ``kind, name, n_episodes, <metrics>``, ordered as printed.

    ``kind`` holds the display label (``LLM`` / ``Baseline``; other kinds title-cased, after these).
    """
    cols = ["kind", "name", "n_episodes", *TABLE2_METRICS]
    if agents is None or agents.empty:
        return pd.DataFrame(columns=cols)
    df = agents.copy()
    df["name"] = df["name"].astype(str)
    df["kind"] = df["kind"].astype(str)
    metrics = df[list(TABLE2_METRICS)].apply(pd.to_numeric, errors="coerce").astype(float)
    df[list(TABLE2_METRICS)] = metrics
    per_ep = df.groupby(["kind", "name", "episode_id"], sort=True)[list(TABLE2_METRICS)].mean()
    means = per_ep.groupby(level=["kind", "name"], sort=True).mean()
    n_ep = per_ep.groupby(level=["kind", "name"], sort=True).size().rename("n_episodes")
    out = pd.concat([n_ep, means], axis=1).reset_index()
    order = {k: i for i, k in enumerate(KIND_LABELS)}
    out["_g"] = out["kind"].map(lambda k: order.get(k, len(order)))
    out["_pi"] = out["Pi"].fillna(-np.inf)
    out = out.sort_values(["_g", "kind", "_pi", "name"], ascending=[True, True, False, True])
    out["kind"] = out["kind"].map(lambda k: KIND_LABELS.get(k, k.title()))
    return out[cols].reset_index(drop=True)


def table2(agents: pd.DataFrame, path_md: str | Path, path_tex: str | Path) -> tuple[Path, Path]:
    """Write Market-Bench Table 2 as Markdown and LaTeX; return both paths."""
    frame = table2_frame(agents)
    n_total = int(agents["episode_id"].nunique()) if agents is not None and not agents.empty else 0
    shown = frame[["kind", "name", *TABLE2_METRICS]].rename(
        columns={"kind": "Type", "name": "Agent"}
    )
    formats: dict[str, Formatter] = {m: (lambda v: format_number(v, 3)) for m in TABLE2_METRICS}
    formats["Pi"] = lambda v: format_number(v, 0)
    md_labels = {m: f"{_TITLES[m]} {_arrow(m)}" for m in TABLE2_METRICS}
    tex_labels = {m: _tex_label(m) for m in TABLE2_METRICS} | {
        "Type": "Type",
        "Agent": "Agent",
    }
    align = {"Type": "l", "Agent": "l"} | {m: "r" for m in TABLE2_METRICS}

    what = f"mean over {n_total} episode{'s' if n_total != 1 else ''}" if n_total else "no episodes"
    md_caption = (
        f"**Table 2.** Supply-chain performance per agent ({what}). ↑ higher is better, "
        "↓ lower is better; best per column in **bold**, second best in _italic_."
    )
    md = markdown_table(
        shown,
        formats=formats,
        highlight=TABLE2_DIRECTIONS,
        labels=md_labels,
        column_groups=TABLE2_GROUPS,
        align=align,
        caption=md_caption,
    )
    if frame.empty:
        md += "\n_no data_\n"
    tex_caption = (
        f"Supply-chain performance per agent ({what}). "
        r"$\uparrow$ higher is better, $\downarrow$ lower is better; best per column in "
        r"\textbf{bold}, second best \underline{underlined}."
    )
    tex = latex_table(
        shown,
        formats=formats,
        highlight=TABLE2_DIRECTIONS,
        labels=tex_labels,
        column_groups=TABLE2_GROUPS,
        row_group="Type",
        align=align,
        caption=tex_caption,
        label="tab:supply_chain_table2",
    )
    return write_tables(path_md, md, path_tex, tex)
