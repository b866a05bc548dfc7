"""crash's sources: Agent Bazaar's published crash runs (``agent_bazaar.py``, over the reader it
shares with lemon, ``markets/_shared/sources/agent_bazaar.py``), the replay of their engine through our
rules (``replay.py``), their own score (``published.py``), the analysis of an imported instance
(``analysis.py``) and its figures (``plots.py``)."""

from __future__ import annotations

from pathlib import Path

from marketarena.core.sources import MarketSource
from marketarena.markets.crash.params import CrashParams
from marketarena.markets.crash.sources.analysis import CrashImportedAnalysis


class CrashAgentBazaarSource(MarketSource):
    """Agent Bazaar's crash runs (their ``exp1``), one episode per run."""

    format = "agent_bazaar"
    analysis = CrashImportedAnalysis

    def import_games(self, mp: CrashParams, source: Path, out: Path) -> dict:
        """Agent Bazaar's published crash runs (``agent_bazaar.py``), read in one worker process
        per core."""
        from marketarena.config import available_cores
        from marketarena.markets.crash.sources import agent_bazaar

        return agent_bazaar.import_runs(source, out, available_cores())

    def joint(self, mp: CrashParams) -> bool:
        """LLM entries beside the authors' runs (a joint instance: ``crash/params.py``)."""
        return bool(mp.entrants)

    def check_joint(self, mp: CrashParams, root: Path) -> None:
        """Every entry on the authors' firm finds their code and it renders a prompt."""
        from marketarena.markets._shared.sources.agent_bazaar import check_their_code
        from marketarena.markets.crash.authors_firm import check_code

        check_their_code(mp, root, check_code)
