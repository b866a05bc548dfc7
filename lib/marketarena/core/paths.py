"""Where a project keeps what its pipeline writes (DESIGN.md section 2): ``data/`` (the DVC outputs
a stage reads back) and ``reports/``, per market instance. ``pipeline.py`` documents what each
stage writes where; everything that reads a project (the stages, the site, the viewer, the
command-line importers' summaries) finds it through :class:`Paths`."""

from __future__ import annotations

from pathlib import Path


class Paths:
    @classmethod
    def of(cls, params_file: str | Path, root: str | Path | None = None) -> "Paths":
        """The project root ``root``, by default the folder of the params file (so ``--params
        <project>/params.yaml`` works on that project from any working directory)."""
        return cls(root if root is not None else Path(params_file).parent)

    def __init__(self, root: str | Path = "."):
        self.root = Path(root)
        self.data = self.root / "data"
        self.reports = self.root / "reports"
        self.personas = self.data / "personas.parquet"
        self.embeddings = self.data / "persona_embeddings.parquet"

    def instance(self, instance: str) -> Path:
        return self.data / "instances" / f"{instance}.json"

    def episodes(self, instance: str) -> Path:
        return self.data / "episodes" / instance

    def run_logs(self, instance: str) -> Path:
        """How the simulate runs went (wall time, LLM cost, ...): not a DVC output
        (``core.logs`` documents its files)."""
        return self.data / "run_logs" / instance

    def metrics(self, instance: str) -> Path:
        return self.data / "metrics" / instance

    def references(self, instance: str) -> Path:
        return self.data / "references" / instance

    def figure_data(self, instance: str) -> Path:
        """What each figure of the instance draws, as CSV (``plots.style.figure_data``), in the
        figures stage's tables folder (not beside the PNGs: ``dvc plots`` would draw a CSV
        found under ``reports/figures`` as a plot of its own)."""
        return self.reports / "tables" / instance / "figure_data"
