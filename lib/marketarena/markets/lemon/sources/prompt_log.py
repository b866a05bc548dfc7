"""The prompt log of one of Agent Bazaar's lemon runs (``lemon_agent_prompts.jsonl``, when the
run kept it): every record as ``llm_messages`` (list round 0, buy 1, review 2, as our market's
decision points), and the buyers' answers re-parsed with their engine's rules as ``decisions`` and
``llm_calls`` rows (``agent_bazaar.py``'s docstring says what is valid), so that the viewer shows
what each model was asked and answered."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from marketarena.core.params import MAX_AMOUNT
from marketarena.core.runner import DECISION_COLUMNS
from marketarena.markets._shared.sources import agent_bazaar as ab
from marketarena.markets.lemon.authors_answers import parse_bid, parse_vote
from marketarena.markets.lemon.sources.runs import Steps, cents

#: our decision points: round and phase of a prompt-log record's kind
ROUNDS = {"list": 0, "buy": 1, "review": 2}
#: what marks a buyer's review request (their review calls are logged as ``bid`` too)
REVIEW_MARK = "listed the car with this description"


OBSERVATION = "Your current observation:\n"


def observation_of(user_prompt: str) -> list[tuple[str, float, str]]:
    """The listings of a bid request's current observation (the last one in the prompt, after
    the history): (listing id, price, description) each; [] if it cannot be read."""
    at = user_prompt.rfind(OBSERVATION)
    if at < 0:
        return []
    try:
        obs, _ = json.JSONDecoder().raw_decode(user_prompt, at + len(OBSERVATION))
        shown = [
            (str(x["listing_id"]), float(x["listed_price"]), str(x.get("description", "")))
            for x in obs.get("listings_visible", [])
        ]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError):
        return []  # OverflowError: a price written as an integer too large for a float
    return shown if all(np.isfinite(p) and abs(p) <= MAX_AMOUNT for _, p, _ in shown) else []


def record_phase(r: ab.PromptRecord) -> str:
    """Our phase of a prompt-log record: ``buy`` (a bid request), ``review`` (their review
    requests are logged with call ``bid`` too: told apart by their text), ``list`` (an honest
    or Sybil listing), else the record's own call."""
    if r.role == "buyer":
        return (
            "review"
            if REVIEW_MARK in (r.user_prompt or "")
            else "buy"
            if r.call == "bid"
            else r.call
        )
    return "list" if r.call in ("listing", "sybil_listing") else r.call


@dataclass
class Answers:
    """What the buyers' logged answers say, per (step, buyer): the bid answer's decision as their
    engine acts on it and the listing row it names (-1: none or not found), the listing rows of
    its observation (None: not all found), and the review's vote."""

    decisions: dict[tuple[int, str], tuple[str, int]]
    shown: dict[tuple[int, str], list[int] | None]
    aliases: dict[tuple[int, str], list[str]]
    votes: dict[tuple[int, str], str]
    tables: dict[str, pd.DataFrame]
    invalid: int = 0


def read_answers(records: list[ab.PromptRecord], st: Steps, seats: set[str], model: str) -> Answers:
    """The prompt log's records of the imported steps as ``llm_messages``, and the buyers' bid and
    review answers re-parsed (:func:`parse_bid`, :func:`parse_vote`) as ``decisions`` and
    ``llm_calls`` (the last request of a decision is its answer; earlier ones were re-sent)."""
    steps = len(st.states)
    kept = ab.imported_records(records, steps, seats)
    messages = ab.prompt_messages(
        kept, record_phase, lambda r: ROUNDS.get(record_phase(r), len(ROUNDS))
    )
    listing_of: dict[tuple[int, int, str], int] = {}
    for row, key in enumerate(
        zip(st.cols["step"].tolist(), cents(st.cols["price"]).tolist(), st.cols["text"].tolist())
    ):
        listing_of[key] = -1 if key in listing_of else row  # -1: two alike, unknown
    groups: dict[tuple[int, str, str], list[ab.PromptRecord]] = {}
    for r in kept:
        if r.role == "buyer" and record_phase(r) in ("buy", "review"):
            groups.setdefault((r.timestep, r.agent, record_phase(r)), []).append(r)
    out = Answers({}, {}, {}, {}, {})
    rows = []
    for (t, agent, phase), recs in groups.items():
        last = recs[-1]
        notes = f"{len(recs)} requests (their client re-sent the prompt)" if len(recs) > 1 else ""
        if phase == "buy":
            visible = observation_of(last.user_prompt or "")
            parsed = parse_bid(last.response, {lid for lid, _, _ in visible})
            found = [listing_of.get((t, int(cents(p)), text), -1) for _, p, text in visible]
            out.shown[(t, agent)] = found if visible and min(found) >= 0 else None
            out.aliases[(t, agent)] = [lid for lid, _, _ in visible]
            named = dict(zip((lid for lid, _, _ in visible), found)).get(parsed.listing, -1)
            out.decisions[(t, agent)] = (parsed.decision, named if parsed.decision == "bid" else -1)
            action = {
                "decision": parsed.decision,
                "listing": parsed.listing if parsed.decision == "bid" else None,
            }
            valid, error, failure = parsed.valid, parsed.error, parsed.failure
        else:
            vote, valid, error = parse_vote(last.response)
            failure = "" if valid else "format"  # authors_answers.parse_vote
            out.votes[(t, agent)] = vote
            action = {"vote": vote}
        rows.append(
            (t, ROUNDS[phase], phase, agent, 0, json.dumps(action), valid, error, notes, failure)
        )
        out.invalid += not valid
    decisions = (
        pd.DataFrame(rows, columns=DECISION_COLUMNS)
        .sort_values(["step", "round", "agent_id"], kind="stable")
        .reset_index(drop=True)
    )
    keys = ["step", "round", "phase", "agent_id"]
    answered = messages.merge(decisions[keys], on=keys)  # the buyers' decisions only
    calls = ab.prompt_calls(answered, model)
    if len(calls):
        calls["valid"] = (
            calls[keys].merge(decisions[[*keys, "valid"]], on=keys, how="left")["valid"].to_numpy()
        )
    out.tables = {"llm_messages": messages, "llm_calls": calls, "decisions": decisions}
    return out
