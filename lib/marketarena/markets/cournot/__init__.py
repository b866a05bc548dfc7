"""cournot: multi-product Cournot competition and market division (seed 003, DESIGN.md 7.3).

Economics (demand, profits, Nash by iterative best response, monopoly): ``economics.py``; one
round's rules: ``rules.py``; the episode: ``market.py``; what firms see and answer:
``observations.py`` + ``templates/``; scripted firms: ``baselines.py``; metrics: ``metrics.py``;
the specialisation test: ``specialisation_test.py``; what ``bertrand`` shares:
``markets/_shared/oligopoly.py``. LLM firms keep seed 003's PLANS / INSIGHTS notes through the
``notes`` harness (the default here).

Reference stage: ``reference@<instance>`` writes ``data/references/<instance>/summary.json`` (Nash
and monopoly quantities, prices, profits and CVs of the configured game) and ``reference.md``; the
simulate stage reads it (``input_files``: episodes are fingerprinted on it) and copies it into
every episode's ``reference.parquet``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.plugin import read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets._shared.oligopoly import OligopolyPlugin
from marketarena.markets.cournot import metrics as cournot_metrics
from marketarena.markets.cournot.baselines import STRATEGIES, Game
from marketarena.markets.cournot.economics import reference_summary
from marketarena.markets.cournot.market import CournotMarket
from marketarena.markets.cournot.observations import render_messages
from marketarena.markets.cournot.params import CournotParams


def reference_path(data_dir: Path, instance: str) -> Path:
    return Path(data_dir) / "references" / instance / "summary.json"


class CournotPlugin(OligopolyPlugin):
    kind = "cournot"
    params_model = CournotParams
    strategies = STRATEGIES
    metric_columns = cournot_metrics.AGENT_METRICS

    def input_files(self, mp: CournotParams, data_dir: Path) -> list[Path]:
        return [reference_path(data_dir, mp.instance)]

    def compute_reference(self, mp: CournotParams, out_dir: Path, workers: int = 1) -> dict:
        """Nash (iterative best response, SLSQP) and monopoly; a Nash that does not converge is a
        params error naming ``nash_max_iter`` and ``nash_tol``."""
        from marketarena.config import ParamsError

        try:
            summary = reference_summary(mp.config(), tol=mp.nash_tol, max_iter=mp.nash_max_iter)
        except RuntimeError as exc:
            raise ParamsError(f"markets.{mp.instance}.nash_max_iter: {exc}; raise nash_max_iter "
                              "(or nash_tol)") from None
        summary["products"] = list(mp.products)
        from marketarena.plots.cournot import reference_table

        reference_table(summary, Path(out_dir) / "reference.md")
        return summary

    def load_resources(self, mp: CournotParams, data_dir: Path, shared) -> dict:
        """The reference summary, checked against the configured game.

        Without ``summary.json`` (``marketarena play`` before any ``dvc repro``) the reference is
        computed in memory with the same function; the simulate stage itself refuses to run
        without the file (``input_files``), so recorded episodes always match a stored reference.
        """
        path = reference_path(data_dir, mp.instance)
        if not path.is_file():
            return reference_summary(mp.config(), tol=mp.nash_tol, max_iter=mp.nash_max_iter)
        ref = json.loads(path.read_text())["reference"]
        cfg = mp.config()
        same = (np.allclose(ref["config"]["costs"], cfg.cost_matrix)
                and np.allclose(ref["config"]["a"], cfg.a_vec)
                and np.allclose(ref["config"]["b"], cfg.b_vec)
                and [np.inf if c is None else c for c in ref["config"]["capacity"]]
                == cfg.capacity_vec.tolist())
        if not same:
            raise ValueError(f"{path} was computed for another configuration than params "
                             f"markets.{mp.instance}; re-run the reference stage (dvc repro)")
        return ref

    def build_market(self, mp: CournotParams, resources: dict, episode) -> CournotMarket:
        return CournotMarket(mp, [s.agent_id for s in episode.seats], resources)

    def scripted_context(self, seat, mp: CournotParams, resources: dict, episode) -> Game:
        index = [s.agent_id for s in episode.seats].index(seat.agent_id)
        return Game(mp.config(), index, tuple(mp.products),
                    np.asarray(resources["nash"]["quantities"]),
                    np.asarray(resources["monopoly"]["quantities"]))

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)

    def compute_metrics(self, reader, mp: CournotParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        return cournot_metrics.compute(reader, mp.bootstrap)

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: CournotParams, instance: str) -> list[Path]:
        from marketarena.plots import cournot as plots

        frames = read_metrics(metrics_dir, ("product_rounds", "agent_rounds", "specialisation"))
        out = [plots.figure_quantities(frames["product_rounds"], figures_dir / "fig2_quantities.png"),
               plots.figure_cv(frames["agent_rounds"], figures_dir / "fig3_cv.png")]
        out += plots.specialisation_table(frames["specialisation"],
                                          tables_dir / f"{instance}_specialisation.md",
                                          tables_dir / f"{instance}_specialisation.tex",
                                          mp.bootstrap.alpha, mp.bootstrap.level)
        return out

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        """Per-firm totals of one played episode, most profitable first (``marketarena play``)."""
        firms, states = result.tables["firms"], result.tables["states"]
        totals = firms.groupby("agent_id").agg(profit=("profit", "sum"), mean_cv=("cv", "mean"),
                                               mean_quantity=("quantity", "mean"),
                                               scaled_rounds=("scaled", "sum"))
        shares = states.pivot_table(index="agent_id", columns="product", values="share",
                                    aggfunc="mean")
        totals = totals.join(shares.add_prefix("share_"))
        return per_agent_summary(table, totals, result.decisions, sort_by="profit", digits=3)


PLUGIN = CournotPlugin()
