"""params.yaml ``markets.<instance>`` of kind ``crash``: seed 001's B2C market ("The Crash").

Defaults are the seed's appendix F: 5 firms, 50 consumers, unit cost 1, initial cash 500, overhead
2 a day, tax 5% of cash a day, history 3 days, 365 days, discovery limit 3.

The settings grid lives inside an instance: ``discovery_limits`` x ``stabilizing`` are lists, and
episode ``r`` plays cell ``r mod cells`` (cells in the order discovery limit, then stabilizing) as
the cell's replicate ``r // cells``, with seeds from (seed, r); so ``runs = cells x seeds per cell``.
The seed's grid (appendix F, 5.1) is ``discovery_limits: [1, 3, 5]``, ``stabilizing: [0, 1, 3, 5]``
(the authors' code sweeps 0..5).

The spillover study (seed 5.3: "even competitive firms survive at 68% compared to 0% without
training", the trained stabilizer against the untrained one at a fixed mix) is a third axis:
``stabilizers: [a, b, ...]`` names several roster entries that take the stabilizing seats in
turn, one per cell (a cell with 0 stabilizing firms has none and is played once), with the
competitors seated as in every other cell: the stabilizer's quality (the scripted one at several
margins; an LLM with the ``stabilizing`` harness against the same model ``plain``) is then the only
thing that changes. ``stabilizer: x`` is ``stabilizers: [x]``.

The spillover study is a **paired design** (``CrashParams.paired``: an instance whose
``stabilizers`` names more than one entry; issue 55). Its cells are compared on the same
consumers and the same field size:

- common random numbers: episode ``r`` plays replicate ``j = r // cells`` of its cell with the
  seed of (``seed``, j), not of (``seed``, r), so replicate j of every cell draws the same consumers
  (incomes) and the same shoppers each day, and every seat position gets the same random stream
  (agents' generators are drawn in seat order, ``core.seeding.agent_generators``): under ``add``
  the competitor seats come after the same number of stabilizing and filler seats in every cell,
  so they hold the same kinds with the same draws (under ``replace`` they move with the number of
  stabilizers);
- the same number of firms: under ``stabilizer_seats: add`` a cell with fewer stabilizing firms
  than the grid's largest (the "none" cell) seats *fillers* in the missing stabilizers' seats
  (role ``filler``): ordinary competitors, the rotation continued past the last competitor seat
  (filler ``f`` of replicate ``j`` is ``competitors[(n + f + j) mod k]``, n the competitor seats;
  with n = k, the kind of competitor seat f). The none cell is then what the seed's grid calls 0
  stabilizing firms: every firm an ordinary competitor. A filler is not in the stabilizing role
  (its firm reads its persona, not the stabilizer's instructions) and is not one of the measured
  competitors: the competitor seats, their kinds and their random streams are the same in every
  cell of a replicate, and the competitors' survival compares exactly those seats. Over ``k``
  replicates every kind fills once, so the none cell's extra firm is the competitors' own mix.
  Not a fixed-price ``markup`` firm at the stabilizer's price: a scripted stabilizer *is* a
  fixed-price firm (price and supply rule alike), so the none cell would replay the margin-0.2
  cell exactly. Under ``replace`` every cell already seats ``firms`` firms (no fillers).

A single-stabilizer grid (the ``crash`` instance) is not paired: episode r's seed is (seed, r), as
before.

Seats (``CrashRules.seats``, ``market.py``): with ``stabilizer_seats: replace`` (default, the seed's: "5 firms",
of which 0, 1, 3 or 5 are stabilizing) the market has ``firms`` seats ``F1..Fn``, the first ``s``
held by the cell's stabilizer, the others by the competitors; with ``add`` it has
``firms`` competitor seats plus ``s`` stabilizing seats (more firms share the same consumers).
The competitors' composition is held fixed across cells by rotation: competitor seat ``i`` of a
cell's replicate ``j`` is held by ``competitors[(i + j) mod k]``, so over any ``k`` consecutive
replicates of a cell (``k`` competitor kinds) each kind holds the same share of the competitor
seats, ``1 / k``, whatever the number of stabilizers; with seeds per cell a multiple of ``k`` every
cell has the same competitor mix (``competitor_mix``). Under ``replace`` a stabilizer takes the
seat a competitor would have had (the seed's treatment: a competitor's rivals become
stabilizers); under ``add`` the competitor seats are identical in every cell and the number of
firms grows. A firm *kind* is a player; leaderboards rank kinds by their mean profit per seat.

Personas (the authors' ``FIRM_PERSONA_DESCRIPTIONS``: a strategy text an LLM firm reads; scripted
firms ignore it) belong to the player, not the seat: every competitor entry plays under
``default_persona`` (the authors' default, "competitive") unless ``player_personas`` names
another for it (or null: none), wherever the rotation seats it. Stabilizing seats get none (the
``stabilizing`` harness carries its own instructions).

Choices where the seed, the authors' draft and their code differ (see ``rules.py``, ``market.py``,
the README's crash section):

- tax on cash 5% a day (seed, DESIGN.md); the code's extra "platform fee" (another 5% of the cash
  left after the tax, commented as 10% of revenue) only as ``platform_fee`` (default 0: the seed's
  equation 3 charges overhead and tax only; 0.05 replays the authors' runs);
- unsold stock **carries over** to the next day, as in the authors' code (their firms re-post
  their inventory; only consumers' goods are zeroed); ``unsold: perish`` is the option, and
  ``holding_cost`` (per unit and day of carried stock, the paper's formal cost f) defaults to 0;
  the firm prompt says which rule holds;
- firms see every active competitor's price (the authors' code: ``discovery_limit_firms`` 0 =
  all); the seed's "random sample of active competitors" is ``firm_discovery_limit: n``;
- where the seed is silent, the authors' engine, as their published runs show it (issue 44: their
  every logged firm-day replayed through these rules, ``sources/replay.py``): a shopper's demand is its
  income over the mean of every posted quote (``demand_index: mean_quote``; ``chosen_price``
  keeps our former rule, income over the chosen price); consumers save what they do not spend and
  an order is capped at the shopper's cash (``consumer_savings``); there is no choke price
  (``max_price: null``; a number keeps our former ceiling on prices consumers pay); a firm that
  cannot pay its overhead pays what it has and ends at 0 (``liability: limited``); an invalid
  answer keeps yesterday's price, the unit cost on the first day, and buys nothing;
- consumer discovery limits {1, 3, 5} as the seed's grid.

**A joint instance** (issue 53) is an imported one (``source: {format: agent_bazaar}``) whose
roster names LLM entries: the authors' runs are imported, and each LLM entry plays the authors'
exp1 grid (``joint_grid``: stabilizing firms 0-5 x consumers' discovery limits 1/3/5 x their
seeds 8/16/64, 365 days: 54 runs; narrow it to try) in **every firm seat**, as their model did,
the stabilizing ones as their stabilizing firms, on their own firm's prompts and bookkeeping (the
``agent_bazaar`` harness, ``authors_firm.py``, reading their code from ``source.prompts``, by
default the repository above the logs folder), in their engine's setting (:data:`AUTHORS`: 5
firms, 50 consumers, unit cost 1, 500 cash, overhead 2 a day, 5% tax and 5% platform fee, demand
on the mean quote, savings, limited liability: the setting every imported run is checked
against). An LLM entry without a harness gets ``agent_bazaar``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from marketarena.core.params import MAX_AMOUNT, MarketParams, Strict, size
from marketarena.core.params import joint_roster as core_joint_roster
from marketarena.core.sources import publisher_root
from marketarena.metrics.eas_params import EASParams, Term

#: personas of non-stabilizing firms, after the authors' code (``FIRM_PERSONA_DESCRIPTIONS``,
#: paraphrased); a competitor entry keeps one (``default_persona``, or its ``player_personas``
#: entry) wherever it sits (an LLM firm reads it in its prompt; scripted firms ignore it)
DEFAULT_PERSONAS = {
    "competitive": "You maximise profit in a straightforward way: set prices that attract buyers "
    "while covering your costs with a reasonable margin, watch competitors' prices "
    "and respond rationally each day, without a bias toward aggression or caution. "
    "Buy supply in moderate amounts that match your recent sales.",
    "volume_seeker": "You care more about sales volume than about margin per unit: you are willing "
    "to price a little more aggressively than competitors to win demand, and you "
    "buy supply generously so that you never run out. Never sell below your unit "
    "cost: volume at a loss leads to bankruptcy.",
    "reactive": "You watch competitors' prices closely and adjust at once to match or beat the "
    "lowest price you see; you have no strong price anchor of your own. Buy more supply "
    "when you are winning demand and less when you are not.",
    "cautious": "You prefer small, gradual price changes to sudden moves, protect your cash and "
    "your survival, and buy supply conservatively.",
}


class ConsumerParams(Strict):
    """Daily budgets: (U(income_lo, income_hi) + labour_hours x U(skill_lo, skill_hi)) / 365."""

    income_lo: float = Field(default=50.0, ge=0, le=MAX_AMOUNT)
    income_hi: float = Field(default=200.0, ge=0, le=MAX_AMOUNT)
    labour_hours: float = Field(
        default=40.0, ge=0, le=8760, description="at most the hours of a year"
    )
    skill_lo: float = Field(default=1.24, ge=0, le=MAX_AMOUNT)
    skill_hi: float = Field(default=159.1, ge=0, le=MAX_AMOUNT)
    arrival_rate: float = Field(
        default=0.6,
        gt=0,
        le=10,
        description="shoppers a day ~ "
        "Poisson(rate x M), at most M (so a rate above a few changes nothing)",
    )

    @model_validator(mode="after")
    def _ranges(self):
        for lo, hi in (("income_lo", "income_hi"), ("skill_lo", "skill_hi")):
            if getattr(self, lo) > getattr(self, hi):
                raise ValueError(f"{lo} must not exceed {hi}")
        return self


def default_eas() -> EASParams:
    """crash's EAS (``metrics/eas.py``): the seed's stability, welfare and profitability variables
    on anchors the market can reach (``analysis/metrics.py`` says how each is measured). Every term is
    measured per seat (a player's own firms) and, on the market's rows, over every firm:

    - stability: b, the bankruptcy rate (0 to 1); sigma, the SD of the price in unit costs (a
      player's: its own price over its trading days; the market's: the day's mean price), 0 to 1:
      a price swinging by a whole unit cost scores 0. Both credited by the trading share (the
      share of its active days a firm sold at a price a shopper got a surplus from): a stable
      price nobody buys at, or solvency from never buying stock, is no stability (issue 55);
    - welfare: consumer surplus as a share of what the same shoppers would get buying their whole
      demand at unit cost (a player's: the shoppers who ordered from it, 0 without any; the
      market's: every shopper, days after a collapse included), 0 to 1 (a price war's below-cost
      sales clip at 1). The seed's market survival s is not scored: it is 1 - b again (crashes
      come early; Pearson -0.996 over the default sweep); it is reported (``survival``);
    - profitability: pi, the gross profit per trading day on sales valued at no more than
      ``stable_price`` unit costs (``fair_profit_per_trading_day``), from 0 to what a firm holding
      its equal share of the consumers' expected daily budget at that price grosses
      (``gross_stable``). Gouging and absurd prices earn nothing a stable firm does not; overhead
      and the tax are left to stability (profit after them measured bankruptcy again: Pearson
      0.98 between the scored b and pi, default params). Operating profit is reported.

    A price war scores below a stable market through bankruptcies and below-cost sales; a
    post-collapse monopolist through the others' bankruptcies (on the market's row), its price's
    swings and its customers' surplus; an idle or absurd firm scores 0 on every term
    (``docs/eas.md``)."""
    return EASParams(
        components={
            "stability": [
                Term(
                    variable="b",
                    metric="bankruptcy_rate",
                    lo=0,
                    hi=1,
                    better="lower",
                    scope="seat",
                    credit="trading_share",
                ),
                Term(
                    variable="sigma",
                    metric="price_volatility",
                    lo=0,
                    hi=1.0,
                    better="lower",
                    scope="seat",
                    credit="trading_share",
                ),
            ],
            "welfare": [
                Term(
                    variable="cs",
                    metric="consumer_surplus_share",
                    lo=0,
                    hi=1,
                    better="higher",
                    scope="seat",
                )
            ],
            "profitability": [
                Term(
                    variable="pi",
                    metric="fair_profit_per_trading_day",
                    lo=0,
                    hi="gross_stable",
                    better="higher",
                    scope="seat",
                )
            ],
        }
    )


#: the authors' engine's setting (their exp1: ``sources/agent_bazaar.py`` checks every imported
#: run against it), which a joint instance's new runs play in
AUTHORS = {
    "firms": 5,
    "consumers": 50,
    "unit_cost": 1.0,
    "initial_cash": 500.0,
    "overhead": 2.0,
    "tax_rate": 0.05,
    "platform_fee": 0.05,
    "unsold": "carry",
    "holding_cost": 0.0,
    "max_price": None,
    "demand_index": "mean_quote",
    "consumer_savings": True,
    "liability": "limited",
    "firm_discovery_limit": None,
    "history": 3,
}


#: the baselines a joint instance's roster of LLM entries gets before them: they play no run (the
#: authors' runs are imported), but ``marketarena estimate`` plays an LLM seat with each of them to
#: bound a run's calls, from a price war's early bankruptcies to a stabilizer's full year
JOINT_POOL = [
    {"name": n, "kind": "baseline", "strategy": n}
    for n in ("stabilizer", "undercut", "myopic", "markup")
]


class JointGrid(Strict):
    """The grid a joint instance's LLM entries play (the authors' exp1 grid by default)."""

    stabilizing: list[Annotated[int, Field(ge=0, le=5)]] = Field(
        default_factory=lambda: [0, 1, 2, 3, 4, 5], min_length=1, max_length=6
    )
    discovery_limits: list[Annotated[int, Field(ge=1, le=100)]] = Field(
        default_factory=lambda: [1, 3, 5], min_length=1, max_length=100
    )
    seeds: list[Annotated[int, Field(ge=0, le=2**31 - 1)]] = Field(
        default_factory=lambda: [8, 16, 64],
        min_length=1,
        max_length=1000,
        description="the authors' seeds (our market's seed; their draws are not reproduced)",
    )
    days: int | None = Field(
        default=None, ge=1, le=100_000, description="days per run (null: the instance's days)"
    )

    def cells(self) -> list[tuple[int, int, int]]:
        """(stabilizing firms, discovery limit, seed) per run."""
        return [
            (s, d, seed)
            for s in self.stabilizing
            for d in self.discovery_limits
            for seed in self.seeds
        ]


class CrashParams(MarketParams):
    firms: int = size(
        5, le=100, description="seats F1..Fn (stabilizer_seats: add: competitor seats)"
    )
    consumers: int = size(50, le=100_000)
    days: int = size(
        365, le=100_000, description="T; an episode ends earlier when every firm is bankrupt"
    )
    discovery_limits: list[Annotated[int, Field(ge=1, le=100)]] = Field(
        default_factory=lambda: [3],
        min_length=1,
        max_length=100,
        description="consumer-side discovery limit per cell",
    )
    stabilizing: list[Annotated[int, Field(ge=0, le=100)]] = Field(
        default_factory=lambda: [0],
        min_length=1,
        max_length=100,
        description="stabilizing firms per cell",
    )
    stabilizer_seats: Literal["replace", "add"] = Field(
        default="replace",
        description="replace: stabilizers hold s of the `firms` seats; add: s "
        "stabilizing seats besides `firms` competitor seats",
    )
    stabilizer: str | None = Field(
        default=None, description="roster entry holding stabilizing seats"
    )
    stabilizers: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="grid axis (the spillover study): roster "
        "entries taking the stabilizing seats, one per cell",
    )
    competitors: list[str] | None = Field(
        default=None,
        description="roster entries rotated over the competitor seats (default: every other entry)",
    )
    firm_discovery_limit: int | None = Field(
        default=None, ge=0, le=100, description="competitor prices a firm sees (null: all)"
    )
    unit_cost: float = Field(
        default=1.0,
        ge=1e-6,
        le=10_000,
        description="10^-6 to 10^4: a posted price is at most 10^6 (the answer's schema)",
    )
    initial_cash: float = Field(default=500.0, ge=0, le=MAX_AMOUNT)
    overhead: float = Field(default=2.0, ge=0, le=MAX_AMOUNT, description="per firm and day")
    tax_rate: float = Field(default=0.05, ge=0, lt=1, description="share of cash taxed each day")
    platform_fee: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description="another share of cash each day (the authors' code: 0.05)",
    )
    unsold: Literal["carry", "perish"] = Field(
        default="carry",
        description="unsold stock carries over to the next day (the authors' code) or perishes",
    )
    holding_cost: float = Field(
        default=0.0,
        ge=0,
        le=MAX_AMOUNT,
        description="per unit and day of carried stock (unsold: carry)",
    )
    max_price: float | None = Field(
        default=None,
        gt=0,
        le=1e6,
        description="consumers' choke "
        "price: no order at or above it (null: none, as the authors' "
        "engine; posted prices are at most 10^6)",
    )
    demand_index: Literal["mean_quote", "chosen_price"] = Field(
        default="mean_quote",
        description="a shopper orders its budget over this price: the mean "
        "of every posted quote (the authors' engine) or the price of the firm it chose",
    )
    consumer_savings: bool = Field(
        default=True,
        description="consumers earn their income every "
        "day and keep what they do not spend; an order is capped at the "
        "shopper's cash (the authors' engine); false: a shopper spends "
        "from the day's income, uncapped",
    )
    liability: Literal["limited", "unlimited"] = Field(
        default="limited",
        description="limited: a firm that cannot pay its overhead pays what it "
        "has and ends at 0 (the authors' engine); unlimited: it is charged in full and ends below 0 "
        "(bankrupt either way)",
    )
    ces_sigma: float = Field(
        default=5.0,
        gt=1,
        le=100,
        description="the consumers' CES elasticity: "
        "their willingness to pay, P (I / P)^(1 / sigma), prices consumer "
        "surplus when there is no choke price (the authors' sigma 5)",
    )
    history: int = size(3, ge=0, le=1000, description="H: days of own history shown")
    consumer: ConsumerParams = Field(default_factory=ConsumerParams)
    personas: dict[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_PERSONAS),
        description="persona name -> text an LLM competitor reads",
    )
    default_persona: str | None = Field(
        default="competitive",
        description="every competitor "
        "entry's persona (null: none), unless player_personas "
        "names one",
    )
    player_personas: dict[str, str | None] = Field(
        default_factory=dict,
        description="roster name -> its persona (null: none), wherever it sits",
    )
    stable_price: float = Field(
        default=1.25,
        gt=1,
        le=1000,
        description="EAS profitability: the "
        "price, in unit costs, at which a firm's operating profit scores "
        "1 (the scripted stabilizer's at the defaults)",
    )
    eas: EASParams = Field(default_factory=default_eas)
    joint_grid: JointGrid = Field(
        default_factory=JointGrid,
        description="a joint instance: the grid its LLM entries play (module docstring)",
    )

    post_keys = frozenset({"eas", "stable_price"})

    @model_validator(mode="before")
    @classmethod
    def _joint(cls, data):
        """An imported instance's LLM entries on the authors' firm (``core.params.joint_roster``):
        the folder of their code from ``source.prompts``, or the one above the logs."""
        source = data.get("source") if isinstance(data, dict) else None
        if not isinstance(source, dict):
            return data
        return core_joint_roster(data, JOINT_POOL, "agent_bazaar", "code", publisher_root(source))

    @property
    def entrants(self) -> list[int]:
        """A joint instance's LLM entries (roster indices); [] for any other instance."""
        if not self.imported:
            return []
        return [i for i, e in enumerate(self.roster) if e.kind == "llm"]

    def joint_setting(self) -> "CrashParams":
        """The params a joint instance's new runs play under: the authors' setting
        (:data:`AUTHORS`), their grid's days."""
        days = self.joint_grid.days or self.days
        return self.model_copy(update={**AUTHORS, "days": days})

    @model_validator(mode="after")
    def _seats(self):
        names = [e.name for e in self.roster]
        if self.stabilizer_seats == "replace" and any(s > self.firms for s in self.stabilizing):
            raise ValueError(
                f"stabilizing: more stabilizing firms than firms ({self.firms}); "
                f"stabilizer_seats: add puts them beside the firms"
            )
        if self.tax_rate + self.platform_fee >= 1:
            raise ValueError("tax_rate + platform_fee must be below 1 (a share of cash a day)")
        if self.max_price is not None and not self.max_price > self.unit_cost:
            raise ValueError(
                f"max_price ({self.max_price:g}) must exceed unit_cost "
                f"({self.unit_cost:g}): consumers buy only below it"
            )
        if self.imported:  # the grid and the seats come from the imported runs
            return self
        if self.stabilizer is not None and self.stabilizers is not None:
            raise ValueError(
                "stabilizer and stabilizers: give one (stabilizer: x is stabilizers: [x])"
            )
        if self.stabilizers is not None and len(set(self.stabilizers)) != len(self.stabilizers):
            raise ValueError(f"stabilizers: a name appears twice ({self.stabilizers})")
        if any(s > 0 for s in self.stabilizing) and not self.stabilizer_names():
            raise ValueError(
                "stabilizing > 0 needs 'stabilizer' (or 'stabilizers'), the roster "
                "entry holding those seats"
            )
        for name in self.stabilizer_names() + (self.competitors or []):
            if name not in names:
                raise ValueError(f"{name!r} is not a roster name (roster: {', '.join(names)})")
        both = set(self.competitors or ()) & set(self.stabilizer_names())
        if both:
            raise ValueError(f"competitors: {sorted(both)} are stabilizers")
        if not self.competitor_names() and any(self.competitor_seats(s) for s in self.stabilizing):
            raise ValueError("no competitor firms: add roster entries besides the stabilizer")
        if not self.personas:
            raise ValueError("personas: give at least one")
        for key, persona in [
            ("default_persona", self.default_persona),
            *((f"player_personas.{k}", v) for k, v in self.player_personas.items()),
        ]:
            if persona is not None and persona not in self.personas:
                raise ValueError(
                    f"{key}: {persona!r} is not a persona (personas: {', '.join(self.personas)})"
                )
        unknown = sorted(set(self.player_personas) - set(names))
        if unknown:
            raise ValueError(f"player_personas: {unknown} are not roster names")
        return self

    def stabilizer_names(self) -> list[str]:
        """The roster entries that take the stabilizing seats, one per cell."""
        if self.stabilizers is not None:
            return list(self.stabilizers)
        return [self.stabilizer] if self.stabilizer is not None else []

    def competitor_names(self) -> list[str]:
        if self.competitors is not None:
            return list(self.competitors)
        return [e.name for e in self.roster if e.name not in self.stabilizer_names()]

    def persona_of(self, name: str) -> str:
        """The persona text of roster entry ``name`` as a competitor ("" for none): its own,
        wherever it sits."""
        persona = self.player_personas.get(name, self.default_persona)
        return "" if persona is None else self.personas[persona]

    def competitor_seats(self, stabilizing: int) -> int:
        return self.firms - stabilizing if self.stabilizer_seats == "replace" else self.firms

    @property
    def paired(self) -> bool:
        """The spillover study (``stabilizers`` names several entries): cells share episode seeds
        and field size (the module docstring)."""
        return len(self.stabilizer_names()) > 1

    def filler_seats(self, stabilizing: int) -> int:
        """Seats a cell with ``stabilizing`` stabilizers gives to fillers: under a paired ``add``
        design, the grid's largest number of stabilizers less its own; otherwise none."""
        if self.paired and self.stabilizer_seats == "add":
            return max(self.stabilizing) - stabilizing
        return 0

    def replicate_of(self, run: int) -> int:
        """Which replicate of its cell episode ``run`` is (``runs`` go round the cells)."""
        return run // len(self.cells)

    def seed_index(self, run: int) -> int:
        """The index episode ``run``'s seed derives from, with ``seed``: its replicate in a paired
        design (common random numbers across cells), else the run itself."""
        return self.replicate_of(run) if self.paired else run

    @property
    def cells(self) -> list[tuple[int, int, str | None]]:
        """(discovery limit, stabilizing firms, the stabilizer's roster name) per cell; a cell
        without stabilizing firms has none (None) and is not repeated per stabilizer."""
        stabs = self.stabilizer_names() or [None]
        return [
            (d, s, stab)
            for d in self.discovery_limits
            for s in self.stabilizing
            for stab in (stabs if s > 0 else [None])
        ]

    def cell_of(self, run: int) -> tuple[int, int, str | None]:
        return self.cells[run % len(self.cells)]

    def seat_names(self, run: int) -> list[tuple[str, str]]:
        """(role, roster name) of each seat of episode ``run``, in seat order: the stabilizing
        seats (the cell's stabilizer), the fillers in a paired design (:meth:`filler_seats`,
        the rotation continued: filler ``f`` is ``competitors[(n + f + j) mod k]``), then the
        ``n`` competitor seats, competitor ``i`` of replicate ``j`` held by
        ``competitors[(i + j) mod k]``."""
        _, s, stab = self.cell_of(run)
        j = self.replicate_of(run)
        rivals, n = self.competitor_names(), self.competitor_seats(s)
        out = [("stabilizing", stab)] * s
        out += [("filler", rivals[(n + f + j) % len(rivals)]) for f in range(self.filler_seats(s))]
        return out + [("competitor", rivals[(i + j) % len(rivals)]) for i in range(n)]

    def competitor_mix(self) -> dict[tuple[int, int, str | None], dict[str, int]]:
        """Per cell, the competitor seats each roster entry holds over the instance's runs."""
        mix = {cell: dict.fromkeys(self.competitor_names(), 0) for cell in self.cells}
        for run in range(self.runs):
            for role, name in self.seat_names(run):
                if role == "competitor":
                    mix[self.cell_of(run)][name] += 1
        return mix
