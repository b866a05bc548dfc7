"""lemon's sources: Agent Bazaar's published lemon runs (``agent_bazaar.py``, converting each run's
steps in ``steps.py`` and its prompt log in ``prompt_log.py``, over the reader it shares with
crash, ``markets/_shared/sources/agent_bazaar.py``), the replay of their steps under our rules
(``replay.py``, its sellers' vote windows in ``reputation.py``), the authors' own scores
(``authors.py``), the analysis of an imported instance (``analysis.py``) and its figures
(``plots.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from marketarena.core.sources import MarketSource
from marketarena.markets.lemon.params import LemonParams
from marketarena.markets.lemon.sources.analysis import LemonImportedAnalysis


class LemonAgentBazaarSource(MarketSource):
    """Agent Bazaar's lemon runs (their ``exp2``), one episode per run; an instance's defaults
    are ``params.SOURCE_DEFAULTS``."""

    format = "agent_bazaar"
    analysis = LemonImportedAnalysis

    def import_games(self, mp: LemonParams, source: Path, out: Path) -> dict:
        """Agent Bazaar's lemon runs under ``source`` (their ``logs-data`` folder), one episode
        per run (``agent_bazaar.py``), converted in worker processes (one per core, at most 8)."""
        from marketarena.markets.lemon.sources import agent_bazaar

        return agent_bazaar.import_runs(
            mp, Path(source), Path(out), workers=min(8, os.cpu_count() or 1)
        )

    def joint(self, mp: LemonParams) -> bool:
        """LLM entries beside the authors' runs (``params.joint_roster``)."""
        return bool(mp.entrants)

    def check_joint(self, mp: LemonParams, root: Path) -> None:
        """Every entry on the authors' buyer finds their code and it renders a prompt."""
        from marketarena.markets._shared.sources.agent_bazaar import check_their_code
        from marketarena.markets.lemon.authors_buyer import check_code

        check_their_code(mp, root, check_code)
