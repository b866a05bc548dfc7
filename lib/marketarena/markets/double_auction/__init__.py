"""double_auction: BAZAAR's repeated call market with a baseline zoo, CSα and multi-pass TrueSkill
(seed 002, DESIGN.md 7.2).

The rules (what playing needs; the episodes are fingerprinted on these files alone): the market's
state machine and how the pipeline plans and plays it (``DoubleAuctionRules``): ``market.py``;
one round's pure rules: ``rules.py``; who sits in which game: ``schedule.py``; what traders see
and answer: ``observations.py`` + ``templates/``; scripted traders: ``baselines/__init__.py``;
params and the tournament: ``params.py``; BAZAAR's 29 baselines by their logged names:
``bazaar_baselines.py``.

Tournament (``params.py``): pool game ``r`` (``ep-<r>``) is one game of ``distributions[r mod D]``;
its 8 seats are drawn from the pool without replacement with
``default_rng(SeedSequence([seed, r, 7]))``, the first ``n_buyers`` drawn buy (``B1..``), the others
sell (``S1..``). Entrant ``X``'s game ``k`` (``x-<X>-<k>``) is a game of ``distributions[k mod D]``
with ``X`` in a drawn seat and the pool in the others (``schedule.py``). The CSα reference
table is read by the metrics only, so it is not an input of the simulation.

The analysis (``analysis/``): the CSα reference, truthful games against the pool
(``analysis/reference.py``); metrics (``analysis/metrics.py``); the board (``analysis/board.py``):
one free-for-all TrueSkill game per episode, seats ranked by CSα (equal CSα = tie),
``rating_passes`` (200) passes in shuffled order, median μ and σ per trader on the seed's scale,
bootstrap intervals over games; figures (``analysis/plots.py``); the calibration against the
seed's table and BAZAAR's published games (``analysis/calibration.py`` and its CSVs).

The sources (``sources/``): BAZAAR's published JSONL games (format ``bazaar``): the reader
(``sources/reader.py``), the games in our log schema (``sources/bazaar.py``), and the analysis of
an imported instance (``sources/analysis.py``: each game's logged CSα or ours, the chat, the check
of our efficiency and surplus shares against the logged ones). ``marketarena import-bazaar`` is a
thin wrapper over the same path (``pipeline.import_folder``).
"""

from marketarena.core.registry import MarketKind

KIND = MarketKind(
    __name__,
    params="params:DoubleAuctionParams",
    rules="market:DoubleAuctionRules",
    analysis="analysis:DoubleAuctionAnalysis",
    sources={"bazaar": "sources:DoubleAuctionBazaarSource"},
    source_defaults="params:SOURCE_DEFAULTS",
    phases=("quote",),
)
