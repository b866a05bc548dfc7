"""double_auction's sources: BAZAAR's published games (format ``bazaar``).

An instance ``{market: double_auction, source: {format: bazaar, path: <logs>}}`` is imported by
the simulate stage (``importing.import_instance``) through :class:`DoubleAuctionBazaarSource`:
every ``*.jsonl`` game under the folder, read strictly (``reader.py``), into episodes ``bz-<k>``
of our log schema (``bazaar.py``), and analysed by :class:`~.analysis.BazaarGamesAnalysis`
(``analysis.py``: the logged CSα or ours, the chat, the check against the logged figures). Its
roster defaults to BAZAAR's 29 baselines (``params.SOURCE_DEFAULTS``), the pool its CSα reference
plays against.

``marketarena import-bazaar <logs>`` is a thin wrapper over the same path
(``pipeline.import_folder``): the games' setting (``reader.games_setting``) and the command's
options make the instance's params, and it prints ``analysis.import_summary``.
"""

from __future__ import annotations

from pathlib import Path

from marketarena.core.sources import MarketSource
from marketarena.markets.double_auction.sources.analysis import BazaarGamesAnalysis


class DoubleAuctionBazaarSource(MarketSource):
    format = "bazaar"
    analysis = BazaarGamesAnalysis

    def import_games(self, mp, source: Path, out: Path) -> dict:
        """BAZAAR's games under ``source`` (every ``*.jsonl``), read and checked before anything
        is written (a bad file: one error naming it and its line), each rated on our CSα in the
        instance's setting (``bazaar.check_setting``), as episodes ``bz-<k>`` in shards of
        ``shard_episodes``. Returns the import report (``bazaar.import_report``)."""
        from marketarena.markets.double_auction.sources import bazaar, reader

        games = reader.read_games(source)
        for game, path in zip(games, reader.log_files(source)):
            bazaar.check_setting(game, path, mp)
        bazaar.write_episodes(games, out, mp.shard_episodes)
        return bazaar.import_report(games)

    def joint(self, mp) -> bool:
        """LLM entrants beside BAZAAR's games (``params.joint_roster``)."""
        return mp.joint

    def check_joint(self, mp, root: Path) -> None:
        """Every entrant on BAZAAR's prompts finds both templates in its prompts folder."""
        from marketarena.core.sources import check_joint_entries
        from marketarena.markets.double_auction.bazaar_prompts import PromptsMissing, check_folder
        from marketarena.markets.double_auction.params import prompts_folder

        check_joint_entries(
            mp,
            root,
            "bazaar",
            "prompts",
            prompts_folder(mp.source.model_dump()),
            check_folder,
            (PromptsMissing,),
            "the prompts/ folder of your copy of lechmazur/bazaar",
        )
