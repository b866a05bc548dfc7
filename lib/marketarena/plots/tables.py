"""Tables: a generic Markdown / LaTeX renderer, reused by every market (a market's own tables live
in its analysis: supply_chain's Table 2 in ``markets/supply_chain/analysis/tables.py``).

- :func:`format_table` turns a frame into display strings, one formatter per column (default: floats
  to 3 decimals, integers as is; NaN shown as ``–``), and computes best / second-best marks.
- :func:`highlight_ranks` ranks the *displayed* values of a column (so two cells that print the same
  number always get the same mark): rank 1 = best distinct value, rank 2 = the next distinct value,
  honouring ``"max"`` (higher is better, ↑) or ``"min"`` (lower is better, ↓). NaN is never marked.
  A column whose cells all print the same value marks nothing: there is no best among equals.
- :func:`markdown_table` renders GitHub-flavoured Markdown: best in ``**bold**``, second best in
  ``_italic_``. Markdown has a single header row, so column groups are listed in a caption line above
  the table.
- :func:`latex_table` renders a booktabs ``tabular`` (optionally wrapped in a ``table`` float with
  caption and label): column groups as ``\\multicolumn`` headers with ``\\cmidrule``s, row groups as
  blocks separated by ``\\midrule`` with the group name on the block's first row, best in
  ``\\textbf``, second best in ``\\underline``; text cells are escaped (``_``, ``&``, ``%`` ...).
  Needs ``\\usepackage{booktabs}`` only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

Direction = Literal["max", "min"]
Formatter = str | Callable[[object], str]

MISSING = "–"

# -------------------------------------------------------------------------------------------------
# generic formatting
# -------------------------------------------------------------------------------------------------


def _is_missing(v: object) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(isinstance(v, float | np.floating) and math.isnan(v))
    except TypeError:
        return False


def format_number(v: object, decimals: int = 3) -> str:
    """``v`` with ``decimals`` decimals (0 = integer); NaN -> ``–``; never prints ``-0``."""
    if _is_missing(v):
        return MISSING
    x = float(v)  # type: ignore[arg-type]
    if not math.isfinite(x):
        return "∞" if x > 0 else "−∞"
    s = f"{round(x):d}" if decimals == 0 else f"{x:.{decimals}f}"
    if s.lstrip("-").strip("0.") == "":  # "-0", "-0.000"
        s = s.lstrip("-")
    return s


def _apply_formatter(fmt: Formatter | None, v: object) -> str:
    if _is_missing(v):
        return MISSING
    if fmt is None:
        if isinstance(v, bool | np.bool_):
            return str(v)
        if isinstance(v, int | np.integer):
            return f"{int(v):d}"
        if isinstance(v, float | np.floating):
            return format_number(v, 3)
        return str(v)
    if isinstance(fmt, str):
        return fmt.format(v)
    return fmt(v)


def highlight_ranks(shown: Sequence[str], raw: Sequence[object], direction: Direction) -> list[int]:
    """1 = best, 2 = second best, 0 = neither, by dense rank of the displayed values.

    Display strings are compared as numbers where they parse (so the marks match what is printed);
    otherwise the raw values are used. Missing cells get 0.
    """
    keys: list[float | None] = []
    for s, r in zip(shown, raw, strict=True):
        if s == MISSING or _is_missing(r):
            keys.append(None)
            continue
        try:
            keys.append(float(str(s).replace("−", "-").replace(",", "")))
        except ValueError:
            try:
                keys.append(float(r))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                keys.append(None)
    distinct = sorted(
        {k for k in keys if k is not None and math.isfinite(k)}, reverse=direction == "max"
    )
    if len(distinct) < 2:
        return [0] * len(keys)
    rank = {distinct[0]: 1, distinct[1]: 2}
    return [rank.get(k, 0) if k is not None else 0 for k in keys]


def format_table(
    df: pd.DataFrame,
    formats: Mapping[str, Formatter] | None = None,
    highlight: Mapping[str, Direction] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Display strings and highlight ranks (0/1/2) for every cell of ``df``."""
    formats = dict(formats or {})
    highlight = dict(highlight or {})
    shown = pd.DataFrame(index=df.index, columns=df.columns, dtype=object)
    ranks = pd.DataFrame(0, index=df.index, columns=df.columns, dtype=int)
    for col in df.columns:
        shown[col] = [_apply_formatter(formats.get(col), v) for v in df[col].tolist()]
        if col in highlight:
            ranks[col] = highlight_ranks(shown[col].tolist(), df[col].tolist(), highlight[col])
    return shown, ranks


# -------------------------------------------------------------------------------------------------
# Markdown
# -------------------------------------------------------------------------------------------------


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def _md_mark(s: str, rank: int) -> str:
    if rank == 1:
        return f"**{s}**"
    if rank == 2:
        return f"_{s}_"
    return s


def markdown_table(
    df: pd.DataFrame,
    *,
    formats: Mapping[str, Formatter] | None = None,
    highlight: Mapping[str, Direction] | None = None,
    labels: Mapping[str, str] | None = None,
    column_groups: Sequence[tuple[str, Sequence[str]]] | None = None,
    align: Mapping[str, Literal["l", "r", "c"]] | None = None,
    caption: str | None = None,
) -> str:
    """Render ``df`` (its columns, in order; index ignored) as a GitHub-flavoured Markdown table.

    ``labels`` renames column headers; ``highlight`` marks best (**bold**) and second best (_italic_)
    per column; ``column_groups`` (group title, columns) is listed in a line above the table;
    ``align`` defaults to right for numeric columns and left otherwise.
    """
    labels = dict(labels or {})
    shown, ranks = format_table(df, formats, highlight)
    cols = list(df.columns)
    align = dict(align or {})
    out: list[str] = []
    if caption:
        out += [caption, ""]
    if column_groups:
        parts = [
            f"**{g}**: " + ", ".join(labels.get(c, str(c)) for c in members)
            for g, members in column_groups
        ]
        out += ["Column groups: " + "; ".join(parts) + ".", ""]
    header = [_md_escape(labels.get(c, str(c))) for c in cols]
    rule = []
    for c in cols:
        a = align.get(c, "r" if pd.api.types.is_numeric_dtype(df[c]) else "l")
        rule.append({"l": ":---", "r": "---:", "c": ":---:"}[a])
    out.append("| " + " | ".join(header) + " |")
    out.append("| " + " | ".join(rule) + " |")
    for i in range(len(df)):
        cells = [
            _md_mark(_md_escape(str(shown.iat[i, j])), int(ranks.iat[i, j]))
            for j in range(len(cols))
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# -------------------------------------------------------------------------------------------------
# LaTeX
# -------------------------------------------------------------------------------------------------

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "–": "--",
    "−": "$-$",
}


def latex_escape(s: str) -> str:
    """Escape LaTeX special characters in plain text."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(s))


def _tex_mark(s: str, rank: int) -> str:
    if rank == 1:
        return rf"\textbf{{{s}}}"
    if rank == 2:
        return rf"\underline{{{s}}}"
    return s


def latex_table(
    df: pd.DataFrame,
    *,
    formats: Mapping[str, Formatter] | None = None,
    highlight: Mapping[str, Direction] | None = None,
    labels: Mapping[str, str] | None = None,
    column_groups: Sequence[tuple[str, Sequence[str]]] | None = None,
    row_group: str | None = None,
    align: Mapping[str, Literal["l", "r", "c"]] | None = None,
    caption: str | None = None,
    label: str | None = None,
    escape: bool = True,
) -> str:
    """Render ``df`` as a booktabs LaTeX table.

    ``labels`` are LaTeX source (not escaped) so headers may use math, e.g. ``r"$\\Pi\\uparrow$"``;
    cell text is escaped when ``escape``. ``column_groups`` must list consecutive columns; columns
    outside every group get an empty group header. ``row_group`` names a column whose runs of equal
    values form blocks separated by ``\\midrule``; its value is printed on each block's first row
    only. With ``caption`` or ``label`` the tabular is wrapped in a ``table`` float.
    """
    labels = dict(labels or {})
    align = dict(align or {})
    shown, ranks = format_table(df, formats, highlight)
    cols = list(df.columns)
    spec = "".join(align.get(c, "r" if pd.api.types.is_numeric_dtype(df[c]) else "l") for c in cols)
    lines = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]

    if column_groups:
        pos = {c: i for i, c in enumerate(cols)}
        cells: list[str] = []
        rules: list[str] = []
        i = 0
        spans = {pos[m[0]]: (g, len(m)) for g, m in column_groups if m}
        for g, m in column_groups:
            idx = [pos[c] for c in m]
            if idx != list(range(idx[0], idx[0] + len(idx))):
                raise ValueError(f"column group {g!r} is not a run of consecutive columns")
        while i < len(cols):
            if i in spans:
                g, n = spans[i]
                cells.append(rf"\multicolumn{{{n}}}{{c}}{{{g}}}")
                rules.append(rf"\cmidrule(lr){{{i + 1}-{i + n}}}")
                i += n
            else:
                cells.append("")
                i += 1
        lines.append(" & ".join(cells) + r" \\")
        lines.append("".join(rules))

    def head(c: object) -> str:
        return labels[c] if c in labels else latex_escape(str(c))

    lines.append(" & ".join(head(c) for c in cols) + r" \\")
    lines.append(r"\midrule")
    prev_group: object = object()
    for r in range(len(df)):
        row = []
        if row_group is not None:
            g = df[row_group].iloc[r]
            if r > 0 and g != prev_group:
                lines.append(r"\midrule")
        for j, c in enumerate(cols):
            s = str(shown.iat[r, j])
            s = latex_escape(s) if escape else s
            if c == row_group and r > 0 and df[row_group].iloc[r] == prev_group:
                s = ""
            row.append(_tex_mark(s, int(ranks.iat[r, j])))
        if row_group is not None:
            prev_group = df[row_group].iloc[r]
        lines.append(" & ".join(row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    body = "\n".join(lines)
    if caption is None and label is None:
        return body + "\n"
    wrapped = [r"\begin{table}[t]", r"\centering", r"\small"]
    if caption is not None:
        wrapped.append(rf"\caption{{{caption}}}")
    if label is not None:
        wrapped.append(rf"\label{{{label}}}")
    wrapped += [body, r"\end{table}"]
    return "\n".join(wrapped) + "\n"


def write_tables(path_md: str | Path, md: str, path_tex: str | Path, tex: str) -> tuple[Path, Path]:
    """Write one table's Markdown and LaTeX renderings (UTF-8, folders created); their paths."""
    paths = []
    for p, text in ((path_md, md), (path_tex, tex)):
        p = Path(p)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        paths.append(p)
    return paths[0], paths[1]


def write_frame(
    frame: pd.DataFrame, stem: str | Path, caption: str | None = None
) -> tuple[Path, Path]:
    """``frame`` as ``<stem>.md`` and ``<stem>.tex``, default formatting, one caption for both."""
    stem = Path(stem)
    return write_tables(
        stem.parent / f"{stem.name}.md",
        markdown_table(frame, caption=caption) + "\n",
        stem.parent / f"{stem.name}.tex",
        latex_table(frame, caption=caption) + "\n",
    )


__all__ = [
    "format_number",
    "format_table",
    "highlight_ranks",
    "latex_escape",
    "latex_table",
    "markdown_table",
    "write_frame",
    "write_tables",
]
