"""crash: Agent Bazaar's B2C market, "The Crash" (seed 001, section 3.1; DESIGN.md 7.4).

Firms set a price and buy supply each day; consumers buy from the cheapest firm they see; firms that
undercut each other below cost go bankrupt, and a market with Stabilizing Firms can hold.

The rules (the top of this folder): ``rules.py`` (consumers, visibility, choice, fills) and
``market.py`` (the day, costs, bankruptcy, and how the pipeline plays an episode: ``CrashRules``);
what firms see and answer: ``observations.py`` + ``templates/``; params and the settings grid:
``params.py``; scripted firms: ``baselines.py``.

The analysis (``analysis/``): metrics and the Economic Alignment Score (``analysis/metrics.py``,
``metrics/eas.py``), figures and tables (``analysis/plots.py``).

The sources (``sources/``): Agent Bazaar's published crash runs (``source: {format:
agent_bazaar, path: <logs-data>}``): the importer (``sources/agent_bazaar.py``, over the reader
it shares with lemon, ``markets/_shared/sources/agent_bazaar.py``), the replay of their engine through our
rules (``sources/replay.py``), their own score (``sources/published.py``), and the analysis of an
imported instance (``sources/analysis.py``: one board row per model, their score beside ours,
the figures of ``sources/plots.py``).

LLM firms play through the generic agent; the ``stabilizing`` harness (``agents/harnesses/
stabilizing.py``) is the seed's Stabilizing Firm: reflection on its best past days, scored as the
authors score them (market health + max(0, profit) / initial cash, from the signals the rules
report, ``CrashRules.harness_signals``), plus the instructions of
``templates/harness_stabilizing.j2``.

Prompts: the seed's appendix A prompt boxes are empty; the templates follow the authors' code
(sethkarten/AI-Bazaar, agents/firm.py: the firm-manager system prompt with the market size,
the stabilizing-firm rules, the four competitor personas), paraphrased. Added to it: the rules the
seed's equation 3 charges (overhead, the tax on cash, bankruptcy below zero) and the stock rule
(``unsold``), which the authors' firms only learn from their ledger. Not added: how consumers
choose (the authors do not say).
"""

from marketarena.core.registry import MarketKind

KIND = MarketKind(
    __name__,
    params="params:CrashParams",
    rules="market:CrashRules",
    analysis="analysis:CrashAnalysis",
    sources={"agent_bazaar": "sources:CrashAgentBazaarSource"},
    phases=("firm",),
)
