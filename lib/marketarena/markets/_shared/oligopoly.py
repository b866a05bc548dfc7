"""What the ``cournot`` and ``bertrand`` markets share (seed 003: market division and collusion).

Both markets follow the seed's prompt shape (appendices B.4 and C.4): each round a firm sees its own
market data of the last rounds, the PLANS.txt / INSIGHTS.txt notes it wrote last round, and answers
with one strict JSON object::

    {"observations_and_thoughts": "...",
     "new_content": {"PLANS.txt": "...", "INSIGHTS.txt": "..."},
     "chosen_quantities" | "chosen_prices": {"Product_A": <number>, "Product_B": <number>},
     ...}

The notes it writes are shown in its next prompt by the ``notes`` harness (``agents/harnesses/notes.py``;
an invalid answer keeps the old notes). This module holds the common part: the notes model, the
per-config action models (one ``Product_<name>`` key per product, built once per product list so the
class is stable), the template environment, the round-robin lineups, the seats and the scripted
firms' base class. Both packages import it from here, so there is one copy.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from marketarena.core.params import RosterEntry
from marketarena.core.prompts import NOTE_MAX_CHARS, chat_messages, template_env
from marketarena.core.rules import MarketRules, Seat


class NewContent(BaseModel):
    """The two files a firm rewrites every round."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    plans: str = Field(alias="PLANS.txt")
    insights: str = Field(alias="INSIGHTS.txt")


EMPTY_NOTES = NewContent(plans="", insights="")


def product_key(product: str) -> str:
    return f"Product_{product}"


@lru_cache(maxsize=None)
def action_model(
    kind: str, field: str, products: tuple[str, ...], extra: tuple[tuple[str, Any], ...] = ()
):
    """The strict action model of one configuration (cached: the same inputs give the same class).

    Every key of the seed's template is required and no other key is allowed (so the JSON schema
    also suits strict structured-output modes). ``field`` is ``chosen_quantities`` or
    ``chosen_prices``; its object has exactly one number per product (``Product_<name>``), ``>= 0``.
    Numeric strings ("40") are accepted, as the seed's template shows "just the number" inside
    quotes. ``extra`` adds top-level fields (name, (type, default or ...)).
    """
    numbers = create_model(
        f"{kind}Choice",
        __config__=ConfigDict(extra="forbid"),
        **{product_key(p): (float, Field(ge=0, allow_inf_nan=False)) for p in products},
    )
    return create_model(
        f"{kind}Action",
        __config__=ConfigDict(extra="forbid"),
        __doc__=f"Seed-003 answer: notes, thoughts and {field} per product.",
        observations_and_thoughts=(str, ...),
        new_content=(NewContent, ...),
        **{field: (numbers, ...)},
        **dict(extra),
    )


def choice_vector(action: BaseModel, field: str, products: tuple[str, ...]) -> list[float]:
    choice = getattr(action, field)
    return [float(getattr(choice, product_key(p))) for p in products]


def make_action(
    model: type[BaseModel],
    field: str,
    products: tuple[str, ...],
    values,
    plans: str = "",
    insights: str = "",
    thoughts: str = "",
    **extra,
) -> BaseModel:
    """Build an action of ``model`` (used by scripted firms and fallbacks)."""
    return model.model_validate(
        {
            "observations_and_thoughts": thoughts,
            "new_content": {"PLANS.txt": plans, "INSIGHTS.txt": insights},
            field: {product_key(p): float(v) for p, v in zip(products, values)},
            **extra,
        }
    )


def clip_notes(content: NewContent) -> tuple[NewContent, list[str]]:
    notes, out = [], {}
    for key, text in (("plans", content.plans), ("insights", content.insights)):
        if len(text) > NOTE_MAX_CHARS:
            notes.append(f"{key} cut from {len(text)} to {NOTE_MAX_CHARS} characters")
            text = text[:NOTE_MAX_CHARS]
        out[key] = text
    return NewContent(**out), notes


def render(
    package: str, obs: BaseModel, system: str, user: str, notes=None, **extras: Any
) -> list[dict[str, str]]:
    """Chat messages from the market's templates, with the shared ones (the ``_notes.j2`` macro);
    ``notes`` come from the ``notes`` harness (None: the files are shown empty)."""
    return chat_messages(
        template_env(package, "marketarena.markets._shared"),
        system,
        user,
        obs=obs,
        notes=notes,
        **extras,
    )


@lru_cache(maxsize=64)
def lineups(n_roster: int, seats: int) -> tuple[tuple[int, ...], ...]:
    """One round robin: every combination of ``seats`` roster indices once (each in roster order,
    so firm i has row i of the cost table), dealt so that every prefix is as balanced as possible:

    - two seats: the circle method (Berger tables). Lineups come in rounds in which every entry
      plays once (one sits out per round when the roster is odd); within a round the entries that
      played least come first. So after any number of episodes the entries' episode counts differ by
      at most one, and after every whole round they are equal (odd rosters: up to the byes);
    - three or more seats: greedily, the next lineup is the unused one whose entries played least
      (then met least), so counts stay within two of each other (tested up to 10 entries).

    Over a whole round robin every pair of entries meets equally often (once with two seats,
    C(n - 2, k - 2) times with k seats)."""
    from itertools import combinations

    if seats == 2:
        return _circle(n_roster)
    combos = list(combinations(range(n_roster), seats))
    counts, met = [0] * n_roster, {}
    order, left = [], dict.fromkeys(range(len(combos)))
    for _ in combos:
        best = min(
            left,
            key=lambda i: (
                max(counts[j] for j in combos[i]),
                sum(counts[j] for j in combos[i]),
                sum(met.get(p, 0) for p in combinations(combos[i], 2)),
                i,
            ),
        )
        del left[best]
        order.append(combos[best])
        for j in combos[best]:
            counts[j] += 1
        for p in combinations(combos[best], 2):
            met[p] = met.get(p, 0) + 1
    return tuple(order)


def _circle(n: int) -> tuple[tuple[int, int], ...]:
    """Every pair of ``range(n)`` once, in rounds of the circle method (see :func:`lineups`)."""
    m = n + n % 2  # an odd roster gets a bye (index n)
    ring, counts, order = list(range(m)), [0] * m, []
    for _ in range(m - 1):
        pairs = [tuple(sorted((ring[i], ring[m - 1 - i]))) for i in range(m // 2)]
        pairs = sorted(
            (p for p in pairs if p[1] < n), key=lambda p: (counts[p[0]] + counts[p[1]], p)
        )
        for a, b in pairs:
            counts[a] += 1
            counts[b] += 1
        order += pairs
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return tuple(order)


def lineup(roster: list[RosterEntry], seats: int, run: int) -> list[RosterEntry]:
    """Episode ``run`` seats lineup ``run mod L`` of :func:`lineups` (``runs = L`` is one whole
    round robin)."""
    combos = lineups(len(roster), seats)
    return [roster[j] for j in combos[run % len(combos)]]


def firm_seats(roster: list[RosterEntry], seats: int, run: int) -> list[Seat]:
    """Seats ``F1, F2, ...`` of episode ``run``'s lineup, in roster order (firm i has row i of the
    cost table)."""
    return [Seat(f"F{i + 1}", e, "firm") for i, e in enumerate(lineup(roster, seats, run))]


class OligopolyRules(MarketRules):
    """What the cournot and bertrand rules share: round-robin firm seats, the notes harness; a
    rated LLM takes the place of the myopic firm (``rating_cost.py``). Their analysis shares
    ``analysis/oligopoly.py``."""

    harnesses = ("notes", "plain")
    default_harness = "notes"
    cost_seat = "myopic"

    def seats(self, mp, run: int) -> list[Seat]:
        return firm_seats(mp.roster, mp.seats, run)

    def seating_period(self, mp) -> int:
        return len(lineups(len(mp.roster), mp.seats))

    def seating_hint(self, mp, entry) -> str:
        combos = lineups(len(mp.roster), mp.seats)
        i = [e.name for e in mp.roster].index(entry.name)
        first = next(r for r, c in enumerate(combos) if i in c)
        return (
            f"markets.{mp.instance}.runs: {first + 1} seats it once; {len(combos)} (one "
            f"round robin of the {len(mp.roster)} firms) seats every pair equally often"
        )

    def plan_notes(self, mp) -> list[str]:
        n = len(lineups(len(mp.roster), mp.seats))
        if mp.runs % n == 0:
            return []
        return [
            f"runs {mp.runs} is not a whole number of round robins ({n} lineups each): pairs "
            f"meet unequally often; runs {n * (mp.runs // n + 1)} would balance them"
        ]
