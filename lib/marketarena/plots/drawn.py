"""The data a figure draws, read back from the drawn figure itself: one CSV per figure, so that a
reader can take the numbers behind any PNG of the site without the pipeline (``style.save``
writes it when :func:`style.figure_data` names a folder; the ``figures`` stage does).

Read from matplotlib's artists after the figure is drawn, whatever market drew it: lines and
markers (``line``: every x, y), scatter points (``points``), bars (``bar``: each bar's x, its height
as y and its base as ``y2``; a horizontal bar's length as x, its category as y), error bars and other segments (``segment``: x, y to ``y2``), shaded
bands (``band``: the outline's points), heatmap cells (``cell``: column, row, value). A category
axis gives its labels instead of positions. Columns: ``panel`` (the axes' title, or ``panel <n>``),
``x_axis`` / ``y_axis`` (their labels), ``kind``, ``series`` (the artist's legend label, empty when
it has none), ``x``, ``y``, ``y2``. Annotations and reference text are not data and are left out.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.collections import LineCollection, PathCollection, PolyCollection, QuadMesh
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle

HEADER = ["panel", "x_axis", "y_axis", "kind", "series", "x", "y", "y2"]
#: rows per figure at most (a figure drawing more says so in its last row)
MAX_ROWS = 200_000


def _label(artist) -> str:
    label = artist.get_label() or ""
    return "" if label.startswith("_") else label


def _value(v: Any) -> Any:
    if isinstance(v, (np.floating, float)):
        v = float(v)
        return "" if math.isnan(v) else f"{v:.6g}"
    if isinstance(v, np.generic):
        return v.item()
    return v


class _Categories:
    """An axis's tick labels by position when they are words (a category axis): a value within
    half a step of a tick is that tick's category (dodged bars and markers beside it too)."""

    def __init__(self, ticks, labels) -> None:
        texts = [t.get_text() for t in labels]
        words = [t for t in texts if t and not _numeric(t)]
        self.ticks = np.asarray(ticks, dtype=float) if words else np.empty(0)
        self.names = texts

    def __call__(self, v: Any) -> Any:
        if not len(self.ticks):
            return v
        try:
            distance = np.abs(self.ticks - float(v))
        except (TypeError, ValueError):
            return v
        i = int(np.argmin(distance))
        return self.names[i] if distance[i] <= 0.5 else v


def _numeric(text: str) -> bool:
    try:
        float(text.replace("−", "-").replace(",", "").rstrip("%"))
        return True
    except ValueError:
        return False


def rows_of(fig: Figure) -> list[list[Any]]:
    """The drawn data of ``fig`` (drawn already: tick labels are set when it is), ``HEADER``'s
    columns."""
    rows: list[list[Any]] = []
    for n, ax in enumerate(fig.axes, start=1):
        if not ax.get_visible() or not ax.has_data() or ax.get_label() == "<colorbar>":
            continue  # a colorbar's axes draw its scale, not data
        head = [ax.get_title() or f"panel {n}", ax.get_xlabel(), ax.get_ylabel()]
        cx = _Categories(ax.get_xticks(), ax.get_xticklabels())
        cy = _Categories(ax.get_yticks(), ax.get_yticklabels())

        def add(kind: str, series: str, x, y, y2: Any = "", head=head, cx=cx, cy=cy) -> None:
            rows.append([*head, kind, series, _value(cx(x)), _value(cy(y)), _value(y2)])

        for line in ax.get_lines():
            for x, y in zip(np.atleast_1d(line.get_xdata()), np.atleast_1d(line.get_ydata())):
                add("line", _label(line), x, y)
        bars = {id(p): c for c in ax.containers if isinstance(c, BarContainer) for p in c}
        for patch in ax.patches:
            if isinstance(patch, Rectangle) and id(patch) in bars:
                bar = bars[id(patch)]
                if getattr(bar, "orientation", "vertical") == "horizontal":  # barh: y the category
                    rows.append(
                        [
                            *head,
                            "bar",
                            _label(bar),
                            _value(patch.get_width()),
                            _value(cy(patch.get_y() + patch.get_height() / 2)),
                            _value(patch.get_x()),
                        ]
                    )
                else:
                    rows.append(
                        [
                            *head,
                            "bar",
                            _label(bar),
                            _value(cx(patch.get_x() + patch.get_width() / 2)),
                            _value(patch.get_height()),
                            _value(patch.get_y()),
                        ]
                    )
        for coll in ax.collections:
            series = _label(coll)
            if isinstance(coll, QuadMesh):
                values = np.asarray(coll.get_array())
                if values.ndim == 2:
                    for (r, c), v in np.ndenumerate(values):
                        add("cell", series, c + 0.5, r + 0.5, v)
            elif isinstance(coll, PathCollection):
                for x, y in coll.get_offsets():
                    add("points", series, x, y)
            elif isinstance(coll, LineCollection):
                for seg in coll.get_segments():
                    if len(seg) >= 2:
                        add("segment", series, seg[0][0], seg[0][1], seg[-1][1])
            elif isinstance(coll, PolyCollection):
                for path in coll.get_paths():
                    for x, y in path.vertices:
                        add("band", series, x, y)
        for image in ax.images:
            if isinstance(image, AxesImage):
                for (r, c), v in np.ndenumerate(np.asarray(image.get_array())):
                    add("cell", _label(image), c, r, v)
        if len(rows) > MAX_ROWS:
            del rows[MAX_ROWS:]
            rows.append([*head, "cut", f"more than {MAX_ROWS:,} rows", "", "", ""])
            break
    return rows


def write(fig: Figure, path: Path) -> Path:
    """``fig``'s drawn data as CSV at ``path``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows_of(fig))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out.getvalue(), encoding="utf-8")
    return path
