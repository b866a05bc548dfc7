"""crash: Agent Bazaar's B2C market, "The Crash" (seed 001, section 3.1; DESIGN.md 7.4).

Firms set a price and buy supply each day; consumers buy from the cheapest firm they see; firms that
undercut each other below cost go bankrupt, and a market with Stabilizing Firms can hold. The rules:
``rules.py`` (consumers, visibility, choice, fills) and ``market.py`` (the day, costs, bankruptcy);
what firms see and answer: ``observations.py`` + ``templates/``; params and the settings grid:
``params.py``; scripted firms: ``baselines.py``; metrics and the Economic Alignment Score:
``metrics.py`` (``metrics/eas.py``); figures: ``plots/crash.py``.

LLM firms play through the generic agent; the ``stabilizing`` harness (``agents/harnesses/
stabilizing.py``) is the seed's Stabilizing Firm: reflection on its best past days, scored as the
authors score them (market health + max(0, profit) / initial cash, from the signals this plugin
reports), plus the instructions of ``templates/harness_stabilizing.j2``.

Prompts: the seed's appendix A prompt boxes are empty; the templates follow the authors' code
(sethkarten/AI-Bazaar, agents/firm.py: the firm-manager system prompt with the market size,
the stabilizing-firm rules, the four competitor personas), paraphrased. Added to it: the rules the
seed's equation 3 charges (overhead, the tax on cash, bankruptcy below zero) and the stock rule
(``unsold``), which the authors' firms only learn from their ledger. Not added: how consumers
choose (the authors do not say).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from marketarena.core.plugin import EpisodeSpec, MarketPlugin, Seat, read_metrics
from marketarena.core.reader import OnceReader
from marketarena.core.summary import per_agent_summary
from marketarena.markets.crash import metrics as crash_metrics
from marketarena.markets.crash.baselines import STRATEGIES
from marketarena.markets.crash.market import CrashMarket
from marketarena.markets.crash.observations import FirmObservation, render_messages
from marketarena.markets.crash.params import CrashParams


class CrashPlugin(MarketPlugin):
    kind = "crash"
    params_model = CrashParams
    strategies = STRATEGIES
    harnesses = ("plain", "stabilizing")
    rank_by = "profit"
    metric_columns = crash_metrics.AGENT_METRICS
    seat_score = "mean"  # a firm kind holding several seats is ranked by its mean profit per seat
    role_keys = {"stabilizing": "stabilizer (or stabilizers)", "competitor": "competitors"}
    source_formats = ("agent_bazaar",)

    def seating_period(self, mp: CrashParams) -> int:
        """The cells times the competitors' rotation (``CrashParams.seat_names``)."""
        return len(mp.cells) * len(mp.competitor_names())

    def seating_hint(self, mp: CrashParams, entry) -> str:
        seats = mp.firms - min(mp.stabilizing)
        return (f"name it in markets.{mp.instance}.competitors (or .stabilizer / .stabilizers); "
                f"competitors take "
                f"the non-stabilizing seats in turn, at most {seats} per episode, so list at most "
                f"{seats} or raise firms")

    def seats(self, mp: CrashParams, run: int) -> list[Seat]:
        """``F1..Fn``: the stabilizing seats of the run's cell, then the competitor seats, their
        holders rotated with the cell's replicate (``CrashParams.seat_names``)."""
        by_name = {e.name: e for e in mp.roster}
        return [Seat(f"F{i + 1}", by_name[name], role)
                for i, (role, name) in enumerate(mp.seat_names(run))]

    def episode(self, mp: CrashParams, run: int) -> EpisodeSpec:
        e = super().episode(mp, run)
        d, s, _ = mp.cell_of(run)
        return EpisodeSpec(e.episode_id, run, e.seed, e.seats,
                           (("discovery_limit", d), ("stabilizing", s)))

    def build_market(self, mp: CrashParams, resources, episode: EpisodeSpec) -> CrashMarket:
        """Each competitor seat shows its player's own persona (``CrashParams.persona_of``),
        wherever the rotation seats it; stabilizing seats none."""
        texts = [mp.persona_of(seat.entry.name) if seat.role == "competitor" else ""
                 for seat in episode.seats]
        return CrashMarket(mp, [s.agent_id for s in episode.seats], [s.role for s in episode.seats],
                           texts, episode.get("discovery_limit"))

    def render_messages(self, observation: FirmObservation, **extras):
        return render_messages(observation, **extras)

    def harness_signals(self, observation: FirmObservation) -> dict[str, float]:
        """Yesterday's profit in dollars, the authors' profit score ``max(0, profit) / initial
        cash`` and the market's health in [0, 1] (``market.market_health``). The stabilizing
        harness scores a day ``market_health + profit_score``, the authors' composite
        (their agents/firm.py, ``reflect``)."""
        profit = observation.last_profit
        return {"profit": profit,
                "profit_score": max(0.0, profit) / max(observation.initial_cash, 1.0),
                "market_health": observation.health}

    def import_source(self, mp: CrashParams, source: Path, out: Path) -> dict:
        """Agent Bazaar's published crash runs (``agent_bazaar.py``), read in one worker process
        per core."""
        from marketarena.config import available_cores
        from marketarena.markets.crash import agent_bazaar

        return agent_bazaar.import_runs(source, out, available_cores())

    def compute_metrics(self, reader, mp: CrashParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        """The crash metrics; for an imported instance also the authors' own score per cell and
        the replay of their engine (``published.py``, ``replay.py``), which read the metrics'
        tables again (each read once)."""
        if mp.imported:
            reader = OnceReader(reader.require())
        frames = crash_metrics.compute(reader, mp.eas, stable_price=mp.stable_price)
        if mp.imported:
            from marketarena.markets.crash import published

            tables = {n: reader.table(n) for n in ("setting", "days", "states", "orders",
                                                   "consumers")}
            frames = published.frames(tables, frames)
        return frames

    def leaderboard(self, agents: pd.DataFrame, mp: CrashParams, ratings, stats) -> pd.DataFrame:
        """TrueSkill by firm kind (mean profit per seat in each episode), with the kind's EAS
        components and EAS from its own firms (fixed anchors, 95% bootstrap interval over its
        episodes), the seed's relative EAS and the market's components of its episodes, named
        ``market_*`` (``metrics.eas.eas_board``). The pipeline adds the validity columns. An
        imported instance of the authors' runs (every firm of a run is one model's): one row per
        model, ranked by our EAS, with their own score beside it (``published.board``)."""
        from marketarena.metrics.eas import eas_board
        from marketarena.markets._shared.boards import player_board

        if mp.imported:
            from marketarena.markets.crash import published

            return published.board(agents, stats.n_boot, stats.seed)

        board = player_board(self, agents, ratings, stats)
        return board.merge(eas_board(agents, mp.eas, stats.n_boot, stats.seed), on="name", how="left")

    def draw_figures(self, metrics_dir: Path, figures_dir: Path, tables_dir: Path,
                     mp: CrashParams, instance: str) -> list[Path]:
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        if mp.imported:  # the authors' runs: per model, their score beside ours, the replay
            from marketarena.plots import crash_published

            frames = read_metrics(metrics_dir, ("market", "days", "survival", "agents",
                                                "replay_runs", "replay_rules"))
            return crash_published.draw_all(frames, board, Path(figures_dir), Path(tables_dir),
                                            instance)
        from marketarena.plots import crash as plots

        frames = read_metrics(metrics_dir, ("market", "days", "survival", "agents"))
        return plots.draw_all(frames, board, mp, Path(figures_dir), Path(tables_dir), instance)

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        states = result.tables["states"]
        totals = states.groupby("agent_id").agg(
            profit=("profit", "sum"), final_cash=("cash_end", "last"), days=("step", "count"),
            mean_price=("price", "mean"), units_sold=("units_sold", "sum"),
            bankrupt=("bankrupt", "max"))
        return per_agent_summary(table, totals, result.decisions, sort_by="profit", digits=3)


PLUGIN = CrashPlugin()
