"""cournot's analysis: the reference (Nash and monopoly), the metrics (``metrics.py``; the
specialisation test, ``specialisation.py``), the board (``markets/_shared/analysis/oligopoly.py``),
the figures and tables (``plots.py``) and ``marketarena play``'s summary."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.analysis import read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets._shared.analysis.oligopoly import OligopolyAnalysis
from marketarena.markets.cournot.analysis import metrics as cournot_metrics
from marketarena.markets.cournot.economics import reference_summary
from marketarena.markets.cournot.params import CournotParams


class CournotAnalysis(OligopolyAnalysis):
    metric_columns = cournot_metrics.AGENT_METRICS

    def compute_reference(self, mp: CournotParams, out_dir: Path, workers: int = 1) -> dict:
        """Nash (iterative best response, SLSQP) and monopoly; a Nash that does not converge is a
        params error naming ``nash_max_iter`` and ``nash_tol``."""
        from marketarena.config import ParamsError
        from marketarena.markets.cournot.analysis.plots import reference_table

        try:
            summary = reference_summary(mp.config(), tol=mp.nash_tol, max_iter=mp.nash_max_iter)
        except RuntimeError as exc:
            raise ParamsError(
                f"markets.{mp.instance}.nash_max_iter: {exc}; raise nash_max_iter (or nash_tol)"
            ) from None
        summary["products"] = list(mp.products)
        reference_table(summary, Path(out_dir) / "reference.md")
        return summary

    def compute_metrics(self, reader, mp: CournotParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        return cournot_metrics.compute(reader, mp.bootstrap)

    def draw_figures(
        self,
        metrics_dir: Path,
        figures_dir: Path,
        tables_dir: Path,
        mp: CournotParams,
        instance: str,
    ) -> list[Path]:
        from marketarena.markets.cournot.analysis import plots

        frames = read_metrics(metrics_dir, ("product_rounds", "agent_rounds", "specialisation"))
        out = [
            plots.figure_quantities(frames["product_rounds"], figures_dir / "fig2_quantities.png"),
            plots.figure_cv(frames["agent_rounds"], figures_dir / "fig3_cv.png"),
        ]
        out += plots.specialisation_table(
            frames["specialisation"],
            tables_dir / f"{instance}_specialisation.md",
            tables_dir / f"{instance}_specialisation.tex",
            mp.bootstrap.alpha,
            mp.bootstrap.level,
        )
        return out

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        """Per-firm totals of one played episode, most profitable first (``marketarena play``)."""
        firms, states = result.tables["firms"], result.tables["states"]
        totals = firms.groupby("agent_id").agg(
            profit=("profit", "sum"),
            mean_cv=("cv", "mean"),
            mean_quantity=("quantity", "mean"),
            scaled_rounds=("scaled", "sum"),
        )
        shares = states.pivot_table(
            index="agent_id", columns="product", values="share", aggfunc="mean"
        )
        totals = totals.join(shares.add_prefix("share_"))
        return per_agent_summary(table, totals, result.decisions, sort_by="profit", digits=3)
