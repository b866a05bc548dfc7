"""The prompt log of one of Agent Bazaar's lemon runs (``lemon_agent_prompts.jsonl``, when the
run kept it): every record as ``llm_messages`` (list round 0, buy 1, review 2, as our market's
decision points), and the buyers' answers re-parsed with their engine's rules as ``decisions`` and
``llm_calls`` rows (``agent_bazaar.py``'s docstring says what is valid), so that the viewer shows
what each model was asked and answered."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from marketarena.core.params import MAX_AMOUNT
from marketarena.core.runner import DECISION_COLUMNS
from marketarena.markets._shared.sources import agent_bazaar as ab
from marketarena.markets.lemon.sources.runs import Steps, cents

#: our decision points: round and phase of a prompt-log record's kind
ROUNDS = {"list": 0, "buy": 1, "review": 2}
#: what marks a buyer's review request (their review calls are logged as ``bid`` too)
REVIEW_MARK = "listed the car with this description"


@dataclass
class Parsed:
    """A buyer's answer re-parsed with their rules."""

    decision: str  # bid | pass, as their engine acts on it
    listing: str | None  # the anonymised listing id it names
    valid: bool
    error: str


JSON_FENCE = re.compile(r"```(?:json)?")


def first_object(text: str) -> str:
    """The first ``{...}`` of ``text`` by brace matching outside quoted strings (their
    extraction), markdown fences removed; the text itself when it has no brace."""
    text = JSON_FENCE.sub("", text or "").strip()
    start = text.find("{")
    if start < 0:
        return text
    depth, quote, escape = 0, "", False
    for i in range(start, len(text)):
        c = text[i]
        if escape:
            escape = False
        elif quote:
            if c == "\\":
                escape = True
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def answer_keys(text: str, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """Their key extraction from a raw answer: the first JSON object (single-quoted keys and
    trailing commas relaxed), each key found at the top level, else in a nested object, else in a
    top-level key that contains it (``bid_decision``); missing keys are None. None: no JSON."""
    body = first_object(text)
    body = re.sub(r"'([^']+)'\s*:", r'"\1":', body)
    body = re.sub(r",(\s*[}\]])", r"\1", body)
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None

    def find(d: dict, key: str) -> Any:
        if key in d:
            return d[key]
        for v in d.values():
            if isinstance(v, dict):
                hit = find(v, key)
                if hit is not None:
                    return hit
        return next((v for k, v in d.items() if key in str(k) and not isinstance(v, dict)), None)

    return {k: find(data, k) for k in keys}


def parse_bid(response: str | None, shown: set[str]) -> Parsed:
    """A bid answer as their engine reads it (``buyer._parse_bid``, ``make_orders``): a decision
    other than bid or pass is a pass, a bid naming no listing of the observation places no order
    (a pass). Valid: a JSON answer whose decision is bid or pass and whose bid names a listing
    shown (``shown``: the observation's listing ids)."""
    keys = answer_keys(response or "", ("decision", "listing_id"))
    if keys is None:
        return Parsed(
            "pass", None, False, "no JSON object in the answer (their engine re-asks, then passes)"
        )
    raw = keys["decision"]
    decision = str(raw if raw is not None else "pass").strip().lower()
    listing = keys["listing_id"]
    listing = (
        None
        if listing is None or str(listing).strip().lower() in ("", "null", "none")
        else str(listing).strip()
    )
    if decision not in ("bid", "pass"):
        return Parsed(
            "pass",
            listing,
            False,
            f"decision {str(raw)[:40]!r} is neither bid nor pass (their engine: a pass)",
        )
    if decision == "bid" and listing is None:
        return Parsed(
            "pass", None, False, "a bid naming no listing (their engine: no order, a pass)"
        )
    if decision == "bid" and listing not in shown:
        return Parsed(
            "pass",
            listing,
            False,
            f"a bid on {listing[:60]!r}, not a listing shown (their engine: no order, a pass)",
        )
    return Parsed(decision, listing, True, "")


def parse_vote(response: str | None) -> tuple[str, bool, str]:
    """A review answer as their engine reads it (``_parse_review_items``): (up | down | abstain,
    valid, error); anything but upvote, downvote or abstain is an abstention, and invalid."""
    keys = answer_keys(response or "", ("vote",))
    if keys is None:
        return (
            "abstain",
            False,
            "no JSON object in the answer (their engine re-asks, then abstains)",
        )
    vote = str(keys["vote"] if keys["vote"] is not None else "").strip().lower()
    known = {"upvote": "up", "downvote": "down", "abstain": "abstain"}
    if vote not in known:
        return (
            "abstain",
            False,
            f"vote {vote[:40]!r} is not upvote, downvote or abstain (their engine: an abstention)",
        )
    return known[vote], True, ""


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
            valid, error = parsed.valid, parsed.error
        else:
            vote, valid, error = parse_vote(last.response)
            out.votes[(t, agent)] = vote
            action = {"vote": vote}
        rows.append((t, ROUNDS[phase], phase, agent, 0, json.dumps(action), valid, error, notes))
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
