"""TRANSITION ONLY (removed once every market declares a KIND): the old one-class plugin, as the
rules and the analysis in one object."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from marketarena.core.analysis import MarketAnalysis, read_metrics  # noqa: F401
from marketarena.core.rules import AGENT_COLUMNS, EpisodeSpec, MarketRules, Seat, episode_seed  # noqa: F401


class MarketPlugin(MarketRules, MarketAnalysis):
    source_formats: ClassVar[tuple[str, ...]] = ()
    source_params: ClassVar[dict[str, dict[str, Any]]] = {}

    def __init__(self) -> None:
        MarketAnalysis.__init__(self, self)

    def import_source(self, mp, source: Path, out: Path) -> dict:
        raise NotImplementedError


class LegacySource:
    analysis = None

    def __init__(self, plugin: MarketPlugin, fmt: str) -> None:
        self.plugin, self.format = plugin, fmt

    def import_games(self, mp, source: Path, out: Path) -> dict:
        return self.plugin.import_source(mp, source, out)
