"""The analysis of an instance imported from BAZAAR's logs: the market's
(``double_auction/analysis/``), with what published games bring beside our own.

- **Metrics** (``metrics.py``): each game's CSα is its logged one where it logged every seat's
  (BAZAAR's reference table is not published), else ours, from the instance's truthful reference
  (column ``csa_source``); the chat per seat; and the frame ``check``: per seat, our game
  efficiency and surplus share beside the logged ones.
- **Board**: the market's, plus whose CSα rated each trader's games (``csa_source``), where its
  games come from and whose prompt it saw (``origin``, ``harness``, ``prompts``: a joint
  instance's new model beside the published ones) and, with a chat, the messages it sent
  (``messages_sent_mean``, ``messages_private_mean``, ``messages_to_rivals_mean``).
- **Figures**: the market's, after the chat's (``plots.py``: ``chat_surplus``) when the games had
  one.

:func:`import_summary` reads what ``pipeline.import_folder`` wrote for ``marketarena
import-bazaar`` (the import report, the check, the board) back as the facts the command prints,
the board's Spearman with the seed's table included where the report says it applies
(``bazaar.seed_study``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from marketarena.markets.double_auction.analysis import DoubleAuctionAnalysis, read_board
from marketarena.markets.double_auction.analysis.metrics import measured
from marketarena.markets.double_auction.params import DoubleAuctionParams
from marketarena.markets.double_auction.sources import metrics as bz_metrics

#: chat columns of the metrics whose mean per trader the board shows
BOARD_CHAT = ("messages_sent", "messages_private", "messages_to_rivals")


class BazaarGamesAnalysis(DoubleAuctionAnalysis):
    def compute_metrics(
        self, reader, mp: DoubleAuctionParams, data_dir: Path
    ) -> dict[str, pd.DataFrame]:
        seats, rounds, market, reference = measured(reader, mp, data_dir)
        game_rounds = reader.table("game").set_index("episode_id")["rounds"]
        seats = bz_metrics.imported_csa(
            seats, reference, mp, reader.table("bazaar_logged"), game_rounds
        )
        seats = bz_metrics.with_chat(seats, reader.table("messages"))
        seats = bz_metrics.with_origin(seats)
        return {
            "agents": seats,
            "agent_rounds": rounds,
            "market": market,
            "check": bz_metrics.check(seats),
        }

    def board_columns(self, agents: pd.DataFrame) -> dict[str, tuple]:
        """Whose CSα rated the trader's games (``logged``, ``ours`` or both, ``+``-joined); where
        its games come from (``origin``: ``published`` or, for a joint instance's entrant,
        ``new``), its harness and whose prompt it saw (``prompts``, ``metrics.with_origin``); and,
        with a chat, its mean messages per game."""
        joined = lambda s: "+".join(sorted(set(s)))  # noqa: E731
        extra = {
            "csa_source": ("csa_source", joined),
            "origin": ("origin", joined),
            "harness": ("harness", joined),
            "prompts": ("prompts", joined),
        }
        extra.update({f"{col}_mean": (col, "mean") for col in BOARD_CHAT if col in agents})
        return extra

    def draw_figures(
        self,
        metrics_dir: Path,
        figures_dir: Path,
        tables_dir: Path,
        mp: DoubleAuctionParams,
        instance: str,
    ) -> list[Path]:
        from marketarena.markets.double_auction.sources.plots import chat_surplus

        agents = pd.read_parquet(Path(metrics_dir) / "agents.parquet")
        chat = []
        if "messages_sent" in agents and agents["messages_sent"].sum() > 0:
            market = pd.read_parquet(Path(metrics_dir) / "market.parquet")
            chat = [
                chat_surplus(
                    agents,
                    market,
                    read_board(tables_dir, instance),
                    Path(figures_dir) / "chat_surplus.png",
                )
            ]
        rated = self.published_rating(Path(tables_dir), mp, instance)
        return (
            chat + super().draw_figures(metrics_dir, figures_dir, tables_dir, mp, instance) + rated
        )

    @staticmethod
    def published_rating(tables_dir: Path, mp: DoubleAuctionParams, instance: str) -> list[Path]:
        """Where the user gave the study's own published rating (``source.rating``, a CSV of
        model and rating; relative to the project root), the board's LLMs beside it
        (``metrics.published_rating``): ``<instance>_published_rating`` (md, tex, csv) with the
        Spearman in its caption. DVC re-runs this when ``source.rating`` names another file, not
        when the file is edited in place (``dvc repro -f figures@<instance>`` then)."""
        from marketarena.metrics.published_rating import read_rating, with_rating
        from marketarena.plots.tables import write_frame

        if not mp.source or not mp.source.rating:
            return []
        root = tables_dir.parents[2]  # reports/tables/<instance> -> the project
        path = Path(mp.source.rating).expanduser()
        path = path if path.is_absolute() else root / path
        side, fit = with_rating(read_board(tables_dir, instance), read_rating(path))
        unmatched = fit["unmatched"]
        caption = (
            f"The board beside the study's own published rating ({Path(mp.source.rating).name}): "
            f"per model matched by identity, our μ and rank among them, their rating and rank; "
            f"Spearman {fit['rho']:.3f} (95% interval {fit['lo']:.3f} to {fit['hi']:.3f}) over "
            f"{fit['n']} models"
            + (f"; rated but not on the board: {', '.join(unmatched[:10])}" if unmatched else "")
        )
        return list(write_frame(side, tables_dir / f"{instance}_published_rating", caption))


def import_summary(root: str | Path, instance: str = "double_auction") -> dict:
    """What an import of BAZAAR's games wrote under the project ``root`` (``pipeline.import_folder``:
    ``data/episodes/<instance>/import.json``, the metrics, the board), as one mapping: the import
    report (games, seats, LLM seats, chat messages, ``seed_comparison``), the largest |ours -
    logged| of the efficiency and of the surplus share (``max_abs_diff_*``, None where no seat
    has both), the games rated on each CSα (``csa_source``), the setting of our reference where a
    game was rated on it (``own_csa_reference``), the board's path and, where the comparison with
    the seed's table applies, the board's Spearman with it (``analysis.calibration
    .llm_calibration``: ``spearman_llm``, ``spearman_baselines``, ``llm_mu_range``)."""
    from marketarena.core.paths import Paths
    from marketarena.core.sources import read_report
    from marketarena.markets.double_auction.analysis.calibration import llm_calibration
    from marketarena.markets.double_auction.analysis.reference import INFO

    paths = Paths(root)
    report = (read_report(paths.episodes(instance)) or {}).get("report", {})
    metrics = paths.metrics(instance)
    agents = pd.read_parquet(metrics / "agents.parquet", columns=["episode_id", "csa_source"])
    differences = bz_metrics.largest_differences(pd.read_parquet(metrics / "check.parquet"))
    csa_source = agents.groupby("csa_source")["episode_id"].nunique().to_dict()
    reference = None
    if "ours" in csa_source:
        info = json.loads((paths.references(instance) / INFO).read_text())
        reference = {
            key: info["params"][key] for key in ("rounds", "n_buyers", "n_sellers", "distributions")
        }
        reference["games_per_distribution"] = info["params"]["reference"]["games_per_distribution"]
        reference["opponents"] = _opponents(info["opponents"])
    board_path = paths.reports / "leaderboards" / f"{instance}.csv"
    seed = report.get("seed_comparison", {"applies": False, "why": "no import report"})
    return {
        **report,
        "max_abs_diff_efficiency": differences["efficiency"],
        "max_abs_diff_surplus_share": differences["surplus_share"],
        "csa_source": {k: int(v) for k, v in csa_source.items()},
        "own_csa_reference": reference,
        "board": str(board_path),
        **(llm_calibration(pd.read_csv(board_path)) if seed["applies"] else {}),
    }


def _opponents(recorded) -> str:
    """Who our reference played against, as ``reference_info.json`` records them."""
    from marketarena.markets.double_auction.bazaar_baselines import bazaar_pool

    bazaars = [
        e.model_dump(mode="json", exclude_defaults=True)
        for e in bazaar_pool()
        if e.strategy != "truthful"
    ]  # the reference's opponents: the pool but truthful
    if recorded == bazaars:
        return "BAZAAR's 29 baselines"
    return recorded if isinstance(recorded, str) else f"{len(recorded)} scripted traders"
