"""The figures and tables of an instance page of the results site (``site.py``), each an
:class:`Item`: the figures stage's PNGs with the data each draws (and, for an imported instance,
the figure of a played instance to compare), its tables (Markdown rendered, LaTeX and CSV beside
them), the stats stage's Spearman table and the mean metrics per player, copied into the site in
the order of the market's captions. Every file of the site is written through :func:`_write` and
:func:`_copy`, so a failed write names the site's file."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from markdown_it import MarkdownIt

from marketarena.config import Params
from marketarena.report import captions as captions_mod
from marketarena.report.board import Board


@dataclass
class Item:
    """A figure or table of an instance page."""

    stem: str
    title: str
    caption: str
    captioned: bool
    href: str  # the copied file (PNG, or the table's Markdown)
    html: str = ""  # a table's rendering
    tex: str | None = None  # a table's LaTeX file
    csv: str | None = None  # a table's CSV, or the data drawn in a figure
    beside: tuple[str, str] | None = None  # a figure of our own runs to compare: (href, instance)


def _copy(src: Path, dest: Path) -> None:
    _write(dest, src.read_bytes())  # bytes only: no mtimes or modes that a hash could see


def _write(dest: Path, data: bytes | str) -> None:
    """``data`` (text as UTF-8) as the site's file ``dest``; an ``OSError`` names ``dest`` (a
    failed write names no file, a failed copy its source)."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(dest)) from exc


def _tables(instance: str, kind: str, paths, site: Path, md: MarkdownIt) -> list[Item]:
    """The figures stage's tables of an instance (``reports/tables/<instance>/*.md``), in the
    order of the market's captions, copied beside the page with their LaTeX."""
    captions = captions_mod.load(kind)
    order = {key: i for i, key in enumerate(captions.tables)}
    sources = sorted(
        (paths.reports / "tables" / instance).glob("*.md"),
        key=lambda p: (order.get(captions_mod.table_key(instance, p.stem), len(order)), p.stem),
    )
    return [
        _table(
            src, instance, site, md, captions.tables.get(captions_mod.table_key(instance, src.stem))
        )
        for src in sources
    ]


def markdown_csv(md: MarkdownIt, text: str) -> str:
    """The tables of a Markdown text as CSV (one after the other): each cell's text without its
    emphasis (the best / second-best marks), as the table shows it."""
    rows: list[list[str]] = []
    cell: list[str] | None = None
    for token in md.parse(text):
        if token.type == "tr_open":
            rows.append([])
        elif token.type in ("th_open", "td_open"):
            cell = []
        elif token.type == "inline" and cell is not None:
            cell.extend(
                c.content for c in token.children or () if c.type in ("text", "code_inline")
            )
        elif token.type in ("th_close", "td_close") and cell is not None:
            rows[-1].append("".join(cell))
            cell = None
    return csv_text(rows)


def csv_text(rows: list[list[Any]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def frame_csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.6g", lineterminator="\n")


def _table(
    src: Path, instance: str, site: Path, md: MarkdownIt, entry: captions_mod.Caption | None
) -> Item:
    rel = f"{instance}/tables/{src.name}"
    _copy(src, site / rel)
    tex, tex_rel = src.with_suffix(".tex"), None
    if tex.is_file():
        tex_rel = f"{instance}/tables/{tex.name}"
        _copy(tex, site / tex_rel)
    text = src.read_text(encoding="utf-8")
    csv_rel = f"{instance}/tables/{src.stem}.csv"
    _write(site / csv_rel, markdown_csv(md, text))
    return Item(
        src.stem,
        entry.title if entry else src.stem,
        entry.caption if entry else "",
        entry is not None,
        rel,
        html=md.render(text),
        tex=tex_rel,
        csv=csv_rel,
    )


SPEARMAN = captions_mod.Caption(
    title="Spearman correlations",
    caption="Spearman's ρ of the ranking metric with every other metric over seats, with cluster "
    "bootstrap intervals over episodes and within-episode permutation p-values (the "
    "stats stage).",
)


def _beside(params: Params, instance: str, paths) -> dict[str, tuple[Path, str]]:
    """For an imported instance: its figure stems -> (the figure of a played instance of the same
    market, that instance) to draw beside it (the market's captions, ``sources.<format>.beside``), the
    first played instance in params order that drew it."""
    mp = params.markets[instance]
    if not mp.imported:
        return {}
    about = captions_mod.load(mp.market).sources.get(mp.source.format)
    played = [i for i, m in params.markets.items() if m.market == mp.market and not m.imported]
    out = {}
    for stem, theirs in about.beside.items() if about else ():
        for other in played:
            png = paths.reports / "figures" / other / f"{theirs}.png"
            if png.is_file():
                out[stem] = (png, other)
                break
    return out


def _figures(
    instance: str, kind: str, paths, site: Path, beside: dict[str, tuple[Path, str]] | None = None
) -> list[Item]:
    captions = captions_mod.load(kind)
    order = {key: i for i, key in enumerate(captions.figures)}
    pngs = sorted(
        (paths.reports / "figures" / instance).glob("*.png"),
        key=lambda p: (order.get(captions.figure_key(p.stem), len(order)), p.stem),
    )
    items = []
    data = paths.figure_data(instance)
    for src in pngs:
        entry = captions.figure(src.stem)
        rel = f"{instance}/figures/{src.name}"
        _copy(src, site / rel)
        drawn, csv_rel = data / f"{src.stem}.csv", None
        if drawn.is_file():
            csv_rel = f"{instance}/figures/{src.stem}.csv"
            _copy(drawn, site / csv_rel)
        ours = None
        if beside and src.stem in beside:
            png, other = beside[src.stem]
            ours = (f"{instance}/figures/ours_{other}_{png.name}", other)
            _copy(png, site / ours[0])
        items.append(
            Item(
                src.stem,
                entry.title if entry else src.stem,
                entry.caption if entry else "",
                entry is not None,
                rel,
                csv=csv_rel,
                beside=ours,
            )
        )
    return items


def _metrics_table(paths, instance: str, site: Path) -> Item | None:
    """Mean metrics per player (``reports/metrics/<instance>.json``) as one more table."""
    path = paths.reports / "metrics" / f"{instance}.json"
    agents = (
        json.loads(path.read_text(encoding="utf-8")).get("agents", {}) if path.is_file() else {}
    )
    if not agents:
        return None
    rel = f"{instance}/metrics.json"
    _copy(path, site / rel)
    frame = pd.DataFrame.from_dict(agents, orient="index").sort_index().reset_index(names="player")
    _write(site / instance / "metrics.csv", frame_csv(frame))
    return Item(
        f"{instance}_metrics",
        "Mean metrics per player",
        "Every metric of the instance, mean over the player's seats and episodes "
        "(the metrics stage).",
        True,
        rel,
        html=Board.of(frame).html(),
        csv=f"{instance}/metrics.csv",
    )
