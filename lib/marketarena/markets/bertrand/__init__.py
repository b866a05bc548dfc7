"""bertrand: logit Bertrand pricing and collusion (Calvano / Fish et al.; seed 003's start-up market).

The rules: economics (logit demand, Nash, monopoly, collusion index): ``economics.py``; one
period's rules and the investment options: ``rules.py``; the episode and how the pipeline plays it
(``BertrandRules``): ``market.py``; what firms see and answer: ``observations.py`` +
``templates/`` (the notes macro and the action models are shared with cournot,
``markets/_shared/oligopoly.py``); scripted firms incl. the Q-learning pricer: ``baselines.py``;
params: ``params.py``. LLM firms keep seed 003's PLANS / INSIGHTS notes through the ``notes``
harness (the default here).

The analysis (``analysis/``): metrics (``analysis/metrics.py``), the seed's outcome categories
(``analysis/outcomes.py``), figures and tables (``analysis/plots.py``).

The reference: the simulate stage first writes ``summary.json`` with the Nash and monopoly prices,
quantities and profits of the starting game (and, for the start-up preset, of every symmetric
investment level), then plays; episodes are fingerprinted on it. Episodes log the references of each
period's own cost configuration in ``states`` (they move with investments).
"""

from marketarena.core.registry import MarketKind

KIND = MarketKind(
    __name__,
    params="params:BertrandParams",
    rules="market:BertrandRules",
    analysis="analysis:BertrandAnalysis",
    phases=("price",),
)
