"""The analysis of an imported lemon instance (the authors' own runs, ``agent_bazaar.py``): lemon's
own (``lemon/analysis/__init__.py``) with

- as its reference, our scripted sweep of the instance's grid with its roster
  (``lemon/analysis/figure4.py``'s ``sweep``), whose Figure 4 series the figures draw beside the
  authors' runs: the imported runs bring their own K = 0 volume;
- as its metrics, ours with the K = 0 volume of its own runs (``authors.own_reference``), each
  buyer seat's logged answers and invalid ones (``answers``, ``answers_invalid``: NaN without a
  prompt log), the replay (``replay.py``), the authors' own EAS (``authors.py``), and the Figure 4
  series of their runs (``fig4_authors``) and of our sweep (``fig4_ours``);
- on the buyers' board, each model's invalid-answer rate where its prompt logs are present;
- the figures and tables of ``plots.py``.

A joint instance (issue 53: LLM entries playing the authors' grid on their buyer's prompts,
``lemon/params.py``) has new runs beside the imported ones: they are rated on the same board (our
metrics and EAS, the K = 0 volume of the entry's own K = 0 runs), marked ``origin`` ``new`` with
their ``harness`` and ``prompts``; the replay, the authors' own EAS and the authors' Figure 4
series are of the imported runs only (a new run has no logged engine state to replay).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.analysis import read_metrics
from marketarena.core.reader import OnceReader
from marketarena.markets._shared.sources.agent_bazaar import published_episodes
from marketarena.markets.lemon.analysis import LemonAnalysis
from marketarena.markets.lemon.analysis import metrics as lemon_metrics
from marketarena.markets.lemon.params import TIERS, LemonParams


class LemonImportedAnalysis(LemonAnalysis):
    def compute_reference(self, mp: LemonParams, out_dir: Path, workers: int = 1) -> dict:
        """Our scripted sweep of the instance's grid (``figure4.sweep``, ``reference_episodes``
        seeds per cell), whose Figure 4 series (``sweep.parquet``) the figures draw beside the
        authors' runs; a ValueError naming the roster when it holds LLM entries."""
        from marketarena.markets.lemon.analysis import figure4

        sweep = {mp.honest, mp.principal, *(n for g in mp.buyer_groups for n in g)}
        llm = [e.name for e in mp.roster if e.kind == "llm" and e.name in sweep]
        if llm:
            raise ValueError(
                f"markets.{mp.instance}: an imported instance's honest, principal and "
                f"buyer_groups play our scripted sweep beside the imported runs; {llm} "
                "are LLM entries (name baselines there; an LLM entry named nowhere else plays "
                "the authors' grid, a joint instance)"
            )
        frame = figure4.sweep(self.rules, mp, mp.reference_episodes)
        frame.to_parquet(Path(out_dir) / "sweep.parquet", index=False)
        return {
            "sweep_episodes": int(frame["episode_id"].nunique()),
            "seeds_per_cell": mp.reference_episodes,
            "volume_k0": "from the imported runs' own K = 0 runs (metrics stage)",
        }

    def compute_metrics(self, reader, mp: LemonParams, data_dir: Path) -> dict[str, pd.DataFrame]:
        """The module docstring's metrics, each table read once."""
        from marketarena.markets.lemon.analysis import figure4
        from marketarena.markets.lemon.sources import authors, replay

        reader = OnceReader(reader.require())
        setting, bids = reader.table("setting"), reader.table("bids")
        published = published_episodes(setting, "run")
        ours = reader if published is None else reader.only(published)
        reference = authors.own_reference(setting, bids)
        frames = lemon_metrics.compute(
            reader,
            mp.eas,
            authors.reference_volumes(reference),
            {t: mp.tier_value(t) for t in TIERS},
            mp.surplus_anchors(),
        )
        decisions = reader.table("decisions")
        agents = frames["agents"]
        if len(decisions):
            buy = decisions[decisions["phase"] == "buy"].groupby(["episode_id", "agent_id"])
            counts = pd.DataFrame(
                {"answers": buy.size(), "answers_invalid": buy["valid"].apply(lambda v: (~v).sum())}
            )
            agents = agents.join(counts, on=["episode_id", "agent_id"])
            logged = agents["episode_id"].isin(decisions["episode_id"]) & (
                agents["role"] == "buyer"
            )
            agents.loc[logged, ["answers", "answers_invalid"]] = agents.loc[
                logged, ["answers", "answers_invalid"]
            ].fillna(0)
        else:
            agents = agents.assign(answers=np.nan, answers_invalid=np.nan)
        frames["agents"] = with_origin(agents, published)
        frames.update(replay.replay(ours, mp))
        setting, bids = ours.table("setting"), ours.table("bids")
        frames["their_score_runs"] = authors.their_runs(setting, ours.table("market_steps"))
        frames["their_score"] = authors.their_models(frames["their_score_runs"], setting)
        frames["reference_volume"] = reference
        frames["fig4_authors"] = figure4.series(
            ours.table("listings"), bids, ours.table("reputation"), setting
        )
        sweep = Path(data_dir) / "references" / mp.instance / "sweep.parquet"
        frames["fig4_ours"] = pd.read_parquet(sweep) if sweep.is_file() else pd.DataFrame()
        return frames

    def buyer_board(
        self, board: pd.DataFrame, rows: pd.DataFrame, mp: LemonParams, stats
    ) -> pd.DataFrame:
        """lemon's buyers' board with each model's answers re-parsed from its prompt logs and
        the share invalid (``invalid_answer_rate``; NaN where no log survives)."""
        board = super().buyer_board(board, rows, mp, stats)
        answered = rows.groupby("name")[["answers", "answers_invalid"]].sum(min_count=1)
        answered["invalid_answer_rate"] = answered["answers_invalid"] / answered["answers"].where(
            answered["answers"] > 0
        )
        return board.merge(answered.reset_index(), on="name", how="left")

    def leaderboard(self, agents: pd.DataFrame, mp: LemonParams, ratings, stats) -> pd.DataFrame:
        """lemon's boards, every row (buyers and sellers) with its ``origin``, ``harness`` and
        ``prompts`` (:func:`with_origin`): a joint instance's new runs beside the imported."""
        board = super().leaderboard(agents, mp, ratings, stats)
        if "origin" not in agents:
            return board
        origin = agents.groupby("name")[["origin", "harness", "prompts"]].first()
        return board.merge(origin.reset_index(), on="name", how="left")

    def draw_figures(
        self, metrics_dir: Path, figures_dir: Path, tables_dir: Path, mp: LemonParams, instance: str
    ) -> list[Path]:
        from marketarena.markets.lemon.sources import plots

        frames = read_metrics(metrics_dir, (*self.FIGURE_FRAMES, *plots.FRAMES))
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        return plots.draw_all(frames, board, mp, Path(figures_dir), Path(tables_dir), instance)


#: whose prompts a buyer seat saw, per harness (a published run: the authors' own engine)
PROMPTS = {
    "agent_bazaar": "Agent Bazaar's buyer code (your copy)",
    "agent-bazaar-llm": "Agent Bazaar's (their run)",
}


def with_origin(agents: pd.DataFrame, published: frozenset[str] | None) -> pd.DataFrame:
    """Per seat, ``origin``: ``published`` (an episode of ``published``, ``published_episodes``;
    None: every one) or ``new`` (a joint instance's run); ``prompts``: whose prompt an LLM seat
    saw (:data:`PROMPTS`; "" for a scripted one)."""
    new = (
        np.zeros(len(agents), bool)
        if published is None
        else ~agents["episode_id"].isin(published).to_numpy()
    )
    prompts = agents["harness"].map(PROMPTS).fillna("").where(agents["kind"] == "llm", "")
    return agents.assign(origin=np.where(new, "new", "published"), prompts=prompts)
