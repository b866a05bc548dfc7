"""The results site's table of what it costs to rate a model (``rating_cost.py``).

:func:`cost_table` prices the kept figures (``rating_cost.csv``: per market instance of the
default params, the episodes, calls and tokens one LLM entrant needs) at the params'
``reference_prices`` and marks each instance whose current params or prompts differ from those
the figures were measured with (its fingerprint differs), or that the current params do not
have; the index page shows it (``templates/index.html.j2``, section ``cost-to-rate``). A pure
function of the package and the params, like the rest of the site.

Each instance is priced per kind of answer (``rating_cost.priced``, ``completion_priors.py``):
the per-instance rows at :data:`completion_priors.POINT_KIND`'s completion tokens (a model that
declares no kind), a second table the total of every instance per kind (bare JSON, chain of
thought, thinking); the captions say which kind each figure assumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from marketarena import rating_cost
from marketarena.completion_priors import KINDS, POINT_KIND, load_priors
from marketarena.config import Params


@dataclass
class CostTable:
    models: list[str]  # the reference models, in params order
    rows: list[dict]  # rating_cost.priced rows (the total last), each with "note"
    notes: list[str] = field(default_factory=list)
    point_kind: str = POINT_KIND
    #: kind -> {"completion_tokens", "usd" (model -> dollars), "per_call" (market -> tokens)}
    kinds: dict[str, dict] = field(default_factory=dict)


def cost_table(params: Params) -> CostTable | None:
    """The table, or None when there are no kept figures or no reference prices."""
    rows = rating_cost.read_table()
    if not rows or not params.reference_prices:
        return None
    priced = rating_cost.priced(rows, params.reference_prices)
    differ = 0
    for row in priced[:-1]:
        name = row["instance"]
        if name not in params.markets:
            row["note"] = "not in these params"
        elif rating_cost.fingerprint(params, name) != row["fingerprint"]:
            row["note"] = "measured with other params or prompts"
            differ += 1
        else:
            row["note"] = ""
    priced[-1]["note"] = ""
    notes = []
    if differ:
        notes.append(
            f"{differ} instance(s) run with params or prompts other than those measured: "
            "`marketarena estimate --rate` measures them for yours."
        )
    total = priced[-1]
    markets = sorted({row["market"] for row in priced[:-1]})
    table = load_priors()
    kinds = {
        kind: {
            "completion_tokens": total["completion_by_kind"][kind],
            "usd": total["usd_by_kind"][kind],
            "per_call": {m: table[(kind, m)].mean for m in markets if (kind, m) in table},
        }
        for kind in KINDS
    }
    return CostTable(list(params.reference_prices), priced, notes, POINT_KIND, kinds)
