"""What the results site says about each market, its figures and its tables: one file per market,
``markets/<kind>/figures.yaml``, beside the market's code and read only by the site.

The file names the market (``market``: title, the paper it reproduces, its seed number, a paragraph
on what competes), optionally what its board ranks by (``board``), its headline column
(``headline``: shown first on the board and stated in the page's opening sentence; TrueSkill μ
unless it says otherwise), what the episode viewer must know about its tables (``viewer``: values
that stand for "none") and, per format of published
games it imports (``sources``), what an imported instance's page says about them, and gives every figure stem
(``reports/figures/<instance>/<stem>.png``) and every table key (``reports/tables/<instance>/
<instance>_<key>.md``) a title and a caption, worded as README.md's "What the pipeline produces".
It is not code: folders are hashed without it (``core.logs.NOT_CODE``), so editing a caption
re-runs only the ``report`` stage.

A figure or table without an entry still appears on the site, marked as lacking its caption;
:func:`missing` lists such stems with what to add where (``tests/contract`` runs it on every
market's tiny run).
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

FILE = "figures.yaml"


class Caption(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    caption: str


class MarketInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    source: str  # the paper (or papers) it reproduces
    seed: str  # the number of the seed document it reproduces (e.g. "002")
    about: str


class SourceInfo(BaseModel):
    """What an imported instance's page says about its games (one per ``source.format``), and
    where it differs from a played instance's: its board's headline and note, and, per figure,
    the figure of a played instance of the market drawn from our own runs to show beside it
    (``beside``: imported stem -> played stem)."""

    model_config = ConfigDict(extra="forbid")
    title: str  # whose games, e.g. "BAZAAR's published games"
    about: str  # where they come from, what is in them, what differs from our own runs
    headline: "Headline | None" = None
    board: str | None = None
    beside: dict[str, str] = {}


class Headline(BaseModel):
    """The board's headline: the column a reader looks at first (its ``_lo`` / ``_hi`` interval
    shown beside it), named in words for the page's sentence."""

    model_config = ConfigDict(extra="forbid")
    column: str  # a column of reports/leaderboards/<instance>.csv, e.g. mu, eas_mean
    label: str  # e.g. "TrueSkill μ (games ranked by CSα)"


SourceInfo.model_rebuild()


class ViewerInfo(BaseModel):
    """What the episode viewer needs to know about the market's tables."""

    model_config = ConfigDict(extra="forbid")
    #: per table and column, the value that means "none" (drawn as a gap in the timeline's
    #: plots, e.g. double_auction's price -1 for a round without a trade)
    missing: dict[str, dict[str, float]] = {}


class MarketCaptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    market: MarketInfo
    board: str | None = None  # what the board ranks by and how its intervals are made
    headline: Headline = Headline(column="mu", label="TrueSkill μ")
    viewer: ViewerInfo = ViewerInfo()
    sources: dict[str, SourceInfo] = {}  # imported instances, by source format
    figures: dict[str, Caption] = {}
    tables: dict[str, Caption] = {}

    def figure_key(self, stem: str) -> str | None:
        """The key of figure ``stem``'s caption: the stem itself, or a family ``<prefix>_*`` (one
        figure per budget, per cell, ...: ``fig4_priorities_*`` covers ``fig4_priorities_4000``),
        the longest prefix first; None when it has none."""
        if stem in self.figures:
            return stem
        families = [k for k in self.figures if k.endswith("_*") and stem.startswith(k[:-1])]
        return max(families, key=len) if families else None

    def figure(self, stem: str) -> Caption | None:
        """Figure ``stem``'s caption; a family's title gets the stem's own part appended in
        parentheses (``Priorities (4000)``)."""
        key = self.figure_key(stem)
        if key is None:
            return None
        entry = self.figures[key]
        if key == stem:
            return entry
        return Caption(title=f"{entry.title} ({stem[len(key) - 1 :]})", caption=entry.caption)


def path_of(kind: str) -> Path:
    """Where the captions of market ``kind`` live (its folder's :data:`FILE`)."""
    from marketarena.core.registry import market_kind

    return market_kind(kind).folder / FILE


@functools.cache
def load(kind: str) -> MarketCaptions:
    """The captions of market ``kind``; ``ValueError`` naming the file and the key when the file is
    missing or malformed."""
    path = path_of(kind)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(
            f"{path}: cannot read the market's captions ({exc.strerror or exc})"
        ) from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({exc})") from None
    try:
        return MarketCaptions.model_validate(data)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"{path}: {where}") from None


def table_key(instance: str, stem: str) -> str:
    """The captions key of table file stem ``<instance>_<key>`` (the stem itself otherwise)."""
    prefix = f"{instance}_"
    return stem[len(prefix) :] if stem.startswith(prefix) else stem


def missing(kind: str, instance: str, figures: list[str], tables: list[str]) -> list[str]:
    """One line per figure stem and table stem of an instance's outputs that ``kind``'s captions
    lack, saying which file to edit and what to add."""
    captions, path = load(kind), path_of(kind)
    out = []
    for stem in figures:
        if captions.figure(stem) is None:
            out.append(
                f"figure {stem!r} (reports/figures/{instance}/{stem}.png) has no caption: "
                f"add it to {path} under `figures:` as `{stem}: {{title: ..., caption: ...}}`"
            )
    for stem in tables:
        key = table_key(instance, stem)
        if key not in captions.tables:
            out.append(
                f"table {stem!r} (reports/tables/{instance}/{stem}.md) has no caption: "
                f"add it to {path} under `tables:` as `{key}: {{title: ..., caption: ...}}`"
            )
    return out
