"""The analysis of an imported crash instance (the authors' runs, ``agent_bazaar.py``): crash's
own (``crash/analysis/__init__.py``) with the authors' score and the replay of their engine added
to the metrics (``published.py``, ``replay.py``), one board row per model (every firm of a run is
one model's), and the figures of ``plots.py``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.analysis import read_metrics
from marketarena.core.reader import OnceReader
from marketarena.markets.crash.analysis import CrashAnalysis
from marketarena.markets.crash.params import CrashParams


class CrashImportedAnalysis(CrashAnalysis):
    def compute_metrics(self, reader, mp: CrashParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        """The crash metrics, then the authors' own score per cell and the replay of their engine
        (``published.py``, ``replay.py``), which read the metrics' tables again (each read
        once)."""
        from marketarena.markets.crash.sources import published

        reader = OnceReader(reader.require())
        frames = super().compute_metrics(reader, mp, data_dir)
        tables = {n: reader.table(n) for n in ("setting", "states", "orders", "consumers")}
        return published.frames(tables, frames)

    def leaderboard(self, agents: pd.DataFrame, mp: CrashParams, ratings, stats) -> pd.DataFrame:
        """One row per model, ranked by our EAS, with their own score beside it
        (``published.board``)."""
        from marketarena.markets.crash.sources import published

        return published.board(agents, stats.n_boot, stats.seed)

    def draw_figures(
        self, metrics_dir: Path, figures_dir: Path, tables_dir: Path, mp: CrashParams, instance: str
    ) -> list[Path]:
        """Per model, their score beside ours, the replay (``plots.py``)."""
        from marketarena.markets.crash.sources import plots

        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        frames = read_metrics(
            metrics_dir, ("market", "days", "survival", "agents", "replay_runs", "replay_rules")
        )
        return plots.draw_all(frames, board, Path(figures_dir), Path(tables_dir), instance)
