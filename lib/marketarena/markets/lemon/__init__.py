"""lemon: Agent Bazaar's C2C market, "The Lemon Market" (seed 001, section 3.2; DESIGN.md 7.4).

Honest sellers and a deceptive principal's Sybil identities list used cars; buyers see a few
listings, bid or pass, and vote on the seller; reputation is the up-share of the last votes, and an
identity under 0.3 is retired and replaced.

The rules (the top of this folder): ``rules.py`` (reputation, anonymised ids) and ``market.py``
(the three decision points of a step), ``plan.py`` (how the pipeline plays an episode:
``LemonRules``; a joint instance's runs) and ``authors_buyer.py`` (Agent Bazaar's own buyer, the
``agent_bazaar`` harness, issue 53); what
agents see and answer: ``observations.py`` + ``templates/`` (descriptions reach buyers only as
quoted, capped data: ``core.prompts.quote_text``); params and the settings grid: ``params.py``;
scripted agents and their description banks: ``baselines.py``, ``styles.yaml``.

Seats and players: the principal is one player (seat ``P1``) deciding, in one answer, for its
identity seats ``S1..`` (their actor is ``P1``); its score sums them. LLM buyers may use the
``skeptical`` harness (``agents/harnesses/skeptical.py``), the seed's Skeptical Guardian.

The analysis (``analysis/``): the K = 0 reference (the simulate stage writes it first: the
instance's configuration played with K = 0, LLM buyers replaced by the scripted ``reputation``
buyer, documented in the summary; its volume, bids per step, is the base of the EAS's
market-survival term, like double_auction's CSα table), metrics and the EAS
(``analysis/metrics.py``), figures and tables (``analysis/plots.py``), and the seed's Figure 4 as
per-step series (``analysis/figure4.py``).

The sources (``sources/``): imported instances (``source: {format: agent_bazaar, path:
<logs-data>}``, the authors' own LLM runs; docs/agent-bazaar-lemon.md; their defaults:
``params.SOURCE_DEFAULTS``): the simulate stage imports the runs (``sources/agent_bazaar.py``,
over the reader it shares with crash, ``markets/_shared/sources/agent_bazaar.py``); their analysis
(``sources/analysis.py``) plays our scripted sweep of the instance's grid with its roster as
its reference (the seed's Figure 4 from our rules, drawn beside the authors'), takes the K = 0
volume from the imported runs themselves (``authors.own_reference``), replays their steps under
our rules (``sources/replay.py``), computes the authors' own lemon EAS (``sources/authors.py``),
adds each buyer model's invalid-answer rate to the board where its prompt logs are present, and
draws ``sources/plots.py``.

Prompts: the seed's appendix A prompt boxes are empty; the templates follow the authors' code
(sethkarten/AI-Bazaar: agents/buyer.py, seller.py, sybil.py), paraphrased: the buyer
is told the typical price range of each tier and that some sellers misrepresent car quality, and
sees price, description and reputation; the honest seller is told its car's condition and range
and picks a price in it. Added: the quoted-data note on descriptions and the answer formats.
"""

from marketarena.core.registry import MarketKind

KIND = MarketKind(
    __name__,
    params="params:LemonParams",
    rules="plan:LemonRules",
    analysis="analysis:LemonAnalysis",
    sources={"agent_bazaar": "sources:LemonAgentBazaarSource"},
    source_defaults="params:SOURCE_DEFAULTS",
    phases=("list", "buy", "review"),
)
