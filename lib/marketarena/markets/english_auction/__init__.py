"""english_auction: AucArena's sequential English auction (seed 004; DESIGN.md 7.4).

Items are presented one at a time; bidders plan (item priorities), bid in open ascending rounds,
update a status JSON that is checked against the truth, and replan.

The rules: the pure functions: ``rules.py``; the state machine, its log tables and how the
pipeline plays it (``EnglishAuctionRules``: the challenger schedule, its seat matrix, the stopping
rule's players): ``market.py``; what bidders see and answer: ``observations.py`` + ``templates/``
(the seed's appendix A.2 prompts, answers as strict JSON: no LLM parses bids); the settings grid
(budget x item order) and the lineups (the seed's standard competition: fixed ``baselines`` plus
one challenger per auction): ``params.py``; scripted bidders, the seed's rule bidder and the LLM
stand-in ``planner`` among them: ``baselines.py``.

The analysis (``analysis/``): metrics (``analysis/metrics.py``), the board and the roster's
objectives (``analysis/__init__.py``), figures and tables (``analysis/plots.py``). Ratings:
TrueSkill over the auctions, ranked by profit (the seed's Figure 2): the board's mu is the median
over ``rating_passes`` shuffled passes, and its interval a bootstrap over auctions of that same
median (each resample rated in ``rating_passes`` shuffled passes).

LLM bidders use the ``bdi`` harness (``bdi.py``: the desire, the adaptive /
static / no-plan variants of the seed's ablation, and the authors' conversation: the plan the
model wrote and its earlier bids on the item before every bid).
"""

from marketarena.core.registry import MarketKind

KIND = MarketKind(
    __name__,
    params="params:EnglishAuctionParams",
    rules="market:EnglishAuctionRules",
    analysis="analysis:EnglishAuctionAnalysis",
    phases=("plan", "bid", "belief", "replan"),
)
