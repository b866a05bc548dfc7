"""The analysis of a market: what the pipeline computes from its episode logs.

The second part a market kind registers (``core.registry.MarketKind``; the first is its rules,
``core.rules.MarketRules``): the reference data its metrics need (an equilibrium, a truthful-play
table), the metric frames, the board, the figures and tables, the per-seat summary of one played
episode (``marketarena play``) and what the stopping rule's look rates. Everything here reads the
logs (``core.reader.EpisodeReader``) or what an earlier stage wrote from them, never a
simulator's memory, so anyone can audit a number from the logs.

*Required*: ``rank_by``, ``metric_columns``, :meth:`MarketAnalysis.compute_metrics`,
:meth:`MarketAnalysis.leaderboard` (``markets/_shared/analysis/boards.py`` holds the usual TrueSkill board),
:meth:`MarketAnalysis.summarize`. The rest has defaults: no reference, no figures, the stopping
rule rating every seat by ``rank_by``.

An analysis holds its market's rules (``self.rules``): a reference that plays games builds them
with the rules, as the simulate stage does. An imported instance is analysed by its source's
analysis where the source has one (``core.sources.MarketSource.analysis``), else by this one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from marketarena.core.params import MarketParams

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from marketarena.core.reader import EpisodeReader
    from marketarena.core.rules import MarketRules
    from marketarena.core.runner import EpisodeResult


def read_metrics(
    metrics_dir: Path, names: tuple[str, ...] | list[str]
) -> dict[str, "pd.DataFrame"]:
    """The metrics stage's tables ``<metrics_dir>/<name>.parquet`` a market's figures read."""
    import pandas as pd

    return {n: pd.read_parquet(Path(metrics_dir) / f"{n}.parquet") for n in names}


class MarketAnalysis:
    """Base class of a market's analysis; subclasses set the class attributes and override the
    hooks marked *required*."""

    #: per-agent metric that ranks players within an episode, and every metric column
    rank_by: ClassVar[str]
    metric_columns: ClassVar[tuple[str, ...]]
    #: how a player's seats combine into its score in one episode ("sum" or "mean")
    seat_score: ClassVar[str] = "sum"

    def __init__(self, rules: "MarketRules") -> None:
        self.rules = rules

    @property
    def kind(self) -> str:
        return self.rules.kind

    # ------------------------------------------------------------------ before the episodes
    def compute_reference(self, mp: MarketParams, out_dir: Path, workers: int = 1) -> dict | None:
        """Reference data for metrics (equilibria, a truthful-play table), written into
        ``out_dir``; the summary returned goes to ``summary.json``. None: none. A reference that
        plays games may spread them over ``workers`` processes (``execution.workers``); its result
        must not depend on how many."""
        return None

    # ------------------------------------------------------------------ after the episodes
    def compute_metrics(
        self, reader: "EpisodeReader", mp: MarketParams, data_dir: Path
    ) -> dict[str, "pd.DataFrame"]:
        """*Required*: metric frames from the logs alone; must include ``agents`` (one row per
        seat and episode with ``episode_id``, ``agent_id``, ``name`` and the metric columns)."""
        raise NotImplementedError

    def leaderboard(
        self, agents: "pd.DataFrame", mp: MarketParams, ratings: Any, stats: Any
    ) -> "pd.DataFrame":
        """*Required*: the instance's leaderboard from the metrics' ``agents`` table and the
        ``ratings`` and ``stats`` params sections (``markets/_shared/analysis/boards.py``: TrueSkill by
        player, the usual one)."""
        raise NotImplementedError

    def draw_figures(
        self,
        metrics_dir: Path,
        figures_dir: Path,
        tables_dir: Path,
        mp: MarketParams,
        instance: str,
    ) -> list[Path]:
        """The instance's figures (PNG into ``figures_dir``) and tables (``tables_dir``), from the
        metrics stage's frames and the board (``reports/leaderboards/<instance>.csv``)."""
        return []

    def summarize(self, table: "pd.DataFrame", result: "EpisodeResult") -> "pd.DataFrame":
        """*Required*: per-seat totals of one played episode (``marketarena play``)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ stopping rule
    def stop_rows(
        self, agents: "pd.DataFrame", mp: MarketParams, player: str
    ) -> tuple["pd.DataFrame", str, str]:
        """What the stopping rule's look rates for ``player`` (``simulate/stopping.py``), as the market's
        board ranks it: the seats among ``agents`` (the metrics' seats) that compete with it, the
        score column, and how a player's seats combine into its score in an episode ("sum" or
        "mean"). By default every seat, ``rank_by`` and ``seat_score``."""
        return agents, self.rank_by, self.seat_score

    def stop_rating(self, mp: MarketParams) -> dict[str, float]:
        """The TrueSkill environment of the stopping rule's looks (``ratings.TrueSkillParams``'
        fields): the market's board's, as far as the instance's own params give it (the TrueSkill
        defaults of DESIGN section 8 elsewhere: the simulate stage reads no ``ratings``)."""
        return {}
