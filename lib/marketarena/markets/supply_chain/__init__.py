"""supply_chain: Market-Bench's procurement auction + retail with persona-gated attention (seed 000,
DESIGN.md 7.1).

The rules: the state machine and how the pipeline plays it (``SupplyChainRules``: every roster
entry a retailer in every episode; the personas and their embeddings as inputs): ``market.py``,
what it logs: ``log_tables.py``; the pure functions (auction settlement, buyers, attention, the purchase walk): ``rules.py``; what
agents see and answer: ``observations.py`` + ``templates/``; scripted retailers: ``baselines.py``
(slogans: ``slogans.yaml``); params: ``params.py``.

The analysis (``analysis/``): metrics (``analysis/metrics.py``), Figures 3-7
(``analysis/plots.py``), the paper's Table 2 (``analysis/tables.py``).

Its episodes read the personas and their embeddings (``uses``): editing ``params.personas`` or
``params.embedding.model`` re-plays them.
"""

from marketarena.core.registry import MarketKind

KIND = MarketKind(
    __name__,
    params="params:SupplyChainParams",
    rules="market:SupplyChainRules",
    analysis="analysis:SupplyChainAnalysis",
    uses=("personas", "embedding.model"),
    phases=("procurement", "retail"),
)
