"""lemon's analysis: the K = 0 reference volume (the base of the EAS's market-survival term), the
metrics and the EAS (``metrics.py``), the two boards (sellers and buyers), what the stopping rule
rates, the figures and tables (``plots.py``) and ``marketarena play``'s summary. The seed's Figure
4 as per-step series (``figure4.py``) is drawn for an imported instance, which
``lemon/sources/analysis.py`` analyses instead."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.analysis import MarketAnalysis, read_metrics
from marketarena.core.params import RosterEntry
from marketarena.core.rules import EpisodeSpec
from marketarena.core.runner import play_episode
from marketarena.core.summary import per_agent_summary
from marketarena.markets.lemon.analysis import metrics as lemon_metrics
from marketarena.markets.lemon.analysis.metrics import reference_key
from marketarena.markets.lemon.params import TIERS, LemonParams

#: what stands in for an LLM seat in the K = 0 reference
REFERENCE_STAND_IN = "reputation"


def summary_path(data_dir: Path, instance: str) -> Path:
    return Path(data_dir) / "references" / instance / "summary.json"


class LemonAnalysis(MarketAnalysis):
    rank_by = "score"
    metric_columns = lemon_metrics.AGENT_METRICS
    seat_score = "sum"  # the principal's identities add up
    #: the metrics frames every figure set reads
    FIGURE_FRAMES = ("market", "agents", "steps", "reputation")

    # ------------------------------------------------------------------ the K = 0 reference
    def compute_reference(self, mp: LemonParams, out_dir: Path, workers: int = 1) -> dict:
        """Bids per step of the configuration with K = 0, per (reputation visibility, buyer group):
        the mean over ``reference_episodes`` episodes (seeds from (seed, 10**6 + i)), LLM seats
        played by the scripted ``reputation`` buyer."""
        stand_in = RosterEntry(
            name=REFERENCE_STAND_IN, kind="baseline", strategy=REFERENCE_STAND_IN
        )
        roster = [
            e if e.kind == "baseline" else stand_in.model_copy(update={"name": e.name})
            for e in mp.roster
        ]
        volumes = {}
        for rep in mp.reputation_visible:
            for group in mp.buyer_groups:
                ref = mp.model_copy(
                    update={
                        "sybil": [0],
                        "reputation_visible": [rep],
                        "buyer_groups": [group],
                        "roster": roster,
                    }
                )
                bids = []
                for i in range(mp.reference_episodes):
                    spec = self.rules.episode(ref, 0)
                    seed = int(np.random.SeedSequence([mp.seed, 10**6 + i]).generate_state(1)[0])
                    spec = EpisodeSpec(spec.episode_id, i, seed, spec.seats, spec.setting)
                    market, agents, _ = self.rules.build_episode(ref, None, spec)
                    b = play_episode(market, agents, spec.seed).tables["bids"]
                    bids.append((b["decision"] == "bid").sum() / mp.steps)
                volumes[reference_key(rep, "+".join(group))] = float(np.mean(bids))
        return {
            "volume_k0": volumes,
            "episodes": mp.reference_episodes,
            "stand_in_for_llm_seats": REFERENCE_STAND_IN,
        }

    # ------------------------------------------------------------------ metrics
    def compute_metrics(self, reader, mp: LemonParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        volume = json.loads(summary_path(data_dir, mp.instance).read_text())["reference"][
            "volume_k0"
        ]
        return lemon_metrics.compute(
            reader, mp.eas, volume, {t: mp.tier_value(t) for t in TIERS}, mp.surplus_anchors()
        )

    # ------------------------------------------------------------------ boards
    def leaderboard(self, agents: pd.DataFrame, mp: LemonParams, ratings, stats) -> pd.DataFrame:
        """Buyers and sellers on separate boards (a role column). Sellers (honest and the
        principal, its identities summed) by revenue, TrueSkill by player. Buyers by their total
        surplus, with their EAS (:meth:`buyer_board`). The pipeline adds every player's validity
        columns."""
        from marketarena.ratings import leaderboard

        boards = []
        for role, rows in (
            ("buyer", agents[agents["role"] == "buyer"]),
            ("seller", agents[agents["role"].isin(["honest", "principal"])]),
        ):
            if rows["name"].nunique() == 0:
                continue
            seat_score = "mean" if role == "buyer" else "sum"
            board = leaderboard(rows, "score", ratings, stats, seat_score=seat_score)
            board.insert(1, "role", role)
            if role == "buyer":
                board = self.buyer_board(board, rows, mp, stats)
            boards.append(board)
        return pd.concat(boards, ignore_index=True)

    def buyer_board(
        self, board: pd.DataFrame, rows: pd.DataFrame, mp: LemonParams, stats
    ) -> pd.DataFrame:
        """The buyers' board (TrueSkill by total surplus, ``board``) completed from their seats
        (``rows``): TrueSkill when kinds share episodes; in cells of one buyer kind they never
        meet, so kinds are ranked by the mean EAS of their episodes; buyers carry their EAS
        components (from their own seats), the EAS on fixed anchors (95% interval), the seed's
        relative EAS and the market's components of their episodes, named ``market_*``
        (``metrics.eas.eas_board``)."""
        from marketarena.metrics.eas import eas_board

        board = board.merge(
            eas_board(rows, mp.eas, stats.n_boot, stats.seed), on="name", how="left"
        )
        if board["mu"].isna().all():  # buyer kinds never met: rank by EAS
            board = board.sort_values("eas_mean", ascending=False, kind="stable")
            board["rank"] = range(1, len(board) + 1)
        return board

    def stop_rows(self, agents: pd.DataFrame, mp: LemonParams, player: str):
        """The stopping rule rates a player on its side's board (:meth:`leaderboard`): a seller
        among the sellers by revenue (the principal's identities summed), a buyer among the
        buyers by score, or, where every cell seats one buyer kind (kinds never meet), by its
        episodes' EAS (a look by mean, ``stopping.look_mean``)."""
        if not any(player in group for group in mp.buyer_groups):
            return agents[agents["role"].isin(["honest", "principal"])], "score", "sum"
        buyers = agents[agents["role"] == "buyer"]
        if all(len(set(group)) == 1 for group in mp.buyer_groups):
            return buyers.dropna(subset=["eas"]), "eas", "mean"
        return buyers, "score", "mean"

    # ------------------------------------------------------------------ figures
    def draw_figures(
        self, metrics_dir: Path, figures_dir: Path, tables_dir: Path, mp: LemonParams, instance: str
    ) -> list[Path]:
        from marketarena.markets.lemon.analysis import plots

        frames = read_metrics(metrics_dir, self.FIGURE_FRAMES)
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        return plots.draw_all(frames, board, mp, Path(figures_dir), Path(tables_dir), instance)

    def summarize(self, table: pd.DataFrame, result) -> pd.DataFrame:
        listings = result.tables["listings"]
        sold = listings[listings["sold"]]
        totals = pd.DataFrame(index=table["agent_id"])
        totals["revenue"] = sold.groupby("seller")["price"].sum()
        totals["sales"] = sold.groupby("seller").size()
        totals["purchases"] = sold.groupby("buyer").size()
        identities = table.loc[table["role"] == "identity", "agent_id"]
        totals.loc["P1", "revenue"] = totals.loc[identities, "revenue"].sum()
        totals = totals.fillna(0.0)
        return per_agent_summary(table, totals, result.decisions, sort_by="revenue")
