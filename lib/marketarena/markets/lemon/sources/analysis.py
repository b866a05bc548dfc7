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
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.analysis import read_metrics
from marketarena.core.reader import OnceReader
from marketarena.markets.lemon.analysis import LemonAnalysis
from marketarena.markets.lemon.analysis import metrics as lemon_metrics
from marketarena.markets.lemon.params import TIERS, LemonParams


class LemonImportedAnalysis(LemonAnalysis):
    def compute_reference(self, mp: LemonParams, out_dir: Path, workers: int = 1) -> dict:
        """Our scripted sweep of the instance's grid (``figure4.sweep``, ``reference_episodes``
        seeds per cell), whose Figure 4 series (``sweep.parquet``) the figures draw beside the
        authors' runs; a ValueError naming the roster when it holds LLM entries."""
        from marketarena.markets.lemon.analysis import figure4

        llm = [e.name for e in mp.roster if e.kind == "llm"]
        if llm:
            raise ValueError(
                f"markets.{mp.instance}.roster: an imported instance's roster "
                f"plays our scripted sweep beside the imported runs; {llm} "
                "are LLM entries (name baselines)"
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
        frames["agents"] = agents
        frames.update(replay.replay(reader, mp))
        frames["their_score_runs"] = authors.their_runs(setting, reader.table("market_steps"))
        frames["their_score"] = authors.their_models(frames["their_score_runs"], setting)
        frames["reference_volume"] = reference
        frames["fig4_authors"] = figure4.series(
            reader.table("listings"), bids, reader.table("reputation"), setting
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

    def draw_figures(
        self, metrics_dir: Path, figures_dir: Path, tables_dir: Path, mp: LemonParams, instance: str
    ) -> list[Path]:
        from marketarena.markets.lemon.sources import plots

        frames = read_metrics(metrics_dir, (*self.FIGURE_FRAMES, *plots.FRAMES))
        board = pd.read_csv(Path(tables_dir).parents[1] / "leaderboards" / f"{instance}.csv")
        return plots.draw_all(frames, board, mp, Path(figures_dir), Path(tables_dir), instance)
