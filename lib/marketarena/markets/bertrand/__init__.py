"""bertrand: logit Bertrand pricing and collusion (Calvano / Fish et al.; seed 003's start-up market).

Economics (logit demand, Nash, monopoly, collusion index): ``economics.py``; one period's rules and
the investment options: ``rules.py``; the episode: ``market.py``; what firms see and answer:
``observations.py`` + ``templates/`` (the notes macro and the action models are shared with cournot,
``markets/_shared/oligopoly.py``); scripted firms incl. the Q-learning pricer: ``baselines.py``;
metrics: ``metrics.py``. LLM firms keep seed 003's PLANS / INSIGHTS notes through the ``notes``
harness (the default here).

Reference stage: ``reference@<instance>`` writes ``summary.json`` with the Nash and monopoly prices,
quantities and profits of the starting game (and, for the start-up preset, of every symmetric
investment level); the simulate stage is fingerprinted on it. Episodes log the references of each
period's own cost configuration in ``states`` (they move with investments).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.plugin import read_metrics
from marketarena.core.summary import per_agent_summary
from marketarena.markets._shared.oligopoly import OligopolyPlugin
from marketarena.markets.bertrand import metrics as bertrand_metrics
from marketarena.markets.bertrand.baselines import STRATEGIES, Game
from marketarena.markets.bertrand.economics import reference_summary
from marketarena.markets.bertrand.market import BertrandMarket
from marketarena.markets.bertrand.observations import render_messages
from marketarena.markets.bertrand.outcomes import outcome_counts
from marketarena.markets.bertrand.params import BertrandParams


class BertrandPlugin(OligopolyPlugin):
    kind = "bertrand"
    params_model = BertrandParams
    strategies = STRATEGIES
    metric_columns = bertrand_metrics.AGENT_METRICS

    def input_files(self, mp: BertrandParams, data_dir: Path) -> list[Path]:
        return [Path(data_dir) / "references" / mp.instance / "summary.json"]

    def compute_reference(self, mp: BertrandParams, out_dir: Path, workers: int = 1) -> dict:
        cfg = mp.config()
        summary = reference_summary(cfg)
        summary["preset"] = mp.preset
        summary["products"] = list(mp.products)
        if mp.invest:
            summary["by_level"] = {
                str(level): reference_summary(cfg.model_copy(update={"costs": (
                    (cfg.cost_ladder[level],) * cfg.n_products,) * cfg.n_firms}))
                for level in range(len(cfg.cost_ladder))}
        return summary

    def build_market(self, mp: BertrandParams, resources, episode) -> BertrandMarket:
        return BertrandMarket(mp, [s.agent_id for s in episode.seats])

    def scripted_context(self, seat, mp: BertrandParams, resources, episode) -> Game:
        index = [s.agent_id for s in episode.seats].index(seat.agent_id)
        return Game(mp.config(), index, tuple(mp.products), mp.invest)

    def render_messages(self, observation, **extras):
        return render_messages(observation, **extras)

    def compute_metrics(self, reader, mp: BertrandParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        return bertrand_metrics.compute(reader, mp.collusion_window, startup=mp.invest)

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: BertrandParams, instance: str) -> list[Path]:
        from marketarena.plots import bertrand as plots

        frames = read_metrics(metrics_dir, ("product_rounds", "market_rounds", "market"))
        out = [plots.figure_prices(frames["product_rounds"], figures_dir / "fig_prices.png"),
               plots.figure_collusion(frames["market_rounds"], mp.collusion_window,
                                      figures_dir / "fig_collusion_index.png")]
        # the interval reads only this instance's params (the figures stage lists `markets`)
        out += plots.collusion_table(frames["market"], tables_dir / f"{instance}_collusion.md",
                                     tables_dir / f"{instance}_collusion.tex", mp.collusion_window,
                                     n_boot=2000, seed=mp.seed)
        if mp.invest:  # the start-up preset: the seed's outcome categories (outcomes.py)
            out += plots.outcome_table(outcome_counts(frames["market"]), frames["market"],
                                       tables_dir / f"{instance}_outcomes.md",
                                       tables_dir / f"{instance}_outcomes.tex", mp.collusion_window)
        return out

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        firms, states = result.tables["firms"], result.tables["states"]
        totals = firms.groupby("agent_id").agg(
            profit=("profit", "sum"), final_funds=("funds", "last"),
            investments=("investment", lambda s: int((s != "").sum())))
        totals["mean_price"] = states.groupby("agent_id")["price"].mean()
        return per_agent_summary(table, totals, result.decisions, sort_by="profit", digits=3)


PLUGIN = BertrandPlugin()
