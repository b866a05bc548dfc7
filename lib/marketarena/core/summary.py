"""The per-agent summary `marketarena play` prints, shared by every market.

A market computes its own totals per agent (profit, units, surplus, ...); this adds the count of
invalid decisions from the runner's decision log, joins the agents table and sorts.
"""

from __future__ import annotations

import pandas as pd


def per_agent_summary(
    agents: pd.DataFrame,
    totals: pd.DataFrame,
    decisions: pd.DataFrame,
    sort_by: str,
    digits: int = 2,
) -> pd.DataFrame:
    """``totals`` is indexed by agent_id; returns agent_id, name, kind, strategy, totals..., invalid."""
    totals = totals.copy()
    invalid = decisions.loc[~decisions["valid"]].groupby("agent_id").size()
    totals["invalid_decisions"] = invalid.reindex(totals.index, fill_value=0).astype(int)
    out = agents[["agent_id", "name", "kind", "strategy"]].merge(
        totals.rename_axis("agent_id").reset_index(), on="agent_id"
    )
    return out.sort_values(sort_by, ascending=False).round(digits)
