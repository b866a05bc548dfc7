"""The results site's table of what it costs to rate a model (``rating_cost.py``).

:func:`cost_table` prices the kept figures (``rating_cost.csv``: per market instance of the
default params, the episodes, calls and tokens one LLM entrant needs) at the params'
``reference_prices`` and marks each instance whose current params or prompts differ from those
the figures were measured with (its fingerprint differs), or that the current params do not
have; the index page shows it (``templates/index.html.j2``, section ``cost-to-rate``). A pure
function of the package and the params, like the rest of the site.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from marketarena import rating_cost
from marketarena.config import Params


@dataclass
class CostTable:
    models: list[str]  # the reference models, in params order
    rows: list[dict]  # rating_cost.priced rows (the total last), each with "note"
    notes: list[str] = field(default_factory=list)


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
    return CostTable(list(params.reference_prices), priced, notes)
