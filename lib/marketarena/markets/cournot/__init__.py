"""cournot: multi-product Cournot competition and market division (seed 003, DESIGN.md 7.3).

The rules: economics (demand, profits, Nash by iterative best response, monopoly):
``economics.py``; one round's rules: ``rules.py``; the episode and how the pipeline plays it
(``CournotRules``): ``market.py``; what firms see and answer: ``observations.py`` +
``templates/``; scripted firms: ``baselines.py``; params: ``params.py``; what ``bertrand`` shares:
``markets/_shared/oligopoly.py``. LLM firms keep seed 003's PLANS / INSIGHTS notes through the
``notes`` harness (the default here).

The analysis (``analysis/``): metrics (``analysis/metrics.py``), the specialisation test
(``analysis/specialisation.py``), figures and tables (``analysis/plots.py``).

The reference: the simulate stage first writes ``data/references/<instance>/summary.json`` (Nash
and monopoly quantities, prices, profits and CVs of the configured game) and ``reference.md``,
then plays, reading it (``input_files``: episodes are fingerprinted on it) and copying it into
every episode's ``reference.parquet``.
"""

from marketarena.core.registry import MarketKind

KIND = MarketKind(
    __name__,
    params="params:CournotParams",
    rules="market:CournotRules",
    analysis="analysis:CournotAnalysis",
    phases=("quantity",),
)
