"""The results site (DESIGN.md section 9a): ``reports/site/``, built by the ``report`` stage from
the pipeline's outputs, opened from disk (``reports/site/index.html``) with no server and no
network.

What it holds:

- ``index.html``: every market instance (its market, the paper and seed it reproduces, episodes,
  players, the leader of its board), the standing across instances (``reports/overall``), the
  Economic Alignment Score table and what it costs to rate a model (``report.costs``);
- ``<instance>.html``, one per instance: what the market is and which seed it reproduces, the
  board with its 95% intervals, every figure with its caption, every table (the figures stage's,
  the Spearman table of the stats stage, mean metrics per player), the run's size (episodes,
  decisions and invalid answers, LLM calls, re-asks, tokens and their cost at the listed prices)
  and the instance's params as validated (defaults filled in), with the models its LLM seats use;
- ``<instance>/``: copies of its figures, tables (``.md``, ``.tex``) and board (``.csv``), so the
  folder is whole wherever it is copied; ``style.css``.

Captions come from ``markets/<kind>/figures.yaml`` (``report.captions``); a figure or table
without one is shown marked as such. Tables are the figures stage's Markdown files rendered by
markdown-it-py; nothing else is parsed by hand.

Reproducible: the pages are a pure function of the stage's declared inputs (no timestamps, no
absolute paths, sorted everything), so two machines with the same results build the same bytes.
The one exception is kept out of the hash: how the run went (wall time, dollars spent, cache hits;
``report.runinfo``) differs between runs that give identical results, so it is written to
``run-info.js``, which ``.dvcignore`` excludes from the site's hash and the pages load with a
plain ``<script>`` (allowed from disk, unlike ``fetch``); without it they say it was not recorded.

Replaced whole: the site is built in a folder beside ``reports/site`` and swapped in only when
complete (``core.files.folder_replaced``), so a failure (a full disk, a read-only folder, an
unreadable input) leaves the earlier site exactly as it was, and the error names the file of the
site that could not be written (``reports/site/<instance>/figures/<name>.png``), not its source.

No JavaScript library ships with the site: everything is static HTML (a table library's module
would not even load from ``file://``), so there is nothing to go stale or offline.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
import yaml
from markdown_it import MarkdownIt
from markupsafe import escape

from marketarena.config import Params
from marketarena.core.files import folder_replaced
from marketarena.core.reader import EpisodeReader
from marketarena.money import usd
from marketarena.report import captions as captions_mod
from marketarena.report.costs import cost_table
from marketarena.report.runinfo import run_info

#: what a failed ``report`` stage leaves safe (its error line says so: ``faults.one_line_errors``)
KEPT = "the earlier reports/site is left as it was"
ASSETS = ("style.css",)
RUN_INFO = "run-info.js"  # excluded from the site's hash by .dvcignore
MISSING = "–"


def number(value: Any) -> str:
    """A number as the site prints it: integers as such, others with 3 significant-ish digits
    (3 decimals below 10, 2 below 100, 1 below 1,000, none above); NaN / None as ``–``."""
    if value is None or isinstance(value, str):
        return MISSING if value in (None, "") else value
    if isinstance(value, bool):
        return str(value)
    x = float(value)
    if math.isnan(x):
        return MISSING
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    decimals = 3 if abs(x) < 10 else 2 if abs(x) < 100 else 1 if abs(x) < 1000 else 0
    text = f"{x:,.{decimals}f}"
    return text[1:] if text.startswith("-") and text.strip("-0.,") == "" else text


@dataclass
class Board:
    """A table of numbers as shown: columns, and rows of cells; ``x_lo`` / ``x_hi`` pairs are
    folded into one ``x [lo, hi]`` cell beside their value column (``x`` or ``x_mean``), or shown
    alone where there is none (a rank interval)."""

    columns: list[str]
    rows: list[list[str]]

    @classmethod
    def of(cls, df: pd.DataFrame) -> "Board":
        cols = list(df.columns)
        pairs = {c[:-3] for c in cols if c.endswith("_lo") and f"{c[:-3]}_hi" in cols}
        value_of = {b: next((v for v in (b, f"{b}_mean") if v in cols), None) for b in pairs}
        shown: list[tuple[str, str | None, str | None]] = []  # (header, value column, interval base)
        for c in cols:
            if c[:-3] in pairs and c.endswith(("_lo", "_hi")):
                if value_of[c[:-3]] is None and c.endswith("_lo"):
                    shown.append((f"{c[:-3]} (95% interval)", None, c[:-3]))
                continue
            base = next((b for b, v in value_of.items() if v == c), None)
            shown.append((f"{c} (95% interval)" if base else c, c, base))
        rows = []
        for record in df.to_dict(orient="records"):
            row = []
            for _, value, base in shown:
                cell = number(record[value]) if value else ""
                if base:
                    interval = f"[{number(record[base + '_lo'])}, {number(record[base + '_hi'])}]"
                    cell = f"{cell} {interval}" if cell else interval
                row.append(cell)
            rows.append(row)
        return cls([h for h, _, _ in shown], rows)

    def html(self, css_class: str = "") -> str:
        head = "".join(f"<th>{escape(c)}</th>" for c in self.columns)
        body = "\n".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>"
                         for row in self.rows)
        attr = f' class="{css_class}"' if css_class else ""
        return f"<table{attr}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>\n"


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


@dataclass
class InstancePage:
    name: str
    kind: str
    info: captions_mod.MarketInfo
    board_note: str
    board: Board | None
    figures: list[Item]
    tables: list[Item]
    size: dict[str, Any]
    params_yaml: str
    models_yaml: str
    episodes: int
    players: int
    leader: str
    run: dict[str, Any]  # how the run went (runinfo): run-info.js, not the page
    problems: list[str] = field(default_factory=list)
    #: an imported instance: (its source's description, the import report as label -> value)
    imported: tuple[captions_mod.SourceInfo, dict[str, str]] | None = None


def _read_csv(path: Path) -> pd.DataFrame:
    """A CSV the pipeline wrote, or an empty frame when it is missing or has no columns (the
    overall board when no player is in two instances)."""
    try:
        return pd.read_csv(path)
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("marketarena.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["number"] = number
    env.filters["usd"] = usd
    return env


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


def run_size(reader: EpisodeReader, params: Params) -> dict[str, Any]:
    """The results' size, a pure function of the logs: episodes, decisions (every answer attempt)
    and invalid ones, and per model alias the LLM calls, answers (first asks plus re-asks), invalid
    calls, tokens (with the prompt tokens the provider served from its prompt cache,
    ``llm/caching.py``) and their cost at the prices ``params.models`` lists, cached prompt tokens
    at its cached-input price (what the answers would cost bought anew, whether or not this run
    took them from the response cache)."""
    decisions = reader.table("decisions", ["valid"]) if len(reader) else pd.DataFrame()
    calls = reader.table("llm_calls", ["model", "attempts", "valid", "prompt_tokens",
                                       "completion_tokens", "cached_prompt_tokens"]
                         ) if len(reader) else pd.DataFrame()
    models = []
    if len(calls):
        for alias, g in calls.groupby("model", sort=True):
            spec = params.models.get(str(alias))
            p, c = int(g["prompt_tokens"].sum()), int(g["completion_tokens"].sum())
            cached = int(g["cached_prompt_tokens"].fillna(0).sum())
            models.append({"alias": str(alias), "calls": len(g), "answers": int(g["attempts"].sum()),
                           "invalid": int((~g["valid"].astype(bool)).sum()),
                           "prompt_tokens": p, "cached_prompt_tokens": cached,
                           "completion_tokens": c,
                           "list_cost_usd": spec.cost_usd(p, c, cached) if spec else None})
    return {"episodes": len(reader), "decisions": len(decisions),
            "invalid_decisions": int((~decisions["valid"].astype(bool)).sum()) if len(decisions) else 0,
            "models": models}


def _tables(instance: str, kind: str, paths, site: Path, md: MarkdownIt) -> list[Item]:
    """The figures stage's tables of an instance (``reports/tables/<instance>/*.md``), in the
    order of the market's captions, copied beside the page with their LaTeX."""
    captions = captions_mod.load(kind)
    order = {key: i for i, key in enumerate(captions.tables)}
    sources = sorted((paths.reports / "tables" / instance).glob("*.md"),
                     key=lambda p: (order.get(captions_mod.table_key(instance, p.stem), len(order)), p.stem))
    return [_table(src, instance, site, md, captions.tables.get(captions_mod.table_key(instance, src.stem)))
            for src in sources]


def _table(src: Path, instance: str, site: Path, md: MarkdownIt,
           entry: captions_mod.Caption | None) -> Item:
    rel = f"{instance}/tables/{src.name}"
    _copy(src, site / rel)
    tex, tex_rel = src.with_suffix(".tex"), None
    if tex.is_file():
        tex_rel = f"{instance}/tables/{tex.name}"
        _copy(tex, site / tex_rel)
    return Item(src.stem, entry.title if entry else src.stem, entry.caption if entry else "",
                entry is not None, rel, html=md.render(src.read_text(encoding="utf-8")), tex=tex_rel)


SPEARMAN = captions_mod.Caption(
    title="Spearman correlations",
    caption="Spearman's ρ of the ranking metric with every other metric over seats, with cluster "
            "bootstrap intervals over episodes and within-episode permutation p-values (the "
            "stats stage).")


def _figures(instance: str, kind: str, paths, site: Path) -> list[Item]:
    captions = captions_mod.load(kind)
    order = {key: i for i, key in enumerate(captions.figures)}
    pngs = sorted((paths.reports / "figures" / instance).glob("*.png"),
                  key=lambda p: (order.get(captions.figure_key(p.stem), len(order)), p.stem))
    items = []
    for src in pngs:
        entry = captions.figure(src.stem)
        rel = f"{instance}/figures/{src.name}"
        _copy(src, site / rel)
        items.append(Item(src.stem, entry.title if entry else src.stem,
                          entry.caption if entry else "", entry is not None, rel))
    return items


def _metrics_table(paths, instance: str, site: Path) -> Item | None:
    """Mean metrics per player (``reports/metrics/<instance>.json``) as one more table."""
    path = paths.reports / "metrics" / f"{instance}.json"
    agents = json.loads(path.read_text(encoding="utf-8")).get("agents", {}) if path.is_file() else {}
    if not agents:
        return None
    rel = f"{instance}/metrics.json"
    _copy(path, site / rel)
    frame = pd.DataFrame.from_dict(agents, orient="index").sort_index().reset_index(names="player")
    return Item(f"{instance}_metrics", "Mean metrics per player",
                "Every metric of the instance, mean over the player's seats and episodes "
                "(the metrics stage).", True, rel, html=Board.of(frame).html())


def instance_page(instance: str, params: Params, paths, site: Path, md: MarkdownIt) -> InstancePage:
    mp = params.markets[instance]
    kind = mp.market
    captions = captions_mod.load(kind)
    board_path = paths.reports / "leaderboards" / f"{instance}.csv"
    board = None
    leader = MISSING
    frame = _read_csv(board_path)
    if len(frame.columns):
        board = Board.of(frame)
        _copy(board_path, site / instance / "board.csv")
        if len(frame):  # boards are sorted best first
            who = next((c for c in ("name", "player") if c in frame.columns), frame.columns[0])
            leader = str(frame.iloc[0][who])
    figures = _figures(instance, kind, paths, site)
    tables = _tables(instance, kind, paths, site, md)
    problems = captions_mod.missing(kind, instance, [f.stem for f in figures], [t.stem for t in tables])
    spearman = paths.reports / "stats" / instance / f"{instance}_spearman.md"
    if spearman.is_file():
        tables.append(_table(spearman, instance, site, md, SPEARMAN))
    metrics = _metrics_table(paths, instance, site)
    if metrics is not None:
        tables.append(metrics)
    reader = EpisodeReader(paths.episodes(instance))
    dumped = mp.model_dump(mode="json", by_alias=True)
    aliases = sorted({e.model for e in mp.roster if e.kind == "llm" and e.model})
    models = {a: params.models[a].model_dump(mode="json", exclude={"alias"})
              for a in aliases if a in params.models}
    imported = None
    if mp.imported:
        from marketarena.importing import read_report

        record = read_report(paths.episodes(instance)) or {}
        about = captions.sources.get(mp.source.format) or captions_mod.SourceInfo(
            title=f"Imported games ({mp.source.format})", about="")
        facts = {"format": mp.source.format, "source": mp.source.path,
                 "episodes": number(record.get("episodes"))}
        facts.update({k.replace("_", " "): _fact(v)
                      for k, v in sorted((record.get("report") or {}).items())})
        imported = (about, facts)
    return InstancePage(
        imported=imported,
        name=instance, kind=kind, info=captions.market,
        board_note=captions.board or "TrueSkill by player over episodes (one free-for-all match "
                                     "per episode), with 95% bootstrap intervals over episodes.",
        board=board, figures=figures, tables=tables, size=run_size(reader, params),
        params_yaml=yaml.safe_dump(dumped, sort_keys=False, allow_unicode=True, width=100),
        models_yaml=yaml.safe_dump(models, sort_keys=True, allow_unicode=True, width=100) if models else "",
        episodes=len(reader), players=len(mp.roster), leader=leader, run=run_info(paths.episodes(instance)),
        problems=problems)


def _fact(value: Any) -> str:
    """An import report's value as one line of the page: numbers as :func:`number`, lists
    joined, mappings as ``key value`` pairs (at most 20 items, then how many more)."""
    if isinstance(value, dict):
        items = [f"{k} {_fact(v)}" for k, v in sorted(value.items())]
        return "; ".join(items[:20]) + (f"; … {len(items) - 20} more" if len(items) > 20 else "")
    if isinstance(value, list):
        items = [_fact(v) for v in value]
        return ", ".join(items[:20]) + (f", … {len(items) - 20} more" if len(items) > 20 else "")
    return number(value)


def _overall(paths, md: MarkdownIt) -> list[Item]:
    """The standing across instances and the EAS table (``reports/overall``): the CSV as a
    table under the stage's note, or the note alone when the CSV is empty."""
    out = []
    folder = paths.reports / "overall"
    for stem, title in (("overall", "Standing across instances"), ("eas", "Economic Alignment Score")):
        csv, note = folder / f"{stem}.csv", folder / f"{stem}.md"
        frame = _read_csv(csv)
        text = note.read_text(encoding="utf-8") if note.is_file() else ""
        table_in_text = any(line.lstrip().startswith("|") for line in text.splitlines())
        if len(frame):  # the CSV, its intervals folded; the note above it unless it is the table
            html = ("" if table_in_text else md.render(text)) + Board.of(frame).html()
        else:
            html = md.render(text)
        if html:
            out.append(Item(stem, title, "", True, "", html=html))
    return out


def build_site(params: Params, paths) -> tuple[list[Path], list[str]]:
    """Write ``reports/site/`` afresh, replacing the earlier one whole or not at all (see the
    module docstring); returns the files written and the figures and tables that lack a caption
    (:func:`captions.missing`)."""
    site = paths.reports / "site"
    with folder_replaced(site) as new:
        env, md = _environment(), _markdown()
        pages = [instance_page(i, params, paths, new, md) for i in params.markets]
        nav = [(p.name, p.info.title) for p in pages]
        for asset in ASSETS:
            _copy(Path(__file__).parent / "static" / asset, new / asset)
        _write(new / "index.html", env.get_template("index.html.j2").render(
            pages=pages, nav=nav, here=None, overall=_overall(paths, md),
            costs=cost_table(params)))
        for page in pages:
            _write(new / f"{page.name}.html", env.get_template("instance.html.j2").render(
                page=page, nav=nav, here=page.name))
        runs = {p.name: p.run for p in pages}
        _write(new / RUN_INFO,
               "// How the run went (not results; excluded from the site's hash by .dvcignore)\n"
               f"window.RUN_INFO = {json.dumps(runs, indent=1, sort_keys=True)};\n")
    return sorted(p for p in site.rglob("*") if p.is_file()), [x for p in pages for x in p.problems]
