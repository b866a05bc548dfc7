"""Prompt fidelity of the ``agent_bazaar`` harness (issue 53): Agent Bazaar's lemon buyer prompts
rendered by their own code (``markets/lemon/authors_buyer.py``) from each logged state, against the
prompts their runs logged.

For every lemon run of the import whose prompt log is present, every buyer is walked through the
run, step by step, as their engine walked it: the listings of the step come from the state files
(as imported: price, description, reputation, seller), the listings the buyer was shown and the
anonymous id it saw each under from its logged bid request (their code numbers a seller on first
sight, and some steps' requests are not in the log), its answers are the model's logged answers
(so their buyer's history moves as it did), its purchases and their price and tier from the
states. A step whose bid request is not in the log (the model's call failed: their engine passed)
is played as their engine played it, a pass. Each logged request (``depth`` 0) is compared with
ours: system prompt and user message, after whitespace normalisation (runs of whitespace to one
space). Differences are classified by the first part of the message that differs.

    .venv/bin/python benchmarks/bench_authors_prompts.py --logs AI-Bazaar/logs-data \\
        --code AI-Bazaar [--episodes <an import's data/episodes/lemon>]

``--code`` is the root of a copy of their repository (``ai_bazaar/agents/buyer.py`` and
``llm_agent.py``, ``ai_bazaar/utils/common.py``). Without ``--episodes`` the runs are imported
first into a temporary project. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import tempfile
from pathlib import Path

import marketarena  # noqa: F401 - first: pins numpy's CPU path
from marketarena.core.reader import EpisodeReader
from marketarena.markets.lemon.authors_buyer import Seat, listings
from marketarena.markets.lemon.sources.prompt_log import OBSERVATION, REVIEW_MARK

PERSONA = re.compile(r"Your persona: (.*?)\. ")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def first_difference(ours: str, theirs: str) -> str:
    """Which part of the user message differs first."""
    a, b = norm(ours), norm(theirs)
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    head = b[:i]
    if "Your current observation:" not in head and "Seller '" not in head:
        return "history (before the request)"
    if '"listings_visible"' in b[i - 40 : i + 40] or '"persona"' in b[i - 20 : i + 30]:
        return "observation: key order"
    if '"description"' in b[max(0, i - 400) : i]:
        return "observation: a listing's description"
    if "your_transaction_history" in b[max(0, i - 800) : i]:
        return "observation: transaction history"
    return "request text"


def records(path: Path) -> list[dict]:
    out = []
    for line in path.read_bytes().split(b"\n"):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and r.get("role") == "buyer":
            out.append(r)
    return out


def run_folder(logs: Path, run: str) -> Path | None:
    hits = [
        p
        for p in logs.glob(f"*/{run}")
        if not p.parent.name.startswith("(") and (p / "lemon_agent_prompts.jsonl").is_file()
    ]
    return hits[0] if hits else None


def check_run(code: Path, folder: Path, tables: dict, episode: str, tally: dict) -> None:
    setting = tables["setting"].query("episode_id == @episode").iloc[0]
    rep = bool(setting["reputation_visible"])
    listed = tables["listings"].query("episode_id == @episode")
    bids = tables["bids"].query("episode_id == @episode").set_index(["step", "buyer"])
    by_step = {t: g.set_index("listing_id") for t, g in listed.groupby("step")}
    logged: dict = collections.defaultdict(dict)
    for r in records(folder / "lemon_agent_prompts.jsonl"):
        phase = "review" if REVIEW_MARK in (r.get("user_prompt") or "") else "buy"
        key = (r["agent"], int(r["timestep"]), phase)
        logged[key].setdefault(int(r.get("depth") or 0), r)
    buyers = sorted({k[0] for k in logged})
    for buyer in buyers:
        first = next(
            (
                logged[k][0]
                for k in sorted(logged, key=lambda k: k[1])
                if k[0] == buyer and 0 in logged[k]
            ),
            None,
        )
        if first is None:
            continue
        m = PERSONA.search(first["system_prompt"] or "")
        seat = Seat(code, buyer, m.group(1) if m else "", rep, "cot", 3)
        for t in range(int(setting["steps"])):
            step_listings = by_step.get(t)
            if step_listings is None or step_listings.empty:
                continue
            bid = logged.get((buyer, t, "buy"), {})
            if 0 in bid:
                rec = bid[0]
                at = rec["user_prompt"].rfind(OBSERVATION)
                obs, _ = json.JSONDecoder().raw_decode(rec["user_prompt"], at + len(OBSERVATION))
                views = []
                for x in obs["listings_visible"]:
                    hit = step_listings[
                        (step_listings["price"] == float(x["listed_price"]))
                        & (step_listings["description"] == x["description"])
                    ]
                    seller = str(hit["seller"].iloc[0]) if len(hit) else f"?{x['listing_id']}"
                    anon = x["listing_id"].rsplit("_listing_", 1)[0]
                    seat.buyer.attrs["_seller_anon_map"].setdefault(seller, anon)
                    if len(hit):
                        row = hit.iloc[0]
                        views.append(
                            (
                                seller,
                                row["price"],
                                row["description"],
                                row["reputation"] if rep else None,
                            )
                        )
                    else:
                        views.append(
                            (
                                seller,
                                float(x["listed_price"]),
                                x["description"],
                                x.get("seller_reputation"),
                            )
                        )
                args = (t, listings(views), 3, rep)
                ours = seat.prompt("make_orders", *args)
                compare(ours, rec, "buy", tally)
                last = bid[max(bid)]
                seat.finish(last.get("response") or "", "make_orders", *args)
            else:  # the request is not in the log: their engine passed
                dummy = [(f"?lost{t}", 1.0, "", None)]
                seat.finish("", "make_orders", t, listings(dummy), 3, rep)
                tally["buy requests lost (played as a pass)"] += 1
            try:
                row = bids.loc[(t, buyer)]
            except KeyError:
                continue
            seller = str(row["bought"]) if "bought" in row else ""
            if not seller:
                continue
            item = listed.query("step == @t and seller == @seller").iloc[0]
            kw = dict(
                seller_id=seller,
                description=item["description"],
                quality_received={"mint": 1.0, "good": 0.7, "fair": 0.4, "poor": 0.1}[
                    item["true_tier"]
                ],
                quality_label=item["true_tier"],
                timestep=t,
            )
            review = logged.get((buyer, t, "review"), {})
            if 0 in review:
                compare(seat.prompt("review_transaction", **kw), review[0], "review", tally)
                seat.finish(review[max(review)].get("response") or "", "review_transaction", **kw)
            else:
                seat.finish("", "review_transaction", **kw)
            seat.record(seller, float(row["paid"]), item["true_tier"], t)


EXAMPLES: dict = {}


def compare(ours, rec: dict, phase: str, tally: dict) -> None:
    tally[f"{phase}: compared"] += 1
    if ours is None:
        tally[f"{phase}: not rendered"] += 1
        return
    same_sys = norm(ours[0]) == norm(rec["system_prompt"])
    same_user = norm(ours[1]) == norm(rec["user_prompt"])
    if same_sys and same_user:
        tally[f"{phase}: identical"] += 1
        return
    why = "system prompt" if not same_sys else first_difference(ours[1], rec["user_prompt"])
    tally[f"{phase}: differs: {why}"] += 1
    EXAMPLES.setdefault(why, (ours[1], rec["user_prompt"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logs", type=Path, required=True)
    ap.add_argument("--code", type=Path, required=True)
    ap.add_argument("--episodes", type=Path)
    ap.add_argument("--show", action="store_true", help="print one example of each difference")
    a = ap.parse_args()
    episodes = a.episodes
    if episodes is None:
        from marketarena.pipeline import import_folder

        out = Path(tempfile.mkdtemp(prefix="fidelity-"))
        import_folder("lemon", "agent_bazaar", a.logs, out)
        episodes = out / "data" / "episodes" / "lemon"
    reader = EpisodeReader(episodes)
    tables = {n: reader.table(n) for n in ("setting", "listings", "bids")}
    tally: collections.Counter = collections.Counter()
    runs = 0
    for _, s in tables["setting"].iterrows():
        folder = run_folder(a.logs, str(s["run"]))
        if folder is None:
            continue
        runs += 1
        check_run(a.code, folder, tables, str(s["episode_id"]), tally)
    print(f"runs with a prompt log: {runs}; code: {a.code}")
    for phase in ("buy", "review"):
        n, same = tally[f"{phase}: compared"], tally[f"{phase}: identical"]
        print(
            f"{phase}: {same} of {n} identical after whitespace normalisation ({same / max(n, 1):.1%})"
        )
        for k, v in sorted(tally.items()):
            if k.startswith(f"{phase}: differs") or k.startswith(f"{phase}: not"):
                print(f"   {k}: {v}")
    print(
        f"buy requests lost from the logs (played as their engine's pass): "
        f"{tally['buy requests lost (played as a pass)']}"
    )
    if a.show:
        import difflib

        for why, (ours, theirs) in EXAMPLES.items():
            print(f"--- {why}")
            diff = difflib.unified_diff(
                theirs.splitlines(), ours.splitlines(), "logged", "ours", lineterm="", n=12
            )
            print("\n".join(list(diff)[:80]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
