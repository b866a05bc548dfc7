"""Agent Bazaar's lemon runs (the authors' ``exp2``) as episodes of our lemon market.

The shared reader (``markets/_shared/sources/agent_bazaar.py``) finds the runs
(``logs-data/exp2_<model>/<prefix>_k<K>_rep<r>_seed<s>[_base]/``) and reads their files strictly;
this importer turns one run into the tables our lemon market logs (``lemon/market.py``), so that
our metrics, our EAS, the replay (``replay.py``) and the figures run on the authors' games
unchanged: reading a run and checking it (``runs.py``), its steps as our tables (``steps.py``),
its prompt log (``prompt_log.py``), and here its seats, its episode and the import report.
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
  :data:`runs.BUYER_CASH`), ``inventory.car`` says it got a car and ``consumer_surplus`` is the
  value minus the price: :func:`steps.match_purchases` pairs each step's buyers with the sold
  listings on the price (to the cent), then on the kind of listing the buyer bid on and the
  surplus. Pairs it cannot make stay unpaired (``buyer`` "") and the replay reports them.
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
- ``meta.json`` as a played lemon episode's (``simulate/schedule.py``) and an imported crash
  run's: ``market``, ``lineup`` (every seat's player, in seat order) and ``setting``, the cell
  under our played episodes' keys (``sybil``, ``reputation_visible``, ``buyers``: the buyers'
  player) and the run's ``seed``, which the viewer filters episodes by and scores them with;
  beside them the run (``run``, ``model``, ``steps``, ``steps_planned``, ``tokens``, ``lacks``).
  Imports made before this held no ``market`` or ``lineup`` and their cell as ``cell``: the viewer
  still opens them (the lineup from their ``agents`` table), without setting filters or scores.
- The prompt log (``lemon_agent_prompts.jsonl``, when present): every record as ``llm_messages``
  (list round 0, buy 1, review 2, as our market's decision points); the buyers' answers as
  ``decisions`` and ``llm_calls`` rows, so the viewer shows what each model was asked and
  answered. A bid answer is re-parsed with their rules (:func:`prompt_log.parse_bid`): it is **valid** when
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

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from marketarena.core.rules import AGENT_COLUMNS
from marketarena.markets._shared.sources import agent_bazaar as ab
from marketarena.markets.lemon.params import LemonParams
from marketarena.markets.lemon.sources.prompt_log import read_answers
from marketarena.markets.lemon.sources.runs import (
    LemonArgs,
    LemonState,
    Steps,
    buyer_arrays,
    buyer_player,
    episode_id,
    player,
    prepared_runs,
    read_steps,
)
from marketarena.markets.lemon.sources.steps import (
    buyer_tables,
    purchases,
    review_rows,
    seller_rows,
    step_rows,
)

#: the principal's name in their prompt logs and our seat id for it
PRINCIPAL = "sybil_principal"
#: characters of a listing's description kept (their longest: about 1,100)
DESCRIPTION_MAX_CHARS = 4000
PROMPT_LOG = "lemon_agent_prompts.jsonl"
HARNESS = "agent-bazaar-llm"


def agents_table(st: Steps, args: LemonArgs, buyers: str) -> pd.DataFrame:
    """Every seat of the run (module docstring), honest sellers, the principal and its
    identities (in the order they joined), then buyers."""
    seller_model = args.seller_llm or args.llm
    honest = [n for n, k in st.kind.items() if k == "honest"]
    sybil = [n for n, k in st.kind.items() if k == "sybil"]
    rows = [
        (n, player(seller_model, "+honest"), "llm", seller_model, HARNESS, HARNESS, "honest", n)
        for n in honest
    ]
    if sybil:
        rows.append(
            (
                PRINCIPAL,
                player(seller_model, "+sybil"),
                "llm",
                seller_model,
                HARNESS,
                HARNESS,
                "principal",
                PRINCIPAL,
            )
        )
        rows += [
            (
                n,
                player(seller_model, "+sybil"),
                "llm",
                seller_model,
                HARNESS,
                HARNESS,
                "identity",
                PRINCIPAL,
            )
            for n in sybil
        ]
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
        run.lacks.append(
            f"steps {steps} to {args.max_timesteps - 1} (the run stopped after step "
            f"{steps - 1}; imported up to it)"
        )
    st = read_steps(run, states, mp)
    arrays = buyer_arrays(run, st)
    base = bool(run.cell.get("base"))
    buyers = buyer_player(args, base)
    agents = agents_table(st, args, buyers)
    records, unreadable = ab.prompt_records(run, PROMPT_LOG, args.log_buyer_prompts)
    answers = (
        read_answers(records, st, set(agents["agent_id"]), args.buyer_llm or args.llm)
        if records
        else None
    )
    got = purchases(st, arrays, mp.v_max, answers)
    bt = buyer_tables(st, arrays, got, answers)
    buyer_of = bt.pop("buyer_of")
    c = st.cols
    listings = pd.DataFrame(
        {
            "step": c["step"].astype(np.int64),
            "seller": c["seller"],
            "kind": c["kind"],
            "true_tier": c["true_tier"],
            "claimed_tier": c["claimed_tier"],
            "price": c["price"].astype(float),
            "description": [x[:DESCRIPTION_MAX_CHARS] for x in c["text"]],
            "reputation": c["reputation"].astype(float),
            "sold": c["sold"].astype(bool),
            "buyer": buyer_of,
            "listing_id": c["listing_id"],
        }
    )
    rep, events = seller_rows(st, mp.window)
    tables = {
        "listings": listings,
        **bt,
        "reputation": rep,
        "market_steps": step_rows(st),
        "reviews": review_rows(
            st,
            buyer_of,
            rep,
            answers.votes if answers else {},
            round(mp.initial_reputation * mp.window),
        ),
        "events": pd.DataFrame(events, columns=["step", "round", "agent_id", "event", "detail"]),
        "agents": agents,
        "setting": pd.DataFrame(
            [
                {
                    "sybil": run.cell["sybil"],
                    "reputation_visible": run.cell["reputation_visible"],
                    "buyer_group": buyers,
                    "sellers": mp.sellers,
                    "buyers": len(st.buyers),
                    "steps": steps,
                    "v_max": mp.v_max,
                    "discovery_limit": mp.discovery_limit,
                    "model": args.buyer_llm or args.llm,
                    "seller_model": args.seller_llm or args.llm,
                    "seed": run.cell["seed"],
                    "base": base,
                    "steps_planned": args.max_timesteps,
                    "model_folder": run.model_folder,
                    "run": run.name,
                }
            ]
        ),
        **(answers.tables if answers else {}),
    }
    meta = {
        "market": "lemon",
        "source": "agent_bazaar",
        "run": run.where,
        "lineup": agents["name"].tolist(),
        "setting": {
            "sybil": run.cell["sybil"],
            "reputation_visible": run.cell["reputation_visible"],
            "buyers": buyers,
            "seed": run.cell["seed"],
        },
        "model": args.buyer_llm or args.llm,
        "steps": steps,
        "steps_planned": args.max_timesteps,
        "tokens": {k: v.model_dump() for k, v in (tokens or {}).items()},
        "lacks": list(run.lacks),
    }
    unpaired = int((listings["sold"] & (listings["buyer"] == "")).sum())
    sold = listings[listings["sold"]]
    alike = int(sold.duplicated(["step", "price", "kind", "true_tier"], keep=False).sum())
    report = {
        "model": ab.player_of(args.buyer_llm or args.llm),
        "status": "truncated" if steps < args.max_timesteps else "full",
        "steps": steps,
        "truncated": steps < args.max_timesteps,
        "prompt_records": len(records),
        "unreadable_prompt_lines": unreadable,
        "answers_invalid": answers.invalid if answers else 0,
        "sales_unpaired": unpaired,
        "sales_alike": alike,
    }
    return episode_id(run), tables, meta, report


#: what a run can lack, from the shared reader's and this importer's notes, by their first words:
#: (start, the report's label, the label of one run)
LACKS = (
    ("state files", "no state file", "no state file"),
    ("state_t", "a state file (those after it unread)", "a state file"),
    ("steps", "its last steps (it stopped early)", "steps"),
    (PROMPT_LOG, "its prompt log (a file of 4 MiB or more, not in the snapshot)", "prompt log"),
    ("token usage", "its token usage (the process was killed)", "token usage"),
)


def lack_labels(note: str) -> tuple[str, str]:
    """(the report's label, a short one for the run) of one of a run's ``lacks`` notes."""
    if "unreadable line" in note:
        return (
            "prompt-log lines interleaved by concurrent appends (skipped)",
            note.split(" of ")[0],
        )
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
        "lacks_by_run": {
            r["run"].split("/")[-1]: ", ".join(lack_labels(n)[1] for n in r["lacks"])
            for r in rows
            if r["lacks"]
        },
    }
