"""How each player's decisions were answered: validly at once, validly after re-asks, or not at all
(the market's fallback played). One computation for every market, from the runner's logs alone.

A **decision** is one decision point of a seat: a (step, round, phase, agent_id) row group of
``decisions`` (``agent_id`` is the actor that answered: lemon's principal ``P1`` answers for its
identity seats, so its decisions are the principal player's). Its outcome is read from the last
attempt the runner logged for it and, for an LLM, from the client's re-asks (``llm_calls.attempts``
of its ``act`` calls: 1 + the re-asks used):

- ``valid_first``: the runner's attempt 0 was valid and no ``act`` call of it needed a client
  re-ask;
- ``valid_reasked``: valid in the end, after one or more re-asks (the runner's: ``attempt`` > 0,
  the market's rule broken and asked again; or the client's: an answer that did not parse);
- ``fallback``: still invalid after the last attempt: the market's fallback played (or, where a
  market answers a broken rule itself, its own response, e.g. a void bid set).

Per player, ``decisions`` counts its decisions and the three shares sum to 1.

**Why the fallback played**, split by the kind of the decision's last failure (the runner's
``decisions.failure``, ``core/runner.py``), so that ``format_failures + rule_failures ==
fallback``:

- ``format_failures``: the final answer gave no action of the schema (text that did not parse,
  fields that failed validation, no answer, an agent that raised);
- ``rule_failures``: it parsed, but broke a market rule (``Market.check``), so the fallback or the
  market's own response played.

A decision that broke a rule, was re-asked, then answered text that did not parse counts as a
format failure: the kind is the last attempt's, the one that made the fallback play. Logs written
before the ``failure`` column have no kinds: a player with a fallback of unknown kind has both
columns NaN (one with no fallback at all has 0 and 0, known without the column).

**The flag**: ``flagged`` is True where the player's ``fallback`` share is above the threshold
``ratings.flag_fallback_above`` (params, default 0.2: more than one decision in five decided by
the fallback), False at or below it, empty where the share is unknown (:func:`flag`).

Published games (imported instances, ``simulate/importing.py``) mostly have no ``decisions``
table: their columns are NaN and ``flagged`` empty. Those that logged their answers fill one as
ours (double_auction's judged PACT games, ``markets/double_auction/sources/bazaar.py``; lemon's
buyers from Agent Bazaar's prompt log, ``markets/lemon/sources/prompt_log.py``), with the kinds.

The boards (``reports/leaderboards/<instance>.csv``, :func:`with_validity`) carry the columns
(:data:`BOARD_COLUMNS`) beside mu and its interval; the overall board pools them over instances
(``overall.overall_board``). The metrics stage writes the per-episode counts
(``data/metrics/<instance>/validity.parquet``, :func:`player_validity`) that the ratings stage reads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the outcomes a decision can have (``fallback`` last)
OUTCOMES = ("valid_first", "valid_reasked", "fallback")
#: why the fallback played: a column per kind of ``decisions.failure`` (they sum to ``fallback``)
KINDS = {"format": "format_failures", "rule": "rule_failures"}
#: the board's validity numbers, in order (counts per episode, shares on a board)
COLUMNS = ("decisions", *OUTCOMES, *KINDS.values())
#: the board's validity columns: the numbers, then whether the fallback share is above the
#: threshold (:func:`flag`)
FLAG = "flagged"
BOARD_COLUMNS = (*COLUMNS, FLAG)
#: ``ratings.flag_fallback_above``'s default (``config.py``)
FLAG_FALLBACK_ABOVE = 0.2
POINT = ["episode_id", "step", "round", "phase", "agent_id"]


def decision_outcomes(
    decisions: pd.DataFrame, llm_calls: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per decision point (:data:`POINT`) with its ``outcome`` (one of :data:`OUTCOMES`)
    and, for a fallback, its ``failure`` (the last attempt's kind: a key of :data:`KINDS`; None
    where the log has no ``failure`` column; empty for a valid decision), from the runner's
    ``decisions`` rows (one per attempt) and, when given, its ``llm_calls``."""
    if decisions is None or decisions.empty:
        return pd.DataFrame(columns=[*POINT, "outcome", "failure"])
    if "failure" not in decisions.columns:
        decisions = decisions.assign(failure=None)
    d = decisions[[*POINT, "attempt", "valid", "failure"]]
    retried = d["attempt"] > 0
    if retried.any():  # keep each point's last attempt (most points have only attempt 0)
        again = d.loc[retried, POINT].drop_duplicates()
        hit = pd.MultiIndex.from_frame(d[POINT]).isin(pd.MultiIndex.from_frame(again))
        tail = (
            d[hit]
            .sort_values([*POINT, "attempt"], kind="stable")
            .drop_duplicates(POINT, keep="last")
        )
        last = pd.concat([d[~hit], tail]).sort_index(kind="stable")
    else:
        last = d
    valid = last["valid"].astype(bool).to_numpy()
    reasked = last["attempt"].to_numpy() > 0
    if llm_calls is not None and len(llm_calls) and "attempts" in llm_calls.columns:
        calls = llm_calls
        if "purpose" in calls.columns:
            calls = calls[calls["purpose"] == "act"]
        client = calls[calls["attempts"] > 1][POINT].drop_duplicates()
        hit = pd.MultiIndex.from_frame(last[POINT]).isin(pd.MultiIndex.from_frame(client))
        reasked = reasked | hit
    outcome = np.where(~valid, "fallback", np.where(reasked, "valid_reasked", "valid_first"))
    failure = last["failure"].astype(object).where(~valid, "").to_numpy()
    return last[POINT].assign(outcome=outcome, failure=failure).reset_index(drop=True)


def player_validity(reader) -> pd.DataFrame:
    """Per (episode, player): ``decisions``, the count of each outcome (:data:`OUTCOMES`) and of
    each kind of failure among the fallbacks (:data:`KINDS`: NaN where a fallback's kind is
    unknown, a log without ``decisions.failure``), from an
    :class:`~marketarena.core.reader.EpisodeReader`. A decision is its actor's, and an actor's
    seats are one player's (``agents.actor`` -> ``agents.name``). Empty without ``decisions``."""
    columns = ["episode_id", "name", *COLUMNS]
    decisions = reader.table(
        "decisions", columns=POINT[1:] + ["attempt", "valid", "failure"], optional=("failure",)
    )
    if decisions.empty:
        return pd.DataFrame(columns=columns)
    calls = reader.table("llm_calls", columns=POINT[1:] + ["purpose", "attempts"])
    outcomes = decision_outcomes(decisions, calls if len(calls) else None)
    agents = reader.table("agents")
    actor = agents["actor"].where(agents["actor"].astype(str) != "", agents["agent_id"])
    owner = agents.assign(agent_id=actor)[["episode_id", "agent_id", "name"]].drop_duplicates(
        ["episode_id", "agent_id"]
    )
    outcomes = outcomes.merge(owner, on=["episode_id", "agent_id"], how="left")
    missing = outcomes["name"].isna()
    if missing.any():
        first = outcomes.loc[missing, ["episode_id", "agent_id"]].iloc[0]
        raise ValueError(
            f"decisions of {first['agent_id']!r} in {first['episode_id']} belong to no "
            "seat of agents.parquet"
        )
    keys = [outcomes["episode_id"], outcomes["name"]]
    counts = pd.crosstab(keys, outcomes["outcome"])
    counts = counts.reindex(columns=list(OUTCOMES), fill_value=0)
    counts.insert(0, "decisions", counts.sum(axis=1))
    fell = outcomes["outcome"] == "fallback"
    kind = outcomes["failure"].where(fell)
    unknown = (fell & ~kind.isin(list(KINDS))).groupby(keys).any()
    for key, col in KINDS.items():
        n = (kind == key).groupby(keys).sum().reindex(counts.index, fill_value=0)
        counts[col] = n.astype(float).mask(unknown.reindex(counts.index, fill_value=False))
    return counts.reset_index().rename_axis(columns=None)[columns]


def shares(counts: pd.DataFrame, by: str | list[str] = "name") -> pd.DataFrame:
    """Per group of ``by``: ``decisions`` (summed) and each outcome's and kind's share of them
    (pooled over the group's episodes), from per-episode counts (:func:`player_validity`). A kind
    unknown in any of the group's episodes (NaN) is unknown for the group."""
    keys = [by] if isinstance(by, str) else list(by)
    counts = counts.reindex(columns=[*keys, *COLUMNS])  # counts written before the kinds: NaN
    totals = counts.groupby(keys)[list(COLUMNS)].sum()
    unknown = counts[list(KINDS.values())].isna().groupby([counts[k] for k in keys]).any()
    n = totals["decisions"].where(totals["decisions"] > 0)
    for col in (*OUTCOMES, *KINDS.values()):
        totals[col] = totals[col] / n
    for col in KINDS.values():
        totals[col] = totals[col].mask(unknown[col])
    return totals.reset_index()


def flag(frame: pd.DataFrame, above: float = FLAG_FALLBACK_ABOVE) -> pd.Series:
    """Whether each row's ``fallback`` share is above ``above`` (strictly: a share equal to the
    threshold is not flagged): True / False, None where the share is unknown (NaN)."""
    share = pd.to_numeric(frame["fallback"], errors="coerce")
    return (share > above).astype(object).where(share.notna(), None)


def with_validity(
    board: pd.DataFrame, counts: pd.DataFrame | None, above: float = FLAG_FALLBACK_ABOVE
) -> pd.DataFrame:
    """``board`` with the validity columns (:data:`BOARD_COLUMNS`) of each row's player
    (``name``), placed after mu and its interval; NaN where a player has no logged decision (or
    ``counts`` is None or empty: published games), ``flagged`` by :func:`flag` at ``above``."""
    board = board.drop(columns=[c for c in BOARD_COLUMNS if c in board.columns])
    if counts is None or counts.empty:
        table = pd.DataFrame(columns=["name", *COLUMNS])
    else:
        table = shares(counts)
    merged = board.merge(table, on="name", how="left")
    for col in COLUMNS:
        merged[col] = pd.to_numeric(merged[col], errors="coerce").astype(float)
    merged[FLAG] = flag(merged, above)
    anchor = next((c for c in ("mu_hi", "mu_lo", "sigma", "mu") if c in board.columns), None)
    order = list(board.columns)
    at = order.index(anchor) + 1 if anchor is not None else len(order)
    return merged[order[:at] + list(BOARD_COLUMNS) + order[at:]]


def pooled(
    boards: dict[str, pd.DataFrame], identity: dict[str, dict[str, str | None]]
) -> pd.DataFrame:
    """Per cross-market player (``identity[instance][name]``): its decisions and outcome and kind
    shares pooled over the instances' boards (shares weighted by each board's ``decisions``).
    Boards without the columns (or with NaN: published games) add nothing; a board without the
    kinds' columns (or NaN there) makes the player's kinds unknown."""
    rows = []
    for instance, board in boards.items():
        if not {"decisions", *OUTCOMES} <= set(board.columns):
            continue
        for _, r in board.iterrows():
            player = identity.get(instance, {}).get(r["name"])
            n = r["decisions"]
            if player is None or not np.isfinite(n) or n <= 0:
                continue
            rows.append(
                {
                    "player": player,
                    "decisions": n,
                    **{o: r[o] * n for o in OUTCOMES},
                    **{k: float(r.get(k, np.nan)) * n for k in KINDS.values()},
                }
            )
    if not rows:
        return pd.DataFrame(columns=["player", *COLUMNS])
    return shares(pd.DataFrame(rows), by="player")
