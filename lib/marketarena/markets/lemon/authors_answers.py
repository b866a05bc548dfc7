"""Agent Bazaar's lemon buyers' answers read as their engine reads them (their
``llm_agent.call_llm``: the first JSON object, its keys found as ``extract_keys_from_dict`` finds
them; ``buyer._parse_bid`` and ``_parse_review_items``), and which of them are valid: used on
their logged answers (``sources/prompt_log.py``) and on a new model's answers in their harness
(``authors_buyer.py``), so that both boards count invalid answers alike."""

from __future__ import annotations

from dataclasses import dataclass

from marketarena.markets._shared.their_agents import answer_keys


@dataclass
class Parsed:
    """A buyer's answer re-parsed with their rules."""

    decision: str  # bid | pass, as their engine acts on it
    listing: str | None  # the anonymised listing id it names
    valid: bool
    error: str
    failure: str = "format"  # an invalid answer's kind (``decisions.failure``; "" when valid)


def parse_bid(response: str | None, shown: set[str]) -> Parsed:
    """A bid answer as their engine reads it (``buyer._parse_bid``, ``make_orders``): a decision
    other than bid or pass is a pass, a bid naming no listing of the observation places no order
    (a pass), and so is an answer without a decision. Valid: a JSON answer whose decision is bid
    or pass and whose bid names a listing shown (``shown``: the observation's listing ids).
    An invalid answer's ``failure``: ``rule`` for a well-formed bid on a listing not shown (it
    parsed, and broke the market's rule), ``format`` for every other (no JSON, no decision, one
    neither bid nor pass, a bid naming no listing: the answer's shape)."""
    keys = answer_keys(response or "", ("decision", "listing_id"))
    if keys is None:
        return Parsed(
            "pass", None, False, "no JSON object in the answer (their engine re-asks, then passes)"
        )
    raw = keys["decision"]
    if raw is None:  # their parse reads a missing decision as a pass, silently
        return Parsed("pass", None, False, "no decision in the answer (their engine: a pass)")
    decision = str(raw).strip().lower()
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
            "rule",
        )
    return Parsed(decision, listing, True, "", "")


def parse_vote(response: str | None) -> tuple[str, bool, str]:
    """A review answer as their engine reads it (``_parse_review_items``): (up | down | abstain,
    valid, error); anything but upvote, downvote or abstain is an abstention, and invalid (a
    ``format`` failure: the vote is outside the answer's schema)."""
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
