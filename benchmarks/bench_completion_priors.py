"""How real models answer: completion tokens per call in published runs, per model, market and
kind of answer (issue 56), and the prior table ``lib/marketarena/completion_priors.csv`` that
``marketarena estimate`` and the rating-cost table use (``--write``).

    .venv/bin/python benchmarks/bench_completion_priors.py --agent-bazaar /path/AI-Bazaar/logs-data \
        [--pact /path/pact/logs] [--bazaar /path/bazaar/logs] [--write]

Agent Bazaar (MIT) logs each run's usage in ``<run>_token_usage.json``: ``input_tokens``,
``output_tokens`` and ``requests`` for the whole run, or per role (``total``, ``buyers``,
``sellers``) in its lemon runs; the run's ``experiment_args.json`` beside it names the model
(``llm``, ``buyer_llm``, ``seller_llm``), the market (``consumer_scenario``: ``THE_CRASH`` is
crash, ``LEMON_MARKET`` lemon) and the prompt (``prompt_algo``: ``io`` asks for the answer alone,
``cot`` for reasons first). Its ``output_tokens`` include a thinking model's reasoning (what the
provider bills); it logs no reasoning tokens apart and no re-asks (its harness makes none).
Choices where the issue is silent:

- folders named ``(OLD) ...`` hold runs the publisher superseded and are left out (the other 575
  files are the issue's count); ``anthropic/claude-sonnet-4-6`` is read as
  ``anthropic/claude-sonnet-4.6`` (one model, two spellings in its runs' arguments); a run that logged 0 requests (olmo-3.1-32b-think's and
  qwen3-8b's crash runs) counts as no data;
- lemon's seller-only usage (``sellers``: listings written as prose) is printed but left out of
  the priors: the seat marketarena rates in lemon is a buyer; files that do not split the roles
  are kept whole;
- the kind of an answer, by what the model spent (a model's name says nothing reliable):
  **thinking**, a model whose logs record reasoning tokens, else whose completion tokens per call
  over all its logged calls (every market and prompt) reach :data:`THINKING_FLOOR` (250; Agent
  Bazaar's thinking models spend 370 to 465, every other model at most 195 in any market);
  otherwise **bare_json**, a run asked for the answer alone (``io``) that spent under
  :data:`BARE_CEILING` (60) a call; otherwise **chain_of_thought** (asked for its reasons, or
  writing them unasked: claude-sonnet-4.6 spent 69 and 300 a call under ``io``).
  deepseek-r1-distill-qwen-32b, a reasoning model by name, spent 189 a call in lemon and counts
  as chain_of_thought;
- a prior row per kind and market: ``mean``, the mean over the kind's models of each model's
  tokens per call (every model once, however many runs it has), ``low`` and ``high`` the least
  and the most of them, ``n_models`` and ``calls``; a row ``any`` per kind for markets with no
  logged runs, from the market rows (mean of their means, least low, most high);
  ``reasoning_share``, the share of the kind's tokens beyond the same market's bare answer
  (bare_json's mean): Agent Bazaar logs no reasoning tokens apart, so this is an estimate.

PACT and BAZAAR (no licence: read from folders you clone, never copied) are searched for
per-call usage fields (``prompt_tokens``, ``completion_tokens``, ``reasoning_tokens``,
``input_tokens``, ``output_tokens``); their logs have none (``final_tokens`` is the game's
currency), so they add nothing to the priors and the script says so.

Prints the table per model and market, the per-kind means and each kind's prior against Agent
Bazaar's logged mean (calls-weighted) for crash and lemon; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena.completion_priors import KINDS, TABLE, write_priors

#: completion tokens per call over all a model's calls from which it counts as a thinking model
THINKING_FLOOR = 250.0
#: completion tokens per call under which a run asked for the answer alone answered bare
BARE_CEILING = 60.0
MARKETS = {"THE_CRASH": "crash", "LEMON_MARKET": "lemon"}
#: one model under two spellings in the publisher's arguments
SPELLINGS = {"anthropic/claude-sonnet-4-6": "anthropic/claude-sonnet-4.6"}
USAGE_FIELDS = re.compile(
    r'"(prompt_tokens|completion_tokens|reasoning_tokens|input_tokens|output_tokens)"\s*:'
)


def agent_bazaar(root: Path) -> list[dict]:
    """One record per (token file, role): model, market, prompt, role, calls and tokens."""
    out = []
    for path in sorted(root.rglob("*token_usage*.json")):
        rel = path.relative_to(root)
        if rel.parts[0].startswith("(OLD)"):
            continue
        args = json.loads((path.parent / "experiment_args.json").read_text())
        usage = json.loads(path.read_text())
        market = MARKETS.get(args.get("consumer_scenario"), args.get("consumer_scenario"))
        llm = args["llm"]
        if "total" in usage:
            parts = [
                ("buyers", args.get("buyer_llm") or llm, usage["buyers"]),
                ("sellers", args.get("seller_llm") or llm, usage["sellers"]),
            ]
        else:
            parts = [("all", llm, usage)]
        for role, model, u in parts:
            out.append(
                {
                    "model": SPELLINGS.get(model, model),
                    "market": market,
                    "prompt": args.get("prompt_algo", "?"),
                    "role": role,
                    "calls": u["requests"],
                    "prompt_tokens": u["input_tokens"],
                    "completion_tokens": u["output_tokens"],
                    "reasoning_tokens": u.get("reasoning_tokens", 0),
                    "file": str(rel),
                }
            )
    return out


def usage_records(folder: Path) -> int:
    """How many per-call usage fields the logs under ``folder`` carry (PACT's, BAZAAR's)."""
    return sum(
        len(USAGE_FIELDS.findall(p.read_text(errors="replace")))
        for p in folder.rglob("*")
        if p.is_file() and p.suffix in {".jsonl", ".json", ".log", ".txt"}
    )


def group(records: list[dict], keys: tuple[str, ...]) -> dict[tuple, dict]:
    out: dict[tuple, dict] = defaultdict(
        lambda: {"runs": 0, "calls": 0, "prompt": 0, "completion": 0, "reasoning": 0}
    )
    for r in records:
        g = out[tuple(r[k] for k in keys)]
        g["runs"] += 1
        g["calls"] += r["calls"]
        g["prompt"] += r["prompt_tokens"]
        g["completion"] += r["completion_tokens"]
        g["reasoning"] += r["reasoning_tokens"]
    return dict(out)


def classify(records: list[dict]) -> list[dict]:
    """Each record with its ``kind`` (the module docstring's rule), records with no calls and
    lemon's seller-only records flagged ``used: False``."""
    per_model = group([r for r in records if r["calls"]], ("model",))
    thinking = {
        m
        for (m,), g in per_model.items()
        if g["reasoning"] > 0 or g["completion"] / g["calls"] >= THINKING_FLOOR
    }
    runs = group([r for r in records if r["calls"]], ("model", "market", "prompt", "role"))
    out = []
    for r in records:
        key = (r["model"], r["market"], r["prompt"], r["role"])
        if r["model"] in thinking:
            kind = "thinking"
        elif r["calls"] and r["prompt"] == "io":
            g = runs[key]
            kind = (
                "bare_json" if g["completion"] / g["calls"] < BARE_CEILING else "chain_of_thought"
            )
        else:
            kind = "chain_of_thought"
        used = bool(r["calls"]) and r["role"] != "sellers"
        out.append({**r, "kind": kind, "used": used})
    return out


def priors(records: list[dict], source: str) -> list[dict]:
    """The prior rows (module docstring) from classified records."""
    used = [r for r in records if r["used"]]
    models = group(used, ("kind", "market", "model"))
    rows = []
    for kind in KINDS:
        for market in sorted({r["market"] for r in used}):
            per = [g for (k, mk, _), g in models.items() if (k, mk) == (kind, market)]
            if not per:
                continue
            means = [g["completion"] / g["calls"] for g in per]
            rows.append(
                {
                    "kind": kind,
                    "market": market,
                    "mean": round(sum(means) / len(means), 1),
                    "low": round(min(means), 1),
                    "high": round(max(means), 1),
                    "n_models": len(per),
                    "calls": sum(g["calls"] for g in per),
                    "source": source,
                }
            )
    bare = {r["market"]: r["mean"] for r in rows if r["kind"] == "bare_json"}
    for r in rows:
        r["reasoning_share"] = round(max(0.0, 1 - bare.get(r["market"], r["mean"]) / r["mean"]), 2)
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        if mine:
            mean = sum(r["mean"] for r in mine) / len(mine)
            rows.append(
                {
                    "kind": kind,
                    "market": "any",
                    "mean": round(mean, 1),
                    "low": min(r["low"] for r in mine),
                    "high": max(r["high"] for r in mine),
                    "n_models": len({m for (k, _, m) in models if k == kind}),
                    "calls": sum(r["calls"] for r in mine),
                    "source": source,
                    "reasoning_share": round(
                        sum(r["reasoning_share"] for r in mine) / len(mine), 2
                    ),
                }
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent-bazaar", type=Path, help="AI-Bazaar's logs-data")
    ap.add_argument("--pact", type=Path, help="PACT's logs (searched for usage fields)")
    ap.add_argument("--bazaar", type=Path, help="BAZAAR's logs (searched for usage fields)")
    ap.add_argument("--write", action="store_true", help=f"write the priors to {TABLE.name}")
    args = ap.parse_args()
    if args.agent_bazaar is None:  # `make bench` runs every benchmark without arguments
        print("no --agent-bazaar: give the logs-data folder of a clone of Agent Bazaar")
        return
    records = classify(agent_bazaar(args.agent_bazaar))
    files = len({r["file"] for r in records})
    print(f"Agent Bazaar: {files} token files, {len(records)} records (a file's roles apart)\n")
    head = f"{'model':42s} {'market':6s} {'prompt':6s} {'role':7s} {'kind':16s} {'runs':>4s}"
    print(head + f" {'calls':>8s} {'prompt/call':>11s} {'compl./call':>11s} {'reas./call':>10s}")
    by = group(records, ("model", "market", "prompt", "role"))
    kinds = {(r["model"], r["market"], r["prompt"], r["role"]): r for r in records}
    for key, g in sorted(by.items()):
        r = kinds[key]
        tag = r["kind"] if r["used"] else f"({r['kind']}, left out)"
        c = max(g["calls"], 1)
        print(
            f"{key[0][:42]:42s} {key[1]:6s} {key[2]:6s} {key[3]:7s} {tag:16s} {g['runs']:4d} "
            f"{g['calls']:8,d} {g['prompt'] / c:11.0f} {g['completion'] / c:11.1f} "
            f"{g['reasoning'] / c:10.1f}"
        )
    rows = priors(records, "Agent Bazaar token_usage.json")
    print("\nprior per kind (mean over models; low..high over models)")
    for r in rows:
        print(
            f"  {r['kind']:16s} {r['market']:6s} {r['mean']:7.1f} ({r['low']:.1f}..{r['high']:.1f})"
            f"  {r['n_models']} models, {r['calls']:,} calls, beyond the bare answer "
            f"{r['reasoning_share']:.0%}"
        )
    print("\nprior against Agent Bazaar's logged mean per call (calls-weighted), target within 25%")
    pooled = group([r for r in records if r["used"]], ("kind", "market"))
    for r in rows:
        g = pooled.get((r["kind"], r["market"]))
        if g:
            logged = g["completion"] / g["calls"]
            print(
                f"  {r['kind']:16s} {r['market']:6s} prior {r['mean']:7.1f}  logged {logged:7.1f}"
                f"  {r['mean'] / logged - 1:+.0%}"
            )
    for name, folder in (("PACT", args.pact), ("BAZAAR", args.bazaar)):
        if folder is not None:
            n = usage_records(folder)
            print(f"\n{name} ({folder}): {n} per-call usage fields" + ("" if n else ": no data"))
    if args.write:
        write_priors(rows)
        print(f"-> {TABLE}")


if __name__ == "__main__":
    main()
