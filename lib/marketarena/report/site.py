"""The results site: ``reports/site/``, built by the ``report`` stage from the pipeline's outputs,
opened from disk (``reports/site/index.html``) with no server and no network.

What it holds:

- ``index.html``: every market instance (its market, the paper and seed it reproduces, episodes,
  players, the leader of its board with its headline score), the standing across instances
  (``reports/overall``), the Economic Alignment Score table and what it costs to rate a model
  (``report.costs``);
- ``<instance>.html``, one per instance, in :data:`SECTIONS` (add a section there and a template
  ``templates/sections/<id>.html.j2``): its result in a sentence (``report.board.summary``), what the
  market is, the board (rank, player, the market's headline column with its 95% interval, games
  and the validity columns by default; the other columns behind a switch), every player linked to
  its page in the episode viewer (``marketarena view`` at :data:`VIEWER`), the head-to-head
  matrix (:func:`versus`) with "compare two players", every figure with its caption, every table
  (the figures stage's, the Spearman table of the stats stage, mean metrics per player), the run's
  size (episodes, decisions and invalid answers, LLM calls, re-asks, tokens and their cost at the
  listed prices) and the instance's params as validated, with the models its LLM seats use;
- ``<instance>/``: copies of its figures with the data each draws (CSV), its tables (``.md``,
  ``.tex`` and ``.csv``), its board, head-to-head pairs, metrics and run as CSV, so the folder is
  whole wherever it is copied; ``style.css`` and ``pages.js`` (sorting on a header click, compare
  two players, the run information: a few lines of plain JavaScript, no library).

Captions and each market's headline come from ``markets/<kind>/figures.yaml``
(``report.captions``); a figure or table without a caption is shown marked as such. Tables are the
figures stage's Markdown files rendered by markdown-it-py; nothing else is parsed by hand. The
figures and tables are gathered and copied by ``items.py``.

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

Everything from the logs (player names, LLM answers) is hostile text: escaped in the pages, and
JSON for a script only through ``report.safe.script_json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
import yaml
from markdown_it import MarkdownIt

from marketarena.config import Params
from marketarena.core.files import folder_replaced
from marketarena.core.reader import EpisodeReader
from marketarena.money import usd
from marketarena.report import captions as captions_mod
from marketarena.report.board import (
    MAIN_COLUMNS,
    MISSING,
    VIEWER,
    Board,
    headline_text,
    llm_ranks,
    number,
    roles,
    summary,
    viewer_url,
    who_column,
)
from marketarena.report.costs import cost_table
from marketarena.report.items import (
    SPEARMAN,
    Item,
    _beside,
    _copy,
    _figures,
    _metrics_table,
    _table,
    _tables,
    _write,
    frame_csv,
)
from marketarena.report.profiles import model_pages
from marketarena.report.runinfo import run_info
from marketarena.report.safe import script_json

#: what a failed ``report`` stage leaves safe (its error line says so: ``faults.one_line_errors``)
KEPT = "the earlier reports/site is left as it was"
ASSETS = ("style.css", "pages.js")
RUN_INFO = "run-info.js"  # excluded from the site's hash by .dvcignore


@dataclass(frozen=True)
class Section:
    """One section of an instance page: its anchor, its heading (also the page's table of
    contents) and the template that renders it (``templates/sections/<id>.html.j2``), given
    ``page``. Add a section by adding it to :data:`SECTIONS`."""

    id: str
    title: str

    @property
    def template(self) -> str:
        return f"sections/{self.id}.html.j2"


#: an instance page's sections, in order
SECTIONS = [
    Section("board", "Board"),
    Section("versus", "Head to head"),
    Section("figures", "Figures"),
    Section("tables", "Tables"),
    Section("run", "Run"),
    Section("params", "Params"),
]


@dataclass
class Versus:
    """The head-to-head matrix of a group of players (a lemon board's role, or every player)."""

    group: str
    players: list[str]  # in board order
    cells: dict[tuple[str, str], dict[str, Any]]  # (row, column) -> games, win_share, ...
    cut: int = 0  # players left out (below the board's first MAX_VERSUS)

    def cell(self, a: str, b: str) -> dict[str, Any] | None:
        return self.cells.get((a, b))


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
    summary: str = ""  # the page's result in a sentence (Markup: names escaped)
    versus: list[Versus] = field(default_factory=list)
    #: every pair that met (player, opponent, games, win_share, mean_difference): the page's
    #: "compare two players" reads it
    versus_data: list[dict[str, Any]] = field(default_factory=list)
    sections: list[Section] = field(default_factory=lambda: list(SECTIONS))
    #: where the LLM players land: (name, rank, players on its board or its role's)
    llm_ranks: list[tuple[str, int, int]] = field(default_factory=list)
    viewer: str = VIEWER

    def viewer_url(self, *parts: str, **query: str) -> str:
        return viewer_url(self.name, *parts, **query)


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
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("marketarena.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["number"] = number
    env.filters["usd"] = usd
    env.filters["tojson_script"] = script_json
    env.globals["viewer"] = VIEWER  # the footer of every page links the episode viewer
    return env


def run_size(reader: EpisodeReader, params: Params) -> dict[str, Any]:
    """The results' size, a pure function of the logs: episodes, decisions (every answer attempt)
    and invalid ones, and per model alias the LLM calls, answers (first asks plus re-asks), invalid
    calls, tokens (with the prompt tokens the provider served from its prompt cache,
    ``llm/prompt_cache.py``) and their cost at the prices ``params.models`` lists, cached prompt tokens
    at its cached-input price (what the answers would cost bought anew, whether or not this run
    took them from the response cache)."""
    decisions = reader.table("decisions", ["valid"]) if len(reader) else pd.DataFrame()
    calls = (
        reader.table(
            "llm_calls",
            [
                "model",
                "attempts",
                "valid",
                "prompt_tokens",
                "completion_tokens",
                "cached_prompt_tokens",
            ],
        )
        if len(reader)
        else pd.DataFrame()
    )
    models = []
    if len(calls):
        for alias, g in calls.groupby("model", sort=True):
            spec = params.models.get(str(alias))
            p, c = int(g["prompt_tokens"].sum()), int(g["completion_tokens"].sum())
            cached = int(g["cached_prompt_tokens"].fillna(0).sum())
            models.append(
                {
                    "alias": str(alias),
                    "calls": len(g),
                    "answers": int(g["attempts"].sum()),
                    "invalid": int((~g["valid"].astype(bool)).sum()),
                    "prompt_tokens": p,
                    "cached_prompt_tokens": cached,
                    "completion_tokens": c,
                    "list_cost_usd": spec.cost_usd(p, c, cached) if spec else None,
                }
            )
    return {
        "episodes": len(reader),
        "decisions": len(decisions),
        "invalid_decisions": int((~decisions["valid"].astype(bool)).sum()) if len(decisions) else 0,
        "models": models,
    }


MAX_VERSUS = 30


def versus(
    instance: str, kind: str, frame: pd.DataFrame, paths, site: Path
) -> tuple[list[Versus], list[dict[str, Any]]]:
    """The head-to-head matrices of an instance (``report.headtohead``), one per board role,
    players in board order, and every pair that met (also written to ``<instance>/versus.csv``)."""
    from marketarena.core.registry import market_kind
    from marketarena.report.headtohead import game_scores, head_to_head

    path = paths.metrics(instance) / "agents.parquet"
    who = who_column(frame)
    analysis = market_kind(kind).analysis
    if who is None or not path.is_file():
        return [], []
    agents = pd.read_parquet(path)
    if analysis.rank_by not in agents.columns:
        return [], []
    scores = game_scores(agents, analysis.rank_by, analysis.seat_score)
    out, pairs = [], []
    for role, rows in roles(frame):
        players = [str(p) for p in rows[who]]
        long = head_to_head(scores, players)
        pairs.append(long.assign(group=role) if role else long)
        shown = players[:MAX_VERSUS]
        cells = {
            (r.player, r.opponent): {
                "games": r.games,
                "win_share": r.win_share,
                "mean_difference": r.mean_difference,
            }
            for r in long.itertuples(index=False)
            if r.player in shown and r.opponent in shown
        }
        out.append(Versus(str(role), shown, cells, len(players) - len(shown)))
    every = pd.concat(pairs, ignore_index=True)
    _write(site / instance / "versus.csv", frame_csv(every))
    return out, every.to_dict(orient="records")


def _source_info(mp, captions: captions_mod.MarketCaptions) -> captions_mod.SourceInfo | None:
    """What the market's captions say of an imported instance's source (None: not imported)."""
    return captions.sources.get(mp.source.format) if mp.imported else None


def headline_of(mp) -> captions_mod.Headline:
    """The column an instance's board is read by first: its source's (an imported instance), else
    its market's (``markets/<kind>/figures.yaml``)."""
    captions = captions_mod.load(mp.market)
    about = _source_info(mp, captions)
    return about.headline if about and about.headline else captions.headline


def instance_page(instance: str, params: Params, paths, site: Path, md: MarkdownIt) -> InstancePage:
    mp = params.markets[instance]
    kind = mp.market
    captions = captions_mod.load(kind)
    board_path = paths.reports / "leaderboards" / f"{instance}.csv"
    board = None
    leader = MISSING
    frame = _read_csv(board_path)
    about = _source_info(mp, captions)
    headline = headline_of(mp)
    if len(frame.columns):
        who = who_column(frame)
        games = "games" if "games" in frame.columns else "episodes"
        main = {"rank", who or "", headline.column, games, *MAIN_COLUMNS}
        if "provisional" in frame.columns and frame["provisional"].astype(bool).any():
            main.add("provisional")  # shown where some player's rank is provisional
        board = Board.of(frame, main=main, link=lambda name: viewer_url(instance, "p", name))
        _copy(board_path, site / instance / "board.csv")
        if len(frame):  # boards are sorted best first
            top = frame.iloc[0]
            leader = str(top[who or frame.columns[0]])
            if headline.column in frame.columns:
                leader += f" ({headline_text(top, headline.column)})"
    figures = _figures(instance, kind, paths, site, _beside(params, instance, paths))
    tables = _tables(instance, kind, paths, site, md)
    problems = captions_mod.missing(
        kind, instance, [f.stem for f in figures], [t.stem for t in tables]
    )
    spearman = paths.reports / "stats" / instance / f"{instance}_spearman.md"
    if spearman.is_file():
        tables.append(_table(spearman, instance, site, md, SPEARMAN))
    metrics = _metrics_table(paths, instance, site)
    if metrics is not None:
        tables.append(metrics)
    matrices, pairs = versus(instance, kind, frame, paths, site)
    reader = EpisodeReader(paths.episodes(instance))
    size = run_size(reader, params)
    if size["models"]:
        _write(site / instance / "run.csv", frame_csv(pd.DataFrame(size["models"])))
    dumped = mp.model_dump(mode="json", by_alias=True)
    aliases = sorted({e.model for e in mp.roster if e.kind == "llm" and e.model})
    models = {
        a: params.models[a].model_dump(mode="json", exclude={"alias"})
        for a in aliases
        if a in params.models
    }
    imported = None
    if mp.imported:
        from marketarena.core.sources import read_report

        record = read_report(paths.episodes(instance)) or {}
        about = captions.sources.get(mp.source.format) or captions_mod.SourceInfo(
            title=f"Imported games ({mp.source.format})", about=""
        )
        facts = {
            "format": mp.source.format,
            "source": mp.source.path,
            "episodes": number(record.get("episodes")),
        }
        facts.update(
            {k.replace("_", " "): _fact(v) for k, v in sorted((record.get("report") or {}).items())}
        )
        imported = (about, facts)
    return InstancePage(
        imported=imported,
        name=instance,
        kind=kind,
        info=captions.market,
        board_note=(about.board if about and about.board else captions.board)
        or (
            "TrueSkill by player over episodes (one free-for-all match per episode), with 95% "
            "bootstrap intervals over episodes."
        ),
        board=board,
        figures=figures,
        tables=tables,
        size=size,
        params_yaml=yaml.safe_dump(dumped, sort_keys=False, allow_unicode=True, width=100),
        models_yaml=yaml.safe_dump(models, sort_keys=True, allow_unicode=True, width=100)
        if models
        else "",
        episodes=len(reader),
        players=len(frame) if len(frame) else len(mp.roster),
        leader=leader,
        run=run_info(paths.episodes(instance)),
        problems=problems,
        summary=summary(frame, headline),
        versus=matrices,
        versus_data=pairs,
        llm_ranks=llm_ranks(frame),
    )


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


def _overall(
    paths, md: MarkdownIt, site: Path, pages: dict[str, str], matrix: pd.DataFrame
) -> list[Item]:
    """The standing across instances, the models x studies matrix, the studies' agreement (its
    figure above its table) and the EAS table (``reports/overall``): the CSV as a table under the stage's note, or the note alone when the
    CSV is empty; the matrix as ``matrix`` (``overall.matrix_wide``) under its caption, each model
    linked to its page (``pages``: model key -> page, ``report.profiles``)."""
    out = []
    folder = paths.reports / "overall"
    for stem, title in (
        ("overall", "Standing across instances"),
        ("matrix", "Models across studies"),
        ("agreement", "Do the studies agree?"),
        ("eas", "Economic Alignment Score"),
    ):
        source, note = folder / f"{stem}.csv", folder / f"{stem}.md"
        frame = _read_csv(source)
        text = note.read_text(encoding="utf-8") if note.is_file() else ""
        table_in_text = any(line.lstrip().startswith("|") for line in text.splitlines())
        href = None
        if stem == "matrix" and len(frame):  # models x instances, each model to its page
            caption = md.render(text.split("\n\n")[0])
            board = Board.of(matrix, link=lambda key: f"{pages[key]}.html")
            html = caption + board.html()
            href = f"{stem}.csv"
            _copy(source, site / href)
        elif len(frame):  # the CSV, its intervals folded; the note above it unless it is the table
            lines = text.splitlines()
            table_end = max((i for i, line in enumerate(lines) if line.startswith("|")), default=-1)
            html = ("" if table_in_text else md.render(text)) + Board.of(frame).html()
            if table_in_text:  # what the note says after its table (the unplaced model names)
                html += md.render("\n".join(lines[table_end + 1 :]))
            href = f"{stem}.csv"
            _copy(source, site / href)
        else:
            html = md.render(text)
        figure = folder / f"{stem}.png"
        if html and figure.is_file():  # the agreement's figure above its table
            _copy(figure, site / figure.name)
            html = f'<figure><img src="{figure.name}" alt="{title}"></figure>\n' + html
        if html:
            out.append(Item(stem, title, "", True, "", html=html, csv=href))
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
        headlines = {i: headline_of(params.markets[i]) for i in params.markets}
        models, matrix = model_pages(paths.reports, headlines, {p.name for p in pages})
        _write(
            new / "index.html",
            env.get_template("index.html.j2").render(
                pages=pages,
                nav=nav,
                here=None,
                overall=_overall(paths, md, new, {m.key: m.slug for m in models}, matrix),
                costs=cost_table(params),
            ),
        )
        for model in models:
            _write(
                new / f"{model.slug}.html",
                env.get_template("model.html.j2").render(model=model, nav=nav, here=None),
            )
        for page in pages:
            _write(
                new / f"{page.name}.html",
                env.get_template("instance.html.j2").render(page=page, nav=nav, here=page.name),
            )
        runs = {p.name: p.run for p in pages}
        _write(
            new / RUN_INFO,
            "// How the run went (not results; excluded from the site's hash by .dvcignore)\n"
            f"window.RUN_INFO = {json.dumps(runs, indent=1, sort_keys=True)};\n",
        )
    return sorted(p for p in site.rglob("*") if p.is_file()), [x for p in pages for x in p.problems]
