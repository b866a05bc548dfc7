"""toy: a posted-price market, the smallest whole market (docs/adding-a-market.md).

Each round every seller posts an integer price in [0, ``value``]; one buyer, who values the good at
``value``, buys one unit from the cheapest seller (a seeded draw among equals) if its price is at
most ``value``. The seller's profit is its price minus ``cost``. An invalid answer (a price out of
range) posts ``value``, as a valid answer of ``value`` would (it sells only when no seller is
cheaper).

The rules: ``params.py``, ``market.py`` (the market and ``ToyRules``), ``baselines.py``,
``templates/``; the analysis: ``analysis/`` (profit per seller, the board, one figure).
"""

from marketarena.core.registry import MarketKind

KIND = MarketKind(
    __name__,
    params="params:ToyParams",
    rules="market:ToyRules",
    analysis="analysis:ToyAnalysis",
    phases=("price",),
)
