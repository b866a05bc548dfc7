"""How dollars are printed: to the cent from a dollar up, in two significant figures below it.

``usd(0.0774)`` is ``$0.077``, ``usd(0.0027)`` ``$0.0027``, ``usd(1234.5)`` ``$1,234.50`` and
``usd(0)`` ``$0``: a cost that is not zero never reads ``$0.00`` (a run of a cheap model costs
fractions of a cent, and "$0.00" read as free). Used by ``marketarena estimate``, the progress
line and the end-of-run summary (``progress.py``) and the results site's cost tables.
"""

from __future__ import annotations

import math


def usd(x: float | None) -> str:
    """``x`` US dollars as the module docstring says; ``–`` for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "$0"
    sign, x = ("-" if x < 0 else ""), abs(float(x))
    rounded = float(f"{x:.2g}")  # two significant figures (0.0999 -> 0.1, 0.996 -> 1)
    if rounded >= 1:
        return f"{sign}${x:,.2f}"
    return f"{sign}${rounded:.{max(2, 1 - math.floor(math.log10(rounded)))}f}"
