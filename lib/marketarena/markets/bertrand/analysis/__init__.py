"""bertrand's analysis: the reference (Nash and monopoly of the starting game and, for the start-up
preset, of every symmetric investment level), the metrics (``metrics.py``; the seed's outcome
categories, ``outcomes.py``), the board (``markets/_shared/analysis/oligopoly.py``), the figures
and tables (``plots.py``) and ``marketarena play``'s summary."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.analysis import read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets._shared.analysis.oligopoly import OligopolyAnalysis
from marketarena.markets.bertrand.analysis import metrics as bertrand_metrics
from marketarena.markets.bertrand.analysis.outcomes import outcome_counts
from marketarena.markets.bertrand.economics import reference_summary
from marketarena.markets.bertrand.params import BertrandParams


class BertrandAnalysis(OligopolyAnalysis):
    metric_columns = bertrand_metrics.AGENT_METRICS

    def compute_reference(self, mp: BertrandParams, out_dir: Path, workers: int = 1) -> dict:
        cfg = mp.config()
        summary = reference_summary(cfg)
        summary["preset"] = mp.preset
        summary["products"] = list(mp.products)
        if mp.invest:
            summary["by_level"] = {
                str(level): reference_summary(
                    cfg.model_copy(
                        update={
                            "costs": ((cfg.cost_ladder[level],) * cfg.n_products,) * cfg.n_firms
                        }
                    )
                )
                for level in range(len(cfg.cost_ladder))
            }
        return summary

    def compute_metrics(
        self, reader, mp: BertrandParams, data_dir: Path
    ) -> dict[str, pd.DataFrame]:
        return bertrand_metrics.compute(reader, mp.collusion_window, startup=mp.invest)

    def draw_figures(
        self,
        metrics_dir: Path,
        figures_dir: Path,
        tables_dir: Path,
        mp: BertrandParams,
        instance: str,
    ) -> list[Path]:
        from marketarena.markets.bertrand.analysis import plots

        frames = read_metrics(metrics_dir, ("product_rounds", "market_rounds", "market"))
        out = [
            plots.figure_prices(frames["product_rounds"], figures_dir / "fig_prices.png"),
            plots.figure_collusion(
                frames["market_rounds"],
                mp.collusion_window,
                figures_dir / "fig_collusion_index.png",
            ),
        ]
        # the interval reads only this instance's params (the figures stage lists `markets`)
        out += plots.collusion_table(
            frames["market"],
            tables_dir / f"{instance}_collusion.md",
            tables_dir / f"{instance}_collusion.tex",
            mp.collusion_window,
            n_boot=2000,
            seed=mp.seed,
        )
        if mp.invest:  # the start-up preset: the seed's outcome categories (outcomes.py)
            out += plots.outcome_table(
                outcome_counts(frames["market"]),
                frames["market"],
                tables_dir / f"{instance}_outcomes.md",
                tables_dir / f"{instance}_outcomes.tex",
                mp.collusion_window,
            )
        return out

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        firms, states = result.tables["firms"], result.tables["states"]
        totals = firms.groupby("agent_id").agg(
            profit=("profit", "sum"),
            final_funds=("funds", "last"),
            investments=("investment", lambda s: int((s != "").sum())),
        )
        totals["mean_price"] = states.groupby("agent_id")["price"].mean()
        return per_agent_summary(table, totals, result.decisions, sort_by="profit", digits=3)
