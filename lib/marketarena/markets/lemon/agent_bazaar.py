"""Agent Bazaar's lemon runs (the authors' ``exp2``) as episodes of our lemon market.

The shared reader (``markets/_shared/agent_bazaar.py``) finds the runs
(``logs-data/exp2_<model>/<prefix>_k<K>_rep<r>_seed<s>[_base]/``) and reads their files strictly;
this module turns one run into the tables our lemon market logs (``market.py``), so that our
metrics, our EAS, the replay (``replay.py``) and the figures run on the authors' games unchanged.
These are the authors' pre-release runs; they may differ from the paper's final ones.

**What is imported.** Every run of the grid with at least one state file, from step 0 up to its
last consecutive state (a run that stopped early is imported up to there, and the report says
which steps it lacks; a run without states is reported and skipped; nothing else is cut: the
lemon logs have no splices). Steps count from 0 in their files (``timestep``) and in ours.

- ``setting``: K (``sybil``), ``reputation_visible`` (``no_buyer_rep`` false), ``buyer_group``
  (the buyers' player), the instance's sizes, and the run: ``model`` (the buyers' model id),
  ``seller_model``, ``seed``, ``base`` (a ``_base`` run: the authors' minimal buyer prompt),
  ``steps`` (steps imported), ``steps_planned``, ``model_folder`` and ``run`` (its folder).
- Seats and players (``agents``, seat ids are the authors' names): every buyer
  (``consumer_<i>``) a seat of the player ``<buyer model>`` (``<buyer model>+base`` in the
  ``_base`` runs: another prompt, so another player); honest sellers (``standard_0``, ...) of
  ``<seller model>+honest``; when K > 0 the principal (``sybil_principal``) and every Sybil
  identity that held a slot (``sybil_<n>``, their actor the principal) of ``<seller model>+sybil``.
  A replacement identity is a seat that joins later (an event ``joined``), as our market lists
  the identities of its pool.
- ``listings``: every new listing of a step (``lemon_market_new_listings``), ``sold`` when it is
  not among the step's unsold listings (listings do not persist in these runs), its seller's kind,
  the true tier (``quality``), the claimed tier (honest: the true one; a Sybil listing: the
  claimable tier whose typical price range holds its price, "" if none: the principal's tier
  choice is not logged), price, description (cut at :data:`DESCRIPTION_MAX_CHARS`), the
  reputation it was listed with and its ``buyer``; extra: their ``listing_id``.
- Who bought what. A buyer's cash drop is the price it paid (their buyers start with
  :data:`BUYER_CASH`), ``inventory.car`` says it got a car and ``consumer_surplus`` is the value
  minus the price: :func:`match_purchases` pairs each step's buyers with the sold listings on the
  price (to the cent), then on the kind of listing the buyer bid on and the surplus. Pairs it
  cannot make stay unpaired (``buyer`` "") and the replay reports them.
- ``bids`` and ``views`` from the buyers' cumulative counters: per buyer and step, the listings
  shown of each kind (Δ``*_seen_total``) and whether it bid and on which kind (Δseen − Δpassed =
  1: their engine counts a bid's listing as not passed). The listing a bid named is known when it
  filled (the car bought), or from the prompt log; else ``seller`` is "". ``served`` is -1 (their
  clearing order, thread completion, is not logged). Extra columns: ``kind`` (honest | sybil),
  and from the prompt log ``answered`` (the decision the logged answer parses to) and
  ``answer_seller`` (the seller of the listing it names). A view's seller is known from the
  prompt log (the listings in the logged observation, found by price and description), or for
  the listing bought; else "".
- ``reputation``: every seller's logged reputation after each step it was active, with the
  logged ``upvotes``/``downvotes``, cumulative ``sales``, ``sales_logged`` (its ``sales_info``
  this step) and ``logged``. Their snapshot turns a retiring identity into a stub (reputation
  1.0, no ``sybil`` key) on its retirement step: stubs are dropped, and the retirement step's row
  (``active`` false, ``logged`` false) carries the only value the window allows, one vote down
  from the last logged (a sale's vote moves the window by at most one).
- ``reviews``: one per purchase: the vote from the prompt log where it is logged, else the one the
  upvote count pins (+1 up, -1 down), else "" (a vote that moved nothing: the replay pins what
  the whole history allows); ``source`` says which.
- ``events``: an identity ``joined`` (step 0 or the step of the retirement it follows) and
  ``retired`` (the step its stub appears).
- ``market_steps`` (an extra table) and extra columns of ``bids``: what each state logged in
  aggregate (bids, passes, listings, sales, Sybil revenue share, mean surplus, active and retired
  identities) and per buyer (``honest_shown``, ``sybil_shown``, ``car``, ``paid``,
  ``surplus_logged``, and the seller of the car it ``bought``): the replay compares our rules
  with them.
- The prompt log (``lemon_agent_prompts.jsonl``, when present): every record as ``llm_messages``
  (list round 0, buy 1, review 2, as our market's decision points); the buyers' answers as
  ``decisions`` and ``llm_calls`` rows, so the viewer shows what each model was asked and
  answered. A bid answer is re-parsed with their rules (:func:`parse_bid`): it is **valid** when
  its JSON holds a decision ``bid`` or ``pass`` and a bid names a listing of the observation;
  anything else is what their engine silently turns into a pass, and is invalid (``error`` says
  why). A review is valid when its vote is upvote, downvote or abstain. Sellers' records are in
  ``llm_messages`` only (sellers are not rated here). Lines interleaved by concurrent appends are
  skipped and counted.

**Left out**: ``(OLD)`` and ``(gpt seller)`` folders and the other experiments (the shared
reader's ``discover``); sellers' cash (their 5 % platform fee on sellers' cash each step is not a
rule of ours, and none of our metrics reads seller cash); buyers' diaries (none: ``no_diaries``).

**Checked, one** ``SourceError`` **naming the file**: every field used, strictly (types, finite
numbers, bounds, plain names), a listing of a seller the state does not hold, an unsold listing
that is not new, a buyer set that changes, a cumulative counter that falls, more than one bid of a
buyer in a step, an identity back after its retirement; the run's setting against the instance's
params (sizes, discovery limit, reputation window, start and retirement threshold, the cell of its
folder name), and two runs of one episode id (a run copied, or one model spelled two ways).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from marketarena.core.params import MAX_AMOUNT
from marketarena.core.plugin import AGENT_COLUMNS
from marketarena.core.runner import DECISION_COLUMNS
from marketarena.core.sources import Seen, SourceError, plain_name
from marketarena.core.types import Rows
from marketarena.markets._shared import agent_bazaar as ab
from marketarena.markets.lemon.params import CLAIMABLE, TIERS, LemonParams

#: their buyers' starting cash (``cash`` = this - what they paid so far)
BUYER_CASH = 1e12
#: the principal's name in their prompt logs and our seat id for it
PRINCIPAL = "sybil_principal"
#: characters of a listing's description kept (their longest: about 1,100)
DESCRIPTION_MAX_CHARS = 4000
#: seats of one kind a state may hold (their runs: 12 sellers, 12 buyers)
MAX_SEATS = 1000
PROMPT_LOG = "lemon_agent_prompts.jsonl"
#: our decision points: round and phase of a prompt-log record's kind
ROUNDS = {"list": 0, "buy": 1, "review": 2}
#: what marks a buyer's review request (their review calls are logged as ``bid`` too)
REVIEW_MARK = "listed the car with this description"
HARNESS = "agent-bazaar-llm"

Name = Annotated[str, AfterValidator(lambda v: plain_name(v, "name"))]
Count = Annotated[int, Field(ge=0, le=10**7)]
Price = Annotated[float, Field(ge=0, le=MAX_AMOUNT)]
Share = Annotated[float, Field(ge=0, le=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class LemonArgs(ab.RunArgs):
    """The run arguments this importer checks beside the shared ones."""

    reputation_pseudo_count: float | None = Field(default=None, ge=1, le=10_000)
    allow_listing_persistence: bool = False


class Listing(_Model):
    id: Name
    firm_id: Name
    description: str = Field(default="", max_length=1_000_000)
    price: Price
    reputation: Share
    quality: Literal["mint", "good", "fair", "poor"]
    quality_value: Share


class ListingRef(_Model):
    id: Name


class Sale(_Model):
    price: Price


class Seller(_Model):
    name: Name
    in_business: bool
    sybil: bool | None = None  # absent: the stub their snapshot leaves for a retired identity
    reputation: Share
    upvotes: int = Field(ge=0, le=100_000)
    downvotes: int = Field(ge=0, le=100_000)
    timestep_created: int | None = Field(default=None, ge=0, le=100_000)
    sales_info: list[Sale] = Field(default_factory=list, max_length=100_000)


class Stock(_Model):
    car: float = Field(default=0.0, ge=0, le=1e6)


class Buyer(_Model):
    name: Name
    cash: float = Field(ge=0, le=MAX_AMOUNT)
    inventory: Stock = Field(default_factory=Stock)
    consumer_surplus: float = Field(ge=-MAX_AMOUNT, le=MAX_AMOUNT)
    honest_seen_total: Count
    honest_passed_total: Count
    sybil_seen_total: Count
    sybil_passed_total: Count


class Principal(_Model):
    active_identities: Count
    retired_this_step: Count
    total_identities_created: Count


class LemonState(_Model):
    """The fields of ``state_t<N>.json`` this importer uses (the rest is ignored)."""

    timestep: int = Field(ge=0, le=100_000)
    firms: list[Seller] = Field(max_length=10 * MAX_SEATS)
    consumers: list[Buyer] = Field(min_length=1, max_length=MAX_SEATS)
    lemon_market_new_listings: list[Listing] = Field(max_length=MAX_SEATS)
    lemon_market_unsold_listings: list[ListingRef] = Field(max_length=MAX_SEATS)
    lemon_market_listings_count: Count
    lemon_market_bids_count: Count
    lemon_market_passes_count: Count
    filled_orders_count: Count
    lemon_market_sybil_revenue_share: Share
    lemon_market_avg_consumer_surplus: float = Field(ge=-MAX_AMOUNT, le=MAX_AMOUNT)
    deceptive_principal: Principal | None = None


# ------------------------------------------------------------------ runs and their settings
def player(model_id: str, suffix: str = "") -> str:
    return ab.player_of(model_id) + suffix


def buyer_player(args: ab.RunArgs, base: bool) -> str:
    """The buyers' player: their model, ``+base`` for the authors' minimal buyer prompt."""
    return player(args.buyer_llm or args.llm, "+base" if base else "")


def episode_id(run: ab.Run) -> str:
    """``<buyer model>-k<K>-rep<r>-s<seed>`` (``-base`` for a ``_base`` run), a plain name."""
    c, args = run.cell, run.args
    base = "-base" if c.get("base") else ""
    return plain_name(f"{ab.player_of(args.buyer_llm or args.llm)}-k{c['sybil']}"
                      f"-rep{int(c['reputation_visible'])}-s{c['seed']}{base}", "episode id")


def check_setting(run: ab.Run, mp: LemonParams) -> None:
    """The run's arguments against its folder name's cell and the instance's params: a run of
    another setting is refused (naming the argument and the params key), as the BAZAAR importer
    refuses a game of another size."""
    args, c, path = run.args, run.cell, run.path / "experiment_args.json"
    checks = [
        ("sybil_cluster_size", args.sybil_cluster_size, c["sybil"], f"K {c['sybil']} of the "
         "folder name"),
        ("no_buyer_rep", not args.no_buyer_rep, c["reputation_visible"],
         f"rep{int(c['reputation_visible'])} of the folder name"),
        ("seed", args.seed, c["seed"], "the folder name's seed"),
        ("lemon_base_buyer", args.lemon_base_buyer, bool(c.get("base")), "the folder name"),
        ("num_sellers", args.num_sellers or args.num_firms, mp.sellers, "the instance's sellers"),
        ("num_buyers", args.num_buyers or args.num_consumers, mp.buyers, "the instance's buyers"),
        ("max_timesteps", args.max_timesteps, mp.steps, "the instance's steps"),
        ("discovery_limit_consumers", args.discovery_limit_consumers, mp.discovery_limit,
         "the instance's discovery_limit"),
        ("reputation_pseudo_count", args.reputation_pseudo_count, mp.window,
         "the instance's window"),
        ("reputation_initial", args.reputation_initial, mp.initial_reputation,
         "the instance's initial_reputation"),
        ("sybil_rho_min", args.sybil_rho_min, mp.retire_below, "the instance's retire_below"),
        ("allow_listing_persistence", args.allow_listing_persistence, False, "our market "
         "(listings do not persist)"),
    ]
    for key, theirs, ours, what in checks:
        if theirs is not None and theirs != ours:
            raise SourceError(path, f"{key} is {theirs}, but {what} is {ours} (markets."
                              f"{mp.instance}: describe the runs' market, or remove the run)")
    if c["sybil"] not in mp.sybil or c["reputation_visible"] not in mp.reputation_visible:
        raise SourceError(path, f"K {c['sybil']}, reputation "
                          f"{'shown' if c['reputation_visible'] else 'hidden'}: a cell outside "
                          f"the instance's grid (sybil {mp.sybil}, reputation_visible "
                          f"{mp.reputation_visible})")


def prepared_runs(mp: LemonParams, source: Path) -> tuple[list[ab.Run], list[dict]]:
    """Every lemon run under ``source`` with its arguments read and checked, and what was left
    out; two runs of one episode id are refused (naming both folders)."""
    runs, left_out = ab.discover(source, "lemon")
    seen = Seen("run")
    for run in runs:
        run.args = ab.read_args(run, LemonArgs)
        check_setting(run, mp)
        seen.add(episode_id(run), run.path)
    return runs, left_out


# ------------------------------------------------------------------ one run
def cents(x) -> np.ndarray:
    return np.round(np.asarray(x, dtype=float) * 100).astype(np.int64)


def claimed_tier(price: float, ranges: dict[str, tuple[float, float]]) -> str:
    """The claimable tier (good, mint) whose typical price range holds ``price``; "" if none."""
    return next((t for t in CLAIMABLE if ranges[t][0] <= price <= ranges[t][1]), "")


def match_purchases(price: np.ndarray, implied: np.ndarray, sybil: np.ndarray, paid: np.ndarray,
                    logged: np.ndarray, side: np.ndarray, named: np.ndarray | None = None
                    ) -> np.ndarray:
    """For each buyer of a step (who paid or got a car): the index of the sold listing it bought,
    or -1. ``price``, ``implied`` (value - price), ``sybil`` per sold listing; ``paid``,
    ``logged`` (its logged surplus), ``side`` (1: it bid on a Sybil listing) and ``named`` (the
    listing its logged answer names, -1: none) per buyer. Pairs are made within equal prices to
    the cent: a buyer whose answer names one of them gets it, the others go in the order of
    (kind, surplus) on both sides, so two purchases at one price go to the buyers whose bid kind
    and surplus fit them (two alike, at one price, of one kind and value, are told apart by the
    prompt log only; either way every number of ours is the same)."""
    out = np.full(len(paid), -1, dtype=np.int64)
    named = np.full(len(paid), -1) if named is None else named
    listings: dict[int, list[int]] = {}
    for i, k in enumerate(cents(price).tolist()):
        listings.setdefault(k, []).append(i)
    buyers: dict[int, list[int]] = {}
    for j, k in enumerate(cents(paid).tolist()):
        buyers.setdefault(k, []).append(j)
    for k, bj in buyers.items():
        li = listings.get(k, [])
        for j in [j for j in bj if named[j] in li]:
            out[j] = named[j]
            li = [i for i in li if i != named[j]]
            bj = [b for b in bj if b != j]
        if len(li) > 1 or len(bj) > 1:
            li = sorted(li, key=lambda i: (bool(sybil[i]), float(implied[i])))
            bj = sorted(bj, key=lambda j: (bool(side[j]), float(logged[j])))
        for i, j in zip(li, bj):
            out[j] = i
    return out


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
                return text[start:i + 1]
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
        return Parsed("pass", None, False, "no JSON object in the answer (their engine re-asks, "
                      "then passes)")
    raw = keys["decision"]
    decision = str(raw if raw is not None else "pass").strip().lower()
    listing = keys["listing_id"]
    listing = None if listing is None or str(listing).strip().lower() in ("", "null", "none") \
        else str(listing).strip()
    if decision not in ("bid", "pass"):
        return Parsed("pass", listing, False, f"decision {str(raw)[:40]!r} is neither bid nor "
                      "pass (their engine: a pass)")
    if decision == "bid" and listing is None:
        return Parsed("pass", None, False, "a bid naming no listing (their engine: no order, a "
                      "pass)")
    if decision == "bid" and listing not in shown:
        return Parsed("pass", listing, False, f"a bid on {listing[:60]!r}, not a listing shown "
                      "(their engine: no order, a pass)")
    return Parsed(decision, listing, True, "")


def parse_vote(response: str | None) -> tuple[str, bool, str]:
    """A review answer as their engine reads it (``_parse_review_items``): (up | down | abstain,
    valid, error); anything but upvote, downvote or abstain is an abstention, and invalid."""
    keys = answer_keys(response or "", ("vote",))
    if keys is None:
        return "abstain", False, "no JSON object in the answer (their engine re-asks, then abstains)"
    vote = str(keys["vote"] if keys["vote"] is not None else "").strip().lower()
    known = {"upvote": "up", "downvote": "down", "abstain": "abstain"}
    if vote not in known:
        return "abstain", False, f"vote {vote[:40]!r} is not upvote, downvote or abstain " \
                                 "(their engine: an abstention)"
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
        shown = [(str(x["listing_id"]), float(x["listed_price"]), str(x.get("description", "")))
                 for x in obs.get("listings_visible", [])]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError):
        return []  # OverflowError: a price written as an integer too large for a float
    return shown if all(np.isfinite(p) and abs(p) <= MAX_AMOUNT for _, p, _ in shown) else []


def _state_error(run: ab.Run, t: int, what: str) -> SourceError:
    return SourceError(run.path / f"state_t{t}.json", what)


LISTING_COLUMNS = ("step", "seller", "kind", "true_tier", "claimed_tier", "price", "text",
                   "reputation", "quality_value", "sold", "listing_id")


@dataclass
class Steps:
    """A run's states and what ties them together: the buyers, each seller's kind, and every
    listing as columns (``LISTING_COLUMNS``; ``at[t]``: the rows of step t)."""

    states: list[LemonState]
    buyers: list[str]
    kind: dict[str, str]  # seller -> honest | sybil
    cols: dict[str, np.ndarray]
    at: list[np.ndarray]


def read_steps(run: ab.Run, states: list[LemonState], mp: LemonParams) -> Steps:
    """Validate what ties the states together (one error naming the file) and gather listings."""
    buyers = [c.name for c in states[0].consumers]
    kind: dict[str, str] = {}
    retired: dict[str, int] = {}
    active_before: set[str] = set()
    rows, at = [], []
    ranges = {t: mp.price_range(t) for t in TIERS}
    for t, s in enumerate(states):
        if [c.name for c in s.consumers] != buyers:
            raise _state_error(run, t, "consumers: not the buyers of state_t0 (a buyer set that "
                               "changes)")
        full = {f.name: f for f in s.firms if f.sybil is not None}
        names = {f.name for f in s.firms}
        for f in full.values():
            k = "sybil" if f.sybil else "honest"
            if kind.setdefault(f.name, k) != k:
                raise _state_error(run, t, f"firms: {f.name} changes from {kind[f.name]} to {k}")
            if f.name in retired:
                raise _state_error(run, t, f"firms: {f.name} is back after its retirement at "
                                   f"step {retired[f.name]}")
        for name in active_before - set(full):
            retired[name] = t
        active_before = {n for n, f in full.items() if f.in_business}
        unsold = {x.id for x in s.lemon_market_unsold_listings}
        ids = [x.id for x in s.lemon_market_new_listings]
        if len(set(ids)) != len(ids):
            raise _state_error(run, t, "lemon_market_new_listings: a listing id twice")
        if not unsold <= set(ids):
            raise _state_error(run, t, f"lemon_market_unsold_listings: "
                               f"{sorted(unsold - set(ids))[0]!r} is not a new listing of this "
                               "step (listings do not persist in these runs)")
        at.append(np.arange(len(rows), len(rows) + len(ids)))
        for i, x in enumerate(s.lemon_market_new_listings):
            if x.firm_id not in names:
                raise _state_error(run, t, f"lemon_market_new_listings.{i}.firm_id {x.firm_id!r} "
                                   "is no seller of this state")
            if x.firm_id not in kind:
                raise _state_error(run, t, f"lemon_market_new_listings.{i}: seller {x.firm_id!r} "
                                   "never has a full entry")
            k = kind[x.firm_id]
            claimed = x.quality if k == "honest" else claimed_tier(x.price, ranges)
            rows.append((t, x.firm_id, k, x.quality, claimed, x.price, x.description,
                         x.reputation, x.quality_value, x.id not in unsold, x.id))
    cols = {c: np.array([r[i] for r in rows], dtype=object if isinstance(rows[0][i], str)
                        else None) if rows else np.array([])
            for i, c in enumerate(LISTING_COLUMNS)}
    return Steps(states, buyers, kind, cols, at)


def buyer_arrays(run: ab.Run, st: Steps) -> dict[str, np.ndarray]:
    """(steps x buyers) arrays: shown and bid per kind (deltas of the cumulative counters), car,
    paid (cash drop) and the logged surplus. A counter that falls, or more than one bid of a
    buyer in a step, is an error naming the state file."""
    cols = ("honest_seen_total", "honest_passed_total", "sybil_seen_total", "sybil_passed_total")
    raw = {c: np.array([[getattr(b, c) for b in s.consumers] for s in st.states], dtype=np.int64)
           for c in cols}
    cash = np.array([[b.cash for b in s.consumers] for s in st.states])
    d = {c: np.diff(v, axis=0, prepend=0) for c, v in raw.items()}
    out = {"honest_shown": d["honest_seen_total"], "sybil_shown": d["sybil_seen_total"],
           "honest_bid": d["honest_seen_total"] - d["honest_passed_total"],
           "sybil_bid": d["sybil_seen_total"] - d["sybil_passed_total"],
           "car": np.array([[b.inventory.car for b in s.consumers] for s in st.states]),
           "paid": np.diff(cash, axis=0, prepend=BUYER_CASH) * -1.0,
           "surplus": np.array([[b.consumer_surplus for b in s.consumers] for s in st.states])}
    bad = [(t, b, what) for what, ok in (
        ("a cumulative counter fell", np.all([v >= 0 for v in d.values()], axis=0)),
        ("more passed than seen", (out["honest_bid"] >= 0) & (out["sybil_bid"] >= 0)),
        ("more than one bid", (out["honest_bid"] + out["sybil_bid"]) <= 1),
    ) for t, b in zip(*np.nonzero(~ok))]
    if bad:
        t, b, what = min(bad)
        raise _state_error(run, int(t), f"consumers.{b} ({st.buyers[b]}): {what} in this step")
    return out


def purchases(st: Steps, arrays: dict[str, np.ndarray], v_max: float,
              answers: Answers | None = None) -> dict[tuple[int, int], int]:
    """(step, buyer index) -> the listing row it bought (-1: it paid or got a car, but no sold
    listing fits), by :func:`match_purchases` (the logged answers' listings first)."""
    out = {}
    named = answers.decisions if answers else {}
    price, sold = st.cols["price"], st.cols["sold"]
    implied = st.cols["quality_value"] * v_max - price if len(price) else price
    sybil = st.cols["kind"] == "sybil"
    for t, rows in enumerate(st.at):
        who = np.flatnonzero((arrays["car"][t] > 0) | (np.abs(arrays["paid"][t]) >= 0.005))
        if not len(who):
            continue
        rows = rows[sold[rows].astype(bool)]
        local = {int(r): i for i, r in enumerate(rows)}
        hint = np.array([local.get(named.get((t, st.buyers[b]), ("", -1))[1], -1) for b in who])
        match = match_purchases(price[rows].astype(float), implied[rows].astype(float),
                                sybil[rows], arrays["paid"][t][who], arrays["surplus"][t][who],
                                arrays["sybil_bid"][t][who], hint)
        out.update({(t, int(b)): int(rows[m]) if m >= 0 else -1 for b, m in zip(who, match)})
    return out


def step_rows(st: Steps) -> pd.DataFrame:
    """``market_steps``: what each state logged in aggregate."""
    rows = []
    for t, s in enumerate(st.states):
        p = s.deceptive_principal
        rows.append((t, s.lemon_market_listings_count, s.lemon_market_bids_count,
                     s.lemon_market_passes_count, s.filled_orders_count,
                     s.lemon_market_sybil_revenue_share, s.lemon_market_avg_consumer_surplus,
                     p.active_identities if p else 0, p.retired_this_step if p else 0,
                     p.total_identities_created if p else 0))
    return pd.DataFrame(rows, columns=[
        "step", "listings_logged", "bids_logged", "passes_logged", "sales_logged",
        "sybil_revenue_share_logged", "avg_surplus_logged", "active_identities",
        "retired_logged", "identities_created"])


def seller_rows(st: Steps, window: int) -> tuple[pd.DataFrame, list[tuple]]:
    """``reputation`` rows (module docstring) and the identities' ``joined``/``retired`` events
    (round 2: after the step's reviews, as our market logs them)."""
    sold = st.cols["sold"].astype(bool) if len(st.cols["sold"]) else np.array([], dtype=bool)
    sales_at = Counter(zip(st.cols["seller"][sold], st.cols["step"][sold]))
    total: Counter = Counter()
    rows, events, active, joined = [], [], {}, set()
    for t, s in enumerate(st.states):
        full = {f.name: f for f in s.firms if f.sybil is not None}
        for name, f in full.items():
            total[name] += sales_at[(name, t)]
            rows.append((t, name, st.kind[name], f.in_business, f.reputation, total[name],
                         f.upvotes, f.downvotes, True, len(f.sales_info)))
            if f.sybil and name not in joined:
                joined.add(name)
                created = f.timestep_created if f.timestep_created is not None else t
                events.append((created, 0 if created == 0 else 2, name, "joined",
                               "initial identity" if created == 0 else "a fresh identity in a "
                               "retired one's slot"))
        for name, f in active.items():
            if name not in full:  # its stub (or nothing): retired this step
                total[name] += sales_at[(name, t)]
                up = max(f.upvotes - 1, 0)
                rows.append((t, name, "sybil", False, up / window, total[name], up,
                             f.downvotes + 1, False, 0))
                events.append((t, 2, name, "retired", f"reputation under the threshold after "
                               f"this step's sale (logged {f.reputation:.2f} the step before)"))
        active = {n: f for n, f in full.items() if f.sybil and f.in_business}
    rep = pd.DataFrame(rows, columns=["step", "seller", "kind", "active", "reputation", "sales",
                                      "upvotes", "downvotes", "logged", "sales_logged"])
    return rep, sorted(events)


# ------------------------------------------------------------------ the prompt log
def record_phase(r: ab.PromptRecord) -> str:
    """Our phase of a prompt-log record: ``buy`` (a bid request), ``review`` (their review
    requests are logged with call ``bid`` too: told apart by their text), ``list`` (an honest
    or Sybil listing), else the record's own call."""
    if r.role == "buyer":
        return "review" if REVIEW_MARK in (r.user_prompt or "") else "buy" if r.call == "bid" \
            else r.call
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


def read_answers(records: list[ab.PromptRecord], st: Steps, seats: set[str], model: str
                 ) -> Answers:
    """The prompt log's records of the imported steps as ``llm_messages``, and the buyers' bid and
    review answers re-parsed (:func:`parse_bid`, :func:`parse_vote`) as ``decisions`` and
    ``llm_calls`` (the last request of a decision is its answer; earlier ones were re-sent)."""
    steps = len(st.states)
    kept = ab.imported_records(records, steps, seats)
    messages = ab.prompt_messages(kept, record_phase,
                                  lambda r: ROUNDS.get(record_phase(r), len(ROUNDS)))
    listing_of: dict[tuple[int, int, str], int] = {}
    for row, key in enumerate(zip(st.cols["step"].tolist(), cents(st.cols["price"]).tolist(),
                                  st.cols["text"].tolist())):
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
            action = {"decision": parsed.decision, "listing": parsed.listing
                      if parsed.decision == "bid" else None}
            valid, error = parsed.valid, parsed.error
        else:
            vote, valid, error = parse_vote(last.response)
            out.votes[(t, agent)] = vote
            action = {"vote": vote}
        rows.append((t, ROUNDS[phase], phase, agent, 0, json.dumps(action), valid, error, notes))
        out.invalid += not valid
    decisions = pd.DataFrame(rows, columns=DECISION_COLUMNS).sort_values(
        ["step", "round", "agent_id"], kind="stable").reset_index(drop=True)
    keys = ["step", "round", "phase", "agent_id"]
    answered = messages.merge(decisions[keys], on=keys)  # the buyers' decisions only
    calls = ab.prompt_calls(answered, model)
    if len(calls):
        calls["valid"] = calls[keys].merge(decisions[[*keys, "valid"]], on=keys,
                                           how="left")["valid"].to_numpy()
    out.tables = {"llm_messages": messages, "llm_calls": calls, "decisions": decisions}
    return out


# ------------------------------------------------------------------ the run's tables
def buyer_tables(st: Steps, arrays: dict[str, np.ndarray], got: dict[tuple[int, int], int],
                 answers: Answers | None) -> dict[str, Any]:
    """``bids`` (one row per buyer and step, with what its state logged) and ``views`` (module
    docstring) as :class:`~marketarena.core.types.Rows`, and each listing's buyer
    (``buyer_of``)."""
    seller, kind = st.cols["seller"], st.cols["kind"]
    arrays = {k: v.tolist() for k, v in arrays.items()}  # scalar reads: lists are faster
    bids, views = [], []
    buyer_of = np.full(len(seller), "", dtype=object)
    for t in range(len(st.states)):
        for b, name in enumerate(st.buyers):
            shown = (arrays["honest_shown"][t][b], arrays["sybil_shown"][t][b])
            side = "sybil" if arrays["sybil_bid"][t][b] else "honest" if arrays["honest_bid"][t][b] \
                else ""
            row = got.get((t, b), -1)
            if row >= 0:
                buyer_of[row] = name
            answered, named = answers.decisions.get((t, name), ("", -1)) if answers else ("", -1)
            bid_on = row if row >= 0 else named if named >= 0 and kind[named] == side else -1
            bids.append((t, name, "bid" if side else "pass", seller[bid_on] if side and
                         bid_on >= 0 else "", "", -1, arrays["car"][t][b] > 0, side,
                         answered, seller[named] if named >= 0 else "", *shown,
                         arrays["car"][t][b], arrays["paid"][t][b], arrays["surplus"][t][b],
                         seller[row] if row >= 0 else ""))
            logged = answers.shown.get((t, name)) if answers else None
            if logged is not None and (sum(kind[i] == "honest" for i in logged),
                                       sum(kind[i] == "sybil" for i in logged)) == shown:
                aliases = answers.aliases[(t, name)]
                views += [(t, name, seller[i], a, k, kind[i]) for k, (i, a) in
                          enumerate(zip(logged, aliases))]
            else:
                kinds = ["honest"] * shown[0] + ["sybil"] * shown[1]
                first = kinds.index(side) if side and bid_on >= 0 and side in kinds else -1
                views += [(t, name, seller[bid_on] if k == first else "", "", k, x)
                          for k, x in enumerate(kinds)]
    return {  # as rows: written to Parquet without a DataFrame (``core.logs.write_table``)
        "bids": Rows(["step", "buyer", "decision", "seller", "alias", "served", "filled", "kind",
                      "answered", "answer_seller", "honest_shown", "sybil_shown", "car", "paid",
                      "surplus_logged", "bought"], bids),
        "views": Rows(["step", "buyer", "seller", "alias", "position", "kind"], views,
                      {"step": "int64", "position": "int64"}),
        "buyer_of": buyer_of,
    }


def review_rows(st: Steps, buyer_of: np.ndarray, rep: pd.DataFrame,
                votes: dict[tuple[int, str], str], initial_ups: int) -> pd.DataFrame:
    """One review per purchase: the logged vote, else the one the seller's upvote count pins."""
    ups = dict(zip(zip(rep["seller"], rep["step"]), rep["upvotes"]))
    rows = []
    for i in np.flatnonzero(buyer_of != ""):
        t, seller, buyer = int(st.cols["step"][i]), st.cols["seller"][i], buyer_of[i]
        if (t, buyer) in votes:
            rows.append((t, buyer, seller, votes[(t, buyer)], "prompt log"))
            continue
        before = ups.get((seller, t - 1), initial_ups)
        delta = ups.get((seller, t), before) - before
        rows.append((t, buyer, seller, {1: "up", -1: "down"}.get(int(delta), ""),
                     "counts" if delta else ""))
    return pd.DataFrame(rows, columns=["step", "buyer", "seller", "vote", "source"])


def agents_table(st: Steps, args: LemonArgs, buyers: str) -> pd.DataFrame:
    """Every seat of the run (module docstring), honest sellers, the principal and its
    identities (in the order they joined), then buyers."""
    seller_model = args.seller_llm or args.llm
    honest = [n for n, k in st.kind.items() if k == "honest"]
    sybil = [n for n, k in st.kind.items() if k == "sybil"]
    rows = [(n, player(seller_model, "+honest"), "llm", seller_model, HARNESS, HARNESS, "honest",
             n) for n in honest]
    if sybil:
        rows.append((PRINCIPAL, player(seller_model, "+sybil"), "llm", seller_model, HARNESS,
                     HARNESS, "principal", PRINCIPAL))
        rows += [(n, player(seller_model, "+sybil"), "llm", seller_model, HARNESS, HARNESS,
                  "identity", PRINCIPAL) for n in sybil]
    model = args.buyer_llm or args.llm
    rows += [(n, buyers, "llm", model, HARNESS, HARNESS, "buyer", n) for n in st.buyers]
    return pd.DataFrame(rows, columns=AGENT_COLUMNS)


def convert_run(mp: LemonParams, run: ab.Run) -> tuple[str, dict, dict, dict] | None:
    """One run as (episode id, tables, meta, report row), or None when it has no state."""
    args = run.args
    tokens = ab.read_tokens(run)
    states = [s for _, s in ab.read_states(run, LemonState)]
    if not states:
        run.lacks.append("state files (none: nothing to import)")
        return None
    steps = len(states)
    if steps < args.max_timesteps and not any(x.startswith("state_t") for x in run.lacks):
        run.lacks.append(f"steps {steps} to {args.max_timesteps - 1} (the run stopped after step "
                         f"{steps - 1}; imported up to it)")
    st = read_steps(run, states, mp)
    arrays = buyer_arrays(run, st)
    base = bool(run.cell.get("base"))
    buyers = buyer_player(args, base)
    agents = agents_table(st, args, buyers)
    records, unreadable = ab.prompt_records(run, PROMPT_LOG, args.log_buyer_prompts)
    answers = read_answers(records, st, set(agents["agent_id"]), args.buyer_llm or args.llm) \
        if records else None
    got = purchases(st, arrays, mp.v_max, answers)
    bt = buyer_tables(st, arrays, got, answers)
    buyer_of = bt.pop("buyer_of")
    c = st.cols
    listings = pd.DataFrame({
        "step": c["step"].astype(np.int64), "seller": c["seller"], "kind": c["kind"],
        "true_tier": c["true_tier"], "claimed_tier": c["claimed_tier"],
        "price": c["price"].astype(float),
        "description": [x[:DESCRIPTION_MAX_CHARS] for x in c["text"]],
        "reputation": c["reputation"].astype(float), "sold": c["sold"].astype(bool),
        "buyer": buyer_of, "listing_id": c["listing_id"]})
    rep, events = seller_rows(st, mp.window)
    tables = {
        "listings": listings, **bt, "reputation": rep, "market_steps": step_rows(st),
        "reviews": review_rows(st, buyer_of, rep, answers.votes if answers else {},
                               round(mp.initial_reputation * mp.window)),
        "events": pd.DataFrame(events, columns=["step", "round", "agent_id", "event", "detail"]),
        "agents": agents,
        "setting": pd.DataFrame([{
            "sybil": run.cell["sybil"], "reputation_visible": run.cell["reputation_visible"],
            "buyer_group": buyers, "sellers": mp.sellers, "buyers": len(st.buyers),
            "steps": steps, "v_max": mp.v_max, "discovery_limit": mp.discovery_limit,
            "model": args.buyer_llm or args.llm, "seller_model": args.seller_llm or args.llm,
            "seed": run.cell["seed"], "base": base, "steps_planned": args.max_timesteps,
            "model_folder": run.model_folder, "run": run.name}]),
        **(answers.tables if answers else {}),
    }
    meta = {"source": "agent_bazaar", "run": run.where, "model": args.buyer_llm or args.llm,
            "cell": run.cell, "steps": steps, "steps_planned": args.max_timesteps,
            "tokens": {k: v.model_dump() for k, v in (tokens or {}).items()},
            "lacks": list(run.lacks)}
    unpaired = int((listings["sold"] & (listings["buyer"] == "")).sum())
    sold = listings[listings["sold"]]
    alike = int(sold.duplicated(["step", "price", "kind", "true_tier"], keep=False).sum())
    report = {"model": ab.player_of(args.buyer_llm or args.llm),
              "status": "truncated" if steps < args.max_timesteps else "full",
              "steps": steps, "truncated": steps < args.max_timesteps,
              "prompt_records": len(records),
              "unreadable_prompt_lines": unreadable,
              "answers_invalid": answers.invalid if answers else 0,
              "sales_unpaired": unpaired, "sales_alike": alike}
    return episode_id(run), tables, meta, report


#: what a run can lack, from the shared reader's and this importer's notes, by their first words:
#: (start, the report's label, the label of one run)
LACKS = (("state files", "no state file", "no state file"),
         ("state_t", "a state file (those after it unread)", "a state file"),
         ("steps", "its last steps (it stopped early)", "steps"),
         (PROMPT_LOG, "its prompt log (a file of 4 MiB or more, not in the snapshot)",
          "prompt log"),
         ("token usage", "its token usage (the process was killed)", "token usage"))


def lack_labels(note: str) -> tuple[str, str]:
    """(the report's label, a short one for the run) of one of a run's ``lacks`` notes."""
    if "unreadable line" in note:
        return ("prompt-log lines interleaved by concurrent appends (skipped)",
                note.split(" of ")[0])
    for start, label, short in LACKS:
        if note.startswith(start):
            return label, note.split(" (")[0] if short in ("steps", "a state file") else short
    return note, note


def import_runs(mp: LemonParams, source: Path, out: Path, workers: int) -> dict:
    """Import every lemon run under ``source`` into ``out`` (one episode folder per run); the
    import report: runs found, imported, lacking what (by run), left out and why."""
    runs, left_out = prepared_runs(mp, source)
    rows = ab.import_runs(runs, partial(convert_run, mp), out, workers)
    imported = [r for r in rows if "episode_id" in r]
    labels = [lack_labels(note)[0] for r in rows for note in r["lacks"]]
    return {
        **ab.report(rows, left_out),
        "runs_without_states_list": [r["run"] for r in rows if "episode_id" not in r],
        "runs_truncated": {r["run"]: r["steps"] for r in imported if r["truncated"]},
        "runs_with_prompt_log": sum(r["prompt_records"] > 0 for r in imported),
        "steps": sum(r["steps"] for r in imported),
        "buyer_answers_invalid": sum(r["answers_invalid"] for r in imported),
        "unreadable_prompt_lines": sum(r["unreadable_prompt_lines"] for r in imported),
        "sales_unpaired": sum(r["sales_unpaired"] for r in imported),
        "sales_alike": sum(r["sales_alike"] for r in imported),
        "runs_lacking": {label: labels.count(label) for label in sorted(set(labels))},
        "lacks_by_run": {r["run"].split("/")[-1]: ", ".join(lack_labels(n)[1] for n in r["lacks"])
                         for r in rows if r["lacks"]},
    }
